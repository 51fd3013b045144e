"""scripts/gpu/seg_loss.py: a segmentation training loop whose loss makes the host wait: torch.nonzero,
torch.unique and boolean-mask indexing (the article's MaskedLoss, which a 240x faster step got rid of);
--fixed runs the same loss rewritten with torch.where, a sort-based count and cross_entropy's
ignore_index: no sync inside a step. Batches are made on the device (no DataLoader, no copies).

    python3 scripts/gpu/seg_loss.py [--fixed] [--mode plain|profiler|syncdebug] [--steps N]

The "# sync:" comments mark the lines syncspy must name (scripts/gpu/check.py reads them)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import common

NUM_CLASSES = 10
BATCH = 16
SIZE = 128


class Net(nn.Module):
    """Per-pixel classifier: 3x3 convolutions with ReLUs."""

    def __init__(self, num_hidden=4, num_classes=NUM_CLASSES):
        super().__init__()
        self.conv_in = nn.Conv2d(3, 10, 3, padding="same")
        hidden = []
        for _ in range(num_hidden):
            hidden += [nn.Conv2d(10, 10, 3, padding="same"), nn.ReLU()]
        self.hidden = nn.Sequential(*hidden)
        self.conv_out = nn.Conv2d(10, num_classes, 3, padding="same")

    def forward(self, x):
        x = F.relu(self.conv_in(x))
        x = self.hidden(x)
        return self.conv_out(x)


class MaskedLoss(nn.Module):
    """Cross-entropy that ignores background pixels and skips batches with fewer than two labels."""

    def __init__(self, ignore_val=-1, num_classes=NUM_CLASSES):
        super().__init__()
        self.ignore_val = ignore_val
        self.num_classes = num_classes
        self.loss = nn.CrossEntropyLoss()

    def cross_entropy(self, pred, target):
        mask = target != self.ignore_val
        permuted_pred = torch.permute(pred, [0, 2, 3, 1])
        masked_target = target[mask]  # sync: mask-target
        masked_pred = permuted_pred[mask.unsqueeze(-1).expand(-1, -1, -1, self.num_classes)]  # sync: mask-pred
        masked_pred = masked_pred.reshape(-1, self.num_classes)
        return self.loss(masked_pred, masked_target)

    def ignore_background(self, target):
        inds = torch.nonzero(target == self.num_classes - 1, as_tuple=True)  # sync: nonzero
        target[inds] = self.ignore_val
        return target

    def forward(self, pred, target):
        target = self.ignore_background(target)
        unique = torch.unique(target)  # sync: unique
        ignore_loss = torch.numel(unique) < 2
        loss = self.cross_entropy(pred, target)
        if ignore_loss:
            loss = 0. * loss
        return loss


class FixedMaskedLoss(nn.Module):
    """The same loss without a sync."""

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
        sorted_target, _ = torch.sort(target.flatten())
        deriv = sorted_target[1:] - sorted_target[:-1]
        num_unique = torch.count_nonzero(deriv) + 1
        loss = self.loss(pred, target)
        return torch.where(num_unique < 2, 0. * loss, loss)


def main():
    args = common.parse_args(__doc__, {"fixed": "the rewritten loss (no syncs in the step)"})
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Net().to(dev)
    criterion = FixedMaskedLoss() if args.fixed else MaskedLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    model.train()

    def step(_):
        inputs = torch.randn(BATCH, 3, SIZE, SIZE, device=dev)
        labels = torch.randint(-1, NUM_CLASSES, (BATCH, SIZE, SIZE), device=dev)
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    common.run(__file__, step, args, {"variant": "fixed" if args.fixed else "original",
                                      "batch": BATCH, "size": SIZE})


if __name__ == "__main__":
    main()
