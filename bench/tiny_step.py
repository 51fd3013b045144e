"""bench/tiny_step.py: the tiny-step loop of issue 26 item 3, for bench/torch_loop.py --loop tiny:
each step is one op and one optimizer step (torch.optim.SGD on one 16-element parameter whose
gradient is set once), no sync, the kind of step RL and small-model loops run thousands of a
second. What the agent adds to it is the cost of a step's end: the optimizer step hook and the
step mark.

    python tiny_step.py [--steps N] [--end-stamp]

Prints "step I MS" for every step (host time, perf_counter; printed after the loop so that no
write lands inside a step), then "end <time.time()>" with --end-stamp."""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--end-stamp", action="store_true", help="print 'end <time.time()>' last")
    args = p.parse_args()
    dev = torch.device("cuda")
    w = torch.zeros(16, device=dev, requires_grad=True)
    w.grad = torch.ones(16, device=dev)
    x = torch.zeros(16, device=dev)
    opt = torch.optim.SGD([w], lr=0.001)
    times = []
    clock = time.perf_counter
    for _ in range(args.steps):
        t0 = clock()
        x.add_(1.0)  # the step's one op
        opt.step()
        times.append((clock() - t0) * 1e3)
    print("\n".join(f"step {i} {t:.4f}" for i, t in enumerate(times)), flush=True)
    if args.end_stamp:
        print(f"end {time.time():.6f}", flush=True)


if __name__ == "__main__":
    main()
