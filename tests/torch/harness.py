"""tests/torch/harness.py: runs programs on the real PyTorch wheel (tests/torch/requirements.txt,
installed by `make torch-venv` into build/torch-venv/<X.Y>/) over the simulated CUDA device,
with or without the agent, and reads what they leave (tests/e2e/util.py's Run).

The venv's python runs the program; the simulated libcudart.so.13 / libcuda.so.1 /
libcupti.so.13 and the stand-ins for libcublas.so.13 / libcublasLt.so.13 / libcudnn.so.9 come
first on LD_LIBRARY_PATH, the toolkit's other libraries (cuFFT, cuSPARSE, NVRTC, ...) after them,
as torch expects to find them under CUDA_HOME. A venv whose torch is a CUDA 12 build
(torch.version.cuda 12.x: `make torch-venv TORCH_VERSION=2.8`) runs on build/sim12's
libcudart.so.12 & co. instead, without CUDA_HOME's CUDA 13 libraries: its venv has the NVIDIA
CUDA 12 wheels for the rest.

TORCH_PYTHON (set by tests/torch.mk) names the venv's interpreter; TORCH_PYTHONS the others
whose venvs exist, for the tests that must hold on every CPython."""
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(os.path.dirname(HERE), "e2e"))
import util  # noqa: E402
from util import (BUILD, CLI, LIB, MS, ROOT, SIM, SIM12, Run, count_at, frames_text,  # noqa: E402,F401
                  python_frames, sites_at, user_frame)

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
PROGS = os.path.join(HERE, "progs")
DEMO = os.path.join(ROOT, "examples", "seg_loss.py")  # the seed-003 loop: the demo and the test bed
PYTHON = os.environ.get("TORCH_PYTHON") or os.path.join(BUILD, "torch-venv", "3.11", "bin", "python")
PYTHONS = [p for p in os.environ.get("TORCH_PYTHONS", "").split() if p] or [PYTHON]
# the venv with the pinned pytest and syncspy's package installed (`make pytest-venv`)
PYTEST_PYTHON = os.environ.get("PYTEST_PYTHON") or os.path.join(BUILD, "pytest-venv", "bin", "python")


_TORCH_VERSIONS = {}


def torch_version(python=None):
    """The (major, minor) of the torch a venv's python has (from its metadata, read once)."""
    python = python or PYTHON
    if python not in _TORCH_VERSIONS:
        out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                             capture_output=True, text=True, timeout=120).stdout.strip()
        _TORCH_VERSIONS[python] = tuple(int(x) for x in out.split("+")[0].split(".")[:2])
    return _TORCH_VERSIONS[python]


def torch_cuda_major(python=None):
    """The CUDA major version the torch of python's venv (default PYTHON) was built for, from
    its torch/version.py (torch.version.cuda, read without importing torch); None without one."""
    prefix = os.path.dirname(os.path.dirname(python or PYTHON))
    for path in glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages", "torch", "version.py")):
        with open(path) as f:
            m = re.search(r"^cuda\b[^=\n]*=\s*'(\d+)\.", f.read(), re.M)
        if m:
            return int(m.group(1))
    return None


def sim_for(python=None):
    """The simulated device's folder for python's torch: build/sim12 for a CUDA 12 build."""
    return SIM12 if torch_cuda_major(python) == 12 else SIM


def library_path(python=None):
    """The simulated device first, then the toolkit's libraries (and whatever was set); for a
    CUDA 12 torch build/sim12 and no toolkit (CUDA 13's libraries would shadow its wheels')."""
    sim = sim_for(python)
    parts = [sim] if sim == SIM12 else [sim, os.path.join(CUDA_HOME, "lib64")]
    if os.environ.get("LD_LIBRARY_PATH"):
        parts.append(os.environ["LD_LIBRARY_PATH"])
    return ":".join(parts)


def torch_env(env=None, python=None):
    e = {"LD_LIBRARY_PATH": library_path(python), "PYTHONDONTWRITEBYTECODE": "1",
         "PYTHONPATH": os.path.join(ROOT, "python") + ((":" + env["PYTHONPATH"]) if env and "PYTHONPATH" in env else "")}
    if env:
        e.update({k: v for k, v in env.items() if k != "PYTHONPATH"})
    return e


def aborted_by_torch(r):
    """A run that died of SIGABRT from a joinable std::thread destroyed (nothing else)."""
    return (r.returncode == -6
            and "terminate called without an active exception" in r.stderr[-4000:])


def run(script, *args, env=None, preload=True, timeout=300, python=None, cwd=None, module=False):
    """Runs tests/torch/progs/<script> (or a path) with args on real torch; returns a Run.
    SYNCSPY_OUT is a fresh temporary folder unless env sets it. module: script is an
    interpreter option ("-m"), passed as it is."""
    path = script if os.path.isabs(script) or module else os.path.join(PROGS, script)
    # env's LD_LIBRARY_PATH replaces the one util.run makes (build/sim first, which a CUDA 12
    # torch must not see): ours, exactly
    e = torch_env(env, python)
    argv = [python or PYTHON, path, *[str(a) for a in args]]
    r = util.run(argv, env=e, preload=preload, timeout=timeout, cwd=cwd)
    # torch over the simulator now and then ends with std::terminate at exit, with the agent or
    # without (1 in 30 plain runs of progs/backward.py, cause not found: docs/RELIABILITY.md):
    # such a run is run again, in a fresh folder, and said. With the agent once; without it
    # (nothing of ours runs there) up to three times: a plain run of `backward.py raises`
    # aborted twice in a row once on a loaded machine (2026-12-07)
    again = 1 if preload else 3
    while again and aborted_by_torch(r) and not (env and "SYNCSPY_OUT" in env):
        again -= 1
        sys.stderr.write("harness: %s aborted at exit (%s), run again\n"
                         % (" ".join(argv[1:3]), "agent" if preload else "plain"))
        r = util.run(argv, env=e, preload=preload, timeout=timeout, cwd=cwd)
    return r


