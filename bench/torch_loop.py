"""bench/torch_loop.py: what the agent costs on real PyTorch: the seed-003 training loop
(examples/seg_loss.py, about 2 ms per step on 2 cores, 5 syncs and ~47 launches per step) on the
pinned wheel over the simulated device. The headline of `make bench` (bench/run.py). With
--loop vit, seed 000's ViT loop instead (tests/torch/progs/seed_models.py vit --no-pin --workers
0: timm's VisionTransformer, deep module stacks, ~275 launches and 2 syncs per step; the vision
venv, `make torch-vision-venv`). With --loop tiny, bench/tiny_step.py (issue 26 item 3: one op
and one optimizer step, ~30 us, no sync): what a step's end costs (--loop-args '--ops 300 --grad'
or '--no-grad': what backward attribution costs per op). With --loop block, bench/block_step.py
(a transformer block's training step: issue 24 item 1).

    python3 bench/torch_loop.py [--build build] [--agent SO] [--loop seg|vit|tiny|block]
                                [--pairs N] [--steps N] [--inproc N] [--json OUT] [--quick]
                                [--env NAME=VALUE ...] [--only-inproc] [--loop-args ARGS]

Figures:
- time, alternating processes: each pair is one process without the agent and one with it, in
  alternating order; per process the median of its own per-step host times (perf_counter,
  printed by the program) after the first 20 % of the steps; the figure is the median over pairs
  of the ratio agent/plain, with the spread (min, max). Also with a schedule that records no step
  (SYNCSPY_SCHEDULE=skip_first=<more than the run>,active=1): the cost in unrecorded steps. On a shared
  2-CPU machine one process's speed moves by +-10 % against the next one's, so these ratios
  resolve a few percent at best: see the in-process figure.
- time, in process: SYNCSPY_SCHEDULE=wait=1,active=1 records every other step; each recorded
  step against the mean of the unrecorded steps either side of it (the same second of the same
  process): the median difference, in us and in % of the unrecorded step. What recording costs,
  to the microsecond; the agent's cost in unrecorded steps is the alternating-process figure.
- memory: peak RSS of each process (wait4's ru_maxrss, which covers the exit report too), the
  median difference agent - plain, at --steps and at 4x --steps (flat in run length when the
  two agree), and RSS sampled every 20 ms from /proc during the longer run (max, last sample).
- exit: seconds from the program's last line (it prints a timestamp) to the end of the
  process, agent - plain.
Prints one JSON document (also written to --json)."""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "seg_loss.py")
SEEDS = os.path.join(ROOT, "tests", "torch", "progs", "seed_models.py")
TINY = os.path.join(ROOT, "bench", "tiny_step.py")
BLOCK = os.path.join(ROOT, "bench", "block_step.py")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--loop", choices=("seg", "vit", "tiny", "block"), default="seg")
    p.add_argument("--agent", default="", help="the libsyncspy.so to measure (default: BUILD's)")
    p.add_argument("--pairs", type=int, default=10)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--inproc", type=int, default=3, help="processes of the in-process figure")
    p.add_argument("--python", default="", help="the venv's python (default: BUILD's main venv)")
    p.add_argument("--json", default="")
    p.add_argument("--quick", action="store_true", help="2 pairs of 100 steps (a smoke run)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable for the runs with the agent (e.g. SYNCSPY_BACKWARD=all)")
    p.add_argument("--only-inproc", action="store_true", help="the in-process figure alone")
    p.add_argument("--loop-args", default="", help="more arguments for the loop's script "
                   "(e.g. --loop tiny --loop-args '--ops 300 --grad')")
    a = p.parse_args()
    if a.quick:
        a.pairs, a.steps, a.inproc = 2, 100, 1
    a.build = os.path.abspath(os.path.join(ROOT, a.build))
    a.agent_env = dict(kv.split("=", 1) for kv in a.env)
    a.agent = os.path.abspath(a.agent) if a.agent else os.path.join(a.build, "libsyncspy.so")
    if not a.python and a.loop == "vit":
        a.python = os.path.join(a.build, "vision-venv", "bin", "python")
    elif not a.python:
        ver = "%d.%d" % sys.version_info[:2]
        a.python = os.path.join(a.build, "torch-venv", ver, "bin", "python")
    return a


def out_dir(args):
    return os.path.join(args.build, "bench", "torch-out")


