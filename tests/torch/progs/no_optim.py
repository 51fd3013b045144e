"""tests/torch/progs/no_optim.py: a Python process that syncs through the CUDA runtime (libcudart
called through the process's global symbols, as a native extension would) and never imports torch:
no optimizer step hook can be registered, and the report must say so."""
import ctypes

ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
rt = ctypes.CDLL(None)
for _ in range(3):
    rt.cudaDeviceSynchronize()
print("no_optim: done")
