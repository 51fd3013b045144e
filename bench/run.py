"""bench/run.py: `make bench`. Measures what the agent adds, against the targets of
docs/PERFORMANCE.md, and ends with a table (target, limit, measured, ok/MISSED). The headline
rows: real PyTorch on the simulated device, the seed-003 loop (bench/torch_loop.py).

    python3 bench/run.py [--build build] [--quick] [--only NAME,...] [--keep] [--agent SO]

Method (docs/PERFORMANCE.md says more):
- Per-call costs are in-process A/B: bench/bench_cuda.c (and bench/bench_py.py) call the CUDA
  entry point through the agent's shim and directly in the runtime in alternating batches; the
  figure is the median of the paired differences (ns per call). Run against a null runtime
  (bench/nullcudart.c) the difference is the agent's own cost; against the simulated device it
  also carries the simulator's noise (second figure). The same A/B without the agent loaded is
  the control (its difference is the noise floor).
- callgrind instruction counts (Ir per call: inclusive cost of the shim arm minus the direct
  arm) are the stable figure.
- The training loop is an in-process A/B too (steps alternate); the memory is whole-process
  runs with and without the agent; the flusher a run with the agent (drops from its trace).
- Real torch (bench/torch_loop.py, skipped with a note when the venv is missing): processes
  with and without the agent alternate (ratio of their median step times, spread printed),
  recorded steps against unrecorded ones in one process, peak RSS, exit time.
- Peers (bench/peers.py, skipped with a note without the torch and py-spy venvs): the same loop
  under torch.profiler, set_sync_debug_mode("warn") and py-spy: information rows, no target.
Results: the table on stdout, $BUILD/bench/results.json and $BUILD/bench/results.md.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
P = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
P.add_argument("--build", default="build")
P.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run, not figures)")
P.add_argument("--only", default="", help="comma-separated benchmark names (see BENCHES)")
P.add_argument("--keep", action="store_true", help="keep the large files (traces, exports)")
P.add_argument("--torch-memory-pairs", type=int, default=3,
               help="pairs of processes at each length in memory_torch (default 3)")
P.add_argument("--agent", default="", help="measure this libsyncspy.so instead of BUILD's (e.g. a "
               "candidate change built elsewhere); the bench programs stay BUILD's")
ARGS = P.parse_args()

BUILD = os.path.abspath(os.path.join(ROOT, ARGS.build))
BDIR = os.path.join(BUILD, "bench")
OUT = os.path.join(BDIR, "out")
AGENT = os.path.abspath(ARGS.agent) if ARGS.agent else os.path.join(BUILD, "libsyncspy.so")
CLI = os.path.join(BUILD, "syncspy")
SIM_DIR = os.path.join(BUILD, "sim")
NULL_DIR = os.path.join(BDIR, "null")
BENCH = os.path.join(BDIR, "bench_cuda")
PYLIB = os.path.join(BDIR, "libbenchlib.so")
Q = ARGS.quick
ROWS = []     # the table
RESULTS = {}  # everything measured, for results.json


def say(msg):
    print(msg, flush=True)


def median(v):
    return statistics.median(v) if v else float("nan")


def quantile(v, q):
    s = sorted(v)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, int(q * len(s)))]


def env_for(runtime, agent, extra=None, out_name="run", defaults=False):
    """The environment of one run. The A/B runs set SYNCSPY_CUPTI=off: with CUPTI the agent
    also records the calls that bypass the shim (entry/cupti.c; the simulator has a
    libcupti), which would put agent work in the direct arm too. defaults=True keeps every
    SYNCSPY_* setting at its default (memory, flusher)."""
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("SYNCSPY_") or k.startswith("SIMCUDA_") or k == "LD_PRELOAD":
            del e[k]
    e["LD_LIBRARY_PATH"] = NULL_DIR if runtime == "null" else SIM_DIR
    e["SIMCUDA_KERNEL_NS"] = "0"
    e["SYNCSPY_OUT"] = os.path.join(OUT, out_name)
    e["SYNCSPY_REPORT"] = "off"
    if agent:
        e["LD_PRELOAD"] = AGENT
    if not defaults:
        e["SYNCSPY_CUPTI"] = "off"
    if extra:
        e.update(extra)
    return e


def run_json(cmd, env, timeout=600):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_rusage(cmd, env, stdout=subprocess.DEVNULL):
    """Wall seconds, peak RSS (KiB), exit status and stderr of one process, run through
    bench/peakrss.c (ru_maxrss of a child forked from Python would start at Python's RSS)."""
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(BDIR, "peakrss")] + cmd, env=env, stdout=stdout,
                       stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    err = r.stderr.decode(errors="replace")
    lines = err.rstrip().splitlines()
    info = json.loads(lines[-1]) if lines and lines[-1].startswith("{\"peakrss_kib\"") else {}
    return wall, info.get("peakrss_kib", -1), r.returncode, "\n".join(lines[:-1])


def ab(d):
    a, b = d["shim_ns"], d["direct_ns"]
    diffs = [x - y for x, y in zip(a, b)]
    r = {"added_ns": median(diffs), "q1": quantile(diffs, 0.25), "q3": quantile(diffs, 0.75),
         "shim_ns": median(a), "direct_ns": median(b), "pairs": len(diffs)}
    if "floor_ns" in d:
        r["floor_added_ns"] = median([x - y for x, y in zip(d["floor_ns"], b)])
    return r


def ab_runs(cmd, env, runs):
    """ab() of each of `runs` processes, and the median over processes: this machine's speed
    shifts between runs (shared, 2 cores), so one process is one sample."""
    each = [ab(run_json(cmd, env)) for _ in range(runs)]
    r = {"added_ns": median([e["added_ns"] for e in each]),
         "added_min_ns": min(e["added_ns"] for e in each),
         "added_max_ns": max(e["added_ns"] for e in each),
         "shim_ns": median([e["shim_ns"] for e in each]),
         "direct_ns": median([e["direct_ns"] for e in each]), "runs": each}
    if "floor_added_ns" in each[0]:
        r["floor_added_ns"] = median([e["floor_added_ns"] for e in each])
    return r


def rng(r):
    return "%s..%s over %d runs" % (fmt_ns(r["added_min_ns"]), fmt_ns(r["added_max_ns"]), len(r["runs"]))


