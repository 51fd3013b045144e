"""tests/torch-user/test_user_venv.py (`make test-torch-user`): syncspy in the venv a user makes,
a plain `pip install torch==2.15.0` with torch's own CUDA wheels (build/user-venv/,
tests/torch/requirements-user.txt, `make user-venv`: about 3 GB to download, 5.3 GB on disk),
into which this build's wheel (scripts/wheel.py with the simulated device, as `make wheel` makes
it) is pip-installed. There, on this machine without a GPU, `syncspy run --sim` runs the demo
(examples/seg_loss.py) on the wheel's simulated device: the same output and exit status as a
plain run on the simulator (the tests' --no-deps venv, tests/torch/harness.py), the report's 30
steps and its 7 sync lines with the same counts as the agent finds in that venv; a failing
program's exit status kept; torchrun's two ranks inherit it; and an installed program with no
simulator beside it says so in one line."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness
from harness import CLI, LIB, ROOT, SIM

sys.path.insert(0, os.path.join(ROOT, "bench"))
import peers  # the 7 marked lines and how syncspy's summary names them

VENV = os.environ.get("USER_VENV") or os.path.join(harness.BUILD, "user-venv")
PINS = os.path.join(ROOT, "tests", "torch", "requirements-user.txt")
PROG = harness.DEMO
MARKS = {name: line for line, name in peers.marked_lines().items()}
FORWARD = ("mask_target", "mask_pred", "nonzero", "unique")
STEPS = 30  # the demo's default, with the loss read every 5 steps


def host_time_masked(text):
    """The demo's output less its one measured figure (the median step time, in ms)."""
    return re.sub(r"\d+\.\d+ ms per step", "<t> ms per step", text)


