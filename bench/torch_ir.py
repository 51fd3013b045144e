"""bench/torch_ir.py: what the agent costs on the real-torch seed-003 loop (examples/seg_loss.py),
in instructions: callgrind counts every thread's instructions (the training thread's, autograd's
engine thread's, the flusher's, the simulator's) over N steps after W warm-up steps, in four
arms, and prints Ir per step and the differences. Instruction counts do not move with the
machine's load (the wall-clock figures of bench/torch_loop.py do, by more than they measure on a
shared machine); they miss what costs time without instructions (cache misses, a thread waking).

    python3 bench/torch_ir.py [--build build] [--agent SO] [--python PY] [--steps N]
                              [--warmup W] [--arms plain,unrecorded,recorded,attributed]
                              [--json FILE]

Arms (all SYNCSPY_REPORT=off over the simulator, PYTHONHASHSEED=0):
  plain        no agent
  unrecorded   the agent, no step recorded (SYNCSPY_SCHEDULE=skip_first=<many>,active=1)
  recorded     every step recorded, backward attribution off (SYNCSPY_BACKWARD=off)
  attributed   every step recorded and attributed (the default SYNCSPY_BACKWARD=auto)
Differences: unrecorded - plain (what a step the schedule skips costs), recorded - unrecorded
(recording), attributed - recorded (backward attribution), each also as a share of plain's Ir per
step. The window is bench/callgrind_window.c's cg_window_all_begin/end (build/bench/
libcgwindow.so, `make bench-build`), opened and closed by an optimizer step post hook of this
script's: the same hook in every arm. `--child` runs the loop itself (what valgrind runs)."""
import ctypes
import json
import os
import runpy
import subprocess
import sys
import tempfile

from step_end import total_ir, window_args

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOP = os.path.join(ROOT, "examples", "seg_loss.py")
ARMS = ("plain", "unrecorded", "recorded", "attributed")


def child(args):
    lib = ctypes.CDLL(args.lib)
    import torch  # noqa: F401  (the hook below needs torch.optim)
    from torch.optim.optimizer import register_optimizer_step_post_hook
    n = [0]

    def window(opt, a, kw):
        n[0] += 1
        if n[0] == args.warmup:
            lib.cg_window_all_begin()
        elif n[0] == args.warmup + args.steps:
            lib.cg_window_all_end()
    register_optimizer_step_post_hook(window)
    sys.argv = [LOOP, "--steps", str(args.warmup + args.steps + 5), "--log-every", "0"]
    runpy.run_path(LOOP, run_name="__main__")


def arm_env(args, name):
    env = dict(os.environ, SYNCSPY_REPORT="off", PYTHONHASHSEED="0",
               LD_LIBRARY_PATH=os.path.join(args.build, "sim") + ":/usr/local/cuda/lib64",
               SYNCSPY_OUT=os.path.join(args.tmp, "out-" + name))
    for k in ("SYNCSPY_SCHEDULE", "SYNCSPY_BACKWARD", "LD_PRELOAD"):
        env.pop(k, None)
    if name == "plain":
        return env, None
    if name == "unrecorded":
        env["SYNCSPY_SCHEDULE"] = "skip_first=%d,active=1" % ((args.warmup + args.steps) * 10)
    else:
        env["SYNCSPY_SCHEDULE"] = "wait=0,active=1"
    if name == "recorded":
        env["SYNCSPY_BACKWARD"] = "off"
    return env, args.agent


def run_arm(args, name):
    env, lib = arm_env(args, name)
    preload = ["LD_PRELOAD=%s" % lib] if lib else []  # valgrind hands it on to the program
    out = os.path.join(args.tmp, "callgrind.%s.out" % name)
    cmd = ["env", *preload, "valgrind", "--tool=callgrind", "--instr-atstart=no",
           "--callgrind-out-file=" + out, "--dump-instr=no", args.python,
           os.path.abspath(__file__), "--child", "--lib", args.lib, "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    r = subprocess.run(cmd, env=env, cwd=args.tmp, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-4000:])
        raise SystemExit("torch_ir: arm %s exited %d" % (name, r.returncode))
    return total_ir(out) / args.steps


def main():
    p = window_args(__doc__.split("\n\n")[0], 50, 30, ",".join(ARMS))
    p.add_argument("--keep", default=None, help="callgrind's outputs kept there")
    p.add_argument("--child", action="store_true")
    p.add_argument("--lib", default=None)
    args = p.parse_args()
    if args.child:
        return child(args)
    args.build = os.path.abspath(args.build)
    ver = "%d.%d" % sys.version_info[:2]
    args.python = args.python or os.path.join(args.build, "torch-venv", ver, "bin", "python")
    args.agent = os.path.abspath(args.agent or os.path.join(args.build, "libsyncspy.so"))
    args.lib = args.lib or os.path.join(args.build, "bench", "libcgwindow.so")
    for need in (args.python, args.agent, args.lib):
        if not os.path.exists(need):
            raise SystemExit("torch_ir: %s is missing (make torch-venv bench-build)" % need)
    arms = [a for a in args.arms.split(",") if a]
    for a in arms:
        if a not in ARMS:
            raise SystemExit("torch_ir: no arm %r (arms: %s)" % (a, ", ".join(ARMS)))
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = args.keep or tmp
        os.makedirs(args.tmp, exist_ok=True)
        ir = {}
        for a in arms:
            ir[a] = run_arm(args, a)
            print("%-11s %12.0f Ir per step" % (a, ir[a]), flush=True)
    res = {"steps": args.steps, "warmup": args.warmup, "ir_per_step": ir, "added": {}}
    base = ir.get("plain")
    for name, hi, lo in (("unrecorded step", "unrecorded", "plain"),
                         ("recording", "recorded", "unrecorded"),
                         ("attribution", "attributed", "recorded"),
                         ("recorded and attributed step", "attributed", "plain")):
        if hi in ir and lo in ir:
            d = ir[hi] - ir[lo]
            res["added"][name] = {"ir": d, "pct_of_plain": 100 * d / base if base else None}
            print("%-30s %+9.0f Ir per step%s" % (
                name, d, " (%+.2f %% of plain's)" % (100 * d / base) if base else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