def row(target, limit, measured, ok, figures, cmd):
    ROWS.append({"target": target, "limit": limit, "measured": measured,
                 "ok": "ok" if ok is True else ("MISSED" if ok is False else ok),
                 "figures": figures, "command": cmd})


def fmt_ns(x):
    return "%.2f ns" % x if abs(x) < 10 else ("%.0f ns" % x if abs(x) < 10000 else "%.1f us" % (x / 1000))


def check_frames(out_name, want_frames, want_python=None):
    """The deepest site's frame counts in the agent's summary.json (the stack really was
    want_frames deep / had want_python Python frames)."""
    base = os.path.join(OUT, out_name)
    best = None
    for d in os.listdir(base) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, d, "summary.json")) as f:
                j = json.load(f)
        except (OSError, ValueError):
            continue
        for s in j.get("sites", []):
            n, npy = len(s["frames"]), sum(1 for fr in s["frames"] if fr.get("python"))
            if s["api"] == "cudaStreamSynchronize" and (best is None or s["count"] > best[0]):
                best = (s["count"], n, npy)
    if not best:
        return "no summary.json"
    note = "%d frames" % best[1] + (", %d Python" % best[2] if want_python is not None else "")
    bad = best[1] != want_frames if want_python is None else best[2] != want_python
    return note + (" (expected %s!)" % (want_frames if want_python is None else want_python) if bad else "")


# ---- callgrind ---------------------------------------------------------------------------

def callgrind(name, args, extra_env=None):
    """Ir per call of the shim arm minus the direct arm (inclusive), and the self Ir of
    libsyncspy.so per call, from one callgrind run of bench_cuda cg-* (simulated device)."""
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        return None
    out = os.path.join(BDIR, "callgrind.%s.out" % name)
    env = env_for("sim", True, extra_env, out_name="cg-" + name)
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--callgrind-out-file=" + out,
           "-q", BENCH] + args
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        say("  callgrind %s failed: %s" % (name, r.stderr[-500:]))
        return None
    n = int(args[-1])
    incl = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                          capture_output=True, text=True).stdout
    self_ = subprocess.run(["callgrind_annotate", "--threshold=100", out],
                           capture_output=True, text=True).stdout
    line = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*?):([^\s:]+)(?:\s+\[(.*)\])?\s*$")

    def table(text):
        for ln in text.splitlines():
            m = line.match(ln)
            if m:
                yield int(m.group(1).replace(",", "")), m.group(3), m.group(4) or ""

    inc = {}
    for ir, fn, _ in table(incl):
        inc[fn] = max(inc.get(fn, 0), ir)
    arm = "launch" if args[0] == "cg-launch" else "sync"
    shim, direct = inc.get("cg_%s_shim" % arm), inc.get("cg_%s_direct" % arm)
    agent_self, per_fn = 0, {}
    for ir, fn, obj in table(self_):
        if obj.endswith("libsyncspy.so"):
            agent_self += ir
            per_fn[fn] = per_fn.get(fn, 0) + ir
    if shim is None or direct is None:
        return None
    top = sorted(per_fn.items(), key=lambda kv: -kv[1])[:8]
    return {"ir_added": (shim - direct) / n, "ir_shim": shim / n, "ir_direct": direct / n,
            "ir_agent_self": agent_self / n,
            "agent_functions": {k: round(v / n, 1) for k, v in top}, "calls": n,
            "command": "valgrind --tool=callgrind --collect-atstart=no %s %s" % (
                os.path.relpath(BENCH, ROOT), " ".join(args))}


# ---- the benchmarks -----------------------------------------------------------------------

def torch_python(target):
    """The torch venv's interpreter; None when there is none (a row named target says so)."""
    python = os.path.join(BUILD, "torch-venv", "%d.%d" % sys.version_info[:2], "bin", "python")
    if os.path.exists(python):
        return python
    row(target, "-", "skipped", "info",
        "no venv at %s (make torch-venv)" % os.path.relpath(python, ROOT), "")
    return None


def bench_torch():
    if not torch_python("real torch: seed-003 loop"):
        return
    out = os.path.join(BDIR, "torch_loop.json")
    cmd = [sys.executable, os.path.join(ROOT, "bench", "torch_loop.py"), "--build", BUILD,
           "--agent", AGENT, "--json", out] + (["--quick"] if Q else [])
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, timeout=3600)
    with open(out) as f:
        res = json.load(f)
    RESULTS["torch"] = res
    rec, unrec, inp, long_ = res["recorded"], res["unrecorded"], res["in_process"], res["long"]
    c = "python3 bench/torch_loop.py --build %s" % ARGS.build + (" --quick" if Q else "")

    def pct(r):
        return "%+.2f %%" % (100 * (r["ratio_median"] - 1))

    def spread(r):
        return "median of %d pairs of %d steps, ratios %.3f..%.3f; step %.3f ms without, %.3f ms with" % (
            r["pairs"], res["steps"], r["ratio_min"], r["ratio_max"], r["plain_step_ms"],
            r["agent_step_ms"])
    row("real torch, seed-003 loop: added time", "<= 1 %", pct(rec), rec["ratio_median"] <= 1.01,
        "processes with and without the agent alternating, default settings: %s; the spread is "
        "the machine's (one process against the next moves +-10 %% here)" % spread(rec), c)
    row("  recording a step (in process)", "<= 1 %", "%+.2f %%" % inp["added_pct"],
        inp["added_pct"] <= 1.0,
        "SYNCSPY_SCHEDULE=wait=1,active=1: each recorded step against the unrecorded ones either "
        "side of it, median %+.1f us on %.3f ms (%d processes of %d steps, %+.2f..%+.2f %%)" % (
            inp["added_us"], inp["step_ms"], len(inp["runs"]), inp["steps"], inp["added_pct_min"],
            inp["added_pct_max"]), c)
    row("  steps the schedule does not record", "<= 0.2 %", pct(unrec),
        unrec["ratio_median"] <= 1.002,
        "SYNCSPY_SCHEDULE=skip_first=%d,active=1 (no step recorded): %s" % (res["steps"] * 10, spread(unrec)), c)
    grow = long_["added_peak_mib"] - rec["added_peak_mib"]
    worst = max(rec["added_peak_mib"], unrec["added_peak_mib"], long_["added_peak_mib"])
    row("real torch: peak RSS added", "<= 32 MiB, flat", "%.1f MiB" % worst,
        worst <= 32 and abs(grow) <= 2,
        "ru_maxrss (exit report included), median agent - plain: %.1f MiB at %d steps, %.1f MiB at "
        "%d (growth %+.1f MiB), %.1f MiB with no step recorded; sampled every 20 ms in the longer "
        "run: max %.0f MiB with, %.0f MiB without; without the agent %.0f MiB" % (
            rec["added_peak_mib"], res["steps"], long_["added_peak_mib"], long_["steps"], grow,
            unrec["added_peak_mib"], long_.get("agent_rss_sampled_max_mib", -1),
            long_.get("plain_rss_sampled_max_mib", -1), rec["plain_peak_mib"]), c)
    ex = max(rec.get("added_exit_s", 0), long_.get("added_exit_s", 0))
    row("real torch: exit (report, summary.json, trace)", "<= 1 s", "%+.2f s" % ex, ex <= 1.0,
        "from the program's last line to the end of the process, agent - plain: %+.2f s at %d "
        "steps, %+.2f s at %d" % (rec.get("added_exit_s", 0), res["steps"],
                                  long_.get("added_exit_s", 0), long_["steps"]), c)


