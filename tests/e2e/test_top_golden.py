"""tests/e2e/test_top_golden.py: `syncspy top --once` on trace.bin files written by tracegen.py,
compared byte for byte with golden frames (tests/e2e/golden/top_*.txt; the clock masked): its
header (the title, the errors and notes under it, the figures of the last 10 s and since start,
the notes of sampled or folded records) and the lines under it. GOLDEN_WRITE=1 rewrites the golden
files from what top prints now, after a deliberate change (read their diff)."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import tracegen
import util

MS = tracegen.MS


def sampled():
    """A trace past half of SYNCSPY_TRACE_MB: the sync records of a sample of steps."""
    t = tracegen.sample(pid=5, end=False)
    t.bound(1 << 20, 2, 2, 4, 0)
    return t


def folded():
    """A trace whose steps 4-9 SYNCSPY_TRACE_MB folded into one run."""
    t = tracegen.sample(pid=6, end=False)
    t.step_run(4, 9, 6, 6, 1, 3, 12, blocked_ns=30 * MS, launches=600, wall_ns=240 * MS,
               counts=[(2, 1, 100), (2, 2, 100), (2, 3, 100)])
    return t


class TopGolden(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="syncspy-top-golden-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def folder(self, name, trace):
        path = os.path.join(self.dir, name, "trace.bin")
        if isinstance(trace, bytes):
            os.makedirs(os.path.dirname(path))
            with open(path, "wb") as f:
                f.write(trace)
        else:
            trace.write(path)
        return os.path.dirname(path)

    def check(self, name, target):
        p = subprocess.run([util.CLI, "top", "--once", target], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = p.stdout.replace(self.dir, "DIR")
        text = re.sub(r"(?m)^(syncspy top .*\)  )\d\d:\d\d:\d\d$", r"\1HH:MM:SS", text)
        util.assert_golden(self, f"top_{name}.txt", text)

    def test_a_process_that_ended(self):
        self.check("ended", self.folder("pid4242", tracegen.sample()))

    def test_a_root_of_a_running_and_an_ended_process(self):
        self.folder("pid4242", tracegen.sample())
        self.folder("pid1", tracegen.sample(pid=1, end=False))
        self.check("root", self.dir)

    def test_sampled_and_folded_records(self):
        self.folder("pid5", sampled())
        self.folder("pid6", folded())
        self.check("sampled_folded", self.dir)

    def test_a_trace_that_cannot_be_read(self):
        self.folder("pid4242", tracegen.sample())
        self.folder("pid7", b"SYNCSPY\x01" + b"\xff" * 104)
        self.check("unreadable", self.dir)


if __name__ == "__main__":
    unittest.main()
