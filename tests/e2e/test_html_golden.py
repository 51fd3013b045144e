"""tests/e2e/test_html_golden.py: the JSON that `syncspy html` embeds in its page (what page.js
draws), for trace.bin files written by tracegen.py, compared field by field, in their order, with
golden files (tests/e2e/golden/html_*.json, the folder's path replaced): each line's fields
(cli/html.c write_lines: figures, ops, hint, the user frame, threads, per process, source) of
one process, of a root of two, and of a backward sync with the line that called backward().
GOLDEN_WRITE=1 rewrites the golden files from what html writes now, after a deliberate change
(read the diff)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import tracegen
import util

MS = tracegen.MS
CPU_LIB = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"


def backward(pid=8):
    """IndexBackward0's sync in autograd's thread: its native frames, the forward line that made
    the node, and the line that called backward()."""
    t = tracegen.Trace(pid=pid, schedule=b"", features=tracegen.FEATURE_LAUNCHES | tracegen.FEATURE_PYTHON)
    t.thread(100, "python")
    t.thread(101, "pt_autograd_0")
    frames = [
        t.frame("at::native::nonzero_cuda(at::Tensor const&)", module=tracegen.TORCH, offset=0x99),
        t.frame("torch::autograd::generated::IndexBackward0::apply(std::vector<at::Tensor>&&)",
                module=CPU_LIB, offset=0x44),
        t.frame("IndexBackward0", kind=tracegen.FRAME_BACKWARD),
        t.frame("MaskedLoss.ignore_background", file="/home/u/proj/train.py", line=61, python=True),
        t.frame("<module>", file="/home/u/proj/train.py", line=120, python=True),
        t.frame("", kind=tracegen.FRAME_CALLER),
        t.frame("train_step", file="/home/u/proj/train.py", line=90, python=True),
        t.frame("<module>", file="/home/u/proj/train.py", line=130, python=True),
    ]
    s = t.stack(frames)
    for step in (1, 2, 3):
        base = step * 40 * MS
        t.sync("cudaStreamSynchronize", base + 2 * MS, 3 * MS, tid=101, stack=s, step=step)
        t.site_totals("cudaStreamSynchronize", s, step, 3 * MS * step, 3 * MS, site_id=1)
        t.step(step, base, base + 40 * MS, syncs=1, blocked_ns=3 * MS, launches=10)
    t.end(200 * MS)
    return t


class HtmlGolden(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="syncspy-html-golden-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check(self, name, target):
        page = os.path.join(self.dir, "page.html")
        p = subprocess.run([util.CLI, "html", target, "-o", page], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(page) as f:
            m = re.search(r'<script[^>]*id="syncspy-data"[^>]*>(.*?)</script>', f.read(), re.S)
        self.assertIsNotNone(m)
        data = json.loads(m.group(1))
        text = json.dumps(data, indent=1).replace(self.dir, "DIR") + "\n"
        util.assert_golden(self, f"html_{name}.json", text)

    def test_one_process(self):
        self.check("one", tracegen.one_process(self.dir))

    def test_a_root_of_two_processes(self):
        self.check("root", tracegen.root_of_two(self.dir))

    def test_a_backward_sync(self):
        backward().write(os.path.join(self.dir, "pid8", "trace.bin"))
        self.check("backward", os.path.join(self.dir, "pid8"))


if __name__ == "__main__":
    unittest.main()