def bench_torch_ir():
    """bench/torch_ir.py: the seed-003 loop's instructions per step, every thread, in four arms
    (callgrind; the stable figure beside the wall-clock ones of bench_torch)."""
    ver = "%d.%d" % sys.version_info[:2]
    python = os.path.join(BUILD, "torch-venv", ver, "bin", "python")
    if not os.path.exists(python) or not shutil.which("valgrind"):
        row("real torch: instructions per step", "-", "skipped", "info",
            "needs %s (make torch-venv) and valgrind" % os.path.relpath(python, ROOT), "")
        return
    out = os.path.join(BDIR, "torch_ir.json")
    cmd = [sys.executable, os.path.join(ROOT, "bench", "torch_ir.py"), "--build", BUILD,
           "--agent", AGENT, "--json", out] + (["--steps", "20", "--warmup", "20"] if Q else [])
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, timeout=3600)
    with open(out) as f:
        res = json.load(f)
    RESULTS["torch_ir"] = res
    c = "python3 bench/torch_ir.py --build %s" % ARGS.build
    plain = res["ir_per_step"]["plain"]
    for name in ("unrecorded step", "recording", "attribution", "recorded and attributed step"):
        a = res["added"][name]
        row("real torch, instructions: %s" % name, "-",
            "%+.0f Ir (%+.2f %%)" % (a["ir"], a["pct_of_plain"]), "info",
            "callgrind, every thread, %d steps after %d, Ir per step added over %.0f Ir of a plain "
            "step" % (res["steps"], res["warmup"], plain), c)


def bench_peers():
    """syncspy against torch.profiler, set_sync_debug_mode and py-spy (bench/peers.py): one
    information row per tool (no target: the figures are docs/PERFORMANCE.md's "Peers")."""
    ver = "%d.%d" % sys.version_info[:2]
    need = [os.path.join(BUILD, "torch-venv", ver, "bin", "python"),
            os.path.join(BUILD, "pyspy-venv", "bin", "py-spy")]
    missing = [p for p in need if not os.path.exists(p)]
    if missing:
        row("peers", "-", "skipped", "info", "no %s (make torch-venv pyspy-venv)" % ", ".join(
            os.path.relpath(p, ROOT) for p in missing), "")
        return
    out = os.path.join(BDIR, "peers.json")
    cmd = [sys.executable, os.path.join(ROOT, "bench", "peers.py"), "--build", BUILD, "--json",
           out] + (["--quick"] if Q else [])
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, timeout=3600)
    with open(out) as f:
        res = json.load(f)
    RESULTS["peers"] = res
    c = "python3 bench/peers.py --build %s" % ARGS.build + (" --quick" if Q else "")
    marks = len(res["marked_lines"])
    for tool, r in res["tools"].items():
        if tool == "plain":
            continue
        inp = res["in_process"].get(tool)
        row("peers: " + tool, "-", "x%.3f" % r["ratio"], "info",
            "step time against no tool, median of %d rounds of %d steps (%s); in process %s; "
            "RSS %+.0f MiB; exit %+.2f s; output %d bytes; sync lines named %d of %d%s" % (
                res["rounds"], res["steps"], ", ".join("%.3f" % x for x in r["ratios"]),
                "%+.2f %%" % inp["added_pct"] if inp else "-", r["added_peak_mib"],
                r["added_exit_s"] or 0, r["out_bytes"], len(r["lines"]), marks,
                " (" + "; ".join(r["notes"]) + ")" if r["notes"] else ""), c)


