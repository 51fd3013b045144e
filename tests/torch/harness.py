"""tests/torch/harness.py: runs programs on the real PyTorch wheel (tests/torch/requirements.txt,
installed by `make torch-venv` into build/torch-venv/<X.Y>/) over the simulated CUDA device,
with or without the agent, and reads what they leave (tests/e2e/util.py's Run).

The venv's python runs the program; the simulated libcudart.so.13 / libcuda.so.1 /
libcupti.so.13 and the stand-ins for libcublas.so.13 / libcublasLt.so.13 / libcudnn.so.9 come
first on LD_LIBRARY_PATH, the toolkit's other libraries (cuFFT, cuSPARSE, NVRTC, ...) after them,
as torch expects to find them under CUDA_HOME.

TORCH_PYTHON (set by tests/torch.mk) names the venv's interpreter; TORCH_PYTHONS the others
whose venvs exist, for the tests that must hold on every CPython."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import util  # noqa: E402
from util import BUILD, CLI, LIB, MS, ROOT, SIM, Run  # noqa: E402,F401

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
PROGS = os.path.join(HERE, "progs")
PYTHON = os.environ.get("TORCH_PYTHON") or os.path.join(BUILD, "torch-venv", "3.11", "bin", "python")
PYTHONS = [p for p in os.environ.get("TORCH_PYTHONS", "").split() if p] or [PYTHON]


def library_path():
    """The simulated device first, then the toolkit's libraries (and whatever was set)."""
    parts = [SIM, os.path.join(CUDA_HOME, "lib64")]
    if os.environ.get("LD_LIBRARY_PATH"):
        parts.append(os.environ["LD_LIBRARY_PATH"])
    return ":".join(parts)


def torch_env(env=None):
    e = {"LD_LIBRARY_PATH": library_path(), "PYTHONDONTWRITEBYTECODE": "1",
         "PYTHONPATH": os.path.join(ROOT, "python") + ((":" + env["PYTHONPATH"]) if env and "PYTHONPATH" in env else "")}
    if env:
        e.update({k: v for k, v in env.items() if k != "PYTHONPATH"})
    return e


def run(script, *args, env=None, preload=True, timeout=300, python=None, cwd=None):
    """Runs tests/torch/progs/<script> (or a path) with args on real torch; returns a Run.
    SYNCSPY_OUT is a fresh temporary folder unless env sets it."""
    path = script if os.path.isabs(script) else os.path.join(PROGS, script)
    e = torch_env(env)
    argv = [python or PYTHON, path, *[str(a) for a in args]]
    saved = os.environ.get("LD_LIBRARY_PATH")
    # util.run prepends SIM to the caller's LD_LIBRARY_PATH: hand it ours instead.
    os.environ["LD_LIBRARY_PATH"] = e.pop("LD_LIBRARY_PATH")
    try:
        r = util.run(argv, env=e, preload=preload, timeout=timeout, cwd=cwd)
    finally:
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    return r


def python_code(code, env=None, preload=True, timeout=300, python=None):
    """Runs a snippet of Python on real torch (written to a temporary file)."""
    fd, path = tempfile.mkstemp(prefix="syncspy-torch-", suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write(code)
    try:
        return run(path, env=env, preload=preload, timeout=timeout, python=python)
    finally:
        os.unlink(path)


def cli(*args, timeout=120):
    return subprocess.run([CLI, *[str(a) for a in args]], capture_output=True, text=True, timeout=timeout)


def sites_at(summary, file_suffix, line):
    """The sites of a summary whose innermost Python frame is file_suffix:line."""
    out = []
    for s in summary["sites"]:
        py = [f for f in s["frames"] if f.get("python")]
        if py and py[0]["file"].endswith(file_suffix) and py[0]["line"] == line:
            out.append(s)
    return out


def marked_lines(path):
    """{name: line} of the `# sync: NAME` markers in a program file."""
    marks = {}
    with open(path if os.path.isabs(path) else os.path.join(PROGS, path)) as f:
        for n, text in enumerate(f, 1):
            if "# sync:" in text:
                marks[text.split("# sync:")[1].split()[0]] = n
    return marks
