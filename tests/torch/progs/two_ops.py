"""tests/torch/progs/two_ops.py STEPS: one line that syncs through two operators each step
(`a, b = x.sum().item(), bool((x > 0).all())`: Tensor.item and Tensor.__bool__), for issue 35
item 1: the report's row lists every operator that synced at its line, each with its own rate
and hint."""
import sys

import torch

x = torch.randn(64, device="cuda")
lin = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
for step in range(int(sys.argv[1])):
    a, b = x.sum().item(), bool((x > 0).all())  # sync: two
    opt.step()
print("done")