def bench_launch():
    reps, runs = (100, 2) if Q else (600, 7)
    cmd = [BENCH, "launch", "1000", str(reps)]
    sched = {"SYNCSPY_SCHEDULE": "skip_first=1000000,active=1"}
    res = {"null_agent": ab_runs(cmd, env_for("null", True), runs),
           "null_control": ab_runs(cmd, env_for("null", False), 1),
           "null_unrecorded": ab_runs(cmd, env_for("null", True, sched), runs),
           "sim_agent": ab_runs(cmd, env_for("sim", True), max(1, runs // 2)),
           "sim_control": ab_runs(cmd, env_for("sim", False), 1)}
    sparse_cmd = [BENCH, "launch", "200", str(30 if Q else 100), "2000"]
    res["null_sparse"] = ab_runs(sparse_cmd, env_for("null", True), 1 if Q else 3)
    n = str(20000 if Q else 200000)
    res["callgrind"] = callgrind("launch", ["cg-launch", n])
    res["callgrind_unrecorded"] = callgrind("launch-unrecorded", ["cg-launch", n], sched)
    RESULTS["launch"] = res
    cg, cgu = res["callgrind"] or {}, res["callgrind_unrecorded"] or {}
    c = "LD_LIBRARY_PATH=%s/bench/null LD_PRELOAD=%s/libsyncspy.so %s launch 1000 %d" % (
        ARGS.build, ARGS.build, os.path.relpath(BENCH, ROOT), reps)
    na, nu = res["null_agent"], res["null_unrecorded"]
    row("kernel launch fast path", "<= 5 ns", fmt_ns(na["added_ns"]), na["added_ns"] <= 5,
        "null runtime A/B, median of %s (control %s); floor (TLS counter + forwarding wrapper) %s; "
        "simulator A/B %s (control %s); callgrind %s Ir/launch, of which the agent's own code %s Ir" % (
            rng(na), fmt_ns(res["null_control"]["added_ns"]), fmt_ns(na["floor_added_ns"]),
            fmt_ns(res["sim_agent"]["added_ns"]), fmt_ns(res["sim_control"]["added_ns"]),
            "%.1f" % cg["ir_added"] if cg else "n/a", "%.1f" % cg["ir_agent_self"] if cg else "n/a"), c)
    sp = res["null_sparse"]
    row("  (info) launches 2 us apart (host work between them)", "-", fmt_ns(sp["added_ns"]), "info",
        "null runtime A/B, median of %s; floor %s: sparse calls find the agent's code and data "
        "colder than a back-to-back loop" % (rng(sp), fmt_ns(sp["floor_added_ns"])),
        c.replace("launch 1000 %d" % reps, "launch 200 100 2000"))
    row("launch, step not recorded", "<= 2 ns", fmt_ns(nu["added_ns"]), nu["added_ns"] <= 2,
        "SYNCSPY_SCHEDULE=skip_first=1000000,active=1; null runtime A/B, median of %s; floor %s; "
        "callgrind %s Ir/launch" % (rng(nu), fmt_ns(nu["floor_added_ns"]),
                                    "%.1f" % cgu["ir_added"] if cgu else "n/a"),
        "SYNCSPY_SCHEDULE=skip_first=1000000,active=1 " + c)


def bench_sync():
    reps, batch, runs = (40, 50, 1) if Q else (300, 200, 3)
    cmd = [BENCH, "sync", "24", str(batch), str(reps)]
    sched = {"SYNCSPY_SCHEDULE": "skip_first=1000000,active=1"}
    res = {"null_agent": ab_runs(cmd, env_for("null", True, out_name="sync-null"), runs),
           "null_control": ab_runs(cmd, env_for("null", False), 1)}
    res["frames"] = check_frames("sync-null", 24)
    res["null_unrecorded"] = ab_runs(cmd, env_for("null", True, sched), runs)
    sparse_cmd = [BENCH, "sync", "24", "10", str(20 if Q else 60), "100000"]
    res["null_sparse"] = ab_runs(sparse_cmd, env_for("null", True), 1 if Q else 3)
    sim_cmd = [BENCH, "sync", "24", "20", str(20 if Q else 100)]
    res["sim_agent"] = ab_runs(sim_cmd, env_for("sim", True), 1)
    res["sim_control"] = ab_runs(sim_cmd, env_for("sim", False), 1)
    n = str(500 if Q else 5000)
    res["callgrind"] = callgrind("sync", ["cg-sync", "24", n])
    res["callgrind_unrecorded"] = callgrind("sync-unrecorded", ["cg-sync", "24", n], sched)
    cupti = {"SYNCSPY_CUPTI": "auto"}
    res["callgrind_cupti"] = callgrind("sync-cupti", ["cg-sync", "24", n], cupti)
    nl = str(20000 if Q else 200000)
    res["callgrind_launch"] = callgrind("launch-ref", ["cg-launch", nl])
    res["callgrind_launch_cupti"] = callgrind("launch-cupti", ["cg-launch", nl], cupti)
    RESULTS["sync"] = res
    cg, cgu = res["callgrind"] or {}, res["callgrind_unrecorded"] or {}
    c = "LD_LIBRARY_PATH=%s/bench/null LD_PRELOAD=%s/libsyncspy.so %s sync 24 %d %d" % (
        ARGS.build, ARGS.build, os.path.relpath(BENCH, ROOT), batch, reps)
    na, nu = res["null_agent"], res["null_unrecorded"]
    row("sync, 24-frame native stack seen before", "<= 1 us", fmt_ns(na["added_ns"]), na["added_ns"] <= 1000,
        "null runtime A/B, median of %s (control %s, stack %s); simulator A/B %s (control %s: the "
        "simulator's sync sleeps 30-80 us); callgrind %s Ir/sync" % (
            rng(na), fmt_ns(res["null_control"]["added_ns"]), res["frames"],
            fmt_ns(res["sim_agent"]["added_ns"]), fmt_ns(res["sim_control"]["added_ns"]),
            "%.0f" % cg["ir_added"] if cg else "n/a"), c)
    sp = res["null_sparse"]
    row("  (info) syncs 100 us apart (host work between them)", "-", fmt_ns(sp["added_ns"]), "info",
        "null runtime A/B, median of %s: what a sync costs in a training loop, where the unwinder's "
        "and the tables' cache lines have gone cold since the last one" % rng(sp),
        c.replace("sync 24 %d %d" % (batch, reps), "sync 24 10 60 100000"))
    cc, lr, lc = res["callgrind_cupti"], res["callgrind_launch"], res["callgrind_launch_cupti"]
    if cg and cc and lr and lc:
        # Ir counts are deterministic, so runs with and without CUPTI compare across processes.
        res["cupti_ir"] = {"sync_bypassing_shim": cc["ir_direct"] - cg["ir_direct"],
                           "sync_through_shim": cc["ir_shim"] - cg["ir_shim"],
                           "launch_bypassing_shim": lc["ir_direct"] - lr["ir_direct"],
                           "launch_through_shim": lc["ir_shim"] - lr["ir_shim"]}
        ci = res["cupti_ir"]
        row("  (info) with CUPTI on (SYNCSPY_CUPTI=auto, simulated libcupti)", "-",
            "%+.0f Ir/sync" % ci["sync_through_shim"], "info",
            "callgrind, against SYNCSPY_CUPTI=off: a sync the shim records %+.0f Ir (the callback "
            "that steps aside), a sync seen only through CUPTI %+.0f Ir (its whole recording); a "
            "launch through the shim %+.0f Ir, one bypassing it %+.0f Ir" % (
                ci["sync_through_shim"], ci["sync_bypassing_shim"], ci["launch_through_shim"],
                ci["launch_bypassing_shim"]),
            "SYNCSPY_CUPTI=auto valgrind --tool=callgrind --collect-atstart=no %s cg-sync 24 %s" % (
                os.path.relpath(BENCH, ROOT), n))
    row("sync, step not recorded", "<= 50 ns", fmt_ns(nu["added_ns"]), nu["added_ns"] <= 50,
        "SYNCSPY_SCHEDULE=skip_first=1000000,active=1; null runtime A/B, median of %s; callgrind "
        "%s Ir/sync" % (rng(nu), "%.0f" % cgu["ir_added"] if cgu else "n/a"),
        "SYNCSPY_SCHEDULE=skip_first=1000000,active=1 " + c)


def bench_first():
    n = 400 if Q else 4000
    cmd = [BENCH, "first", "24", str(n)]
    d = run_json(cmd, env_for("null", True, out_name="first"))
    base = median(d["direct_ns"])
    added = [x - base for x in d["shim_ns"]]
    res = {"mean_ns": statistics.mean(added), "p50_ns": median(added), "p99_ns": quantile(added, 0.99),
           "max_ns": max(added), "stacks": len(added), "frames": check_frames("first", 24)}
    sim = run_json([BENCH, "first", "24", str(100 if Q else 600)], env_for("sim", True))
    sim_base = median(sim["direct_ns"])
    res["sim_p50_ns"] = median([x - sim_base for x in sim["shim_ns"]])
    RESULTS["first"] = res
    row("sync, first sight of a 24-frame stack", "<= 20 us", fmt_ns(res["mean_ns"]) + " mean",
        res["mean_ns"] <= 20000 and res["p99_ns"] <= 20000,
        "null runtime, %d new stacks (%s): p50 %s, p99 %s, max %s; simulator p50 %s" % (
            res["stacks"], res["frames"], fmt_ns(res["p50_ns"]), fmt_ns(res["p99_ns"]),
            fmt_ns(res["max_ns"]), fmt_ns(res["sim_p50_ns"])),
        "LD_LIBRARY_PATH=%s/bench/null LD_PRELOAD=%s/libsyncspy.so %s first 24 %d" % (
            ARGS.build, ARGS.build, os.path.relpath(BENCH, ROOT), n))


def bench_python():
    reps, batch = (30, 50) if Q else (200, 100)
    cmd = [sys.executable, os.path.join(ROOT, "bench", "bench_py.py"), PYLIB, str(batch), str(reps), "20"]
    res = {"null_agent": ab_runs(cmd, env_for("null", True, out_name="python"), 1 if Q else 3),
           "null_control": ab_runs(cmd, env_for("null", False), 1)}
    res["frames"] = check_frames("python", 20, want_python=20)
    sim_cmd = cmd[:3] + ["10", str(10 if Q else 50), "20"]
    res["sim_agent"] = ab_runs(sim_cmd, env_for("sim", True), 1)
    RESULTS["python"] = res
    row("sync with 20 Python frames above it", "<= 2 us", fmt_ns(res["null_agent"]["added_ns"]),
        res["null_agent"]["added_ns"] <= 2000,
        "null runtime A/B through ctypes, median of %s (control %s, stack %s); simulator A/B %s" % (
            rng(res["null_agent"]), fmt_ns(res["null_control"]["added_ns"]), res["frames"],
            fmt_ns(res["sim_agent"]["added_ns"])),
        "LD_LIBRARY_PATH=%s/bench/null LD_PRELOAD=%s/libsyncspy.so python3 bench/bench_py.py %s %d %d 20" % (
            ARGS.build, ARGS.build, os.path.relpath(PYLIB, ROOT), batch, reps))


def bench_train():
    steps, runs = (30, 1) if Q else (150, 5)
    cmd = [BENCH, "train-ab", str(steps), "2000", "20", "2000"]
    ctl = run_json(cmd, env_for("sim", False, {"SIMCUDA_KERNEL_NS": "2000"}))
    res = {"control_pct": 100 * median([x - y for x, y in zip(ctl["shim_ns"], ctl["direct_ns"])]) / median(ctl["direct_ns"])}
    for runtime in ("sim", "null"):
        each = []
        for _ in range(runs if runtime == "sim" else max(1, runs - 2)):
            d = run_json(cmd, env_for(runtime, True, {"SIMCUDA_KERNEL_NS": "2000"}, out_name="train"))
            a, b = d["shim_ns"], d["direct_ns"]
            diff = median([x - y for x, y in zip(a, b)])
            each.append({"added_us": diff / 1000, "step_us": median(b) / 1000,
                         "added_pct": 100 * diff / median(b)})
        res[runtime] = {"added_pct": median([e["added_pct"] for e in each]),
                        "added_us": median([e["added_us"] for e in each]),
                        "step_us": median([e["step_us"] for e in each]),
                        "min_pct": min(e["added_pct"] for e in each),
                        "max_pct": max(e["added_pct"] for e in each), "runs": each}
    RESULTS["train"] = res
    sim, null = res["sim"], res["null"]
    row("training loop: 2000 launches + 20 syncs/step", "<= 1 %", "%+.2f %%" % sim["added_pct"],
        sim["added_pct"] <= 1.0,
        "in-process A/B, steps alternating with and without the agent (its step mark included), "
        "simulator, 2 us kernels, 2 us host work per launch: step %.2f ms, %+.1f us/step (median of %d "
        "runs %+.2f..%+.2f %%; control without the agent %+.2f %%); null runtime (the agent's share "
        "alone): %+.1f us/step on %.2f ms (%+.2f %%)" % (
            sim["step_us"] / 1000, sim["added_us"], len(sim["runs"]), sim["min_pct"], sim["max_pct"],
            res["control_pct"], null["added_us"], null["step_us"] / 1000, null["added_pct"]),
        "SIMCUDA_KERNEL_NS=2000 LD_LIBRARY_PATH=%s/sim LD_PRELOAD=%s/libsyncspy.so %s train-ab %d 2000 20 2000" % (
            ARGS.build, ARGS.build, os.path.relpath(BENCH, ROOT), steps))


def bench_memory():
    lengths = (50, 300) if Q else (200, 2000)
    res = {}
    for steps in lengths:
        cmd = [BENCH, "train", str(steps), "2000", "20", "0"]
        rss = {}
        for agent in (False, True):
            vals = []
            for _ in range(1 if Q else 2):
                _, kib, rc, err = run_rusage(cmd, env_for("sim", agent, out_name="memory", defaults=True))
                if rc != 0:
                    raise RuntimeError("train failed: " + err[-500:])
                vals.append(kib)
            rss[agent] = min(vals)
        res[steps] = {"rss_kib_without": rss[False], "rss_kib_with": rss[True],
                      "added_mib": (rss[True] - rss[False]) / 1024.0}
    short, long_ = res[lengths[0]], res[lengths[1]]
    growth = long_["added_mib"] - short["added_mib"]
    RESULTS["memory"] = {"by_steps": res, "growth_mib": growth}
    row("memory: RSS added, default settings", "<= 32 MiB, flat", "%.1f MiB" % long_["added_mib"],
        max(short["added_mib"], long_["added_mib"]) <= 32 and growth <= 2.0,
        "peak RSS (ru_maxrss, bench/peakrss.c) with minus without: %.1f MiB at %d steps, %.1f MiB at %d steps "
        "(%d syncs, %d launches): growth %+.1f MiB" % (
            short["added_mib"], lengths[0], long_["added_mib"], lengths[1], 20 * lengths[1],
            2000 * lengths[1], growth),
        "LD_LIBRARY_PATH=%s/sim [LD_PRELOAD=%s/libsyncspy.so] %s train N 2000 20 0" % (
            ARGS.build, ARGS.build, os.path.relpath(BENCH, ROOT)))


def bench_memory_length():
    """Issue 36 item 2: the agent's added RSS stays flat however long the run. One sync a step
    at about 3 us a step (SIMCUDA_KERNEL_NS=1000), far faster than any training step, so that
    the flusher's step queue is at its cap; peak RSS with the agent minus without."""
    lengths = (1000, 10000, 100000) if Q else (1000, 10000, 100000, 1000000)
    added = {}
    for steps in lengths:
        cmd = [BENCH, "train", str(steps), "0", "1", "0"]
        rss = {}
        for agent in (False, True):
            env = env_for("sim", agent, {"SIMCUDA_KERNEL_NS": "1000"}, out_name="memlen", defaults=True)
            _, kib, rc, err = run_rusage(cmd, env)
            if rc != 0:
                raise RuntimeError("train failed: " + err[-500:])
            rss[agent] = kib
        added[steps] = (rss[True] - rss[False]) / 1024.0
    RESULTS["memory_length"] = {"added_mib_by_steps": added}
    row("memory: RSS added by run length", "<= 16 MiB at any length", "%.1f MiB" % max(added.values()),
        max(added.values()) <= 16,
        "peak RSS with minus without: " + ", ".join("%.1f MiB at %d steps" % (v, k) for k, v in added.items()),
        "SIMCUDA_KERNEL_NS=1000 LD_LIBRARY_PATH=%s/sim [LD_PRELOAD=%s/libsyncspy.so] %s/peakrss %s train N 0 1 0" % (
            ARGS.build, ARGS.build, os.path.relpath(BDIR, ROOT), os.path.relpath(BENCH, ROOT)))


def bench_memory_torch():
    """Issue 36 item 2 on real torch: the seed-003 loop (examples/seg_loss.py, ~2 ms a step)
    at 1,000, 10,000 and 100,000 steps, processes with and without the agent alternating (the
    order swapped each pair), default settings with the exit report written (to a file);
    peak RSS (ru_maxrss through bench/peakrss.c: the exit included) with minus without, the
    median of the pairs. About 30 minutes (3 pairs; the 100,000-step runs take 4-5 min each)."""
    python = torch_python("real torch: RSS added by run length")
    if not python:
        return
    lengths = (1000, 10000) if Q else (1000, 10000, 100000)
    pairs = 1 if Q else ARGS.torch_memory_pairs
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    res = {}
    for steps in lengths:
        cmd = [python, os.path.join(ROOT, "examples", "seg_loss.py"), "--steps", str(steps),
               "--log-every", "1000000"]
        kib = {False: [], True: []}
        for i in range(pairs):
            for agent in ((False, True) if i % 2 == 0 else (True, False)):
                env = env_for("sim", agent, out_name="memtorch", defaults=True)
                del env["SIMCUDA_KERNEL_NS"]
                env["LD_LIBRARY_PATH"] = SIM_DIR + ":" + os.path.join(cuda, "lib64")
                env["SYNCSPY_REPORT"] = os.path.join(OUT, "memtorch-report.txt")
                shutil.rmtree(env["SYNCSPY_OUT"], ignore_errors=True)
                _, k, rc, err = run_rusage(cmd, env)
                if rc != 0:
                    raise RuntimeError("seg_loss.py failed: " + err[-500:])
                kib[agent].append(k)
        added = [(a - b) / 1024.0 for a, b in zip(kib[True], kib[False])]
        res[steps] = {"added_mib": median(added), "added_mib_runs": added,
                      "plain_kib": kib[False], "agent_kib": kib[True]}
    RESULTS["memory_torch"] = {"pairs": pairs, "by_steps": res}
    worst = max(r["added_mib"] for r in res.values())
    spread = max(r["added_mib"] for r in res.values()) - min(r["added_mib"] for r in res.values())
    row("real torch: RSS added by run length", "<= 16 MiB at any length", "%.1f MiB" % worst,
        worst <= 16,
        "seed-003 loop, peak RSS with minus without, median of %d alternating pairs: " % pairs +
        ", ".join("%.1f MiB at %d steps (%s)" % (r["added_mib"], n, ", ".join(
            "%.1f" % x for x in r["added_mib_runs"])) for n, r in res.items()) +
        "; spread over the lengths %.1f MiB; without the agent %.0f MiB" % (
            spread, median(res[lengths[0]]["plain_kib"]) / 1024.0),
        "LD_LIBRARY_PATH=%s/sim:%s/lib64 SYNCSPY_REPORT=FILE [LD_PRELOAD=%s/libsyncspy.so] "
        "%s/peakrss %s examples/seg_loss.py --steps N --log-every 1000000" % (
            ARGS.build, cuda, ARGS.build, os.path.relpath(BDIR, ROOT),
            os.path.relpath(python, ROOT)))


def bench_flusher():
    threads, rate, secs = 16, 5e6, (3 if Q else 10)
    out = "flood"
    shutil.rmtree(os.path.join(OUT, out), ignore_errors=True)
    cmd = [BENCH, "flood", str(threads), "%g" % rate, str(secs), "100"]
    d = run_json(cmd, env_for("null", True, {"SYNCSPY_LAUNCHES": "trace"}, out_name=out, defaults=True))
    base = os.path.join(OUT, out)
    stat = None
    for p in os.listdir(base):
        tb = os.path.join(base, p, "trace.bin")
        if os.path.exists(tb):
            stat = run_json([os.path.join(BDIR, "tracestat"), tb], dict(os.environ))
    if not ARGS.keep:
        shutil.rmtree(base, ignore_errors=True)
    produced = d["launches"] + d["syncs"]
    dropped = stat["syncs_dropped"] + stat["launches_dropped"] if stat else produced
    res = {"produced": produced, "rate": d["rate"], "dropped": dropped,
           "dropped_pct": 100.0 * dropped / max(1, produced), "trace": stat, "run": d}
    RESULTS["flusher"] = res
    row("flusher: 16 threads, 5 M records/s, 10 s", "0 dropped", "%.2f %% dropped" % res["dropped_pct"],
        dropped == 0 and d["rate"] >= 0.98 * rate,
        "null runtime, SYNCSPY_LAUNCHES=trace, 1 sync per 100 records: %.2f M records/s produced "
        "over %.1f s, %d of %d dropped (%d syncs, %d launches); %s records in trace.bin" % (
            d["rate"] / 1e6, d["seconds"], dropped, produced,
            stat["syncs_dropped"] if stat else -1, stat["launches_dropped"] if stat else -1,
            stat["syncs"] + stat["launches"] if stat else "no"),
        "SYNCSPY_LAUNCHES=trace LD_LIBRARY_PATH=%s/bench/null LD_PRELOAD=%s/libsyncspy.so %s flood 16 5e6 10 100" % (
            ARGS.build, ARGS.build, os.path.relpath(BENCH, ROOT)))


def bench_cli():
    n = 1000000 if Q else 10000000
    folder = os.path.join(BDIR, "cli", "pid4242")
    shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
    os.makedirs(os.path.dirname(folder))
    gen = run_json([os.path.join(BDIR, "gentrace"), folder, str(n)], dict(os.environ))
    res = {"trace": gen}
    chrome = os.path.join(BDIR, "cli", "chrome.json")
    cmds = {"report": [CLI, "report", folder], "chrome": [CLI, "export", "--chrome", chrome, folder]}
    for name, cmd in cmds.items():
        wall, kib, rc, err = run_rusage(cmd, dict(os.environ))
        res[name] = {"seconds": wall, "rss_mib": kib / 1024.0, "rc": rc,
                     "error": err.strip().splitlines()[-1] if rc and err.strip() else ""}
        if name == "chrome" and rc == 0:
            res[name]["output_bytes"] = os.path.getsize(chrome)
    if not ARGS.keep:
        shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
    RESULTS["cli"] = res
    label = "%d M-record trace (%.0f MB)" % (n // 1000000, gen["bytes"] / 1e6)
    for name, what in (("report", "CLI: report"), ("chrome", "CLI: export --chrome")):
        r = res[name]
        if r["rc"] != 0:
            row("%s of a %s" % (what, label), "<= 5 s, 1 GiB", "fails", False,
                "exit %d: %s" % (r["rc"], r["error"]), " ".join(cmds[name]))
            continue
        extra = ", output %.2f GB" % (r["output_bytes"] / 1e9) if "output_bytes" in r else ""
        row("%s of a %s" % (what, label), "<= 5 s, 1 GiB", "%.2f s, %.0f MiB" % (r["seconds"], r["rss_mib"]),
            r["seconds"] <= 5 and r["rss_mib"] <= 1024,
            "%d syncs, %d launches, %d steps%s" % (gen["syncs"], gen["launches"], gen["steps"], extra),
            "%s/bench/gentrace DIR %d; %s/syncspy %s DIR" % (
                ARGS.build, n, ARGS.build, "report" if name == "report" else "export --chrome OUT.json"))


def bench_diff():
    """`syncspy diff` of two runs of 10^6 sync sites each (bench/gentrace.c --sites): n log n in
    the sites (issue 22: the old line-by-line matching took 12 s at 40 k sites)."""
    n = 100000 if Q else 1000000
    root = os.path.join(BDIR, "diff")
    shutil.rmtree(root, ignore_errors=True)
    dirs = []
    for seed in (1, 2):
        d = os.path.join(root, "run%d" % seed, "pid4242")
        os.makedirs(os.path.dirname(d))
        gen = run_json([os.path.join(BDIR, "gentrace"), "--sites", str(n), str(seed), d], dict(os.environ))
        dirs.append(d)
    cmd = [CLI, "diff", dirs[0], dirs[1]]
    wall, kib, rc, err = run_rusage(cmd, dict(os.environ))
    RESULTS["diff"] = {"sites": n, "trace_bytes": gen["bytes"], "seconds": wall, "rss_mib": kib / 1024.0,
                       "rc": rc}
    if not ARGS.keep:
        shutil.rmtree(root, ignore_errors=True)
    row("CLI: diff of two runs of %d sites" % n, "<= 10 s, 2 GiB",
        "fails" if rc else "%.2f s, %.0f MiB" % (wall, kib / 1024.0),
        rc == 0 and wall <= 10 and kib <= 2 * 1024 * 1024,
        "exit %d: %s" % (rc, err.strip().splitlines()[-1] if err.strip() else "") if rc else
        "two %.0f MB trace.bin files, every kind of row (gone, new, more, fewer, same)" % (gen["bytes"] / 1e6),
        "%s/bench/gentrace --sites %d 1 A/pid4242; ... 2 B/pid4242; %s/syncspy diff A/pid4242 B/pid4242" % (
            ARGS.build, n, ARGS.build))


def bench_bound():
    """Runs of days (issue 26 item 1): a 10^7-step loop (1 launch and 1 sync a step, bench_cuda train) under the
    agent with no bound, the default SYNCSPY_TRACE_MB and a small one; the trace's size, and the
    time and peak RSS of every command that reads it (the readers keep a fixed memory)."""
    steps = 1000000 if Q else 10000000
    bounds = (("0", "no bound"), (None, "default (1024)"), ("64", "64"))
    res = {}
    root = os.path.join(BDIR, "bound")
    for mb, label in bounds:
        out = os.path.join(root, "mb-" + (mb or "default"))
        shutil.rmtree(out, ignore_errors=True)
        extra = {"SYNCSPY_OUT": out}
        if mb is not None:
            extra["SYNCSPY_TRACE_MB"] = mb
        env = env_for("sim", True, extra=extra, defaults=True)
        t0 = time.monotonic()
        r = subprocess.run([BENCH, "train", str(steps), "1", "1", "0"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=1800)
        run_s = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError("train failed: " + r.stderr[-500:])
        [folder] = [os.path.join(out, x) for x in os.listdir(out)]
        trace_bytes = os.path.getsize(os.path.join(folder, "trace.bin"))
        chrome, folded, page = (os.path.join(root, x) for x in ("chrome.json", "folded.txt", "page.html"))
        cmds = {"report": [CLI, "report", folder],
                "check": [CLI, "check", "--max-syncs-per-step", "1", folder],
                "diff": [CLI, "diff", folder, folder],
                "top --once": [CLI, "top", "--once", folder],
                "export --chrome": [CLI, "export", "--chrome", chrome, folder],
                "export --folded": [CLI, "export", "--folded", folded, folder],
                "html": [CLI, "html", folder, "-o", page]}
        one = {"run_seconds": run_s, "trace_bytes": trace_bytes, "commands": {}}
        for name, cmd in cmds.items():
            wall, kib, rc, err = run_rusage(cmd, dict(os.environ))
            one["commands"][name] = {"seconds": wall, "rss_mib": kib / 1024.0, "rc": rc,
                                     "error": err.strip().splitlines()[-1] if rc and err.strip() else ""}
        rep = subprocess.run([CLI, "report", folder], capture_output=True, text=True)
        m = re.search(r"per-event detail kept for \d+ of \d+ steps[^\n]*", rep.stdout)
        one["sampled"] = m.group(0) if m else ""
        res[label] = one
        worst = max(c["rss_mib"] for c in one["commands"].values())
        slow = max(c["seconds"] for c in one["commands"].values())
        ok = worst <= 64 and all(c["rc"] == 0 for c in one["commands"].values()) and (
            mb in (None, "64") and trace_bytes <= (int(mb or 1024) << 20) or mb == "0")
        row("trace bound: %d M steps, SYNCSPY_TRACE_MB %s" % (steps // 1000000, label),
            "file <= bound, CLI <= 64 MiB", "%.0f MB, CLI <= %.0f MiB, %.1f s" % (trace_bytes / 1e6, worst, slow), ok,
            "; ".join("%s %.2f s %.0f MiB" % (n, c["seconds"], c["rss_mib"]) for n, c in one["commands"].items())
            + ("; " + one["sampled"] if one["sampled"] else ""),
            "SYNCSPY_TRACE_MB=%s LD_PRELOAD=%s/libsyncspy.so %s/bench/bench_cuda train %d 1 1 0; "
            "bench/peakrss syncspy <command> DIR" % (mb if mb is not None else "(unset)", ARGS.build,
                                                     ARGS.build, steps))
        if not ARGS.keep:
            shutil.rmtree(out, ignore_errors=True)
            for x in (chrome, folded, page):
                if os.path.exists(x):
                    os.unlink(x)
    RESULTS["bound"] = res


BENCHES = [("torch", bench_torch), ("torch_ir", bench_torch_ir), ("peers", bench_peers), ("launch", bench_launch), ("sync", bench_sync), ("first", bench_first),
           ("python", bench_python), ("train", bench_train), ("memory", bench_memory),
           ("memory_length", bench_memory_length), ("memory_torch", bench_memory_torch),
           ("flusher", bench_flusher), ("cli", bench_cli), ("diff", bench_diff), ("bound", bench_bound)]


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    model = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "python": platform.python_version(), "commit": git.stdout.strip() or "?",
            "quick": Q}


def main():
    only = set(x for x in ARGS.only.split(",") if x)
    unknown = only - set(n for n, _ in BENCHES)
    if unknown:
        sys.exit("bench/run.py: unknown benchmark(s) %s; known: %s" % (
            ", ".join(sorted(unknown)), ", ".join(n for n, _ in BENCHES)))
    for p in (AGENT, CLI, BENCH, PYLIB, os.path.join(NULL_DIR, "libcudart.so.13")):
        if not os.path.exists(p):
            sys.exit("bench/run.py: %s is missing (make bench-build)" % p)
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    m = machine()
    RESULTS["machine"] = m
    m["agent"] = AGENT
    say("syncspy bench: %s, %d CPUs (%s), commit %s%s%s" % (
        m["date"], m["nproc"], m["cpu"], m["commit"], ", QUICK (not figures)" if Q else "",
        ", agent " + AGENT if ARGS.agent else ""))
    t_all = time.monotonic()
    for name, fn in BENCHES:
        if only and name not in only:
            continue
        t0 = time.monotonic()
        say("bench %s ..." % name)
        try:
            fn()
        except Exception as e:  # one failing benchmark must not hide the others
            row(name, "-", "error", False, str(e)[:300], "")
            RESULTS.setdefault("errors", {})[name] = str(e)
        say("bench %s: %.1f s" % (name, time.monotonic() - t0))
    RESULTS["rows"] = ROWS
    RESULTS["seconds"] = time.monotonic() - t_all
    with open(os.path.join(BDIR, "results.json"), "w") as f:
        json.dump(RESULTS, f, indent=1, default=str)
    with open(os.path.join(BDIR, "results.md"), "w") as f:
        f.write("| target | limit | measured | | figures |\n|---|---|---|---|---|\n")
        for r in ROWS:
            f.write("| %s | %s | %s | %s | %s |\n" % (r["target"], r["limit"], r["measured"], r["ok"], r["figures"]))
    w = [max(len(r[k]) for r in ROWS + [{"target": "target", "limit": "limit", "measured": "measured", "ok": "ok"}])
         for k in ("target", "limit", "measured", "ok")]
    say("")
    say("details:")
    for r in ROWS:
        say("  %s: %s" % (r["target"].strip(), r["figures"]))
    say("")
    say("%-*s  %-*s  %-*s  %s" % (w[0], "target", w[1], "limit", w[2], "measured", "ok/MISSED"))
    say("%s  %s  %s  %s" % ("-" * w[0], "-" * w[1], "-" * w[2], "-" * 9))
    for r in ROWS:
        say("%-*s  %-*s  %-*s  %s" % (w[0], r["target"], w[1], r["limit"], w[2], r["measured"], r["ok"]))
    say("bench: %.0f s; results in %s" % (RESULTS["seconds"], os.path.relpath(os.path.join(BDIR, "results.json"), ROOT)))


if __name__ == "__main__":
    main()
