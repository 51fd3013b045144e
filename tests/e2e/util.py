"""tests/e2e/util.py: runs a target program under the agent on the simulated device and reads
what it left: the report text, summary.json, the exit status."""
import glob
import json
import os
import re
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
LIB = os.path.join(BUILD, "libsyncspy.so")
CLI = os.path.join(BUILD, "syncspy")
SIM = os.path.join(BUILD, "sim")
SIM12 = os.path.join(BUILD, "sim12")  # `make sim12`: the device for CUDA 12 programs
PROGS = os.path.join(BUILD, "progs")
MS = 1_000_000


def check_summary_parts(s, where=""):
    """What every summary.json must hold (issue 25.4): each site's and thread's start-up and
    open-step parts are parts of its count (start-up none when no step mark came: 'startup' is
    null), and the steps listed add up to the process's syncs. Raises AssertionError."""
    no_startup = s.get("startup") is None
    for kind in ("sites", "threads"):
        for x in s.get(kind) or []:
            total = x["count"] if kind == "sites" else x["syncs"]
            for c, ns in (("startup_count", "startup_blocked_ns"), ("partial_count", "partial_blocked_ns")):
                assert x.get(c, 0) >= 0 and x.get(ns, 0) >= 0, (where, kind, x)
            parts = x.get("startup_count", 0) + x.get("partial_count", 0)
            brief = {k: v for k, v in x.items() if k != "frames"}
            assert parts <= total, f"{where}: {kind[:-1]} parts {parts} > count {total}: {brief}"
            if no_startup:
                assert x.get("startup_count", 0) == 0, f"{where}: start-up count with no start-up: {brief}"
    if not s.get("steps_omitted") and s.get("steps") is not None:
        listed = sum(st["syncs"] for st in s["steps"])
        assert listed == s["syncs"], f"{where}: steps add up to {listed} syncs, the process {s['syncs']}"
        attributed = sum(1 for st in s["steps"] if st.get("attributed"))
        assert attributed == s.get("attribution_steps", 0), \
            f"{where}: {attributed} steps attributed, attribution_steps {s.get('attribution_steps')}"
    check_estimate_parts(s, where)


def check_estimate_parts(s, where=""):
    """The report's estimate in summary.json (issue 24): an unseen backward site's estimated_for
    shares add up to its count and blocked_ns, each names a site with its forward line, and each
    such site's estimate is the sum of the shares it got. Raises AssertionError."""
    sites = s.get("sites") or []
    got = {}
    for i, x in enumerate(sites):
        shares = x.get("estimated_for")
        if shares is None:
            continue
        assert x.get("unseen_cause") in (None, "not_attributed_step"), (where, i, x.get("unseen_cause"))
        assert sum(p["count"] for p in shares) == x["count"], f"{where}: site {i} shares {shares}, count {x['count']}"
        assert sum(p["blocked_ns"] for p in shares) == x["blocked_ns"], f"{where}: site {i} shares {shares}"
        for p in shares:
            assert sites[p["site"]].get("backward_node"), f"{where}: site {i} shared to {p['site']}, no forward line"
            c, ns = got.get(p["site"], (0, 0))
            got[p["site"]] = (c + p["count"], ns + p["blocked_ns"])
    for i, x in enumerate(sites):
        e = x.get("estimate")
        have = (e["count"], e["blocked_ns"]) if e else (0, 0)
        assert have == got.get(i, (0, 0)), f"{where}: site {i} estimate {e}, shares {got.get(i)}"
        if e:
            assert e["attribution_steps"] == s.get("attribution_steps"), (where, i, e)


def table_rates(text):
    """The report table's syncs/step column, row by row (rows start with their rank)."""
    import re
    return [float(m.group(1)) for m in
            re.finditer(r"^\s{1,4}\d+\s+\S+ [mun]?s\s+\S+\s+([\d.]+)\s", text, re.M)]


