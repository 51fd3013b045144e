"""`make demo` as a new user runs it: the seed-003 loop (examples/seg_loss.py) on the real wheel,
under the agent, on the simulated device; and, when the wheel cannot be had, a plain statement
that it falls back to the bundled imitation of torch, then the imitation's demo."""
import os
import subprocess
import unittest

import harness


def make_demo(*args):
    return subprocess.run(["make", "--no-print-directory", "demo", f"BUILD={os.path.relpath(harness.BUILD, harness.ROOT)}",
                           *args], cwd=harness.ROOT, capture_output=True, text=True, timeout=600)


class Demo(unittest.TestCase):
    def test_real_torch(self):
        p = make_demo()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("make demo: examples/seg_loss.py on torch 2.15.0", p.stdout)
        self.assertIn("on the simulated CUDA device", p.stdout)
        self.assertNotIn("IMITATION", p.stdout)
        self.assertIn("30 steps of the original loss", p.stdout)
        marks = harness.marked_lines(harness.DEMO)
        for name, hint in (("nonzero", "torch.nonzero"), ("unique", "torch.unique"),
                           ("mask_pred", "x[bool_mask]"), ("item", ".item()")):
            with self.subTest(name):
                g = harness.group_at(p.stderr, "seg_loss.py", marks[name])
                self.assertIsNotNone(g, p.stderr)
                self.assertIn(hint, g["hint"] or "")
        self.assertIn("summary in build/demo-out/pid", p.stderr)

    def test_fallback_says_so(self):
        # a "python" that cannot make the venv stands for a machine without the wheel
        p = make_demo("TORCH_MAIN_PY=/bin/false")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("could not be installed", p.stdout)
        self.assertIn("IMITATION of torch (examples/site-packages), not on real PyTorch", p.stdout)
        self.assertIn("torch.nonzero syncs", p.stderr)  # the imitation's demo ran under the agent


if __name__ == "__main__":
    unittest.main()
