"""examples/train.py: the demo on the imitation of torch (examples/site-packages; `make demo-py`,
and `make demo`'s fallback when the real wheel cannot be had): a segmentation training loop whose
loss hides host-device synchronizations (after the article in which torch.nonzero, torch.unique
and boolean-mask indexing in a loss function each made the host wait for the GPU, and removing
them made a step 240x faster); the masked prediction's backward syncs again inside the autograd
thread, as on torch 2.15 (whose deterministic torch.gather backward, also used here, does not).
20 steps; the loss every 5th step. The real-torch demo is examples/seg_loss.py.

    make demo-py                      # under syncspy: the report at exit names each line
    python3 examples/train.py --fixed # the rewritten loss and lookup: no syncs inside a step

It runs unchanged on the miniature torch under examples/site-packages (on PYTHONPATH) and
syncspy's simulated CUDA device; the "# sync:" comments mark the lines syncspy should find."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_CLASSES = 10
PIXELS = 32 * 32  # one 32x32 image per batch, flattened to pixels


class Net(nn.Module):
    """A per-pixel classifier: 1x1 convolutions (a Linear over channels) with ReLUs, and a
    learned per-pixel bias looked up in tile order."""

    def __init__(self, fixed, in_channels=3, hidden=16, depth=6, device="cuda"):
        super().__init__()
        self.fixed = fixed
        self.conv_in = nn.Linear(in_channels, hidden, device=device)
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(hidden, hidden, device=device), nn.ReLU()]
        self.hidden = nn.Sequential(*layers)
        self.conv_out = nn.Linear(hidden, NUM_CLASSES, device=device)
        self.pos_bias = nn.Parameter(torch.zeros(PIXELS, device=device))
        self.register_buffer("tile_order", torch.randperm(PIXELS, device=device))

    def forward(self, x):
        x = F.relu(self.conv_in(x))
        if self.fixed:
            bias = self.pos_bias[self.tile_order]  # plain indexing: its backward does not sync
        else:
            bias = torch.gather(self.pos_bias, 0, self.tile_order)  # deterministic: no sync on torch 2.15
        x = x + bias.unsqueeze(1)
        x = self.hidden(x)
        return self.conv_out(x)


class MaskedLoss(nn.Module):
    """Cross-entropy that ignores background pixels and skips batches with fewer than two
    labels: three kinds of sync in five lines."""

    def __init__(self, ignore_val=-1, num_classes=NUM_CLASSES):
        super().__init__()
        self.ignore_val = ignore_val
        self.num_classes = num_classes
        self.loss = nn.CrossEntropyLoss()

    def cross_entropy(self, pred, target):
        # a boolean mask of the valid labels
        mask = target != self.ignore_val
        # keep the valid pixels only: the outputs' sizes depend on the data
        masked_target = target[mask]  # sync: mask target
        masked_pred = pred[mask]  # sync: mask pred
        return self.loss(masked_pred, masked_target)

    def ignore_background(self, target):
        # all the indices where the label is background
        inds = torch.nonzero(target == self.num_classes - 1, as_tuple=True)  # sync: nonzero
        # reset the background labels to the ignore value
        target[inds] = self.ignore_val
        return target

    def forward(self, pred, target):
        target = self.ignore_background(target)
        # the labels present in this batch
        unique = torch.unique(target)  # sync: unique
        ignore_loss = torch.numel(unique) < 2
        loss = self.cross_entropy(pred, target)
        # no loss when the batch has fewer than two labels
        if ignore_loss:
            loss = 0. * loss
        return loss


class FixedMaskedLoss(nn.Module):
    """The same loss without a sync: torch.where instead of nonzero, a sort-based count instead
    of unique, and the loss's own ignore_index instead of a boolean mask."""

    def __init__(self, ignore_val=-1, num_classes=NUM_CLASSES):
        super().__init__()
        self.ignore_val = ignore_val
        self.num_classes = num_classes
        self.loss = nn.CrossEntropyLoss(ignore_index=ignore_val)

    def ignore_background(self, target):
        background = target == self.num_classes - 1
        return torch.where(background, self.ignore_val * torch.ones_like(target), target)

    def forward(self, pred, target):
        target = self.ignore_background(target)
        # count the labels on the device: sort, then count the steps
        sorted_target, _ = torch.sort(target.flatten())
        deriv = sorted_target[1:] - sorted_target[:-1]
        num_unique = torch.count_nonzero(deriv) + 1
        loss = self.loss(pred, target)
        return torch.where(num_unique < 2, 0. * loss, loss)


def batches(steps):
    """Synthetic batches made on the device: each pixel's 3 channels, and its label in
    [-1, NUM_CLASSES): -1 is "ignore", NUM_CLASSES - 1 is background."""
    for _ in range(steps):
        yield (torch.randn(PIXELS, 3, device="cuda"),
               torch.randint(-1, NUM_CLASSES, (PIXELS,), device="cuda"))


def train(fixed, steps):
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    model = Net(fixed)  # the parameters are allocated on the device here
    criterion = FixedMaskedLoss() if fixed else MaskedLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    model.train()
    start = time.perf_counter()
    for step, (inputs, labels) in enumerate(batches(steps)):
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if (step + 1) % 5 == 0:
            print(f"step {step + 1:2d}  loss {loss.item():.4f}")  # sync: item
    torch.cuda.synchronize()
    ms = (time.perf_counter() - start) * 1000 / steps
    print(f"{steps} steps of the {'fixed' if fixed else 'original'} loss: {ms:.1f} ms per step")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixed", action="store_true", help="run the rewritten loss (no syncs in the step)")
    parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("train.py: no CUDA device")
    train(args.fixed, args.steps)


if __name__ == "__main__":
    main()
