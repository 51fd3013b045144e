"""bench/step_end.py: the instructions a step's end costs (issue 26 item 3), counted by callgrind
on bench/tiny_step.py's step (one op, one torch.optim.SGD step on a 16-element parameter, no
sync): the training thread's instructions in N steps, after W warm-up steps (the optimizer step
hook registered, torch's lazy imports done), with the agent and without; the difference over N
is what the agent adds to one step's end. The window is bench/callgrind_window.c's
(build/bench/libcgwindow.so, `make bench-build`); other threads (the flusher, the simulator's)
are not counted.

    python3 bench/step_end.py [--build build] [--agent SO] [--python PY] [--steps N]
                              [--warmup W] [--arms plain,agent,manual] [--json FILE]

Arms: plain (no agent), agent (default settings), manual (SYNCSPY_STEP=manual: no hook, no
step mark), backward-off (SYNCSPY_BACKWARD=off), base (the agent's library given by --base, to
compare two builds), all with SYNCSPY_REPORT=off over the simulator. Prints each arm's Ir per
step and the agent arms' Ir per step over plain. `--child` runs the loop itself (what valgrind
runs).

    python3 bench/step_end.py --wall ROUNDS [--steps N] [--arms ...]

    python3 bench/step_end.py --inproc [--steps N] [--arms ...]

In process, per arm: the optimizer step hooks the process has (none without the agent) called
directly as torch calls them, hook(optimizer, args, kwargs), N times in batches of 1,000, each
batch against the same loop with no hook; the median difference in ns per call: a step end's
cost without the rest of the step (each call is a step mark; no attribution: no sync seen).

    python3 bench/step_end.py --wall ROUNDS [--steps N] [--arms ...]

The same arms in wall-clock time instead: ROUNDS rounds of one bench/tiny_step.py process per
arm (the order turned each round), each process's median step (perf_counter) after its first
20 %; per arm the median over rounds of its difference with the round's plain process, in us
per step. On a shared machine a process's speed moves by more than a step's end costs: read
the spread, prefer the instruction counts."""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARMS = {"plain": None, "agent": {}, "manual": {"SYNCSPY_STEP": "manual"},
        "backward-off": {"SYNCSPY_BACKWARD": "off"}, "base": {}}


def arm_env(args, name):
    """The environment of an arm's process (its preload, when it has the agent, apart)."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(args.build, "sim") + ":/usr/local/cuda/lib64"
    env["SYNCSPY_REPORT"] = "off"
    env.pop("LD_PRELOAD", None)
    if ARMS[name] is not None:
        env.update(ARMS[name])
    return env, None if ARMS[name] is None else args.base if name == "base" else args.agent


def warmed_up(args):
    """bench/tiny_step.py's tensors and optimizer, after --warmup steps: (x, opt)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tiny_step
    x, _, opt = tiny_step.tensors()
    for _ in range(args.warmup):
        x.add_(1.0)
        opt.step()
    return x, opt


def child(args):
    win = ctypes.CDLL(args.lib)
    x, opt = warmed_up(args)
    win.cg_window_begin()
    for _ in range(args.steps):
        x.add_(1.0)
        opt.step()
    win.cg_window_end()


def child_inproc(args):
    """In one process: the registered optimizer step hooks called as torch calls them, in batches
    of 1,000, against the same loop with nothing in it; prints the median ns per call."""
    import statistics
    import time
    from torch.optim import optimizer as optim_mod
    x, opt = warmed_up(args)
    hooks = list(optim_mod._global_optimizer_post_hooks.values())
    clock, batch, a, k = time.perf_counter_ns, range(1000), (), {}
    hook_ns, empty_ns = [], []
    for _ in range(max(1, args.steps // 1000)):  # at least one batch (--steps under 1,000)
        t = clock()
        for _ in batch:
            for h in hooks:
                h(opt, a, k)
        hook_ns.append((clock() - t) / 1000)
        t = clock()
        for _ in batch:
            for h in ():
                h(opt, a, k)
        empty_ns.append((clock() - t) / 1000)
    print(json.dumps({"hooks": len(hooks), "hook_ns": statistics.median(hook_ns),
                      "empty_ns": statistics.median(empty_ns),
                      "added_ns": statistics.median(h - e for h, e in zip(hook_ns, empty_ns))}))


def inproc(args, arms):
    res = {}
    for a in arms:
        env, lib = arm_env(args, a)
        if lib:
            env["LD_PRELOAD"] = lib
        r = subprocess.run([args.python, os.path.abspath(__file__), "--child", "--inproc",
                            "--steps", str(args.steps), "--warmup", str(args.warmup)],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-4000:])
            raise SystemExit(f"step_end: arm {a} exited {r.returncode}")
        res[a] = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{a:14s} {res[a]['hooks']} hook(s): {res[a]['added_ns']:8.0f} ns per step end "
              f"(batch medians: {res[a]['hook_ns']:.0f} ns with, {res[a]['empty_ns']:.0f} without)",
              flush=True)
    return res