def check_report_sums(text):
    """Every exit report in text: the header's syncs/step is the sum of its rows' (when every row
    is shown). Raises AssertionError."""
    import re
    for block in re.split(r"(?m)^(?=syncspy: (?:rank \d+ )?pid \d+: )", text)[1:]:
        block = block.split("\nsyncspy: summary in ")[0]
        head = re.search(r"\| ([\d.]+) syncs/step \|", block.split("\n\n")[0])
        if not head or "more site" in block or "#  blocked/step" not in block:
            continue
        rows = table_rates(block)
        assert abs(sum(rows) - float(head.group(1))) <= 0.011 * max(1, len(rows)), \
            f"header {head.group(1)} syncs/step, rows {rows}:\n{block}"


class Run:
    def __init__(self, proc, out_dir):
        self.proc = proc
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.out_dir = out_dir
        # every run's output holds what a reader relies on (summary.json's parts, the report's sums)
        for path in glob.glob(os.path.join(out_dir, "*", "summary.json")):
            try:
                with open(path) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue  # a test of cut or unwritable files: its own checks say what it wants
            check_summary_parts(data, path)
        check_report_sums(self.stderr if isinstance(self.stderr, str) else "")

    def process_dirs(self):
        return sorted(glob.glob(os.path.join(self.out_dir, "*")))

    def summary(self, index=0):
        dirs = self.process_dirs()
        assert dirs, f"no process folder under {self.out_dir}; stderr:\n{self.stderr}"
        with open(os.path.join(dirs[index], "summary.json")) as f:
            return json.load(f)


# The ASan+UBSan build (make SAN=asan e2e): the agent and the simulated device carry ASan, the
# target programs do not, so the ASan runtime is preloaded first. Leak checking is off: the
# programs under test (python3 among them) are not ours.
SANITIZER_PRELOAD = ""
if "asan" in os.path.basename(BUILD):
    SANITIZER_PRELOAD = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                                       text=True).stdout.strip()


GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def assert_golden(test, name, text):
    """text equals tests/e2e/golden/NAME; GOLDEN_WRITE=1 writes it there first (after a
    deliberate change of what the golden file holds: read its diff)."""
    path = os.path.join(GOLDEN, name)
    if os.environ.get("GOLDEN_WRITE"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        test.assertEqual(text, f.read(), f"differs from its golden file {path}")


def preload_value(lib):
    return f"{SANITIZER_PRELOAD} {lib}" if SANITIZER_PRELOAD else lib


def sanitizer_env():
    if not SANITIZER_PRELOAD:
        return {}
    return {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",
            "UBSAN_OPTIONS": "halt_on_error=1:exitcode=87:print_stacktrace=1"}


def agent_env(env=None, preload=True):
    """The environment of a target program: the agent preloaded (or not), the simulated
    libcudart first on the library path, SYNCSPY_OUT a fresh temporary folder unless env sets
    it. Returns (environment, the temporary folder)."""
    out_dir = tempfile.mkdtemp(prefix="syncspy-e2e-")
    e = dict(os.environ)
    e.pop("SYNCSPY_SCHEDULE", None)
    e["LD_LIBRARY_PATH"] = SIM + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
    e["SYNCSPY_OUT"] = out_dir
    e.update(sanitizer_env())
    if preload:
        e["LD_PRELOAD"] = preload_value(LIB)
    elif SANITIZER_PRELOAD:
        e["LD_PRELOAD"] = SANITIZER_PRELOAD  # the simulated device carries ASan too
    if env:
        e.update(env)
        if "LD_PRELOAD" in env and env["LD_PRELOAD"] and SANITIZER_PRELOAD:
            e["LD_PRELOAD"] = preload_value(env["LD_PRELOAD"])
    return e, out_dir


def run(argv, env=None, preload=True, timeout=120, cwd=None):
    """Runs argv with the agent preloaded (and the simulated libcudart first on the library
    path); returns a Run. SYNCSPY_OUT defaults to a fresh temporary folder."""
    e, out_dir = agent_env(env, preload)
    proc = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    return Run(proc, out_dir)


def folder_host():
    """This machine's name as the agent puts it in a rank's folder name (rank<R>-<host>-pid<P>:
    agent/background/identity.c identity_host_for_path)."""
    import re
    import socket
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())[:64]


