/* sim/driver_ext.h: what the export files of the simulated libcuda.so.1 (sim/driver_api.c,
 * sim/driver_ext.c) share: the export attribute and the way to the device in libcudart.so.13
 * (simcuda_private_ops(), cached), with the runtime-to-driver error mapping. */
#ifndef SIM_DRIVER_EXT_H
#define SIM_DRIVER_EXT_H

#include <cuda.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim/driver_ops.h"

#define DRV_API __attribute__((visibility("default")))

/* The per-thread-default-stream twins: cuda.h declares them only for
 * CUDA_API_PER_THREAD_DEFAULT_STREAM builds, with the base function's type. */
#define TWIN(base, twin) extern __typeof__(base) twin;

/* One per library file that includes this; each finds the same table. */
static const struct simcuda_private_ops *_Atomic ops_cache;

static inline const struct simcuda_private_ops *ops(void)
{
    const struct simcuda_private_ops *o = atomic_load_explicit(&ops_cache, memory_order_acquire);
    if (o == NULL) {
        o = simcuda_private_ops();
        atomic_store_explicit(&ops_cache, o, memory_order_release);
    }
    return o;
}

static inline CUresult R(cudaError_t err)
{
    return ops()->cu_result(err);
}

static inline void *ptr(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

/* One attribute of the memory at p (cuPointerGetAttribute, cuPointerGetAttributes). known: CUDA
 * knows p (device, pinned or managed memory); otherwise only the queries that cuPointerGetAttributes
 * answers for any address are answered here (their "unknown" values), by the caller's choice. */
static inline CUresult pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr p,
                                         const struct cudaPointerAttributes *a, bool known)
{
    void *base = NULL;
    size_t size = 0;
    bool host = known && a->type == cudaMemoryTypeHost,
         managed = known && a->type == cudaMemoryTypeManaged;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = known ? ops()->context() : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = !known ? 0u : host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: /* unified addressing: the same address */
        *(CUdeviceptr *)data = known ? p : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: /* only pinned and managed memory is host-accessible */
        if (known && !host && !managed)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = known ? ptr(p) : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data = managed; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = known ? 0 : -2; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned int *)data = known ? 1u : 0u; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        if (known)
            ops()->mem_range(ptr(p), &base, &size);
        if (attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
            *(size_t *)data = size;
        else if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
            *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)base;
        else /* unique while the allocation lives: its start address */
            *(unsigned long long *)data = (unsigned long long)(uintptr_t)base;
        return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

#endif
