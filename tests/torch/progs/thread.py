"""tests/torch/progs/thread.py: syncs made from a Python threading.Thread (3 torch.nonzero);
the main thread makes none of its own."""
import threading

import torch

x = torch.randn(256, device="cuda")


def worker(n):
    for _ in range(n):
        torch.nonzero(x > 0)  # sync: worker


t = threading.Thread(target=worker, args=(3,), name="syncer")
t.start()
t.join()
print("thread: done")
