/* tests/progs/lib/ctorcuda.c: a library whose constructor syncs (a kernel, then
 * cudaStreamSynchronize), loaded with dlopen: the process's first CUDA call comes from inside
 * dlopen, with the loader's lock held (the agent's first-call work loads CUPTI there). */
#include <stdio.h>
#include <cuda_runtime_api.h>
#include "simcuda.h"

static void k(void) {}

__attribute__((noinline)) void ctor_sync(void)
{
    dim3 one = {1, 1, 1};
    simcuda_set_kernel_ns((const void *)k, 1000000ull);
    if (cudaLaunchKernel((const void *)k, one, one, 0, 0, 0) != cudaSuccess ||
        cudaStreamSynchronize(0) != cudaSuccess)
        printf("ctor sync failed\n");
}

__attribute__((constructor)) static void at_load(void)
{
    ctor_sync();
    ctor_sync();
}
