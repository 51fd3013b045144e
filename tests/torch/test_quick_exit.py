"""Real torch over the simulated device, ended through os._exit: the process that calls it (a
script that skips its teardown; multiprocessing's fork workers, which always end that way) keeps
what it recorded: summary.json, a trace.bin `syncspy report` reads, and the exit report; stdout
left in Python's buffer stays unwritten, as without the agent."""
import json
import os
import unittest

import harness
from harness import marked_lines



def syncs_at(summary, line):
    """Every sync at the line: none recorded may be lost."""
    return sum(s["count"] for s in summary["sites"]
               if any(f.get("python") and f["file"].endswith("quick_exit.py") and f["line"] == line
                      for f in s["frames"]))


class MainProcess(unittest.TestCase):
    def test_os_exit_keeps_the_run(self):
        buffered = {"PYTHONUNBUFFERED": ""}  # sys.stdout holds the line: os._exit drops it
        plain = harness.run("quick_exit.py", "main", preload=False, env=buffered)
        r = harness.run("quick_exit.py", "main", env=buffered)
        self.assertEqual(plain.returncode, 3, plain.stderr)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(plain.stdout, "")
        self.assertEqual(r.stdout, "")  # the agent flushes no stdio buffer
        s = r.summary()
        lines = marked_lines("quick_exit.py")
        self.assertEqual(syncs_at(s, lines["item"]), 5)  # one per iteration
        self.assertGreaterEqual(syncs_at(s, lines["nonzero"]), 5)
        self.assertIn("quick_exit.py", r.stderr)  # the exit report
        d = r.process_dirs()[0]
        os.unlink(os.path.join(d, "summary.json"))
        rep = harness.cli("report", d)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        g = harness.group_at(rep.stdout, "quick_exit.py", lines["item"])
        self.assertIsNotNone(g, rep.stdout)


class ForkWorkers(unittest.TestCase):
    def test_each_worker_keeps_its_run(self):
        plain = harness.run("quick_exit.py", "workers", preload=False)
        r = harness.run("quick_exit.py", "workers")
        self.assertEqual((plain.returncode, plain.stdout), (0, "workers [0, 0]\n"), plain.stderr)
        self.assertEqual((r.returncode, r.stdout), (0, "workers [0, 0]\n"), r.stderr)
        dirs = r.process_dirs()
        self.assertEqual(len(dirs), 2, (dirs, r.stderr))  # the workers; the parent made no CUDA call
        lines = marked_lines("quick_exit.py")
        for d in dirs:
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            self.assertEqual(syncs_at(s, lines["item"]), 5, d)
            rep = harness.cli("report", d)
            self.assertEqual(rep.returncode, 0, rep.stderr)
            self.assertIn("quick_exit.py", rep.stdout)
        self.assertEqual(r.stderr.count("syncspy: pid"), 2, r.stderr)


if __name__ == "__main__":
    unittest.main()
