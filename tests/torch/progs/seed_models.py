"""tests/torch/progs/seed_models.py: the seeds' own training loops on real torch + timm +
torchvision (the vision venv), scaled down so that a test runs them in seconds on the simulated
device; the structure of each loop (data path, model, loss, optimizer, the switches the articles
try) is the article's. Prints "step I MS" per step (host clock) and, last, "steps N".

  vit        seed 000: timm's VisionTransformer(patch_drop_rate=0.5) under
             torch.use_deterministic_algorithms(True) (CUBLAS_WORKSPACE_CONFIG=:4096:8), a
             DataLoader with worker processes and pin_memory, batches copied non_blocking,
             CrossEntropyLoss, SGD with momentum, zero_grad(set_to_none=True)
  vit-index  the same with the article's fix: MyPatchDropout, indexing instead of torch.gather
  seg        seed 003: the convolutional Net (Conv2d layers, ReLU) with the article's MaskedLoss
             (examples/seg_loss.py), DataLoader workers and pin_memory
  seg-fixed  the same with the rewritten loss (FixedMaskedLoss)
  unet       seed 002: a U-Net with torchvision's ResNet-34 encoder, Adam, BCE-with-logits
             loss; its switches below

Switches (seed 002's experiments, and the data path of all):
  --workers N        DataLoader worker processes (default 2; 0: loaded in the main process)
  --no-pin           pin_memory=False (the batch copies then come from pageable memory)
  --blocking         .to(device) without non_blocking=True
  --channels-last    model and batches in torch.channels_last
  --amp              torch.autocast(float16) with a GradScaler
  --zero-grad MODE   none (set_to_none=True, default) or zero (set_to_none=False)
  --benchmark        torch.backends.cudnn.benchmark = True
  --anomaly          torch.autograd.set_detect_anomaly(True)
  --nondeterministic (vit) torch.use_deterministic_algorithms(False)
  --log-every K      print loss.item() every K steps (0: never, the default)
  --steps N          training steps (default 6)
  --end-stamp        print "end <time.time()>" last (bench/torch_loop.py: the exit's length)
The "# sync:" comments mark the lines a sync is made on (harness.marked_lines)."""
import argparse
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples")))
import seg_loss  # the seed-003 losses, as the demo has them

IMAGE = {"vit": 32, "vit-index": 32, "seg": 32, "seg-fixed": 32, "unet": 64}
BATCH = 8
CLASSES = 10


class Images(Dataset):
    """Random images with a class label (vit), a label map (seg) or a binary mask (unet)."""

    def __init__(self, kind, size):
        self.kind, self.size = kind, size

    def __len__(self):
        return 1000000

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(index)
        image = torch.randn([3, self.size, self.size], generator=g)
        if self.kind == "vit":
            return image, torch.tensor([index % CLASSES], dtype=torch.int64)
        if self.kind == "seg":
            return image, torch.randint(-1, CLASSES, (self.size, self.size), generator=g)
        return image, (torch.rand(1, self.size, self.size, generator=g) > 0.5).float()


class ConvNet(nn.Module):
    """Seed 003's Net: a 3x3 convolution in, num_hidden 3x3 convolutions with ReLU, one out."""

    def __init__(self, num_hidden=4, num_classes=CLASSES):
        super().__init__()
        self.conv_in = nn.Conv2d(3, 10, 3, padding="same")
        hidden = []
        for _ in range(num_hidden):
            hidden.append(nn.Conv2d(10, 10, 3, padding="same"))
            hidden.append(nn.ReLU())
        self.hidden = nn.Sequential(*hidden)
        self.conv_out = nn.Conv2d(10, num_classes, 3, padding="same")

    def forward(self, x):
        x = F.relu(self.conv_in(x))
        x = self.hidden(x)
        return self.conv_out(x)


class UNet(nn.Module):
    """Seed 002's model: a U-Net whose encoder is torchvision's ResNet-34, the decoder upsampling
    with interpolate and 3x3 convolutions (bias=False before each BatchNorm)."""

    def __init__(self):
        super().__init__()
        import torchvision
        r = torchvision.models.resnet34(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu)
        self.pool = r.maxpool
        self.enc = nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
        chans = [64, 64, 128, 256, 512]
        self.dec = nn.ModuleList()
        for i in range(4, 0, -1):
            self.dec.append(nn.Sequential(
                nn.Conv2d(chans[i] + chans[i - 1], chans[i - 1], 3, padding=1, bias=False),
                nn.BatchNorm2d(chans[i - 1]), nn.ReLU(inplace=True)))
        self.head = nn.Conv2d(64, 1, 1)

    def forward(self, x):
        size = x.shape[-2:]
        skips = [self.stem(x)]
        y = self.pool(skips[0])
        for layer in self.enc:
            y = layer(y)
            skips.append(y)
        y = skips.pop()
        for block in self.dec:
            skip = skips.pop()
            y = F.interpolate(y, size=skip.shape[-2:], mode="nearest")
            y = block(torch.cat([y, skip], dim=1))
        return F.interpolate(self.head(y), size=size, mode="bilinear", align_corners=False)


