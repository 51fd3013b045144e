"""tests/torch/progs/threads_grad.py THREADS STEPS: THREADS threads, each training its own small
model (forward, a boolean-mask loss, backward, SGD) for STEPS steps at once, all making autograd
nodes concurrently under the agent's sequence-number hook (issue 36: once in a 14-case battery a
gradient hash differed with the agent). The models train on the CPU, where the numbers are real
(the simulated device's kernels compute nothing: a hash of device memory says nothing), and each
step also syncs on the device (a mask's count read with .item()), so the agent records and
attributes as it does in training. Prints each thread's hash of its final parameters and last
gradients (exact bits), the last backward hooks' order and their count: all must be bitwise the
same with and without the agent, run after run."""
import hashlib
import sys
import threading

import torch
import torch.nn.functional as F

threads, steps = int(sys.argv[1]), int(sys.argv[2])
dev = torch.device("cuda")
torch.set_num_threads(1)  # the same sums in the same order, run after run
start = threading.Barrier(threads)
results = [None] * threads


def train(k):
    g = torch.Generator(device="cpu").manual_seed(1000 + k)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    order = []
    model[0].weight.register_hook(lambda grad: order.append("w0"))
    model[2].weight.register_hook(lambda grad: order.append("w2"))
    start.wait()
    for _ in range(steps):
        x = torch.randn(32, 16, generator=g)
        target = torch.randint(-1, 4, (32,), generator=g)
        logits = model(x)
        valid = target >= 0
        loss = F.cross_entropy(logits[valid], target[valid])
        # a device sync; its value is the simulator's (kernels compute nothing): unused
        (target.to(dev) >= 0).sum().item()  # sync: count
        opt.zero_grad()
        loss.backward()
        opt.step()
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
        h.update(p.grad.detach().numpy().tobytes())
    results[k] = (h.hexdigest()[:16], ",".join(order[-4:]), len(order))


ts = [threading.Thread(target=train, args=(k,), name=f"trainer{k}") for k in range(threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
for k, r in enumerate(results):
    print(k, *r)
