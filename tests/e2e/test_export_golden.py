"""tests/e2e/test_export_golden.py: `syncspy export --chrome` and `--folded` of trace.bin files
written by tracegen.py, compared with golden files (tests/e2e/golden/export_*; the folder's path
replaced): a process, a root of a running and an ended one, sampled and folded records (the
notes of what the events lack). GOLDEN_WRITE=1 rewrites them from what export writes now, after a
deliberate change (read the diff)."""
import os
import shutil
import subprocess
import tempfile
import unittest

import test_top_golden
import tracegen
import util


class ExportGolden(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="syncspy-export-golden-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check(self, name, target):
        for kind, ext in (("chrome", "json"), ("folded", "txt")):
            out = os.path.join(self.dir, "out." + ext)
            p = subprocess.run([util.CLI, "export", "--" + kind, out, target], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                text = f.read().replace(self.dir, "DIR")
            util.assert_golden(self, f"export_{name}_{kind}.{ext}", text)

    def test_one_process(self):
        self.check("one", tracegen.one_process(self.dir))

    def test_a_root_of_two_processes(self):
        self.check("root", tracegen.root_of_two(self.dir))

    def test_sampled_and_folded_records(self):
        test_top_golden.sampled().write(os.path.join(self.dir, "pid5", "trace.bin"))
        test_top_golden.folded().write(os.path.join(self.dir, "pid6", "trace.bin"))
        self.check("sampled_folded", self.dir)


if __name__ == "__main__":
    unittest.main()
