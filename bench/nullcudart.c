/* bench/nullcudart.c: a null CUDA runtime for `make bench` (build/bench/null/libcudart.so.13,
 * the simulator's SONAME and version node): the entry points the bench programs call, each
 * returning at once. Run against it, a with/without-agent difference is the agent's own cost
 * alone, free of the simulator's locks and sleeps (the simulator's stream synchronize sleeps in
 * clock_nanosleep, 30-80 us on a VM even for a deadline already past). */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT cudaError_t cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **a, size_t s,
                                    cudaStream_t st)
{
    (void)f, (void)g, (void)b, (void)a, (void)s, (void)st;
    return cudaSuccess;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}
EXPORT cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

EXPORT cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = calloc(1, n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

EXPORT cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}

EXPORT cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k)
{
    (void)k;
    memmove(d, s, n);
    return cudaSuccess;
}

EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    memset(a, 0, sizeof *a);
    a->type = cudaMemoryTypeUnregistered;
    a->device = -2;
    a->hostPointer = (void *)p;
    return cudaSuccess;
}
