"""bench/torch_loop.py: what the agent costs on real PyTorch: the seed-003 training loop
(examples/seg_loss.py, about 2 ms per step on 2 cores, 5 syncs and ~47 launches per step) on the
pinned wheel over the simulated device, in alternating processes with and without the agent.

    python3 bench/torch_loop.py [--build build] [--pairs N] [--steps N] [--json OUT] [--quick]

Figures (each pair is one process without the agent and one with it, in alternating order):
- time: per process, the median of its own per-step host times (perf_counter, printed by the
  program) after the first 20 % of the steps; the figure is the median over pairs of the ratio
  agent/plain, with the spread (min, max) of the ratios. Also for a schedule that records no
  step (SYNCSPY_SCHEDULE=skip_first=<more than the run>): the cost in unrecorded steps.
- memory: peak RSS of each process (wait4's ru_maxrss, which covers the exit report too), the
  median difference agent - plain, at --steps and at 4x --steps (flat in run length when the two
  agree), and RSS sampled every 20 ms from /proc during the longer run (max and the last sample).
- exit: seconds from the program's last line (it prints a timestamp) to the end of the
  process, agent - plain.
Prints one JSON document (also written to --json)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "seg_loss.py")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--pairs", type=int, default=8)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--python", default="", help="the venv's python (default: BUILD's main venv)")
    p.add_argument("--json", default="")
    p.add_argument("--quick", action="store_true", help="2 pairs of 100 steps (a smoke run)")
    a = p.parse_args()
    if a.quick:
        a.pairs, a.steps = 2, 100
    a.build = os.path.abspath(os.path.join(ROOT, a.build))
    if not a.python:
        ver = "%d.%d" % sys.version_info[:2]
        a.python = os.path.join(a.build, "torch-venv", ver, "bin", "python")
    return a


def env_for(args, agent, extra=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("SYNCSPY_", "SIMCUDA_")) and k != "LD_PRELOAD"}
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    e["LD_LIBRARY_PATH"] = os.path.join(args.build, "sim") + ":" + os.path.join(cuda, "lib64")
    e["SYNCSPY_OUT"] = os.path.join(args.build, "bench", "torch-out")
    e["SYNCSPY_REPORT"] = "off"
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    if agent:
        e["LD_PRELOAD"] = os.path.join(args.build, "libsyncspy.so")
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


def one_run(args, agent, steps, extra=None, sample=False):
    """{step_ms (median after warm-up), peak_kb, exit_s, rss_samples_kb}"""
    cmd = [args.python, DEMO, "--steps", str(steps), "--log-every", "0", "--step-times",
           "--end-stamp"]
    p = subprocess.Popen(cmd, env=env_for(args, agent, extra), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    samples, stop = [], threading.Event()
    t = threading.Thread(target=sample_rss, args=(p.pid, samples, stop), daemon=True)
    if sample:
        t.start()
    bufs = {}
    readers = [threading.Thread(target=lambda k, f: bufs.__setitem__(k, f.read()), args=(k, f))
               for k, f in (("out", p.stdout), ("err", p.stderr))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(p.pid, 0)  # ru_maxrss: the whole life, exit report included
    ended = time.time()
    p.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    for r in readers:
        r.join()
    out, err = bufs["out"], bufs["err"]
    if p.returncode != 0:
        raise SystemExit(f"torch_loop: {' '.join(cmd)} failed ({p.returncode}):\n{err[-2000:]}")
    times = [float(line.split()[2]) for line in out.splitlines() if line.startswith("step ")]
    kept = times[len(times) // 5:]
    stamp = [float(line.split()[1]) for line in out.splitlines() if line.startswith("end ")]
    return {"step_ms": statistics.median(kept), "exit_s": ended - stamp[-1] if stamp else None,
            "rss_samples_kb": samples, "peak_kb": usage.ru_maxrss}


def pairs(args, steps, extra=None, sample=False):
    rows = []
    for i in range(args.pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        r = {}
        for agent in order:
            r["agent" if agent else "plain"] = one_run(args, agent, steps, extra, sample)
        rows.append(r)
    return rows


def summarize(rows):
    ratios = [r["agent"]["step_ms"] / r["plain"]["step_ms"] for r in rows]
    out = {"ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
           "ratio_max": max(ratios), "ratios": ratios,
           "plain_step_ms": statistics.median(r["plain"]["step_ms"] for r in rows),
           "agent_step_ms": statistics.median(r["agent"]["step_ms"] for r in rows)}
    if rows:
        out["added_peak_mib"] = statistics.median(
            (r["agent"]["peak_kb"] - r["plain"]["peak_kb"]) / 1024 for r in rows)
        out["plain_peak_mib"] = statistics.median(r["plain"]["peak_kb"] / 1024 for r in rows)
    if all(r["agent"]["exit_s"] is not None for r in rows):
        out["added_exit_s"] = statistics.median(r["agent"]["exit_s"] - r["plain"]["exit_s"] for r in rows)
    return out


def main():
    args = parse()
    if not os.path.exists(args.python):
        raise SystemExit(f"torch_loop: no venv python at {args.python} (make torch-venv)")
    res = {"steps": args.steps, "pairs": args.pairs, "python": args.python}
    res["recorded"] = summarize(pairs(args, args.steps))
    res["unrecorded"] = summarize(pairs(args, args.steps,
                                        {"SYNCSPY_SCHEDULE": f"skip_first={args.steps * 10}"}))
    long_rows = pairs(argparse.Namespace(**{**vars(args), "pairs": max(2, args.pairs // 4)}),
                      args.steps * 4, sample=True)
    res["long"] = summarize(long_rows)
    samples = [r["agent"]["rss_samples_kb"] for r in long_rows if r["agent"]["rss_samples_kb"]]
    if samples:
        res["long"]["agent_rss_sampled_max_mib"] = statistics.median(max(s) / 1024 for s in samples)
        res["long"]["agent_rss_last_sample_mib"] = statistics.median(s[-1] / 1024 for s in samples)
    doc = json.dumps(res, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(doc + "\n")
    print(doc)


if __name__ == "__main__":
    main()
