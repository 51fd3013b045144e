"""bench/tiny_step.py: the tiny-step loop of issue 26 item 3, for bench/torch_loop.py --loop tiny:
each step is one op and one optimizer step (torch.optim.SGD on one 16-element parameter whose
gradient is set once), no sync, the kind of step RL and small-model loops run thousands of a
second. What the agent adds to it is the cost of a step's end: the optimizer step hook and the
step mark. With --ops N the step has N ops (issue 26 item 2: what backward attribution costs per
op); --grad makes each op's input need grad (each op makes an autograd node, freed at once),
--no-grad runs the loop under torch.no_grad() (no op makes a node).

    python tiny_step.py [--steps N] [--ops N] [--grad | --no-grad] [--end-stamp]

Prints "step I MS" for every step (host time, perf_counter; printed after the loop so that no
write lands inside a step), then "end <time.time()>" with --end-stamp."""
import argparse
import time

import torch

import step_times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--ops", type=int, default=1, help="ops per step")
    p.add_argument("--grad", action="store_true", help="each op makes an autograd node")
    p.add_argument("--no-grad", action="store_true", help="the loop under torch.no_grad()")
    p.add_argument("--end-stamp", action="store_true", help="print 'end <time.time()>' last")
    args = p.parse_args()
    with torch.no_grad() if args.no_grad else torch.enable_grad():
        loop(args)


def tensors():
    """The loop's tensors and optimizer: x (16 floats), w and SGD over a 16-float parameter whose
    gradient is set once (bench/step_end.py uses them too)."""
    dev = torch.device("cuda")
    w = torch.zeros(16, device=dev, requires_grad=True)
    w.grad = torch.ones(16, device=dev)
    return torch.zeros(16, device=dev), w, torch.optim.SGD([w], lr=0.001)


def loop(args):
    x, w, opt = tensors()
    times = []
    clock = time.perf_counter
    ops = range(args.ops)
    for _ in range(args.steps):
        t0 = clock()
        if args.grad:
            for _ in ops:
                w.mul(1.0)  # a node (MulBackward0), freed with its output
        else:
            for _ in ops:
                x.add_(1.0)  # the step's ops
        opt.step()
        times.append((clock() - t0) * 1e3)
    step_times.report(times, args.end_stamp)


if __name__ == "__main__":
    main()
