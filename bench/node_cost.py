"""bench/node_cost.py: what backward attribution adds per op (issue 26 item 2), in one process
with the agent preloaded under SYNCSPY_BACKWARD=all (every recorded step attributed through the
anomaly engine, agent/autograd_nodes.h). In each attributed step (torch.is_anomaly_enabled()
reads True there) it times rounds of --ops ops on the CPU (`w * 1.0` on 64 floats whose input
needs grad: one autograd node each, freed at once; with --no-grad under torch.no_grad(): none),
alternating three states a few microseconds apart: the engine as it runs; torch's anomaly
machinery alone (torch.fx.traceback.format_stack swapped for `tuple` for the round: the import,
the call and the metadata dict torch pays per node); anomaly mode off. Prints the minimum ns per
op of each state over all rounds (the least-disturbed figure on a loaded machine).

    SYNCSPY_BACKWARD=all SYNCSPY_REPORT=off LD_PRELOAD=build/libsyncspy.so \\
        python bench/node_cost.py [--steps N] [--ops N] [--rounds N] [--no-grad]"""
import argparse
import time

import torch
import torch.fx.traceback as fxt


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--ops", type=int, default=300)
    p.add_argument("--rounds", type=int, default=10, help="rounds of each state per step")
    p.add_argument("--no-grad", action="store_true")
    args = p.parse_args()
    w = torch.ones(64, requires_grad=True)
    dw = torch.zeros(16, device="cuda", requires_grad=True)
    dw.grad = torch.ones(16, device="cuda")
    x = torch.zeros(16, device="cuda")
    opt = torch.optim.SGD([dw], lr=0.001)
    best = {"engine": float("inf"), "torch_floor": float("inf"), "anomaly_off": float("inf")}
    ops = range(args.ops)
    clock = time.perf_counter_ns
    attributed = 0

    def timed():
        with torch.no_grad() if args.no_grad else torch.enable_grad():
            t0 = clock()
            for _ in ops:
                w * 1.0
            return (clock() - t0) / args.ops

    for _ in range(args.steps):
        if torch.is_anomaly_enabled():
            attributed += 1
            ours = fxt.format_stack
            for _ in range(args.rounds):
                best["engine"] = min(best["engine"], timed())
                fxt.format_stack = tuple
                best["torch_floor"] = min(best["torch_floor"], timed())
                fxt.format_stack = ours
                torch.set_anomaly_enabled(False, False)
                best["anomaly_off"] = min(best["anomaly_off"], timed())
                torch.set_anomaly_enabled(True, False)
        x.add_(1.0)
        opt.step()
    if not attributed:
        print("no attributed step (the anomaly engine was not used)")
        return
    off = best["anomaly_off"]
    print(f"ops/step {args.ops} no_grad {args.no_grad}, {attributed} attributed steps: "
          f"anomaly off {off:.0f} ns/op; torch's anomaly machinery alone +{best['torch_floor'] - off:.0f}; "
          f"the engine +{best['engine'] - off:.0f} ns/op")


if __name__ == "__main__":
    main()