def sim_devices():
    """cli/run.c's sim_devices (the simulated devices of `syncspy run --sim[=N]`), in their order:
    (version, programs, folder, make target, the libraries in their preload order); the first
    is plain --sim's."""
    with open(os.path.join(ROOT, "cli", "run.c")) as f:
        table = f.read().split("sim_devices[] = {", 1)[1].split("\n};", 1)[0]
    rows = []
    for row in re.findall(r"\{(\"\d+\".*?\})\}", table, re.S):
        head, libs = row.split("{", 1)
        version, programs, folder, target = re.findall(r'"([^"]*)"', head)
        rows.append((version, programs, folder, target, re.findall(r'"(lib\w+\.so\.\d+)"', libs)))
    return rows


def prog(name):
    return os.path.join(PROGS, name)


def process_summaries(out_dir):
    """The summary.json of every process folder under a SYNCSPY_OUT root, in folder order."""
    docs = []
    for d in sorted(glob.glob(os.path.join(out_dir, "*pid*"))):
        with open(os.path.join(d, "summary.json")) as f:
            docs.append(json.load(f))
    return docs


def site_by_function(summary, function_substring, api=None):
    """Sites whose innermost frame's function contains function_substring."""
    found = []
    for s in summary["sites"]:
        if api and s["api"] != api:
            continue
        if s["frames"] and function_substring in (s["frames"][0]["function"] or ""):
            found.append(s)
    return found


def frames_text(site):
    return " <- ".join(f'{f["function"] or "?"}@{os.path.basename(f["module"])}' for f in site["frames"])


# ---- Python programs: the miniature torch (examples/site-packages) on the simulated device ----
PY_SITE = os.path.join(ROOT, "examples", "site-packages")
PY_MODULES = os.path.join(ROOT, "python")
MINITORCH = os.path.join(BUILD, "examples", "site-packages", "torch", "lib", "libminitorch.so")
PYPROGS = os.path.join(ROOT, "tests", "e2e", "pyprogs")
DEMO_PY = os.path.join(ROOT, "examples", "train.py")


def run_py(script, *args, env=None, preload=True, timeout=60, python="python3"):
    """Runs `python3 script args...` (script by absolute path, so Python reports absolute file
    names) with the miniature torch and the syncspy module on PYTHONPATH; `python` names
    another interpreter (local_pythons())."""
    e = {"PYTHONPATH": PY_SITE + os.pathsep + PY_MODULES, "MINITORCH_LIB": MINITORCH,
         "PYTHONDONTWRITEBYTECODE": "1"}
    if env:
        e.update(env)
    return run([python, script, *args], env=e, preload=preload, timeout=timeout)


PYENV_VERSIONS = os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "versions")


def local_pythons():
    """{(3, minor): interpreter} for pyenv's newest patch release of every CPython 3 minor
    version it has here (3.6 to 3.13 on the development machines), and the Debian CPythons
    scripts/debian-cpython.sh laid out under BUILD/cpython-3.Y (`make debian-cpython`: 3.14),
    newest last."""
    newest = {}
    for p in glob.glob(os.path.join(PYENV_VERSIONS, "3.*", "bin", "python3")):
        m = re.match(r"3\.(\d+)\.(\d+)$", os.path.basename(os.path.dirname(os.path.dirname(p))))
        if m:
            minor, patch = int(m.group(1)), int(m.group(2))
            newest[minor] = max(newest.get(minor, (-1, "")), (patch, p))
    for p in glob.glob(os.path.join(BUILD, "cpython-3.*", "usr", "bin", "python3.*")):
        m = re.match(r"python3\.(\d+)$", os.path.basename(p))
        if m and int(m.group(1)) not in newest:
            newest[int(m.group(1))] = (0, p)
    return {(3, minor): newest[minor][1] for minor in sorted(newest)}


