"""bench/peer_wrap.py: runs a program unmodified (runpy, as `python SCRIPT ARGS` runs it) under a
peer tool that is set up inside the process, for bench/peers.py. Adds no output of its own but
the tool's; the program's stdout, stderr and exit status are its own.

    python bench/peer_wrap.py MODE OUT [--inproc] -- SCRIPT [ARGS...]

MODE profiler, profiler-stack: torch.profiler.profile (CPU and CUDA activity, with_stack False
     or True) around the whole run, exported to OUT as a Chrome trace when the program ends.
     sync-debug: torch.cuda.set_sync_debug_mode("warn") before the program starts; its warnings
     on stderr are the output (OUT is not written).
--inproc: the tool is on in every other step only, for the in-process figure: steps end at
     torch.optim's optimizer-step hook (as syncspy's do); the profiler goes by its own schedule
     (wait=1, active=1: prof.step() in the hook, nothing exported), the sync-debug mode is
     switched in the hook. OUT then receives the numbers of the steps the tool was on (JSON)."""
import json
import runpy
import sys

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

MODES = ("profiler", "profiler-stack", "sync-debug")


def parse(argv):
    if "--" not in argv or len(argv) < 4 or argv[1] not in MODES:
        raise SystemExit(__doc__.split("\n\n")[1])
    sep = argv.index("--")
    return argv[1], argv[2], "--inproc" in argv[3:sep], argv[sep + 1:]


def run_program(prog):
    sys.argv = prog
    runpy.run_path(prog[0], run_name="__main__")


def with_profiler(stack, out, inproc, prog):
    from torch.profiler import ProfilerAction, ProfilerActivity, profile, schedule
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    if not inproc:
        prof = profile(activities=acts, with_stack=stack)
        try:
            with prof:
                run_program(prog)
        finally:  # a program that ends with sys.exit() still gets its trace
            prof.export_chrome_trace(out)
        return
    sched = schedule(wait=1, warmup=0, active=1)
    with profile(activities=acts, with_stack=stack, schedule=sched) as prof:
        def switch(step):
            prof.step()  # prof.step_num becomes the step that starts now
            return sched(prof.step_num) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        run_switched(switch, out, prog)


def with_sync_debug(out, inproc, prog):
    torch.cuda.set_sync_debug_mode("warn")
    if not inproc:
        run_program(prog)
        return
    torch.cuda.set_sync_debug_mode(0)  # step 0 off, then every other step on

    def switch(step):
        torch.cuda.set_sync_debug_mode("warn" if step % 2 else 0)
        return step % 2 == 1
    run_switched(switch, out, prog)


def run_switched(switch, out, prog):
    """Runs the program with switch(step) called as each step starts (in the optimizer-step
    hook, step 1 first): it turns the tool on or off and says which; writes the numbers of the
    steps it was on to out."""
    on, steps = [], [0]

    def hook(optimizer, args, kwargs):
        steps[0] += 1
        if switch(steps[0]):
            on.append(steps[0])
    handle = register_optimizer_step_post_hook(hook)
    try:
        run_program(prog)
    finally:
        handle.remove()
        with open(out, "w") as f:
            json.dump(on, f)


def main():
    mode, out, inproc, prog = parse(sys.argv)
    if mode == "sync-debug":
        with_sync_debug(out, inproc, prog)
    else:
        with_profiler(mode == "profiler-stack", out, inproc, prog)


if __name__ == "__main__":
    main()
