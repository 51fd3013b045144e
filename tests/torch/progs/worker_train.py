"""tests/torch/progs/worker_train.py: one training loop, a .item() sync in each iteration, run on
the main thread, or on a worker thread the main thread waits for in Thread.join() (the optimizer
step hook must then be registered without the main thread ever running Python meanwhile), or on
a daemon worker that still runs when the process ends:

    worker_train.py main|worker [--iters N]   the loop, then the threads left
    worker_train.py worker-parked            5 iterations, then the worker waits for good while
                                             the main thread returns (the interpreter finalizes)
    worker_train.py worker-exit              the worker trains on; os._exit(0) after 5 iterations
    worker_train.py worker-exit-early        the worker trains on; os._exit(0) once its model is
                                             on the device (its first CUDA calls made)"""
import argparse
import os
import sys
import threading

import torch


def train(iters, on_device=None, trained=None, park=None):
    torch.manual_seed(1)
    model = torch.nn.Linear(8, 4).cuda()  # the first CUDA calls
    if on_device is not None:
        on_device.set()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8, device="cuda")
    i = 0
    while iters is None or i < iters:
        loss = model(x).square().mean()
        loss.item()  # sync: item
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        i += 1
        if trained is not None and i == 5:
            trained.set()
            if park is not None:
                park.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("where", choices=["main", "worker", "worker-parked", "worker-exit",
                                          "worker-exit-early"])
    parser.add_argument("--iters", type=int, default=6)
    args = parser.parse_args()
    if args.where == "main":
        train(args.iters)
    elif args.where == "worker":
        t = threading.Thread(target=train, args=(args.iters,), name="trainer")
        t.start()
        t.join()
    else:
        on_device, trained, park = threading.Event(), threading.Event(), threading.Event()
        parked = args.where == "worker-parked"
        threading.Thread(target=train, args=(None, on_device, trained, park if parked else None),
                         name="trainer", daemon=True).start()
        (on_device if args.where == "worker-exit-early" else trained).wait()
        print(f"{args.where}: the main thread ends while the worker runs")
        sys.stdout.flush()
        if not parked:
            os._exit(0)
        return
    print(f"{args.where}: {args.iters} iterations")
    print("threads:", sorted(t.name for t in threading.enumerate()))


if __name__ == "__main__":
    main()
