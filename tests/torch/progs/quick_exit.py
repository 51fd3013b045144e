"""Real torch, ended through os._exit (no atexit handler runs). argv[1]:
  main     5 iterations (a .item() and a .nonzero() each), a line written to sys.stdout
           without a flush, then os._exit(3)
  workers  the parent imports torch but never touches CUDA; 2 multiprocessing workers (fork)
           each run 4 training steps and end as multiprocessing's fork workers always do, with
           os._exit; the parent prints the workers' exit codes"""
import multiprocessing as mp
import os
import sys

import torch

STEPS = 4


def train():
    model = torch.nn.Linear(8, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8, device="cuda")
    for _ in range(STEPS + 1):  # the first iteration is start-up
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()  # sync: item
        (x > 0).nonzero()  # sync: nonzero


def worker(i):
    train()


if __name__ == "__main__":
    if sys.argv[1] == "main":
        train()
        sys.stdout.write("left in the buffer, unless stdout is unbuffered\n")
        os._exit(3)
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=worker, args=(i,)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("workers", [p.exitcode for p in procs], flush=True)
