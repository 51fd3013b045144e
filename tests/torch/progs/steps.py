"""tests/torch/progs/steps.py: a small training loop with one torch.nonzero sync per iteration,
for the step tests on real torch: optimizer steps found through torch.optim's global step hook,
explicit syncspy.step() marks (which take precedence), SYNCSPY_STEP=manual.

    steps.py [--iters N] [--mark-setup] [--mark-every K]"""
import argparse

import syncspy
import torch
import torch.nn.functional as F


class Loss(torch.nn.Module):
    def ignore_background(self, target):
        inds = torch.nonzero(target == 4, as_tuple=True)  # sync: nonzero
        target[inds] = -100
        return target

    def forward(self, pred, target):
        target = self.ignore_background(target)  # call: ignore_background
        return F.cross_entropy(pred, target)


def train_step(weight, loss_fn, optimizer, x, y):
    loss = loss_fn((x[:, :, None] * weight).sum(1), y)  # call: loss_fn
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=4)
    parser.add_argument("--mark-setup", action="store_true", help="syncspy.step() before the loop")
    parser.add_argument("--mark-every", type=int, default=0, help="syncspy.step() every K iterations")
    args = parser.parse_args()
    torch.manual_seed(1)
    weight = torch.nn.Parameter(torch.randn(4, 5, device="cuda"))  # the first CUDA calls
    loss_fn = Loss()
    optimizer = torch.optim.SGD([weight], lr=0.1)
    x = torch.randn(64, 4, device="cuda")
    y = torch.randint(0, 5, (64,), device="cuda")
    if args.mark_setup:
        syncspy.step()
    for i in range(args.iters):
        train_step(weight, loss_fn, optimizer, x, y)  # call: train_step
        if args.mark_every and (i + 1) % args.mark_every == 0:
            syncspy.step()
    print(f"steps: {args.iters} iterations")


if __name__ == "__main__":
    main()  # call: module
