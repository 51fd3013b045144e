"""tests/torch/progs/compiled.py CASE STEPS [BACKEND] [--oracle] [--worker]: a small training loop under
torch.compile (backend aot_eager by default: no Triton needed), one case per way a compiled
model meets a sync (issue 34). Each syncing line carries a `# sync: NAME` marker.

  item_stat      a .item() statistic in a compiled forward: a graph break, the sync runs eagerly
  assert_all     `assert torch.all(h > -1e9)` in a compiled forward (the seed's): a graph break
  print_h        `print(h)` in a compiled forward (the seed's)
  mask_apart     a boolean-mask loss compiled apart from the model: a graph break at the mask,
                 and the backward of the index (IndexBackward0) outside any graph
  mask_in_graph  the same loss inside the compiled model with capture_dynamic_output_shape_ops:
                 the mask's nonzero runs INSIDE the compiled graph (generated code), and so does
                 its backward (the compiled graph's one backward node)
  recompile      the mask inside the graph as in mask_in_graph, the batch one row longer each
                 step: Dynamo recompiles (then marks the size dynamic), one generated module
                 after another, all from one user line
  opt_step       a compiled optimizer step (torch.compile(opt.step)), no sync: Dynamo must do as
                 it does without the agent
  item_in_graph  a .item() statistic under capture_scalar_outputs: the sync runs INSIDE the
                 compiled graph (aten._local_scalar_dense in generated code)
  fullgraph      mask_in_graph with fullgraph=True (any graph break in the model raises), and a
                 compiled optimizer step
  dynamic        recompile's growing batch with dynamic=True: one graph, no recompile

Prints, as JSON: Dynamo's counters (frames, graph breaks, recompiles, unimplemented, stats) and
the parameters' sum, which must be the same with and without the agent. --oracle: runs under
torch.cuda.set_sync_debug_mode("warn") and prints each sync warning's (file, line) too. --worker:
the loop runs on a thread the main thread waits for in Thread.join(), which prints the results and
ends the process with os._exit(0): the main thread never runs Python after the loop began."""
import json
import os
import sys
import threading
import warnings

import torch
import torch.nn.functional as F

case, steps = sys.argv[1], int(sys.argv[2])
backend = sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else "aot_eager"
oracle = "--oracle" in sys.argv
worker = "--worker" in sys.argv
dev = torch.device("cuda")
torch.manual_seed(0)
lin = torch.nn.Linear(16, 4).to(dev)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)


def masked_loss(logits, target):
    valid = target >= 0
    return F.cross_entropy(logits[valid], target[valid])  # sync: mask


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = lin
        self.stat = 0.0

    def forward(self, x, target):
        h = self.lin(x)
        if case == "item_stat":
            self.stat = h.abs().mean().item()  # sync: item_stat
        if case == "assert_all":
            assert torch.all(h > -1e9)  # sync: assert_all
        if case == "print_h":
            print(h[:1, :2])  # sync: print_h
        if case == "item_in_graph":
            n = (target >= 0).sum().item()  # sync: item_in_graph
            torch._check(n >= 0)
            return F.cross_entropy(h, target.clamp(min=0)) * (n + 1)
        if case in ("mask_in_graph", "recompile", "fullgraph", "dynamic"):
            return masked_loss(h, target)
        return F.cross_entropy(h, target.clamp(min=0))




def configure():
    """On the thread that trains: Dynamo's config is the thread's own (set on the main thread, a
    worker thread's compilation does not see it)."""
    if case in ("mask_in_graph", "recompile", "fullgraph", "dynamic"):
        torch._dynamo.config.capture_dynamic_output_shape_ops = True
    if case == "item_in_graph":
        torch._dynamo.config.capture_scalar_outputs = True


whole = case == "fullgraph"
net = torch.compile(Net(), backend=backend, fullgraph=whole, dynamic=True if case == "dynamic" else None)
loss_fn = torch.compile(masked_loss, backend=backend)
step_fn = torch.compile(opt.step, backend=backend)  # torch's optimizers break the graph themselves
if oracle:
    torch.cuda.set_sync_debug_mode("warn")


def train():
    configure()
    for step in range(steps):
        rows = 32 + step if case in ("recompile", "dynamic") else 32
        x = torch.randn(rows, 16, device=dev)
        target = torch.randint(-1, 4, (rows,), device=dev)
        loss = loss_fn(lin(x), target) if case == "mask_apart" else net(x, target)
        loss.backward()
        if case in ("opt_step", "fullgraph"):
            step_fn()
        else:
            opt.step()
        opt.zero_grad()


def results(seen):
    from torch._dynamo.utils import counters

    out = {"case": case,
           "dynamo": {k: dict(sorted(counters[k].items()))
                      for k in ("frames", "graph_break", "recompiles", "unimplemented", "stats")},
           "params": round(float(sum(p.detach().double().sum() for p in lin.parameters())), 6)}
    if oracle:
        out["warned"] = sorted({(w.filename, w.lineno) for w in seen
                                if "called a synchronizing CUDA operation" in str(w.message)})
    print(json.dumps(out), flush=True)


def train_and_end():
    """--worker: the worker prints the results and ends the process with os._exit while the main
    thread still waits in Thread.join(): no Python ever runs on the main thread again."""
    train()
    results([])
    os._exit(0)


if worker:  # the main thread runs no Python meanwhile: it waits in Thread.join()
    t = threading.Thread(target=train_and_end, name="trainer")
    t.start()
    t.join()
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    train()
torch.cuda.set_sync_debug_mode(0)
results(seen)
