"""tests/torch/progs/sync_debug.py: the syncs of common operations, one per step, with
torch.cuda.set_sync_debug_mode("warn") on: prints, for each operation, how many warnings torch's
own sync-debug mode gave (one JSON line {"op", "torch_warnings"}), so a test can compare
them with the syncs syncspy records on the same lines. With --profile the operations also run
inside torch.profiler.profile(activities=[CPU, CUDA]), whose CUPTI use coexists with syncspy's;
the number of profiler events named like a sync is printed as {"profiler_sync_events": N}."""
import contextlib
import json
import sys
import warnings

import torch

dev = torch.device("cuda")
param = torch.nn.Parameter(torch.zeros(4, device=dev))
opt = torch.optim.SGD([param], lr=0.1)
x = torch.randn(4096, device=dev)
labels = torch.randint(0, 10, (4096,), device=dev)
host = torch.randn(1 << 16)


def end_step():
    opt.zero_grad()
    param.sum().backward()
    opt.step()


def ops():
    """(name, function) pairs; each function's body is one line that syncs."""
    def nonzero():
        return torch.nonzero(x > 0)  # sync: nonzero
    def unique():
        return torch.unique(labels)  # sync: unique
    def mask_index():
        return x[x > 0]  # sync: mask_index
    def item():
        return x.sum().item()  # sync: item
    def pageable_h2d():
        return host.to(dev, non_blocking=True)  # sync: pageable_h2d
    def blocking_d2h():
        return x.cpu()  # sync: blocking_d2h
    def synchronize():
        return torch.cuda.synchronize()  # sync: synchronize
    def empty_cache():
        big = torch.empty(64 << 20, device=dev)
        del big
        return torch.cuda.empty_cache()  # sync: empty_cache
    return [(f.__name__, f) for f in (nonzero, unique, mask_index, item, pageable_h2d,
                                       blocking_d2h, synchronize, empty_cache)]


def main():
    profile = "--profile" in sys.argv
    for _, f in ops():  # once before the mode is on: lazy initialisations out of the way
        f()
    end_step()
    ctx = (torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                              torch.profiler.ProfilerActivity.CUDA])
           if profile else contextlib.nullcontext())
    results = []
    with ctx as prof:
        torch.cuda.set_sync_debug_mode("warn")
        for name, f in ops():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                f()
            n = sum("synchronizing CUDA operation" in str(w.message) for w in caught)
            results.append({"op": name, "torch_warnings": n})
            end_step()
        torch.cuda.set_sync_debug_mode("default")
    for r in results:
        print(json.dumps(r))
    if profile:
        names = [e.name for e in prof.events()]
        n = sum(1 for e in names if e.startswith(("cudaStreamSynchronize", "cudaDeviceSynchronize",
                                                    "cudaMemcpy")))
        print(json.dumps({"profiler_events": len(names), "profiler_sync_events": n}))


if __name__ == "__main__":
    main()