def env_for(args, agent, extra=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("SYNCSPY_", "SIMCUDA_")) and k != "LD_PRELOAD"}
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    e["LD_LIBRARY_PATH"] = os.path.join(args.build, "sim") + ":" + os.path.join(cuda, "lib64")
    e["SYNCSPY_OUT"] = out_dir(args)
    e["SYNCSPY_REPORT"] = "off"
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    if agent:
        e["LD_PRELOAD"] = args.agent
        e.update(args.agent_env)
    if extra:
        e.update(extra)
    return e


def sample_rss(pid, samples, stop):
    path = f"/proc/{pid}/status"
    while not stop.is_set():
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        samples.append(int(line.split()[1]))
                        break
        except OSError:
            return
        stop.wait(0.02)


def run_watched(cmd, env, watch=None):
    """Runs cmd to its end, reading its stdout and stderr; watch(pid, stop), when given, runs in
    a thread until the process has ended (stop, a threading.Event, is then set). Returns (stdout,
    stderr, exit code, wait4's rusage: ru_maxrss covers the whole life, exit report included,
    time.time() at the end). Also bench/peers.py's."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(p.pid, stop), daemon=True) if watch else None
    if watcher:
        watcher.start()
    bufs = {}
    readers = [threading.Thread(target=lambda k, f: bufs.__setitem__(k, f.read()), args=(k, f))
               for k, f in (("out", p.stdout), ("err", p.stderr))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(p.pid, 0)
    ended = time.time()
    p.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    if watcher:
        watcher.join()
    for r in readers:
        r.join()
    return bufs["out"], bufs["err"], p.returncode, usage, ended


# Runs that died of SIGABRT and were run again: on the simulator, torch's ViT loop (with the agent
# or without) now and then aborts with "terminate called without an active exception"; the
# figures come from the second try, and the JSON lists each first try ("retried").
RETRIED = []


def one_run(args, agent, steps, extra=None, sample=False):
    """{step_ms (median after warm-up), times (ms by step), peak_kb, exit_s, rss_samples_kb}"""
    try:
        return one_try(args, agent, steps, extra, sample)
    except Aborted as e:
        RETRIED.append({"agent": bool(agent), "extra": extra or {}, "stderr_tail": str(e)[-300:]})
        return one_try(args, agent, steps, extra, sample, last=True)


class Aborted(Exception):
    pass


def one_try(args, agent, steps, extra=None, sample=False, last=False):
    shutil.rmtree(out_dir(args), ignore_errors=True)
    if args.loop == "vit":
        cmd = [args.python, SEEDS, "vit", "--no-pin", "--workers", "0", "--steps", str(steps),
               "--end-stamp"]
    elif args.loop == "tiny":
        cmd = [args.python, TINY, "--steps", str(steps), "--end-stamp"]
    elif args.loop == "block":
        cmd = [args.python, BLOCK, "--steps", str(steps), "--end-stamp"]
    else:
        cmd = [args.python, DEMO, "--steps", str(steps), "--log-every", "0", "--step-times",
               "--end-stamp"]
    cmd += args.loop_args.split()
    samples = []
    out, err, code, usage, ended = run_watched(
        cmd, env_for(args, agent, extra),
        (lambda pid, stop: sample_rss(pid, samples, stop)) if sample else None)
    if code == -6 and not last:
        raise Aborted(err[-2000:])
    if code != 0:
        raise SystemExit(f"torch_loop: {' '.join(cmd)} failed ({code}):\n{err[-2000:]}")
    times = {int(ln.split()[1]): float(ln.split()[2]) for ln in out.splitlines()
             if ln.startswith("step ")}
    kept = [times[i] for i in sorted(times) if i >= len(times) // 5]
    stamp = [float(ln.split()[1]) for ln in out.splitlines() if ln.startswith("end ")]
    return {"step_ms": statistics.median(kept), "times": times,
            "exit_s": ended - stamp[-1] if stamp else None,
            "rss_samples_kb": samples, "peak_kb": usage.ru_maxrss}


def pairs(args, n, steps, extra=None, sample=False):
    rows = []
    for i in range(n):
        order = (False, True) if i % 2 == 0 else (True, False)
        r = {}
        for agent in order:
            r["agent" if agent else "plain"] = one_run(args, agent, steps, extra, sample)
            if agent and extra and "skip_first" in extra.get("SYNCSPY_SCHEDULE", "") and \
                    active_steps(args):
                raise SystemExit("torch_loop: the unrecorded run recorded steps (bad schedule?)")
        rows.append(r)
    return rows


def summarize(rows):
    ratios = [r["agent"]["step_ms"] / r["plain"]["step_ms"] for r in rows]
    out = {"pairs": len(rows), "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
           "ratio_max": max(ratios), "ratios": ratios,
           "plain_step_ms": statistics.median(r["plain"]["step_ms"] for r in rows),
           "agent_step_ms": statistics.median(r["agent"]["step_ms"] for r in rows),
           "added_peak_mib": statistics.median(
               (r["agent"]["peak_kb"] - r["plain"]["peak_kb"]) / 1024 for r in rows),
           "plain_peak_mib": statistics.median(r["plain"]["peak_kb"] / 1024 for r in rows)}
    if all(r["agent"]["exit_s"] is not None and r["plain"]["exit_s"] is not None for r in rows):
        out["added_exit_s"] = statistics.median(
            r["agent"]["exit_s"] - r["plain"]["exit_s"] for r in rows)
    return out


def active_steps(args):
    """The step numbers summary.json lists (the recorded ones)."""
    for path in glob.glob(os.path.join(out_dir(args), "*", "summary.json")):
        with open(path) as f:
            return {st["step"] for st in json.load(f)["steps"]}
    raise SystemExit("torch_loop: the run left no summary.json")


def neighbours(t, active):
    """Each recorded step (in active) of t ({step: ms}) after the first 20 % against the mean of
    the unrecorded steps either side of it: {added_us, step_ms, added_pct, recorded} (medians).
    Also bench/peers.py's in-process figure."""
    first = len(t) // 5
    diffs, bases = [], []
    for i in sorted(t):
        if i >= first and i in active and i - 1 in t and i + 1 in t and \
                i - 1 not in active and i + 1 not in active:
            base = (t[i - 1] + t[i + 1]) / 2
            diffs.append(t[i] - base)
            bases.append(base)
    if not diffs:
        raise SystemExit("torch_loop: no recorded step between two unrecorded ones")
    d, b = statistics.median(diffs), statistics.median(bases)
    return {"added_us": d * 1000, "step_ms": b, "added_pct": 100 * d / b, "recorded": len(diffs)}


