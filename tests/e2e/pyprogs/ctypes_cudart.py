"""tests/e2e/pyprogs/ctypes_cudart.py N [bash]: loads libcudart itself with ctypes.CDLL and calls
it through that handle (never through a symbol the shim defines): N device-to-host copies into
pageable memory and N cudaDeviceSynchronize calls. Prints what it read. With "bash", runs
itself again under `bash -c` twice (a wrapper chain of processes)."""
import ctypes
import os
import subprocess
import sys


def main(n):
    rt = ctypes.CDLL("libcudart.so.13")
    dev = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(1 << 20)) == 0
    assert rt.cudaMemset(dev, 7, ctypes.c_size_t(1 << 20)) == 0
    host = ctypes.create_string_buffer(1 << 20)
    for _ in range(n):
        assert rt.cudaMemcpy(host, dev, ctypes.c_size_t(1 << 20), 2) == 0  # device to host
        assert rt.cudaDeviceSynchronize() == 0
    rt.cudaFree(dev)
    print("ctypes_cudart:", n, "rounds")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "bash":
        cmd = f"bash -c 'bash -c \"{sys.executable} {os.path.abspath(__file__)} {sys.argv[1]}\"'"
        sys.exit(subprocess.run(["bash", "-c", cmd]).returncode)
    main(int(sys.argv[1]))