def total_ir(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"totals: (\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit(f"step_end: no total in {path}")


def run_arm(args, name):
    env, lib = arm_env(args, name)
    env["PYTHONHASHSEED"] = "0"  # the same dict layouts in every run: counts that repeat
    preload = [f"LD_PRELOAD={lib}"] if lib else []  # valgrind hands it on to the program
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(args.keep or tmp, f"callgrind.{name}.out")
        cmd = ["env", *preload, "valgrind", "--tool=callgrind", "--instr-atstart=no",
               "--collect-atstart=no", f"--callgrind-out-file={out}", "--dump-instr=no",
               args.python, os.path.abspath(__file__), "--child", "--lib", args.lib,
               "--steps", str(args.steps), "--warmup", str(args.warmup)]
        r = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-4000:])
            raise SystemExit(f"step_end: arm {name} exited {r.returncode}")
        return total_ir(out)


def wall(args, arms):
    import statistics
    tiny = os.path.join(ROOT, "bench", "tiny_step.py")
    rounds = []
    for i in range(args.wall):
        order = arms if i % 2 == 0 else arms[::-1]
        row = {}
        for a in order:
            env, lib = arm_env(args, a)
            if lib:
                env["LD_PRELOAD"] = lib
            r = subprocess.run([args.python, tiny, "--steps", str(args.steps)], env=env,
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.stderr.write(r.stderr[-4000:])
                raise SystemExit(f"step_end: arm {a} exited {r.returncode}")
            t = [float(ln.split()[2]) for ln in r.stdout.splitlines() if ln.startswith("step ")]
            row[a] = statistics.median(t[len(t) // 5:]) * 1e3  # us
        rounds.append(row)
        print(" ".join(f"{a} {row[a]:.2f}" for a in arms), "us", flush=True)
    out = {"rounds": rounds, "steps": args.steps,
           "plain_us": statistics.median(r["plain"] for r in rounds),
           "added_us": {a: statistics.median(r[a] - r["plain"] for r in rounds)
                        for a in arms if a != "plain"},
           "added_us_spread": {a: [min(r[a] - r["plain"] for r in rounds),
                                   max(r[a] - r["plain"] for r in rounds)]
                               for a in arms if a != "plain"}}
    for a in out["added_us"]:
        print(f"{a:14s} {out['added_us'][a]:+8.2f} us per step over plain (median of {len(rounds)}"
              f" rounds; spread {out['added_us_spread'][a][0]:+.2f} .. "
              f"{out['added_us_spread'][a][1]:+.2f})")
    return out


def window_args(description, steps, warmup, arms):
    """The options bench/step_end.py and bench/torch_ir.py share."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--python", default=None)
    p.add_argument("--agent", default=None, help="the agent's library (default BUILD/libsyncspy.so)")
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--arms", default=arms)
    p.add_argument("--json", default=None)
    return p


def main():
    p = window_args(__doc__.split("\n\n")[0], 2000, 300, "plain,agent,manual")
    p.add_argument("--base", default=None, help="the arm base's agent library")
    p.add_argument("--wall", type=int, default=0, metavar="ROUNDS",
                   help="wall-clock rounds of bench/tiny_step.py instead of instruction counts")
    p.add_argument("--no-plain", action="store_true",
                   help="counts only the arms given (no plain run; no difference printed)")
    p.add_argument("--inproc", action="store_true",
                   help="in process: the step hook called directly, ns per call (--steps calls)")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="callgrind's output kept there (callgrind.ARM.out: callgrind_annotate it)")
    p.add_argument("--child", action="store_true")
    p.add_argument("--lib", default=None)
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    if args.keep:
        args.keep = os.path.abspath(args.keep)
        os.makedirs(args.keep, exist_ok=True)
    if args.child:
        return child_inproc(args) if args.inproc else child(args)
    args.python = args.python or os.path.join(args.build, "torch-venv", "3.11", "bin", "python")
    args.agent = os.path.abspath(args.agent or os.path.join(args.build, "libsyncspy.so"))
    args.lib = args.lib or os.path.join(args.build, "bench", "libcgwindow.so")
    arms = args.arms.split(",")
    if "plain" not in arms and (args.wall or not args.no_plain):
        arms.insert(0, "plain")
    if args.base:
        args.base = os.path.abspath(args.base)
    if args.wall or args.inproc:
        out = wall(args, arms) if args.wall else inproc(args, arms)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
        return
    res = {}
    for a in arms:
        res[a] = run_arm(args, a)
        print(f"{a:14s} {res[a] / args.steps:10.0f} Ir/step", flush=True)
    out = {"steps": args.steps, "warmup": args.warmup, "ir": res,
           "added_per_step": {a: (res[a] - res["plain"]) / args.steps for a in arms
                              if a != "plain" and "plain" in res}}
    for a, v in out["added_per_step"].items():
        print(f"{a:14s} {v:+10.0f} Ir per step end over plain")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
