// tests/progs/lib/cxxsites.cpp: C++ callers that only .symtab names: a hidden method and a
// function with internal linkage, in a shared library. run_cxx_sites() is the one export.
#include <cuda_runtime_api.h>
#include "simcuda.h"

namespace {
void k() {}
__attribute__((noinline)) void static_helper_sync(int n)
{
    dim3 one(1, 1, 1);
    for (int i = 0; i < n; i++) {
        cudaLaunchKernel((const void *)k, one, one, nullptr, 0, 0);
        cudaDeviceSynchronize();
    }
}
} // namespace

namespace trainer {
class __attribute__((visibility("hidden"))) Loss {
public:
    __attribute__((noinline)) void reduce(int n);
};

void Loss::reduce(int n)
{
    static float host[16];
    static float *dev;
    if (!dev)
        cudaMalloc((void **)&dev, sizeof host);
    dim3 one(1, 1, 1);
    for (int i = 0; i < n; i++) {
        cudaLaunchKernel((const void *)k, one, one, nullptr, 0, 0);
        cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost);
    }
}
} // namespace trainer

extern "C" __attribute__((visibility("default"))) void run_cxx_sites(void)
{
    simcuda_set_kernel_ns((const void *)k, 2000000ull);
    trainer::Loss loss;
    loss.reduce(3);
    static_helper_sync(2);
}
