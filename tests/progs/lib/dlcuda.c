/* tests/progs/lib/dlcuda.c: a library linked against libcudart, loaded by rtld_local with
 * dlopen(RTLD_LOCAL) the way Python loads extension modules: the program itself does not link
 * libcudart, so libcudart is not in the global scope. lib_sync: 4 ms kernel, then a sync. */
#include <cuda_runtime_api.h>
#include "simcuda.h"

static void k(void) {}

__attribute__((noinline)) int lib_sync(void)
{
    dim3 one = {1, 1, 1};
    simcuda_set_kernel_ns((const void *)k, 4000000ull);
    if (cudaLaunchKernel((const void *)k, one, one, 0, 0, 0) != cudaSuccess)
        return -1;
    return cudaStreamSynchronize(0) == cudaSuccess ? 0 : -1;
}
