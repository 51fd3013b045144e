"""tests/torch/progs/control_loop.py: a long training loop for `syncspy start/stop` and
syncspy.start()/stop() (tests/torch/test_control.py): one .item() sync and one optimizer step per
iteration, a short sleep, its progress (the iteration now) written to a file that another process
polls, and the same few lines on stdout whatever is recorded.

    control_loop.py ITERS PROGRESS_FILE [--sleep S] [--py-start AT:STEPS|AT:] [--py-stop AT]...

--py-start AT:STEPS calls syncspy.start(steps=STEPS) in iteration AT (AT: alone: start()),
--py-stop AT calls syncspy.stop() in iteration AT. Iteration i runs in step i (step 0, start-up,
ends at the first optimizer.step())."""
import argparse
import os
import time

import syncspy
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("iters", type=int)
    parser.add_argument("progress")
    parser.add_argument("--sleep", type=float, default=0.004)
    parser.add_argument("--py-start", action="append", default=[])
    parser.add_argument("--py-stop", action="append", type=int, default=[])
    args = parser.parse_args()
    starts = {}
    for s in args.py_start:
        at, _, n = s.partition(":")
        starts[int(at)] = int(n) if n else None
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.ones(8, device="cuda"))
    opt = torch.optim.SGD([w], lr=0.0)
    x = torch.ones(8, device="cuda")
    total = 0.0
    for i in range(args.iters):
        if i in starts:
            assert syncspy.start(steps=starts[i]) is True
        if i in args.py_stop:
            assert syncspy.stop() is True
        loss = (w * x).sum()
        total += float(loss.item()) * 0  # the sync; the simulated device computes nothing
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 5 == 0:
            tmp = args.progress + ".tmp"
            with open(tmp, "w") as f:
                f.write(str(i))
            os.replace(tmp, args.progress)
        if i % 100 == 0:
            print("iteration", i, "total", total, flush=True)
        time.sleep(args.sleep)
    print("done", args.iters, flush=True)


if __name__ == "__main__":
    main()
