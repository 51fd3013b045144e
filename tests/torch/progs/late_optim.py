"""tests/torch/progs/late_optim.py [STEPS]: a CUDA call before torch (and torch.optim) is imported,
as a library that touches CUDA at its import does (libcudart loaded and called through the
process's global symbols, as a native extension would), then a training loop with few launches
and one sync per step. The optimizer step hook must be in place for the first optimizer.step()."""
import ctypes
import sys

cudart = ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(None).cudaDeviceSynchronize()  # the process's first CUDA call: no torch yet

import torch  # noqa: E402  (torch.optim comes with it)

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
w = torch.nn.Parameter(torch.zeros(8, device="cuda"))
opt = torch.optim.SGD([w], lr=0.1)
for i in range(steps):
    loss = (w * 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    loss.item()  # sync: item
print(f"late_optim: {steps} steps")
