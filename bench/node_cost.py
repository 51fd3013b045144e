"""bench/node_cost.py: what backward attribution adds per op (issue 26 item 2), in one process
with the agent preloaded under SYNCSPY_BACKWARD=all and SYNCSPY_SCHEDULE=wait=1,active=1: every
other step is recorded, and every recorded step attributed (agent/record/autograd_nodes.h: each node's
forward stack kept from the interposed at::sequence_number::get_and_increment, or from anomaly
mode's format_stack where that hook is not reached). Each step times rounds of --ops ops on the
CPU (`w * 1.0` on 64 floats whose input needs grad: one autograd node each, freed at once; with
--no-grad under torch.no_grad(): none); syncspy_recording() tells the attributed steps from their
unrecorded neighbours. Prints the minimum ns per op of each over all rounds (the least-disturbed
figure on a loaded machine) and their difference.

    SYNCSPY_BACKWARD=all SYNCSPY_SCHEDULE=wait=1,active=1 SYNCSPY_REPORT=off \\
        LD_PRELOAD=build/libsyncspy.so python bench/node_cost.py [--steps N] [--ops N] [--no-grad] [--depth N]"""
import argparse
import ctypes
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--ops", type=int, default=300)
    p.add_argument("--rounds", type=int, default=10, help="rounds per step")
    p.add_argument("--no-grad", action="store_true")
    p.add_argument("--depth", type=int, default=0,
                   help="Python frames added above the ops (a model's module stack: ~30)")
    args = p.parse_args()
    try:
        recording = ctypes.CDLL(None).syncspy_recording
    except AttributeError:
        raise SystemExit("node_cost.py: run it with the agent preloaded (no syncspy_recording)")
    w = torch.ones(64, requires_grad=True)
    dw = torch.zeros(16, device="cuda", requires_grad=True)
    dw.grad = torch.ones(16, device="cuda")
    x = torch.zeros(16, device="cuda")
    opt = torch.optim.SGD([dw], lr=0.001)
    best = {True: float("inf"), False: float("inf")}
    seen = {True: 0, False: 0}
    ops = range(args.ops)
    clock = time.perf_counter_ns

    def timed():
        with torch.no_grad() if args.no_grad else torch.enable_grad():
            t0 = clock()
            for _ in ops:
                w * 1.0
            return (clock() - t0) / args.ops

    def deep(n):
        return deep(n - 1) if n > 0 else timed()

    for _ in range(args.steps):
        on = recording() == 1
        seen[on] += 1
        for _ in range(args.rounds):
            best[on] = min(best[on], deep(args.depth))
        x.add_(1.0)
        opt.step()
    if not seen[True] or not seen[False]:
        raise SystemExit(f"node_cost.py: {seen[True]} attributed and {seen[False]} other steps: "
                         "set SYNCSPY_SCHEDULE=wait=1,active=1 and SYNCSPY_BACKWARD=all")
    print(f"ops/step {args.ops} no_grad {args.no_grad} depth +{args.depth}, {seen[True]} attributed and {seen[False]} "
          f"unrecorded steps: {best[False]:.0f} ns/op unrecorded, {best[True]:.0f} attributed: "
          f"+{best[True] - best[False]:.0f} ns/op")


if __name__ == "__main__":
    main()
