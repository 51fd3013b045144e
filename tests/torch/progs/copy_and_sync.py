"""tests/torch/progs/copy_and_sync.py STEPS: one line whose syncs come through two CUDA calls
each step (`x.cpu()` into pageable memory: the copy itself, cudaMemcpyAsync, and the stream
synchronize after it) beside a line of one and a line of two operators (Tensor.item and
Tensor.__bool__), for issue 35 items 6 and 1: every output (the report, `check`, `syncspy html`,
`syncspy top`) shows a line as one row with one number, and lists each operator of a row."""
import sys

import torch

x = torch.randn(1 << 12, device="cuda")
lin = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
for step in range(int(sys.argv[1])):
    h = x.cpu()  # sync: copy
    n = int(x.sum().item() > 0)  # sync: item
    a, b = x.sum().item(), bool((x > 0).all())  # sync: two
    opt.step()
print("done")
