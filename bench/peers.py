"""bench/peers.py: syncspy against the tools a PyTorch user would reach for instead (issue 26
item 4), on the same unmodified loop: the seed-003 loop of bench/torch_loop.py
(examples/seg_loss.py, here with --log-every 10 so that all 7 of its "# sync:" lines run) on the
pinned wheel over the simulated device. `make bench` runs it (bench/run.py, the `peers` rows);
docs/PERFORMANCE.md ("Peers") has the table.

    python3 bench/peers.py [--build build] [--rounds N] [--steps N] [--inproc N] [--quick]
                           [--tools plain,syncspy,...] [--json OUT] [--work DIR] [--table]

The tools (TOOLS): plain (no tool); syncspy (LD_PRELOAD=libsyncspy.so, its report to a file);
torch.profiler with with_stack False and True (CPU and CUDA activity, a Chrome trace exported at
the end) and torch.cuda.set_sync_debug_mode("warn"), both set up by bench/peer_wrap.py (runpy:
the loop itself is not changed); py-spy record --native --idle --format raw (py-spy 0.4.1 from
PyPI in a venv of its own, `make pyspy-venv`).

Figures, per tool:
- step: rounds of one process per tool, the order rotated each round; per process the median
  of its own per-step host times (the loop prints them) after the first 20 % of the steps; the
  figure is the median over rounds of tool/plain of the same round.
- in process (where the tool can be switched on for some steps only: syncspy's schedule,
  the profiler's schedule, the sync-debug mode switched in an optimizer-step hook): each step
  the tool is on against the mean of the steps either side, where it is off (bench/torch_loop.py's
  neighbours()). py-spy cannot be (it samples from outside).
- RSS: the peak of the whole process tree: ru_maxrss of the process the tool starts (wait4),
  or where it has a child (py-spy runs the loop as its child), the sum of each process's VmHWM
  (/proc, sampled every 20 ms): minus plain's, median over rounds.
- exit: seconds from the loop's last line (it prints a timestamp) to the end of the tool's
  process, minus plain's (the tool writing its output is in it).
- output: bytes the tool writes: syncspy its folder (summary.json, trace.bin, the report),
  the profiler its trace, the sync-debug mode its warnings on stderr, py-spy its raw stacks.
- lines: which of the loop's 7 sync lines the tool's output names as a wait: syncspy the
  innermost line of the loop's file in each section of each site of summary.json (own frames,
  and for a backward sync the forward frames and the caller's); the profiler a sync call (a
  cuda_runtime or cuda_driver event of SYNC_CALLS) inside a python_function event at the line;
  the sync-debug mode the file:line of its warnings (the innermost Python frame: where that is
  torch's own, the place is listed as "elsewhere"); py-spy a sample whose stack holds the line
  and, deeper, a frame of SYNC_CALLS. Lines named that are not among the 7 are listed apart.
Prints one JSON document (also written to --json); --table prints the markdown table after it."""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_loop

ROOT = torch_loop.ROOT
LOOP = torch_loop.DEMO
WRAP = os.path.join(ROOT, "bench", "peer_wrap.py")
QUICK_STEPS = 200  # py-spy (100 Hz) samples the backward line ~12 times in 200 steps, ~2 in 40 (missed 1 in ~10)
LOG_EVERY = 10  # the loss is read (.item(), the 7th sync line) every 10 steps
TOOLS = ("plain", "syncspy", "profiler", "profiler-stack", "sync-debug", "py-spy")
INPROC_TOOLS = ("syncspy", "profiler", "profiler-stack", "sync-debug")
# The CUDA calls during which the host waits (DESIGN.md's "sync", runtime and driver names), as
# a trace event's or a native frame's exact function name.
SYNC_CALLS = frozenset((
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "cudaMemcpyAsync", "cudaMemcpy2D", "cudaMemcpy2DAsync", "cudaMemcpy3D", "cudaMemcpy3DAsync",
    "cudaFree", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2",
    "cuMemcpyHtoD_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpy", "cuMemcpyAsync",
    "cuMemFree_v2"))
