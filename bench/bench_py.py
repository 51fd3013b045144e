"""bench/bench_py.py LIB BATCH REPS FRAMES: syncs with FRAMES Python frames above them (this
module's frame, recursion, and the measuring function), made by LIB (bench/benchlib.c) through
ctypes; the in-process A/B of bench/bench_cuda.c (arm 1 through the agent's shim when it is
preloaded, arm 0 directly in the runtime). Prints one JSON object."""
import ctypes
import json
import sys

lib = ctypes.CDLL(sys.argv[1])
batch, reps, frames = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lib.bench_sync_batch.restype = ctypes.c_double
lib.bench_sync_batch.argtypes = [ctypes.c_long, ctypes.c_int]
if lib.bench_init() != 0:
    sys.exit("bench_py: libcudart.so.13 not loaded")


def measure():
    shim, direct = [], []
    lib.bench_sync_batch(batch, 1)  # warm: first sight of the stack
    lib.bench_sync_batch(batch, 0)
    for r in range(reps):
        if r & 1:
            shim.append(lib.bench_sync_batch(batch, 1))
            direct.append(lib.bench_sync_batch(batch, 0))
        else:
            direct.append(lib.bench_sync_batch(batch, 0))
            shim.append(lib.bench_sync_batch(batch, 1))
    return shim, direct


def descend(n):
    if n == 0:
        return measure()
    r = descend(n - 1)
    return r


# Python frames at the sync: this module, descend x (frames - 2), measure.
shim, direct = descend(frames - 3)
print(json.dumps({"mode": "python", "frames": frames, "batch": batch, "shim_ns": shim,
                  "direct_ns": direct}))
