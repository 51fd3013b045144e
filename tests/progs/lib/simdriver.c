/* tests/progs/lib/simdriver.c: libsimdriver.so, a library that reaches the device only through
 * the CUDA driver API (libcuda.so.1), as cuBLAS or NCCL do with their statically linked runtime
 * and Triton with its driver calls: none of its syncs passes through an LD_PRELOADed libcudart
 * symbol, so only CUPTI's driver callbacks see them. Each drvlib_* function is one known sync
 * site (or a known non-sync) after a kernel of drvlib_setup's duration. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include "simcuda.h"

#define CU(call)                                                                        \
    do {                                                                                \
        CUresult r_ = (call);                                                           \
        if (r_ != CUDA_SUCCESS) {                                                       \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)r_); \
            exit(98);                                                                   \
        }                                                                               \
    } while (0)

#define BYTES 4096

static char kernel_work;             /* its address names the library's kernel */
static CUstream stream;
static CUevent event;
static CUdeviceptr dev_a, dev_b, dev_free;
static void *pinned;
static char pageable[BYTES];

static void kernel(CUstream s)
{
    CU(cuLaunchKernel((CUfunction)(void *)&kernel_work, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
}

__attribute__((visibility("default"))) void drvlib_setup(unsigned long long kernel_ns)
{
    CU(cuInit(0));
    simcuda_set_kernel_ns(&kernel_work, kernel_ns);
    CU(cuStreamCreate(&stream, 0));
    CU(cuEventCreate(&event, 0));
    CU(cuMemAlloc(&dev_a, BYTES));
    CU(cuMemAlloc(&dev_b, BYTES));
    CU(cuMemAllocHost(&pinned, BYTES));
}

__attribute__((visibility("default"))) void drvlib_kernel_ns(unsigned long long kernel_ns)
{
    simcuda_set_kernel_ns(&kernel_work, kernel_ns);
}

__attribute__((visibility("default"), noinline)) void drvlib_stream_sync(void)
{
    kernel(stream);
    CU(cuStreamSynchronize(stream));
}

__attribute__((visibility("default"), noinline)) void drvlib_ctx_sync(void)
{
    kernel(stream);
    CU(cuCtxSynchronize());
}

__attribute__((visibility("default"), noinline)) void drvlib_event_sync(void)
{
    kernel(stream);
    CU(cuEventRecord(event, stream));
    CU(cuEventSynchronize(event));
}

/* The legacy default stream: the copy waits for the kernel before it. */
__attribute__((visibility("default"), noinline)) void drvlib_copy_dtoh(void)
{
    kernel(0);
    CU(cuMemcpyDtoH(pageable, dev_a, BYTES));
}

/* Into pinned memory: queued, not a sync. */
__attribute__((visibility("default"), noinline)) void drvlib_copy_async_pinned(void)
{
    CU(cuMemcpyDtoHAsync(pinned, dev_a, BYTES, stream));
}

/* Into pageable memory: the host waits for the stream's kernel and the copy. */
__attribute__((visibility("default"), noinline)) void drvlib_copy_async_pageable(void)
{
    kernel(stream);
    CU(cuMemcpyDtoHAsync(pageable, dev_a, BYTES, stream));
}

/* Device to device: queued, not a sync. */
__attribute__((visibility("default"), noinline)) void drvlib_copy_dtod(void)
{
    CU(cuMemcpyDtoD(dev_b, dev_a, BYTES));
}

/* cuMemFree synchronizes the device implicitly. */
__attribute__((visibility("default"), noinline)) void drvlib_free(void)
{
    CU(cuMemAlloc(&dev_free, BYTES));
    kernel(stream);
    CU(cuMemFree(dev_free));
}

/* A kernel of its own duration on the library's stream, nothing waited for. */
__attribute__((visibility("default"), noinline)) void drvlib_kernel(void)
{
    kernel(stream);
}

__attribute__((visibility("default"), noinline)) void drvlib_teardown(void)
{
    CU(cuStreamSynchronize(stream));
    CU(cuMemFreeHost(pinned));
    CU(cuMemFree(dev_a));
    CU(cuMemFree(dev_b));
    CU(cuEventDestroy(event));
    CU(cuStreamDestroy(stream));
}