def vit_model(index_fix):
    from timm.layers import PatchDropout
    from timm.models.vision_transformer import VisionTransformer

    class MyPatchDropout(PatchDropout):
        """Seed 000's fix: torch.Tensor indexing instead of torch.gather."""

        def forward(self, x):
            prefix_tokens = x[:, :self.num_prefix_tokens]
            x = x[:, self.num_prefix_tokens:]
            B = x.shape[0]
            L = x.shape[1]
            num_keep = max(1, int(L * (1. - self.prob)))
            keep_indices = torch.argsort(torch.randn(B, L, device=x.device), dim=-1)[:, :num_keep]
            stride = L * torch.unsqueeze(torch.arange(B, device=x.device), 1)
            keep_indices = (stride + keep_indices).flatten()
            x = x.reshape(B * L, -1)[keep_indices].view(B, num_keep, -1)  # sync: index_fix
            return torch.cat((prefix_tokens, x), dim=1)

    model = VisionTransformer(img_size=IMAGE["vit"], patch_size=8, embed_dim=96, depth=4,
                              num_heads=4, num_classes=CLASSES, patch_drop_rate=0.5)
    if index_fix:
        model.patch_drop = MyPatchDropout(prob=model.patch_drop.prob,
                                          num_prefix_tokens=model.patch_drop.num_prefix_tokens)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", choices=sorted(IMAGE))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--no-pin", action="store_true")
    p.add_argument("--blocking", action="store_true")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--zero-grad", choices=("none", "zero"), default="none")
    p.add_argument("--benchmark", action="store_true")
    p.add_argument("--anomaly", action="store_true")
    p.add_argument("--nondeterministic", action="store_true")
    p.add_argument("--log-every", type=int, default=0)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--end-stamp", action="store_true")
    args = p.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    kind = args.model.split("-")[0]
    if kind == "vit" and not args.nondeterministic:
        torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = args.benchmark
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)

    if kind == "vit":
        model = vit_model(args.model == "vit-index").cuda(dev)
        loss_fn = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    elif kind == "seg":
        model = ConvNet().cuda(dev)
        loss_fn = seg_loss.FixedMaskedLoss() if args.model == "seg-fixed" else seg_loss.MaskedLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    else:
        model = UNet().cuda(dev)
        loss_fn = nn.BCEWithLogitsLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    if args.channels_last:
        model = model.to(memory_format=memory_format)
    scaler = torch.amp.GradScaler("cuda") if args.amp else None

    loader = DataLoader(Images(kind, IMAGE[args.model]), batch_size=BATCH,
                        num_workers=args.workers, pin_memory=not args.no_pin)
    model.train()
    t0 = time.perf_counter()
    for step, data in enumerate(loader):
        if step == args.steps + 1:  # the first iteration is start-up (its first optimizer step)
            break
        nb = not args.blocking
        inputs = data[0].to(device=dev, non_blocking=nb, memory_format=memory_format)  # sync: inputs
        label = data[1].to(device=dev, non_blocking=nb)  # sync: label
        if kind == "vit":
            label = label.squeeze(-1)
        with torch.autocast("cuda", dtype=torch.float16, enabled=args.amp):
            outputs = model(inputs)
            loss = loss_fn(outputs, label)
        optimizer.zero_grad(set_to_none=args.zero_grad == "none")
        if scaler:
            scaler.scale(loss).backward()  # sync: backward
            scaler.step(optimizer)  # sync: scaler_step
            scaler.update()
        else:
            loss.backward()  # sync: backward
            optimizer.step()
        if args.log_every and step % args.log_every == 0:
            print(f"loss {loss.item():.4f}")  # sync: item
        now = time.perf_counter()
        print(f"step {step} {(now - t0) * 1e3:.3f}", flush=True)
        t0 = now
    print(f"steps {args.steps}", flush=True)
    if args.end_stamp:
        print(f"end {time.time():.6f}", flush=True)


if __name__ == "__main__":
    main()
