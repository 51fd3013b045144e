"""tests/e2e/pyprogs/fork_steps.py: a parent that trains --parent iterations with two optimizers
stepping in each (two parameter groups: a GAN's discriminator and generator in miniature), then
forks in the middle of its step run; the child trains --child iterations with one optimizer and
no backward (the miniature torch's autograd engine runs on a thread a fork does not copy) and
exits, the parent waits for it, trains one more iteration and exits. Each iteration has one
torch.nonzero sync. The child's summary.json must hold only the child's steps, optimizers and
attribution (agent/step/steps.c resets its state at fork).

    fork_steps.py [--parent N] [--child M]"""
import argparse
import os

import torch
import torch.nn.functional as F


def iteration(model, x, y, optimizers, backward=True):
    target = y
    inds = torch.nonzero(target == 4, as_tuple=True)  # sync: nonzero
    target[inds] = -100
    loss = F.cross_entropy(model(x), target)
    for opt in optimizers:
        opt.zero_grad()
    if backward:
        loss.backward()
    for opt in optimizers:
        opt.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parent", type=int, default=6)
    parser.add_argument("--child", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(1)
    a = torch.nn.Linear(4, 5, device="cuda")
    b = torch.nn.Linear(4, 5, device="cuda")
    x = torch.randn(64, 4, device="cuda")
    y = torch.randint(0, 5, (64,), device="cuda")

    def model(t):
        return a(t) + b(t)

    opt_a = torch.optim.SGD(a.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.1)
    for _ in range(args.parent):
        iteration(model, x, y, [opt_a, opt_b])
    pid = os.fork()
    if pid == 0:
        for _ in range(args.child):
            iteration(model, x, y, [opt_a], backward=False)
        print(f"child {os.getpid()}: {args.child} iterations", flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    iteration(model, x, y, [opt_a, opt_b])
    print(f"parent: {args.parent + 1} iterations, child {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    main()
