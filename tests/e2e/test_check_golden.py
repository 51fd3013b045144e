"""tests/e2e/test_check_golden.py: `syncspy check`'s text on trace.bin files written by
tracegen.py, compared with golden files (tests/e2e/golden/check_*.txt; the folder's path
replaced): within and over budget, a share budget, an allowed line, start-up counted, a root of
two processes. GOLDEN_WRITE=1 rewrites them from what check prints now, after a deliberate change
(read the diff)."""
import shutil
import subprocess
import tempfile
import unittest

import tracegen
import util

CASES = {
    "within": ["--max-syncs-per-step", "10"],
    "over": ["--max-syncs-per-step", "1"],
    "share": ["--max-blocked-share", "5%", "--max-syncs-per-step", "2.5"],
    "allowed": ["--max-syncs-per-step", "1", "--allow", "train.cpp:42"],
    "startup": ["--max-syncs-per-step", "0.5", "--include-startup"],
}


class CheckGolden(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="syncspy-check-golden-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check(self, name, target, args):
        p = subprocess.run([util.CLI, "check", target, *args], capture_output=True, text=True,
                           timeout=60, cwd=self.dir)
        text = f"exit {p.returncode}\n{p.stdout}{p.stderr}".replace(self.dir, "DIR")
        util.assert_golden(self, f"check_{name}.txt", text)

    def test_one_process(self):
        folder = tracegen.one_process(self.dir)
        for name, args in CASES.items():
            with self.subTest(name=name):
                self.check(name, folder, args)

    def test_a_root_of_two_processes(self):
        self.check("root", tracegen.root_of_two(self.dir), ["--max-syncs-per-step", "1"])


if __name__ == "__main__":
    unittest.main()
