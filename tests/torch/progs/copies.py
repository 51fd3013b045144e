"""tests/torch/progs/copies.py: the syncs of host copies and of the caching allocator, one kind per
step (an optimizer step ends each): a pageable tensor copied to the device with non_blocking=True
(a sync: the host waits for the copy), the same tensor pinned (none), a device-to-host copy into
pinned memory with non_blocking=True (none), an explicit torch.cuda.synchronize, and
torch.cuda.empty_cache after freeing a tensor (cudaFree synchronizes the device). The lines that
sync carry "# sync: NAME", the ones that must not "# nosync: NAME"."""
import sys

import torch

dev = torch.device("cuda")
param = torch.nn.Parameter(torch.zeros(4, device=dev))
opt = torch.optim.SGD([param], lr=0.1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
host = torch.randn(1 << 16)
pinned = host.pin_memory()
out = torch.empty(1 << 16, pin_memory=True)


def step():
    opt.zero_grad()
    param.sum().backward()
    opt.step()


for _ in range(steps):
    a = host.to(dev, non_blocking=True)  # sync: pageable_h2d
    step()
    b = pinned.to(dev, non_blocking=True)  # nosync: pinned_h2d
    step()
    out.copy_(b, non_blocking=True)  # nosync: pinned_d2h
    step()
    torch.cuda.synchronize()  # sync: synchronize
    step()
    big = torch.empty(64 << 20, device=dev)
    del big
    torch.cuda.empty_cache()  # sync: empty_cache
    step()
