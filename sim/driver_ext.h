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

#endif