def in_process(args):
    """Recorded steps against their unrecorded neighbours, SYNCSPY_SCHEDULE=wait=1,active=1."""
    steps = max(args.steps * 3, 300)
    each = []
    for _ in range(args.inproc):
        r = one_run(args, True, steps, {"SYNCSPY_SCHEDULE": "wait=1,active=1"})
        each.append(neighbours(r["times"], active_steps(args)))
    return {"added_us": statistics.median(e["added_us"] for e in each),
            "added_pct": statistics.median(e["added_pct"] for e in each),
            "added_pct_min": min(e["added_pct"] for e in each),
            "added_pct_max": max(e["added_pct"] for e in each),
            "step_ms": statistics.median(e["step_ms"] for e in each),
            "steps": steps, "runs": each}


def main():
    args = parse()
    for path, what in ((args.python, "venv python (make torch-venv)"), (args.agent, "agent")):
        if not os.path.exists(path):
            raise SystemExit(f"torch_loop: no {what} at {path}")
    res = {"loop": args.loop, "steps": args.steps, "python": args.python, "agent": args.agent,
           "agent_env": args.agent_env}
    if args.only_inproc:
        res["in_process"] = in_process(args)
        print(json.dumps(res, indent=1))
        return
    res["recorded"] = summarize(pairs(args, args.pairs, args.steps))
    res["unrecorded"] = summarize(pairs(args, args.pairs, args.steps,
                                        {"SYNCSPY_SCHEDULE": f"skip_first={args.steps * 10},active=1"}))
    res["in_process"] = in_process(args)
    long_rows = pairs(args, max(2, args.pairs // 4), args.steps * 4, sample=True)
    res["long"] = summarize(long_rows)
    res["long"]["steps"] = args.steps * 4
    for who in ("agent", "plain"):
        samples = [r[who]["rss_samples_kb"] for r in long_rows if r[who]["rss_samples_kb"]]
        if samples:
            res["long"][who + "_rss_sampled_max_mib"] = statistics.median(max(s) / 1024 for s in samples)
            res["long"][who + "_rss_last_sample_mib"] = statistics.median(s[-1] / 1024 for s in samples)
    for section in ("recorded", "unrecorded", "long"):
        for key in ("ratios",):
            res[section][key] = [round(x, 4) for x in res[section][key]]
    res["retried"] = RETRIED
    doc = json.dumps(res, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(doc + "\n")
    print(doc)


if __name__ == "__main__":
    main()
