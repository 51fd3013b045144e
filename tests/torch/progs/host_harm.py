"""tests/torch/progs/host_harm.py CASE: what a torch program does with its signals, run with and
without the agent by tests/torch/test_torch_host_harm.py (issue 13). Each case syncs first (the agent
starts at the first CUDA call), prints "ready" when the test may signal it, and prints what it
saw.
  read-ctrl-c   os.read() on a pipe nobody writes; Ctrl-C (SIGINT) must raise KeyboardInterrupt
  handler-read  the same with a SIGTERM handler (installed after the first CUDA call) that
                raises SystemExit(5)
  long-sync     torch.cuda.synchronize() after a 20 s kernel (the simulator's default kernel
                duration): SIGTERM's default action must not wait for it"""
import ctypes
import os
import signal
import sys

import torch

case = sys.argv[1]
x = torch.ones(16, device="cuda")
x.sum().item()  # a sync: the agent has started
print("synced")
if case == "handler-read":
    def on_term(sig, frame):
        print("handler")
        raise SystemExit(5)
    signal.signal(signal.SIGTERM, on_term)
if case in ("read-ctrl-c", "handler-read"):
    r, w = os.pipe()
    print("ready", flush=True)
    try:
        os.read(r, 1)
        print("read returned")
    except KeyboardInterrupt:
        print("KeyboardInterrupt")
elif case == "long-sync":
    ctypes.CDLL("libcudart.so.13").simcuda_set_default_kernel_ns(ctypes.c_ulonglong(20 * 10**9))
    y = x + 1
    print("ready", flush=True)
    torch.cuda.synchronize()
    print("synchronized")
