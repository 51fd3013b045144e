"""tests/torch/progs/exit_code.py: syncs, prints (left buffered), exits with status 5."""
import sys

import torch

torch.manual_seed(3)
x = torch.randn(100, device="cuda")
print("nonzero rows:", torch.nonzero(x > 0).shape[0])
print("mean:", round(x.mean().item(), 4))
sys.exit(5)