class UserVenv(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(PINS) as f:
            pins = f.read()
        marker = os.path.join(VENV, ".requirements")
        if not (os.path.isfile(marker) and open(marker).read() == pins):
            raise AssertionError(f"no venv of {PINS} at {VENV}: make user-venv")
        cls.tmp = tempfile.TemporaryDirectory(prefix="syncspy-user-venv-")
        d = cls.tmp.name
        b = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "wheel.py"), "--lib", LIB, "--cli", CLI,
                            "--sim", SIM, "--out", os.path.join(d, "dist"), "--work", os.path.join(d, "work")],
                           capture_output=True, text=True)
        assert b.returncode == 0, b.stderr
        [whl] = glob.glob(os.path.join(d, "dist", "syncspy-*.whl"))
        cls.py = os.path.join(VENV, "bin", "python")
        inst = subprocess.run([cls.py, "-m", "pip", "install", "--no-index", "--no-deps", "--force-reinstall",
                               "--disable-pip-version-check", "-q", whl], capture_output=True, text=True)
        assert inst.returncode == 0, inst.stderr
        cls.syncspy = os.path.join(VENV, "bin", "syncspy")
        cls.native = glob.glob(os.path.join(VENV, "lib", "python3*", "site-packages", "syncspy", "_native"))[0]
        # the reference: the demo on the simulator in the tests' --no-deps venv, plain and recorded
        cls.plain = harness.run(PROG, preload=False)
        cls.recorded = harness.run(PROG)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def env(self):
        """A user's shell: nothing preloaded, no library path, no PYTHONPATH, no SYNCSPY_*."""
        drop = ("LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_HOME")
        return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("SYNCSPY_")}

    def srun(self, *argv, syncspy=None, timeout=300):
        out = tempfile.mkdtemp(prefix="out-", dir=self.tmp.name)
        p = subprocess.run([syncspy or self.syncspy, "run", "--sim", "--out", out, "--", *[str(a) for a in argv]],
                           env=self.env(), capture_output=True, text=True, timeout=timeout, cwd=self.tmp.name)
        return harness.Run(p, out)

    def test_the_demo(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stderr)
        r = self.srun(self.py, PROG)
        self.assertEqual(r.returncode, self.plain.returncode, r.stderr[-3000:])
        self.assertEqual(host_time_masked(r.stdout), host_time_masked(self.plain.stdout))
        self.assertEqual(r.stdout.count("loss "), STEPS // 5)
        self.assertEqual(harness.util.report_steps(r.stderr), (STEPS, STEPS - 1), r.stderr)
        counts = peers.syncspy_counts(r.out_dir)
        self.assertEqual(counts, peers.syncspy_counts(self.recorded.out_dir))
        self.assertEqual(sorted(counts), sorted(MARKS.values()), counts)  # the 7 lines, no other
        for name in FORWARD:
            self.assertEqual(counts[MARKS[name]], STEPS, name)
            g = harness.group_at(r.stderr, "seg_loss.py", MARKS[name])
            self.assertIsNotNone(g, r.stderr)
            self.assertRegex(g["head"], r"\s1\.00\s")
        self.assertEqual(counts[MARKS["item"]], STEPS // 5)
        self.assertIsNotNone(harness.group_at(r.stderr, "seg_loss.py", MARKS["mask_pred"], backward=True), r.stderr)
        self.assertRegex(r.stderr, rf"syncspy run: files in {re.escape(r.out_dir)}/pid\d+/ ")

    def test_a_failing_program_keeps_its_status(self):
        code = "import torch\nx = torch.ones(3, device='cuda')\nprint(x.sum().item())\n"
        for tail, status in (("raise SystemExit(7)\n", 7), ("raise RuntimeError('boom')\n", 1)):
            with self.subTest(status=status):
                path = os.path.join(self.tmp.name, f"fail{status}.py")
                with open(path, "w") as f:
                    f.write(code + tail)
                plain = harness.run(path, preload=False)
                r = self.srun(self.py, path)
                self.assertEqual(plain.returncode, status, plain.stderr)
                self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
                self.assertEqual(sum(x["count"] for x in r.summary()["sites"]), 1)  # the .item()

    def test_on_the_wheels_simulator(self):
        code = ("import re, torch\nprint(torch.cuda.get_device_name(0))\n"
                "print(sorted({l.split()[-1] for l in open('/proc/self/maps') if '/sim/lib' in l}))\n")
        r = self.srun(self.py, "-c", code)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        name, libs = r.stdout.splitlines()
        self.assertEqual(name, "Simulated CUDA device (syncspy)")
        self.assertEqual(libs, str(sorted(os.path.join(self.native, "sim", n) for n in (
            "libcudart.so.13", "libcuda.so.1", "libcupti.so.13", "libcublas.so.13", "libcublasLt.so.13",
            "libcudnn.so.9"))))

    def test_torchrun_ranks_inherit_it(self):
        steps = 4
        r = self.srun(self.py, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", 2,
                      PROG, "--steps", steps, "--log-every", 0)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        docs = harness.util.process_summaries(r.out_dir)
        self.assertEqual(sorted(d["rank"] for d in docs), [0, 1], r.stderr[-3000:])
        for d in docs:
            self.assertEqual(harness.count_at(d, PROG, MARKS["nonzero"]), steps)
        self.assertIn(f"syncspy run: 2 processes recorded under {r.out_dir}/", r.stderr)

    def test_no_simulator_beside_the_installed_program(self):
        """The installed program and agent without their sim/ (a wheel made without it)."""
        lone = os.path.join(self.tmp.name, "lone")
        shutil.copytree(self.native, lone, ignore=shutil.ignore_patterns("sim"))
        marker = os.path.join(self.tmp.name, "ran")
        r = self.srun("touch", marker, syncspy=os.path.join(lone, "syncspy"))
        self.assertEqual(r.returncode, 125)
        self.assertEqual(r.stderr, f"syncspy run: --sim: no simulated device beside this program ({lone}/sim/"
                                   "libcudart.so.13: No such file or directory): a source build makes it with "
                                   "`make sim`, the wheel of `make wheel` carries it\n")
        self.assertFalse(os.path.exists(marker))


class NoDriver(unittest.TestCase):
    """The same venv without --sim, on this machine that has no driver (issue 33 item 1: the
    agent crashed `import torch` with SIGSEGV there: the wheel's libcupti, subscribed without a
    driver, recursed until the stack ended). With the agent, preloaded or through `syncspy run`,
    a program behaves as it does without it, and torch's own error is what the user reads."""

    PROGRAMS = {
        "available": "import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.device_count())",
        "tensor": "import torch; torch.zeros(1, device='cuda')",
    }

    def setUp(self):
        self.py = os.path.join(VENV, "bin", "python")
        self.assertTrue(os.path.isfile(self.py), f"no {self.py}: make user-venv")
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_HOME")
                    and not k.startswith("SYNCSPY_")}

    def plain_and_preloaded(self, code):
        out = tempfile.mkdtemp(prefix="syncspy-nodriver-")
        plain = subprocess.run([self.py, "-c", code], env=self.env, capture_output=True, text=True, timeout=300)
        r = subprocess.run([self.py, "-c", code], env=dict(self.env, LD_PRELOAD=LIB, SYNCSPY_OUT=out),
                           capture_output=True, text=True, timeout=300)
        return plain, r, out

    def test_import_torch_and_ask_for_the_gpu(self):
        plain, r, out = self.plain_and_preloaded(self.PROGRAMS["available"])
        self.assertEqual(plain.returncode, 0, plain.stderr[-2000:])
        self.assertEqual((r.returncode, r.stdout, r.stderr), (plain.returncode, plain.stdout, plain.stderr))
        self.assertTrue(plain.stdout.endswith(" False 0\n"), plain.stdout)
        self.assertEqual(os.listdir(out), [])

    def test_torchs_own_error_for_a_cuda_tensor(self):
        plain, r, out = self.plain_and_preloaded(self.PROGRAMS["tensor"])
        self.assertEqual(plain.returncode, 1)
        self.assertIn("RuntimeError: Found no NVIDIA driver on your system", plain.stderr)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (plain.returncode, plain.stdout, plain.stderr))
        self.assertEqual(os.listdir(out), [])

    def test_syncspy_run_says_why_nothing_was_recorded(self):
        out = tempfile.mkdtemp(prefix="syncspy-nodriver-")
        r = subprocess.run([LIB.replace("libsyncspy.so", "syncspy"), "run", "--out", out, "--", self.py, "-c",
                            self.PROGRAMS["tensor"]], env=self.env, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 1, r.stderr[-3000:])
        self.assertNotIn("Segmentation fault", r.stderr)
        self.assertIn("RuntimeError: Found no NVIDIA driver on your system", r.stderr)
        self.assertIn("syncspy run: this machine has no CUDA driver", r.stderr)
        self.assertIn("syncspy run --sim", r.stderr)


if __name__ == "__main__":
    unittest.main()