STEP_LINE = re.compile(r"^step (\d+) ([0-9.]+)$")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--inproc", type=int, default=2, help="processes per tool of the in-process figure")
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--python", default="", help="the torch venv's python (default: BUILD's main venv)")
    p.add_argument("--pyspy", default="", help="py-spy (default: BUILD/pyspy-venv/bin/py-spy)")
    p.add_argument("--json", default="")
    p.add_argument("--work", default="", help="the tools' output folder (default: BUILD/bench/peers)")
    p.add_argument("--table", action="store_true", help="also print the markdown table")
    p.add_argument("--quick", action="store_true", help="1 round of %d steps, no in-process figure" % QUICK_STEPS)
    a = p.parse_args()
    if a.quick:
        a.rounds, a.steps, a.inproc = 1, QUICK_STEPS, 0
    a.tools = [t for t in a.tools.split(",") if t]
    bad = set(a.tools) - set(TOOLS)
    if bad or "plain" not in a.tools:
        p.error("--tools: %s (known: %s; plain is the baseline)" % (",".join(sorted(bad)) or
                                                                  "no plain", ",".join(TOOLS)))
    a.build = os.path.abspath(os.path.join(ROOT, a.build))
    a.agent = os.path.join(a.build, "libsyncspy.so")
    a.agent_env = {}
    a.python = a.python or os.path.join(a.build, "torch-venv", "%d.%d" % sys.version_info[:2],
                                        "bin", "python")
    a.pyspy = a.pyspy or os.path.join(a.build, "pyspy-venv", "bin", "py-spy")
    a.work = os.path.abspath(a.work) if a.work else os.path.join(a.build, "bench", "peers")
    return a


def marked_lines():
    """{line: name} of the loop's `# sync: NAME` markers."""
    with open(LOOP) as f:
        return {n: m.group(1) for n, text in enumerate(f, 1)
                for m in [re.search(r"# sync: (\w+)\s*$", text)] if m}


# ---- running one process -----------------------------------------------------------------

def command(a, tool, steps, out, inproc):
    """argv and environment of one run of the loop under tool; out is the tool's output path."""
    loop = [LOOP, "--steps", str(steps), "--log-every", str(LOG_EVERY), "--step-times",
            "--end-stamp"]
    env = torch_loop.env_for(a, tool == "syncspy")
    if tool == "syncspy":
        env["SYNCSPY_OUT"] = out
        env["SYNCSPY_REPORT"] = os.path.join(out, "report.txt")
        if inproc:
            env["SYNCSPY_SCHEDULE"] = "wait=1,active=1"
        return [a.python] + loop, env
    if tool in ("profiler", "profiler-stack", "sync-debug"):
        return [a.python, WRAP, tool, out] + (["--inproc"] if inproc else []) + ["--"] + loop, env
    if tool == "py-spy":
        return [a.pyspy, "record", "--native", "--idle", "--format", "raw", "-o", out,
                "--", a.python] + loop, env
    return [a.python] + loop, env


