"""examples/seg_loss.py: syncspy's demo (`make demo`) and the test bed of tests/torch/: the
segmentation training loop of the article syncspy grew from (seed 003), on real PyTorch. Its loss
hides host-device synchronizations: torch.nonzero, torch.unique and boolean-mask indexing each
make the host wait, and the masked prediction's backward (IndexBackward0) syncs again in
autograd's engine thread; removing them made the article's step 240x faster. --fixed is the same
loss rewritten with torch.where, a sort-based count and cross_entropy's ignore_index: no sync in
a step. The model is a per-pixel classifier written with elementwise ops and reductions (no
cuBLAS or cuDNN call), so it runs on syncspy's simulated device as on a GPU.

    make demo                                             # under syncspy, real torch
    LD_PRELOAD=build/libsyncspy.so python examples/seg_loss.py [--fixed]
    python seg_loss.py [--fixed] [--steps N] [--log-every K] [--step-times] [--frames] [--end-stamp]

--log-every K prints the loss (loss.item(), a sync) every K steps (default 5, 0: never).
--step-times prints each step's host time ("step I MS"). --frames prints, as the last line
("frames {json}"), the Python stack CPython itself reports (a line tracer) the first time each
marked line runs: the ground truth the frame reader is checked against. The "# sync:" comments mark the lines a sync is made on:
tests/torch/test_seed003.py finds them with harness.marked_lines. Prints one line per step
(step number and the host's own step time in ms, from perf_counter) and nothing else."""
import argparse
import json
import re
import sys
import time

import torch
import torch.nn as nn

NUM_CLASSES = 10
BATCH = 4
SIZE = 32


class Net(nn.Module):
    """A per-pixel classifier: a 1x1 convolution (channels mixed by broadcasting) and a bias."""

    def __init__(self, in_channels=3, num_classes=NUM_CLASSES):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_classes, in_channels) * 0.1)
        self.bias = nn.Parameter(torch.zeros(num_classes))

    def forward(self, x):
        mixed = (x[:, None] * self.weight[None, :, :, None, None]).sum(2)
        return mixed + self.bias[None, :, None, None]


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
        masked_target = target[mask]  # sync: mask_target
        masked_pred = permuted_pred[mask.unsqueeze(-1).expand(-1, -1, -1, self.num_classes)]  # sync: mask_pred
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


def qualified_name(code):
    """code.co_qualname; on CPython 3.9/3.10, which lack it, the __qualname__ of the function
    object that runs the code (found by the garbage collector), else its co_name."""
    if hasattr(code, "co_qualname"):
        return code.co_qualname
    import gc
    import types
    for r in gc.get_referrers(code):
        if isinstance(r, types.FunctionType) and r.__code__ is code:
            return r.__qualname__
    return code.co_name


def trace_marked_lines():
    """Records [(qualified name, line), ...] innermost first at the first run of each marked
    line of this file; returns the dict it fills."""
    with open(__file__) as f:
        marked = {n for n, text in enumerate(f, 1) if re.search(r"# sync: \w+\s*$", text)}
    seen = {}

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno in marked and frame.f_lineno not in seen:
            stack, f = [], frame
            while f is not None:
                stack.append((qualified_name(f.f_code), f.f_lineno))
                f = f.f_back
            seen[frame.f_lineno] = stack
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == __file__ else None

    sys.settrace(tracer)
    return seen


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--log-every", type=int, default=5, help="print the loss every K steps (0: never)")
    p.add_argument("--step-times", action="store_true", help="print each step's host time")
    p.add_argument("--frames", action="store_true", help="print the stacks of the marked lines")
    p.add_argument("--end-stamp", action="store_true", help="print 'end <time.time()>' last")
    p.add_argument("--compile", nargs="?", const="aot_eager", default=None, metavar="BACKEND",
                   help="torch.compile the model and the loss (backend aot_eager, the default: no "
                        "Triton needed; inductor)")
    args = p.parse_args()
    frames = trace_marked_lines() if args.frames else None
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Net().to(dev)  # sync: set_up
    criterion = FixedMaskedLoss() if args.fixed else MaskedLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    if args.compile:
        model = torch.compile(model, backend=args.compile)
        criterion = torch.compile(criterion, backend=args.compile)
    times = []
    t0 = time.perf_counter()  # a step's time runs from the previous optimizer step's end to its own
    for step in range(args.steps):
        inputs = torch.randn(BATCH, 3, SIZE, SIZE, device=dev)
        labels = torch.randint(-1, NUM_CLASSES, (BATCH, SIZE, SIZE), device=dev)
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # sync: backward
        optimizer.step()
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
        t0 = t1
        if args.log_every and (step + 1) % args.log_every == 0:
            print(f"step {step + 1:3d}  loss {loss.item():.4f}")  # sync: item
        if args.step_times:
            print(f"step {step} {times[-1]:.3f}", flush=True)
    times.sort()
    print(f"{args.steps} steps of the {'fixed' if args.fixed else 'original'} loss: "
          f"{times[len(times) // 2]:.2f} ms per step (median, host clock)", flush=True)
    if frames is not None:
        sys.settrace(None)
        print("frames " + json.dumps(frames), flush=True)
    if args.end_stamp:  # bench/torch_loop.py: how long the process takes to end after this
        print(f"end {time.time():.6f}", flush=True)


if __name__ == "__main__":
    main()
