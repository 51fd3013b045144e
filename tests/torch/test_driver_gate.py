"""NVIDIA's own CUDA 13.2 runtime and CUPTI wheels (the ones `pip install torch` brings, pinned in
tests/torch/requirements-nvidia.txt, in build/nvidia-wheels/) on this machine, which has no
driver: their libcupti, subscribed without a driver it can start, recurses until the stack ends
(issue 33: `import torch` died of SIGSEGV under the agent). The agent must leave such a program
as it is without the agent: same output, same exit status, nothing said, nothing written. Then
the same with the toolkit's stub libcuda.so.1 on the loader's path (a driver library that
answers CUDA_ERROR_STUB_LIBRARY to everything)."""
import os
import subprocess
import tempfile
import unittest

from harness import BUILD, CUDA_HOME, LIB, PYTHON

WHEELS = os.path.join(BUILD, "nvidia-wheels", "nvidia", "cu13", "lib")
CUDART = os.path.join(WHEELS, "libcudart.so.13")
CUPTI = os.path.join(WHEELS, "libcupti.so.13")
STUB = os.path.join(CUDA_HOME, "lib64", "stubs", "libcuda.so")

# loads the wheel's runtime with ctypes (torch's way: torch/__init__.py _preload_cuda_deps),
# then asks it for devices and makes a sync
PROGRAM = """
import ctypes, sys
rt = ctypes.CDLL(sys.argv[1])
n = ctypes.c_int(-1)
print("devices", rt.cudaGetDeviceCount(ctypes.byref(n)), n.value)
print("sync", rt.cudaDeviceSynchronize())
"""


def run(argv, preload, extra=None):
    out = tempfile.mkdtemp(prefix="syncspy-gate-")
    env = dict(os.environ, SYNCSPY_OUT=out, LD_LIBRARY_PATH="")
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = LIB
    env.update(extra or {})
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    return p, out


class WheelCuptiWithoutDriver(unittest.TestCase):
    def setUp(self):
        for f in (CUDART, CUPTI):
            self.assertTrue(os.path.isfile(f), f"{f}: make nvidia-wheels")

    def same_as_without(self, argv, extra=None):
        plain, _ = run(argv, False, extra)
        r, out = run(argv, True, extra)
        self.assertEqual(r.returncode, plain.returncode, r.stderr[-3000:])
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertEqual(r.stdout, plain.stdout)
        self.assertEqual(r.stderr, plain.stderr)
        self.assertEqual(os.listdir(out), [])  # no CUDA call succeeded: nothing written
        return r

    def test_the_wheels_cupti_crashes_when_subscribed_without_a_driver(self):
        # the premise: called alone, NVIDIA's libcupti dies (stack overflow) without a driver
        code = ("import ctypes, sys; c = ctypes.CDLL(sys.argv[1]); h = ctypes.c_void_p(); "
                "print(c.cuptiSubscribe(ctypes.byref(h), None, None))")
        p = subprocess.run([PYTHON, "-c", code, CUPTI], env=dict(os.environ, LD_LIBRARY_PATH=""),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, -11, (p.stdout, p.stderr[-2000:]))

    def test_runtime_loaded_with_ctypes_and_no_driver(self):
        r = self.same_as_without([PYTHON, "-c", PROGRAM, CUDART])
        self.assertIn("devices 35 ", r.stdout)  # cudaErrorInsufficientDriver

    def test_under_eager_and_no_driver(self):
        self.same_as_without([PYTHON, "-c", PROGRAM, CUDART], {"SYNCSPY_CUPTI": "eager"})

    def test_named_cupti_and_no_driver(self):
        self.same_as_without([PYTHON, "-c", PROGRAM, CUDART], {"SYNCSPY_CUPTI": CUPTI})

    def test_runtime_with_the_toolkits_stub_driver(self):
        with tempfile.TemporaryDirectory() as d:
            os.symlink(STUB, os.path.join(d, "libcuda.so.1"))
            r = self.same_as_without([PYTHON, "-c", PROGRAM, CUDART], {"LD_LIBRARY_PATH": d})
        self.assertNotIn("devices 0 ", r.stdout)


if __name__ == "__main__":
    unittest.main()
