"""`syncspy run --sim=N` on the torch of one venv (TORCH_PYTHON's), N being that torch's CUDA major
version (torch.version.cuda: 12 for PyPI's torch 2.10 and earlier, 13 from 2.12): `make test-torch
TORCH_VERSION=2.6 TORCH_TESTS=test_sim_run` runs torch 2.6 on build/sim12 (the target builds it),
the plain `make test-torch` torch 2.15 on build/sim. The test preloads nothing and puts no simulated
device on the library path: for a CUDA 12 torch LD_LIBRARY_PATH is unset (its --no-deps venv has
no libcudart.so.12 at all, so only --sim=12 can make it run), for a CUDA 13 one it is the toolkit's
lib64 alone (the NVIDIA wheels its --no-deps venv lacks; its libcudart is the real one, which finds
no driver). Without --sim torch has no CUDA device; under `syncspy run --sim=N` it sees the
simulated one, with the libraries of N's row of cli/run.c's table (every library of that folder),
and the demo (examples/seg_loss.py) prints what the harness's plain run prints, exits 0, and its
report has 30 optimizer steps and the rows test_versions.DEMO_ROWS gives for that torch series.
A missing venv, device folder or row fails."""
import os
import re
import subprocess
import tempfile
import unittest

import harness
from test_versions import DEMO_ROWS, STEPS, last_line, report_rows, step_lines

PROG = harness.DEMO
SNIPPET = ("import os, torch\n"
           "print(torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0))\n"
           "print(open('/proc/self/maps').read())\n")


def clean_env():
    """The user's environment: nothing preloaded, no simulated device on the library path, no
    syncspy variable; a CUDA 13 torch gets the toolkit's lib64 (what its --no-deps venv lacks)."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH") and not k.startswith("SYNCSPY_")}
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    if harness.torch_cuda_major() != 12:
        e["LD_LIBRARY_PATH"] = os.path.join(harness.CUDA_HOME, "lib64")
    return e


class SimOfThisTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert os.path.exists(harness.PYTHON), f"no torch venv at {harness.PYTHON}: make torch-venv"
        cls.cuda = harness.torch_cuda_major()
        assert cls.cuda in (12, 13), f"{harness.PYTHON}: torch.version.cuda's major is {cls.cuda}"
        [cls.row] = [r for r in harness.util.sim_devices() if r[0] == str(cls.cuda)]
        cls.folder = os.path.realpath(os.path.join(harness.BUILD, cls.row[2]))
        cls.tmp = tempfile.TemporaryDirectory(prefix="syncspy-torch-simrun-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def srun(self, *argv, timeout=300):
        """`syncspy run --sim=N --out OUT -- ARGV` in clean_env(); returns (process, OUT)."""
        out = tempfile.mkdtemp(prefix="out-", dir=self.tmp.name)
        p = subprocess.run([harness.CLI, "run", f"--sim={self.cuda}", "--out", out, "--", *map(str, argv)],
                           env=clean_env(), capture_output=True, text=True, timeout=timeout)
        return p, out

    def test_the_table_holds_every_library_of_the_folder(self):
        """N's row preloads every library `make sim` / `make sim12` builds there (sonames)."""
        built = sorted(n for n in os.listdir(self.folder) if re.fullmatch(r"lib\w+\.so\.\d+", n)
                       and not os.path.islink(os.path.join(self.folder, n)))
        self.assertEqual(sorted(self.row[4]), built, self.folder)

    def test_no_device_without_sim(self):
        p = subprocess.run([harness.PYTHON, "-c", "import torch; print(torch.cuda.is_available())"],
                           env=clean_env(), capture_output=True, text=True, timeout=300)
        if self.cuda == 12:  # no libcudart.so.12 anywhere: torch does not import
            self.assertNotEqual(p.returncode, 0, p.stdout)
            self.assertRegex(p.stderr, r"libcu\w+\.so", p.stderr[-2000:])
        else:  # the toolkit's real runtime, no driver
            self.assertEqual((p.returncode, p.stdout), (0, "False\n"), p.stderr[-2000:])

    def test_torch_sees_the_simulated_device(self):
        p, _ = self.srun(harness.PYTHON, "-c", SNIPPET)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        first, maps = p.stdout.split("\n", 1)
        cuda, available, name = first.split(" ", 2)
        self.assertTrue(cuda.startswith(f"{self.cuda}."), cuda)
        self.assertEqual((available, name), ("True", "Simulated CUDA device (syncspy)"))
        for lib in self.row[4]:  # every library of the device is the one of its folder
            self.assertIn(os.path.join(self.folder, lib), maps)
        runtime = self.row[4][0]  # and no other runtime of that version is mapped
        self.assertEqual(set(re.findall(rf"/\S+/{re.escape(runtime)}$", maps, re.M)),
                         {os.path.join(self.folder, runtime)})

    def test_the_demo(self):
        plain = harness.run(PROG, preload=False)  # the harness's way: LD_LIBRARY_PATH=build/sim12 ...
        p, out = self.srun(harness.PYTHON, PROG)
        self.assertEqual(plain.returncode, 0, plain.stderr[-3000:])
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertEqual(step_lines(p.stdout), step_lines(plain.stdout))
        self.assertEqual(len(step_lines(p.stdout)), STEPS // 5)
        self.assertEqual(last_line(p.stdout), last_line(plain.stdout))
        self.assertIn(f"{STEPS} steps of the original loss", p.stdout)
        self.assertEqual(harness.util.report_steps(p.stderr), (STEPS, STEPS - 1), p.stderr[:2000])
        series = ".".join(map(str, harness.torch_version()))
        self.assertIn(series, DEMO_ROWS, f"no rows measured for torch {series} in test_versions.DEMO_ROWS")
        self.assertEqual(report_rows(p.stderr), DEMO_ROWS[series], p.stderr)
        [d] = [os.path.join(out, n) for n in os.listdir(out)]
        self.assertIn(f"syncspy run: files in {d}/", p.stderr)


if __name__ == "__main__":
    unittest.main()
