"""Real PyTorch on every local CPython torch 2.15 has wheels for (3.11, 3.12, 3.13 here: the
venvs of `make torch-venv`, TORCH_PYTHONS; any other venv named there too, such as torch 2.14.1
on CPython 3.10 or torch 2.15 on Debian's 3.14): the frame reader names the Python stack of each
of the seed-003 loss's syncs on each, innermost first, exactly as CPython reports it (a line
tracer in the program, its --frames mode, gives the ground truth; on 3.9/3.10, which have no
co_qualname, the name of the function object that runs the code)."""
import json
import subprocess
import unittest

import harness
from harness import count_at, marked_lines, python_frames, sites_at

PROG = harness.DEMO
MARKS = marked_lines(PROG)
STEPS = 3


def version(python):
    return subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True).stdout.strip()


class EveryCPython(unittest.TestCase):
    def test_at_least_the_main_venv(self):
        self.assertIn(harness.PYTHON, harness.PYTHONS)
        self.assertTrue(all(version(p) for p in harness.PYTHONS), harness.PYTHONS)

    def test_stacks_as_cpython_reports_them(self):
        for python in harness.PYTHONS:
            v = version(python)
            with self.subTest(python=v):
                r = harness.run(PROG, "--steps", STEPS, "--log-every", 0, "--frames", python=python)
                self.assertEqual(r.returncode, 0, r.stderr)
                truth = json.loads(r.stdout.splitlines()[-1][len("frames "):])
                s = r.summary()
                for name in ("nonzero", "mask_target", "mask_pred", "unique"):
                    line = MARKS[name]
                    self.assertEqual(count_at(s, PROG, line), STEPS, (v, name))
                    for site in sites_at(s, PROG, line):
                        frames = [(f["function"], f["line"]) for f in python_frames(site)]
                        # from the program's frame of the marked line outwards, exactly what
                        # CPython reports; above it only torch's own Python (torch.unique's)
                        at = [i for i, f in enumerate(python_frames(site)) if f["file"] == PROG][0]
                        self.assertEqual(frames[at:], [tuple(x) for x in truth[str(line)]], (v, name))
                        self.assertTrue(all("/torch/" in f["file"] for f in python_frames(site)[:at]))


if __name__ == "__main__":
    unittest.main()
