"""tests/e2e/pyprogs/gil.py: the same .item() sync made twice, once with the GIL released
(ctypes.CDLL, like PyTorch's bindings) and once while holding it (ctypes.PyDLL)."""
import torch

x = torch.ones(16, device="cuda") * 3
total = x.sum()
print("gil while calling through CDLL:", torch._C.gil_held())
a = total.item()  # sync: without gil
b, held = torch._C.item_holding_gil(total)  # sync: with gil
print("gil while calling through PyDLL:", held)
print("values:", a, b)
