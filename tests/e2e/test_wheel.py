"""tests/e2e/test_wheel.py: the wheel (scripts/wheel.py, `make wheel`) installed with pip into
fresh virtual environments of every CPython 3.9+ here: the `syncspy` command and `python -m
syncspy run` record a native program with the wheel's own agent (its own libunwind, never the
system's), `syncspy run --sim` runs one on the wheel's own simulated device (and `--sim=12` a
CUDA 12 one on its CUDA 12 device), the files in it need nothing beyond glibc's libraries or each
other, and its tag is the newest glibc they need. A sanitizer build cannot be packed: the script
says which library is not to be had on a manylinux system.

`make wheel` builds the CUDA 12 device (build/sim12) before packing it; `make test` never downloads
its headers, so these tests pack it as `make wheel` does where `make sim12` has built it (CI builds
it first: .ci/run), and check a wheel without it elsewhere; a --sim12 folder without
libcudart.so.12 is refused either way."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import zipfile

from util import BUILD, CLI, LIB, ROOT, SANITIZER_PRELOAD, SIM, SIM12, agent_env, prog, run

WHEEL_PY = os.path.join(ROOT, "scripts", "wheel.py")
PYENV = os.path.expanduser("~/.pyenv/versions")


def pythons():
    """python3 and pyenv's newest patch release of every minor version from 3.9 on."""
    found = {}
    for p in [sys.executable] + sorted(glob.glob(os.path.join(PYENV, "3.*", "bin", "python3"))):
        v = subprocess.run([p, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True).stdout.strip()
        if v and tuple(map(int, v.split("."))) >= (3, 9):
            found[v] = p
    return found


# `make sim12` has built the CUDA 12 device (make wheel builds it first; make test does not)
SIM12_BUILT = os.path.exists(os.path.join(SIM12, "libcudart.so.12"))
SIM_FILES = {"sim": ["libcublas.so.13", "libcublasLt.so.13", "libcuda.so.1", "libcudart.so.13", "libcudnn.so.9",
                     "libcupti.so.13"],
             "sim12": ["libcublas.so.12", "libcublasLt.so.12", "libcuda.so.1", "libcudart.so.12", "libcudnn.so.9",
                       "libcupti.so.12"]}


def build_wheel(out, sim12=SIM12 if SIM12_BUILT else None):
    """As `make wheel` builds it: with the simulated devices."""
    return subprocess.run([sys.executable, WHEEL_PY, "--lib", LIB, "--cli", CLI, "--sim", SIM,
                           *(["--sim12", sim12] if sim12 else []), "--out", out,
                           "--work", os.path.join(out, "work")], capture_output=True, text=True)


class Built(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="syncspy-wheel-")
        cls.built = build_wheel(cls.tmp.name)
        cls.wheels = glob.glob(os.path.join(cls.tmp.name, "syncspy-*.whl"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


class SanitizerBuildRefused(Built):
    """make SAN=asan: the agent needs libasan, which no target machine is promised."""

    def test_refused_with_the_reason(self):
        self.assertEqual(self.built.returncode, 1)
        self.assertRegex(self.built.stderr, r"libsyncspy.so needs libasan\.so\.\d+, which is neither on every "
                                            r"manylinux system nor in the wheel")
        self.assertEqual(self.wheels, [])


class Wheel(Built):
    def test_contents_and_tag(self):
        self.assertEqual(self.built.returncode, 0, self.built.stderr)
        [whl] = self.wheels
        z = zipfile.ZipFile(whl)
        names = set(z.namelist())
        for n in ("syncspy/__init__.py", "syncspy/__main__.py", "syncspy/lightning.py", "syncspy/py.typed",
                  "syncspy/_native/libsyncspy.so", "syncspy/_native/syncspy",
                  "syncspy/_native/libunwind-syncspy.so.8", "syncspy-0.1.0.dist-info/RECORD",
                  "syncspy-0.1.0.dist-info/entry_points.txt"):
            self.assertIn(n, names)
        # the simulated devices under their sonames (a link name would install as a second copy)
        folders = ["sim", "sim12"] if SIM12_BUILT else ["sim"]
        self.assertEqual(sorted(n for n in names if n.startswith("syncspy/_native/sim")),
                         [f"syncspy/_native/{d}/{n}" for d in folders for n in SIM_FILES[d]])
        self.assertIn("syncspy = syncspy.__main__:main", z.read("syncspy-0.1.0.dist-info/entry_points.txt").decode())
        work = os.path.join(self.tmp.name, "work", "_native")
        newest = (0, 0)
        files = [f for f in sorted(os.listdir(work)) if f not in folders] + \
                [os.path.join(d, f) for d in folders for f in sorted(os.listdir(os.path.join(work, d)))]
        for f in files:
            path = os.path.join(work, f)
            dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
            for dep in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
                with self.subTest(file=f, needs=dep):  # glibc's, or a file beside it
                    self.assertTrue(re.match(r"(libc|libm|libdl|libpthread|librt|ld-linux-x86-64)\.so", dep)
                                    or dep in os.listdir(os.path.dirname(path)), dep)
            vers = subprocess.run(["objdump", "-T", path], capture_output=True, text=True).stdout
            newest = max([newest] + [(int(a), int(b)) for a, b in re.findall(r"GLIBC_(\d+)\.(\d+)", vers)])
        self.assertTrue(os.path.basename(whl).endswith(f"-py3-none-manylinux_{newest[0]}_{newest[1]}_x86_64.whl"), whl)
        # the copied libraries answer to their own sonames only
        dyn = subprocess.run(["readelf", "-d", os.path.join(work, "libunwind-syncspy.so.8")], capture_output=True,
                             text=True).stdout
        self.assertIn("Library soname: [libunwind-syncspy.so.8]", dyn)
        self.assertNotIn("[liblzma.so.5]", dyn)

    def test_installs_and_runs_in_every_python(self):
        [whl] = self.wheels
        bare = run([prog("basic"), "2"])
        counts = sorted((s["api"], s["count"]) for s in bare.summary()["sites"])
        found = pythons()
        self.assertIn("3.9", found, "pyenv's CPython 3.9 is the oldest the wheel promises")
        for i, (ver, py) in enumerate(sorted(found.items())):
            with self.subTest(python=ver):
                venv = os.path.join(self.tmp.name, f"venv-{ver}")
                if i == 0:  # the oldest: its own pip, as a user would
                    subprocess.run([py, "-m", "venv", venv], check=True)
                    pip = [os.path.join(venv, "bin", "python"), "-m", "pip"]
                else:       # the others: made without pip, installed into by this pip
                    subprocess.run([py, "-m", "venv", "--without-pip", venv], check=True)
                    pip = [sys.executable, "-m", "pip", "--python", os.path.join(venv, "bin", "python")]
                inst = subprocess.run([*pip, "install", "--no-index", "--disable-pip-version-check", "-q", whl],
                                      capture_output=True, text=True)
                self.assertEqual(inst.returncode, 0, inst.stderr)
                site = glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "syncspy", "_native"))[0]
                for how in ("command", "module"):
                    head = [os.path.join(venv, "bin", "syncspy")] if how == "command" else \
                           [os.path.join(venv, "bin", "python"), "-m", "syncspy"]
                    e, out = agent_env(preload=False)
                    e.pop("PYTHONPATH", None)
                    p = subprocess.run([*head, "run", "--out", out, "--", prog("basic"), "2"], env=e,
                                       capture_output=True, text=True, timeout=60)
                    self.assertEqual(p.returncode, 3, p.stderr)
                    self.assertEqual(p.stdout, bare.stdout)
                    [d] = glob.glob(os.path.join(out, "pid*"))
                    self.assertIn(f"syncspy run: files in {d}/", p.stderr)
                    with open(os.path.join(d, "summary.json")) as f:
                        self.assertEqual(sorted((s["api"], s["count"]) for s in json.load(f)["sites"]), counts)
                # the wheel's agent and its own libunwind, not the build's nor the system's
                e = agent_env(preload=False)[0]
                maps = subprocess.run([os.path.join(venv, "bin", "syncspy"), "run", "--", "cat", "/proc/self/maps"],
                                      env=e, capture_output=True, text=True).stdout
                self.assertIn(os.path.join(site, "libsyncspy.so"), maps)
                self.assertIn(os.path.join(site, "libunwind-syncspy.so.8"), maps)
                self.assertIn(os.path.join(site, "liblzma-syncspy.so.5"), maps)
                self.assertNotRegex(maps, r"/libunwind\.so\.8")
                self.assertNotIn(os.path.realpath(BUILD), maps)
                v = subprocess.run([os.path.join(venv, "bin", "syncspy"), "--version"], capture_output=True, text=True)
                self.assertEqual(v.stdout, "syncspy 0.1.0\n")
                lt = subprocess.run([os.path.join(venv, "bin", "python"), "-c", "import syncspy.lightning"],
                                    capture_output=True, text=True)
                self.assertIn("ImportError: syncspy.lightning needs Lightning (pip install lightning)", lt.stderr)


class Sim12Refused(unittest.TestCase):
    """A --sim12 folder that holds no CUDA 12 runtime (build/sim given by mistake, or none at
    all): no wheel, one line naming what is missing and what builds it."""

    def test_no_cuda12_runtime_no_wheel(self):
        with tempfile.TemporaryDirectory(prefix="syncspy-wheel-") as d:
            for sim12, why in [(SIM, f"{SIM} holds no libcudart.so.12"),
                               (os.path.join(d, "none"), f"no folder {os.path.join(d, 'none')}")]:
                with self.subTest(sim12=sim12):
                    b = build_wheel(d, sim12=sim12)
                    self.assertEqual((b.returncode, b.stderr), (1, f"wheel: {why} (make sim12 builds that "
                                                                   "simulated device)\n"))
                    self.assertEqual(glob.glob(os.path.join(d, "*.whl")), [])


class SimFromTheWheel(Built):
    """`syncspy run --sim` of the installed wheel: a program linked to the toolkit's real
    libcudart, with nothing on the library path, runs on the wheel's own simulated device (never
    the build's), is recorded, and keeps its exit status."""

    def test_runs_on_the_wheels_simulator(self):
        [whl] = self.wheels
        venv = os.path.join(self.tmp.name, "venv-sim")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        inst = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index",
                               "--disable-pip-version-check", "-q", whl], capture_output=True, text=True)
        self.assertEqual(inst.returncode, 0, inst.stderr)
        sim = glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "syncspy", "_native", "sim"))[0]
        e, out = agent_env(preload=False)
        e.pop("LD_LIBRARY_PATH")
        e.pop("PYTHONPATH", None)
        p = subprocess.run([os.path.join(venv, "bin", "syncspy"), "run", "--sim", "--out", out, "--",
                            "sh", "-c", f"{prog('real_runtime')}; grep -F .so /proc/$$/maps"],
                           env=e, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("malloc: 0\nsync: 0\nmemcpy: 0\n"), p.stdout)
        maps = p.stdout  # the shell's own: it has the simulator preloaded too
        self.assertIn(os.path.join(sim, "libcudart.so.13"), maps)
        self.assertIn(os.path.join(sim, "libcuda.so.1"), maps)
        self.assertNotIn(os.path.realpath(BUILD), maps)
        [d] = glob.glob(os.path.join(out, "pid*"))
        with open(os.path.join(d, "summary.json")) as f:
            self.assertEqual(sorted((s["api"], s["count"]) for s in json.load(f)["sites"]),
                             [("cudaDeviceSynchronize", 1), ("cudaMemcpy", 1)])
        # --sim=12: a program that opens libcudart.so.12 by name gets the wheel's CUDA 12 device
        # (where the wheel has one; else the refusal names the folder the wheel lacks)
        ask = ("import ctypes\n"
               "rt = ctypes.CDLL('libcudart.so.12')\n"
               "v, n = ctypes.c_int(), ctypes.c_int()\n"
               "print(rt.cudaRuntimeGetVersion(ctypes.byref(v)), v.value, rt.cudaGetDeviceCount(ctypes.byref(n)), n.value)\n"
               "print(open('/proc/self/maps').read())\n")
        p = subprocess.run([os.path.join(venv, "bin", "syncspy"), "run", "--sim=12", "--out", out, "--", py, "-c", ask],
                           env=e, capture_output=True, text=True, timeout=60)
        sim12 = os.path.join(os.path.dirname(sim), "sim12")
        if not SIM12_BUILT:
            self.assertEqual(p.returncode, 125)
            self.assertIn(f"--sim=12: no simulated device beside this program ({sim12}/libcudart.so.12: No such file",
                          p.stderr)
            return
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("0 12080 0 1\n"), p.stdout[:200])  # CUDA 12.8's runtime, one device
        for n in SIM_FILES["sim12"]:
            self.assertIn(os.path.join(sim12, n), p.stdout)
        self.assertNotIn(os.path.join(sim, "libcudart.so.13"), p.stdout)
        self.assertNotIn(os.path.realpath(BUILD), p.stdout)


# One of the two, by the build (unittest collects the classes left in the module).
if SANITIZER_PRELOAD:
    del Wheel, SimFromTheWheel
else:
    del SanitizerBuildRefused
del Built

if __name__ == "__main__":
    unittest.main()