def tree_hwm(pid, peaks, stop):
    """Samples VmHWM (KiB) of pid and its descendants every 20 ms into peaks {pid: max}."""
    while not stop.is_set():
        todo = [pid]
        while todo:
            p = todo.pop()
            try:
                with open(f"/proc/{p}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peaks[p] = max(peaks.get(p, 0), int(line.split()[1]))
                            break
                for task in os.listdir(f"/proc/{p}/task"):
                    with open(f"/proc/{p}/task/{task}/children") as f:
                        todo.extend(int(c) for c in f.read().split())
            except (OSError, ValueError):
                continue
        stop.wait(0.02)


def out_bytes(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(path) for n in ns)
    return os.path.getsize(path) if os.path.exists(path) else 0


def one_run(a, tool, steps, inproc=False):
    """{step_ms, times, exit_s, peak_kib, out_bytes, lines, other_lines, active, rc, note}"""
    out = os.path.join(a.work, tool + ("-inproc" if inproc else ""))
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(out):
        os.unlink(out)
    os.makedirs(a.work, exist_ok=True)
    argv, env = command(a, tool, steps, out, inproc)
    peaks = {}
    stdout, stderr, code, usage, ended = torch_loop.run_watched(
        argv, env, lambda pid, stop: tree_hwm(pid, peaks, stop))
    note = ""
    if code != 0 and tool == "py-spy" and "No child process (os error 10)" in stderr \
            and "Wrote raw flamegraph data" in stdout:
        # py-spy 0.4.1 reaps the child in its sampler thread, then waits for it again and exits
        # 1 after writing its output (benfred/py-spy#759): the output is whole
        note = "py-spy exited 1 after writing its output: 'No child process' (py-spy#759)"
    elif code != 0:
        raise SystemExit(f"peers: {tool}: {' '.join(argv)} failed ({code}):\n"
                         f"{stderr[-2000:]}")
    times = {int(m.group(1)): float(m.group(2)) for m in map(STEP_LINE.match, stdout.splitlines())
             if m}
    if len(times) != steps:
        raise SystemExit(f"peers: {tool}: {len(times)} step lines of {steps}:\n{stderr[-2000:]}")
    kept = [times[i] for i in sorted(times) if i >= len(times) // 5]
    stamp = [float(ln.split()[1]) for ln in stdout.splitlines() if ln.startswith("end ")]
    r = {"step_ms": statistics.median(kept), "times": times, "rc": code, "note": note,
         "exit_s": ended - stamp[-1] if stamp else None,
         "peak_kib": max(usage.ru_maxrss, sum(peaks.values()))}
    if inproc:
        r["active"] = active_steps(tool, out)
        return r
    r["out_bytes"] = len(stderr.encode()) if tool == "sync-debug" else out_bytes(out)
    named, seen = lines_named(tool, out, stderr)
    marks = set(marked_lines())
    r["lines"], r["other_lines"] = sorted(named & marks), sorted(named - marks)
    r["lines_seen"] = sorted(seen & marks)
    if tool == "syncspy":
        r["counts"] = syncspy_counts(out)
    if tool == "sync-debug":
        r["elsewhere"] = warned_elsewhere(stderr)
    return r


def warned_elsewhere(stderr):
    """The sync-debug warnings' places outside the loop's file (torch's own frames: a warning
    names the innermost Python frame), package paths cut to what follows site-packages/."""
    places = re.findall(r"^(\S+):(\d+): UserWarning: called a synchronizing CUDA operation",
                        stderr, re.M)
    return sorted({"%s:%s" % (f.split("site-packages/")[-1], n) for f, n in places
                   if not in_loop(f)})


def active_steps(tool, out):
    if tool == "syncspy":
        return {st["step"] for st in load_summary(out)["steps"]}
    with open(out) as f:
        return set(json.load(f))


# ---- what each tool's output names -----------------------------------------------------------

def load_summary(out):
    paths = glob.glob(os.path.join(out, "*", "summary.json"))
    if len(paths) != 1:
        raise SystemExit(f"peers: {len(paths)} summary.json under {out}")
    with open(paths[0]) as f:
        return json.load(f)


def in_loop(file_name):
    return os.path.basename(file_name or "") == os.path.basename(LOOP)


def site_lines(site):
    """{section: line}: the innermost line of the loop's file in each section of a site: "own"
    (its own frames), and for a backward sync "forward" (the frames that made the autograd node)
    and "caller" (the thread that ran backward), after summary.json's markers."""
    lines, kind, section = {}, "own", []
    kinds = {"backward": "forward", "backward_caller": "caller"}

    def close():
        for f in section:
            if f.get("python") and in_loop(f.get("file")):
                lines[kind] = f["line"]
                break
        section.clear()
    for f in site["frames"]:
        if f.get("marker") in kinds:
            close()
            kind = kinds[f["marker"]]
        elif not f.get("marker"):
            section.append(f)
    close()
    return lines


def syncspy_counts(out):
    """{line: syncs} by the line each sync was made on: its own frames' innermost loop line, or
    for a backward sync the caller's (the forward line is where its node was made), with the
    estimate for the steps SYNCSPY_BACKWARD=auto did not attribute (as the report counts them)."""
    counts = {}
    for s in load_summary(out)["sites"]:
        lines = site_lines(s)
        line = lines.get("own", lines.get("caller"))
        if line is not None:
            counts[line] = counts.get(line, 0) + s["count"] + s.get("estimate", {}).get("count", 0)
    return counts


def lines_named(tool, out, stderr):
    """(lines named as a wait, lines the output shows at all) of the loop's file."""
    if tool == "syncspy":
        named = {n for s in load_summary(out)["sites"] for n in site_lines(s).values()}
        return named, named
    if tool in ("profiler", "profiler-stack"):
        return profiler_lines(out)
    if tool == "sync-debug":
        name = re.escape(os.path.basename(LOOP))
        named = {int(m.group(1)) for m in re.finditer(
            rf"{name}:(\d+): UserWarning: called a synchronizing CUDA operation", stderr)}
        return named, named
    if tool == "py-spy":
        return pyspy_lines(out)
    return set(), set()


def profiler_lines(path):
    """Lines whose python_function event (same thread) holds a sync call's event; and the lines
    any python_function event was called from."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    frames, calls = {}, []
    for e in events:
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "python_function":
            m = re.match(r"(.*):(\d+)$", e.get("args", {}).get("CallFrom", ""))
            if m and in_loop(m.group(1)):
                frames.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"], int(m.group(2))))
        elif e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("name") in SYNC_CALLS:
            calls.append(e)
    lines = set()
    for c in calls:
        around = [fr for fr in frames.get(c["tid"], ()) if fr[0] <= c["ts"] and c["ts"] <= fr[1]]
        if around:
            lines.add(max(around)[2])  # the innermost: the one that started last
    return lines, {fr[2] for frs in frames.values() for fr in frs}


def pyspy_lines(path):
    """Lines of the loop's file that a sample shows with a sync call deeper in its stack (the
    raw format: one stack a line, outermost first, 'function (file:line)' frames, then a count);
    and the lines of the loop's file any sample shows."""
    lines, seen = set(), set()
    with open(path) as f:
        for text in f:
            frames = text.rstrip("\n").rsplit(" ", 1)[0].split(";")
            last = None
            for fr in frames:
                m = re.match(r"(\S+) \((.*):(\d+)\)$", fr)
                if m and in_loop(m.group(2)):
                    last = int(m.group(3))
                    seen.add(last)
                elif m and m.group(1) in SYNC_CALLS or fr.split(" ", 1)[0] in SYNC_CALLS:
                    if last is not None:
                        lines.add(last)
                    break
    return lines, seen


# ---- the figures ------------------------------------------------------------------------------

def rounds(a):
    rows = []
    for i in range(a.rounds):
        order = a.tools[i % len(a.tools):] + a.tools[:i % len(a.tools)]
        rows.append({t: one_run(a, t, a.steps) for t in order})
        print("peers: round %d of %d done" % (i + 1, a.rounds), file=sys.stderr, flush=True)
    return rows


def summarize(a, rows):
    res = {}
    for t in a.tools:
        def med(f):
            vals = [f(r) for r in rows if f(r) is not None]
            return statistics.median(vals) if vals else None
        last = rows[-1][t]
        res[t] = {"step_ms": med(lambda r: r[t]["step_ms"]),
                  "ratio": med(lambda r: r[t]["step_ms"] / r["plain"]["step_ms"]),
                  "ratios": [round(r[t]["step_ms"] / r["plain"]["step_ms"], 4) for r in rows],
                  "peak_mib": med(lambda r: r[t]["peak_kib"] / 1024),
                  "added_peak_mib": med(lambda r: (r[t]["peak_kib"] - r["plain"]["peak_kib"]) / 1024),
                  "added_exit_s": med(lambda r: None if r[t]["exit_s"] is None or r["plain"]["exit_s"]
                                      is None else r[t]["exit_s"] - r["plain"]["exit_s"]),
                  "out_bytes": med(lambda r: r[t]["out_bytes"]),
                  "lines": last["lines"], "other_lines": last["other_lines"],
                  "lines_seen": last["lines_seen"],
                  "lines_each_round": [r[t]["lines"] for r in rows],
                  "notes": sorted({r[t]["note"] for r in rows if r[t]["note"]}),
                  "exit_codes": [r[t]["rc"] for r in rows]}
        for key in ("counts", "elsewhere"):
            if key in last:
                res[t][key] = last[key]
    return res


def in_process(a, tool):
    steps = max(a.steps * 3 // 2, 300)
    each = [torch_loop.neighbours(r["times"], r["active"])
            for r in (one_run(a, tool, steps, inproc=True) for _ in range(a.inproc))]
    return {"added_pct": statistics.median(e["added_pct"] for e in each),
            "added_us": statistics.median(e["added_us"] for e in each),
            "added_pct_each": [round(e["added_pct"], 2) for e in each],
            "step_ms": statistics.median(e["step_ms"] for e in each), "steps": steps, "runs": each}


NAMES = {"plain": "no tool", "syncspy": "syncspy", "profiler": "torch.profiler",
         "profiler-stack": "torch.profiler, with_stack", "sync-debug": 'set_sync_debug_mode("warn")',
         "py-spy": "py-spy --native --idle"}


def human_bytes(n):
    for unit, size in (("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return "%d B" % n


def table(res):
    marks = marked_lines()
    out = ["| tool | step time | in process | RSS added | exit added | output | sync lines named |",
           "|---|---|---|---|---|---|---|"]
    for t, r in res["tools"].items():
        inp = res.get("in_process", {}).get(t)
        each = r["lines_each_round"]
        ever = sorted(set().union(*map(set, each)))
        named = ", ".join(marks[n] + ("" if all(n in e for e in each) else " in %d of %d runs" % (
            sum(n in e for e in each), len(each))) for n in ever) or "none"
        seen = r["lines_seen"]
        out.append("| %s | %s | %s | %s | %s | %s | %g of %d (%s)%s%s |" % (
            NAMES[t], "%.3f ms" % r["step_ms"] if t == "plain" else "x%.3f" % r["ratio"],
            "%+.2f %%" % inp["added_pct"] if inp else "-",
            "-" if t == "plain" else "%+.0f MiB" % r["added_peak_mib"],
            "-" if t == "plain" or r["added_exit_s"] is None else "%+.2f s" % r["added_exit_s"],
            "-" if t == "plain" else human_bytes(r["out_bytes"]),
            statistics.median(len(e) for e in each), len(marks), named,
            "; also lines %s" % ",".join(map(str, r["other_lines"])) if r["other_lines"] else "",
            "; %d of %d in its stacks" % (len(seen), len(marks)) if len(seen) > len(r["lines"])
            else ""))
    return "\n".join(out)


def main():
    a = parse()
    for path, what in ((a.python, "torch venv python (make torch-venv)"), (a.agent, "agent (make)"),
                       (a.pyspy, "py-spy (make pyspy-venv)")):
        if (what != "py-spy (make pyspy-venv)" or "py-spy" in a.tools) and not os.path.exists(path):
            raise SystemExit(f"peers: no {what} at {path}")
    t0 = time.monotonic()
    res = {"steps": a.steps, "rounds": a.rounds, "log_every": LOG_EVERY,
           "marked_lines": marked_lines(), "tools": summarize(a, rounds(a))}
    res["in_process"] = {t: in_process(a, t) for t in a.tools if t in INPROC_TOOLS and a.inproc}
    res["seconds"] = time.monotonic() - t0
    doc = json.dumps(res, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(doc + "\n")
    print(doc)
    if a.table:
        print(table(res))


if __name__ == "__main__":
    main()
