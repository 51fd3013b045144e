"""Real PyTorch over the simulated device, through the wheel: a fresh virtual environment gets
the wheel with pip (scripts/wheel.py's, from this build) and sees the pinned torch through a .pth
file naming the torch venv's site-packages (no second 540 MB copy). Its `syncspy run` (and `python
-m syncspy run`) records the seed-003 loop (examples/seg_loss.py) as the bare LD_PRELOAD way does:
the same syncs on the same lines; keeps the exit status of a program that fails (SystemExit(7), an
uncaught exception) as without it; and in front of torchrun with 2 ranks records both ranks, which
`syncspy report` of the root merges."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

import harness
from harness import CLI, LIB, ROOT, count_at, marked_lines

PROG = harness.DEMO
STEPS = 6
QUIET = ("--steps", STEPS, "--log-every", 0)
MARKS = marked_lines(PROG)
LINES = ("nonzero", "mask_target", "mask_pred", "unique")


def torch_site_packages():
    out = subprocess.run([harness.PYTHON, "-c", "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
                         capture_output=True, text=True, env=harness.torch_env())
    return out.stdout.strip()


class FromTheWheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="syncspy-torch-wheel-")
        d = cls.tmp.name
        b = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "wheel.py"), "--lib", LIB, "--cli", CLI,
                            "--out", os.path.join(d, "dist"), "--work", os.path.join(d, "work")],
                           capture_output=True, text=True)
        assert b.returncode == 0, b.stderr
        [whl] = glob.glob(os.path.join(d, "dist", "syncspy-*.whl"))
        cls.venv = os.path.join(d, "venv")
        subprocess.run([harness.PYTHON, "-m", "venv", cls.venv], check=True)
        cls.py = os.path.join(cls.venv, "bin", "python")
        inst = subprocess.run([cls.py, "-m", "pip", "install", "--no-index", "--disable-pip-version-check", "-q", whl],
                              capture_output=True, text=True)
        assert inst.returncode == 0, inst.stderr
        site = subprocess.run([cls.py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True).stdout.strip()
        with open(os.path.join(site, "torch-venv.pth"), "w") as f:
            f.write(torch_site_packages() + "\n")
        cls.syncspy = os.path.join(cls.venv, "bin", "syncspy")
        cls.bare = harness.run(PROG, *QUIET)
        assert cls.bare.returncode == 0, cls.bare.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def env(self):
        """The simulated device on the library path; nothing preloaded, no PYTHONPATH: the
        venv's own syncspy module and agent."""
        e = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONPATH") and not k.startswith("SYNCSPY_")}
        e["LD_LIBRARY_PATH"] = harness.library_path()
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        return e

    def srun(self, *argv, module=False, timeout=300):
        out = tempfile.mkdtemp(prefix="syncspy-torch-wheel-out-", dir=self.tmp.name)
        head = [self.py, "-m", "syncspy"] if module else [self.syncspy]
        p = subprocess.run([*head, "run", "--out", out, "--", *[str(a) for a in argv]], env=self.env(),
                           capture_output=True, text=True, timeout=timeout)
        return p, out

    summaries = staticmethod(harness.util.process_summaries)

    def test_the_seed003_loop(self):
        bare = self.bare.summary()
        for module in (False, True):
            with self.subTest(module=module):
                p, out = self.srun(self.py, PROG, *QUIET, module=module)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.count(" steps of the original loss"), 1)
                [s] = self.summaries(out)
                for name in LINES:
                    self.assertEqual(count_at(s, PROG, MARKS[name]), STEPS, name)
                    self.assertEqual(count_at(s, PROG, MARKS[name]), count_at(bare, PROG, MARKS[name]))
                    g = harness.group_at(p.stderr, "seg_loss.py", MARKS[name])
                    self.assertIsNotNone(g, p.stderr)
                    self.assertRegex(g["head"], r"\s1\.00\s")
                backward = harness.backward_sites(s, "IndexBackward0")  # in autograd's engine thread
                self.assertEqual(sum(x["count"] for x in backward), STEPS)
                self.assertEqual(sum(x["count"] for x in s["sites"]), sum(x["count"] for x in bare["sites"]))
                self.assertIn(f"syncspy run: files in {glob.glob(os.path.join(out, 'pid*'))[0]}/", p.stderr)
        # the wheel's agent, first in LD_PRELOAD
        p, _ = self.srun(self.py, "-c", "import os; print(os.environ['LD_PRELOAD'])")
        self.assertRegex(p.stdout, rf"^{re.escape(self.venv)}/lib/python3\.\d+/site-packages/syncspy/_native/libsyncspy\.so\n$")

    def test_a_failing_program_keeps_its_status(self):
        code = "import torch\nx = torch.ones(3, device='cuda')\nprint(x.sum().item())\n"
        for tail, status in (("raise SystemExit(7)\n", 7), ("raise RuntimeError('boom')\n", 1)):
            with self.subTest(status=status):
                path = os.path.join(self.tmp.name, f"fail{status}.py")
                with open(path, "w") as f:
                    f.write(code + tail)
                plain = subprocess.run([self.py, path], env=self.env(), capture_output=True, text=True, timeout=300)
                p, out = self.srun(self.py, path)
                self.assertEqual(plain.returncode, status, plain.stderr)
                self.assertEqual((p.returncode, p.stdout), (plain.returncode, plain.stdout))
                if status == 1:
                    self.assertIn("RuntimeError: boom", p.stderr)
                [s] = self.summaries(out)
                self.assertGreaterEqual(sum(x["count"] for x in s["sites"]), 1)  # the .item()

    def test_torchrun_two_ranks_merged(self):
        steps = 4
        p, out = self.srun(self.py, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", 2,
                           PROG, "--steps", steps, "--log-every", 0)
        self.assertEqual(p.returncode, 0, p.stderr)
        names = sorted(os.listdir(out))
        host = harness.util.folder_host()
        self.assertEqual([re.sub(r"\d+$", "", n) for n in names], [f"rank0-{host}-pid", f"rank1-{host}-pid"], p.stderr)
        docs = self.summaries(out)
        self.assertEqual(sorted(d["rank"] for d in docs), [0, 1])
        for d in docs:
            self.assertEqual(count_at(d, PROG, MARKS["nonzero"]), steps)
        self.assertIn(f"syncspy run: 2 processes recorded under {out}/: {names[0]}, {names[1]}; merged: "
                      f"syncspy report {out}\n", p.stderr)
        merged = subprocess.run([self.syncspy, "report", out], capture_output=True, text=True, env=self.env())
        self.assertEqual(merged.returncode, 0, merged.stderr)
        self.assertIn("hotspots of all 2 processes", merged.stdout)
        self.assertEqual(len(re.findall(r"^syncspy: rank [01] pid \d+", merged.stdout, re.M)), 2, merged.stdout)
        g = harness.group_at(merged.stdout, "seg_loss.py", MARKS["nonzero"])
        self.assertIsNotNone(g, merged.stdout)
        self.assertRegex(g["head"], r"\s1\.00\s")  # per process-step
        self.assertIn("in all 2 processes", "\n".join(g["lines"]))


if __name__ == "__main__":
    unittest.main()