def pytest(*args, env=None, preload=True, timeout=300, cwd=None):
    """Runs `python -m pytest ARGS` in the pytest venv on real torch (its syncspy plugin comes
    from the package's pytest11 entry point); returns a Run."""
    if not os.path.exists(PYTEST_PYTHON):
        raise AssertionError(f"no pytest venv at {PYTEST_PYTHON}: make pytest-venv")
    return run("-m", "pytest", "-p", "no:cacheprovider", *args, env=env, preload=preload,
               timeout=timeout, python=PYTEST_PYTHON, cwd=cwd, module=True)


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


def cli_run_in(cwd, *args, timeout=300):
    """The syncspy program run in the folder cwd (where it looks for pyproject.toml), with the
    torch runs' environment (the simulated device first on the library path)."""
    return subprocess.run([CLI, *[str(a) for a in args]], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=dict(os.environ, **torch_env(None, None)))


def report_groups(text):
    """The exit report's rows (the groups of sites by line): for each, a dict with its rank,
    "head" (the row itself: blocked/step, share, syncs/step, mean, max, api), "at" (the
    innermost user frame's line: "at FUNCTION FILE:LINE ...", or for a backward-pass sync
    "backward of FUNCTION FILE:LINE ..." with "backward" True), "lines" (all of its lines) and
    "hint" (the hint's text, or None)."""
    groups, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^\s{1,4}(\d+)\s+\S", line)
        if m and not line.lstrip().startswith(("at ", "via ", "hint:")):
            cur = {"rank": int(m.group(1)), "head": line.strip(), "at": None, "lines": [line],
                   "hint": None, "backward": False}
            groups.append(cur)
            continue
        if cur is None:
            continue
        if line.startswith("syncspy:"):
            cur = None
            continue
        cur["lines"].append(line)
        stripped = line.strip()
        if stripped.startswith(("at ", "backward of ")) and cur["at"] is None:
            cur["at"] = stripped
            cur["backward"] = stripped.startswith("backward of ")
        elif stripped.startswith("hint:"):
            cur["hint"] = stripped[len("hint:"):].strip()
    return groups


def group_at(text, file_name, line, backward=False):
    """The report's group whose line is FILE:LINE (file_name a base name): the line's own syncs,
    or with backward=True the syncs of the backward of what that line created; None if none."""
    for g in report_groups(text):
        if g["at"] and g["backward"] == backward and re.search(rf"[/ ]{re.escape(file_name)}:{line}\b", g["at"]):
            return g
    return None


def sections(site):
    """A site's frames split at its section markers: (own, node, forward, caller)."""
    own, forward, caller, node, cur = [], [], [], None, None
    cur = own
    for f in site["frames"]:
        if f.get("marker") == "backward":
            node, cur = f["function"], forward
        elif f.get("marker") == "backward_caller":
            cur = caller
        elif f.get("marker") == "backward_unseen":
            continue  # why it has no forward line (site["unseen_cause"])
        else:
            cur.append(f)
    return own, node, forward, caller


def backward_sites(summary, node=None):
    """Sites that ran in an autograd node's backward (attributed or not), by their own frames."""
    out = []
    for s in summary["sites"]:
        own = sections(s)[0]
        names = [f["function"] or "" for f in own]
        if any("torch::autograd::generated::" in n and "::apply" in n for n in names) or \
           any("torch::autograd::PyNode::apply" in n for n in names):
            if node is None or s.get("backward_node") in (None, node):
                out.append(s)
    return out


def prog(name):
    return name if os.path.isabs(name) else os.path.join(PROGS, name)


def marked_lines(path, tag="sync"):
    """{name: line} of the `# sync: NAME` (or `# <tag>: NAME`) markers in a program file."""
    marks = {}
    with open(prog(path)) as f:
        for n, text in enumerate(f, 1):
            m = re.search(rf"# {tag}: (\w+)\s*$", text)
            if m:
                marks[m.group(1)] = n
    return marks


def complete_steps(summary):
    return [st for st in summary["steps"] if not st["partial"]]


def training_thread_syncs(text):
    """The training thread's own syncs per step, from the report's header: its line when other
    threads synced too ("the training thread, python (tid 5), waited ... (4.00 syncs/step)"), else
    the header's figure (it synced alone)."""
    m = re.search(r"^  the training thread, .*?, waited \S+ \S+/step, [0-9.]+% of the step "
                  r"\(([0-9.]+) syncs/step\)", text, re.M)
    if m:
        return float(m.group(1))
    m = re.search(r"\| ([0-9.]+) syncs/step \|", text)
    return float(m.group(1)) if m else None


def other_thread_rates(text):
    """The other threads on the training thread's line: [(name, tid, syncs per step)]."""
    m = re.search(r"^  the training thread, .*$", text, re.M)
    if not m:
        return []
    return [(n, int(t), float(r)) for n, t, r in
            re.findall(r"; (\S+) \(tid (\d+)\) \S+ \S+/step \(([0-9.]+) syncs\)", m.group(0))]