def source_line(path, text, after=None):
    """The 1-based number of the only line of path containing text (a marker comment); with
    `after`, of the first line containing text after the first line containing `after`."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = 0
    if after is not None:
        start = next(i for i, line in enumerate(lines) if after in line) + 1
    found = [i + 1 for i in range(start, len(lines)) if text in lines[i]]
    if after is not None:
        found = found[:1]
    assert len(found) == 1, f"{text!r} is on lines {found} of {path}, not on exactly one"
    return found[0]


def python_frames(site):
    return [f for f in site["frames"] if f["python"]]


def user_frame(site, path):
    """The innermost Python frame of the file path (the user's script) among the sync's own
    frames (a backward-pass sync's forward and caller sections, after a marker, do not count),
    or None."""
    for f in site["frames"]:
        if f.get("marker"):
            return None
        if f["python"] and f["file"] == path:
            return f
    return None


def sites_at(summary, path, line, api=None):
    """Sites whose innermost frame in the script path is on line (CPython may reach one line
    through more than one native path, e.g. before and after specializing a call)."""
    found = []
    for s in summary["sites"]:
        f = user_frame(s, path)
        if f and f["line"] == line and (api is None or s["api"] == api):
            found.append(s)
    return found


def count_at(summary, path, line, api=None):
    return sum(s["count"] for s in sites_at(summary, path, line, api))


def report_steps(text):
    """The report header's step counts, as the user counts them: (marks, counted) for the first
    process in text (marks: the step marks made, "30 optimizer steps"; counted: the steps its
    rates count), or None when no step was found ("no step found: whole-run totals")."""
    import re
    m = re.search(r"pid \d+: (\d+) (?:optimizer steps?|training steps?|syncspy\.step\(\) marks?|step marks?)\b.*\n"
                  r"  (?:start-up runs to the first, )?(\d+) steps? counted", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


# `syncspy html`'s page in a real browser: tests/browser/probe.py, run by Debian's python3 (its
# python3-selenium drives Debian's chromium through chromium-driver; scripts/deps.sh installs
# all three).
BROWSER_PYTHON = os.environ.get("SYNCSPY_BROWSER_PYTHON", "/usr/bin/python3")
PROBE = os.path.join(ROOT, "tests", "browser", "probe.py")


def browse(page, *args, timeout=300):
    """Opens page in headless chromium, does what a user does; returns what it showed (dict)."""
    p = subprocess.run([BROWSER_PYTHON, PROBE, page, *args], capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, f"tests/browser/probe.py {page} failed ({p.returncode}):\n{p.stderr[-3000:]}"
    return json.loads(p.stdout)


def rank_section(report_text):
    """The per-rank section of `syncspy report ROOT` as {"header", "no_step", "syncs", "share",
    "waits_most", "stragglers", "partial": [(where, on)], "lines"}."""
    sec = report_text[report_text.index("\n  per rank:") + 1:]
    lines = sec.rstrip("\n").split("\n")
    out = {"header": lines[0].strip(), "lines": lines, "partial": []}
    for i, l in enumerate(lines):
        m = re.match(r"    (syncs/step|blocked share)\s+min (\S+ \(.*?\))  median (\S+)  max (\S+ \(.*?\))$", l)
        if m:
            out["syncs" if m[1] == "syncs/step" else "share"] = {"min": m[2], "median": m[3], "max": m[4]}
        for key, head in (("no_step", "    no step mark"), ("waits_most", "    waits most:"),
                          ("stragglers", "    stragglers:")):
            if l.startswith(head):
                out[key] = re.sub(r"\s+", " ", l.strip())
        if re.match(r"      \S", l) and not l.startswith("      +"):
            out["partial"].append((l.strip(), lines[i + 1].strip()))
    return out
