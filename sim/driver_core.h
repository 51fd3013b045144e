/* sim/driver_core.h: the simulated driver's operations (sim/driver_core.c, inside
 * libcudart.so.13, hidden). Each one is traced in the CUPTI driver domain and describes its work
 * for the activity records; the runtime entry points of sim/cudart.c call them inside their own
 * runtime-domain trace (so a runtime call nests a driver call, as with the real runtime), and
 * libcuda.so.1 reaches them through simcuda_private_ops(). */
#ifndef SIM_DRIVER_CORE_H
#define SIM_DRIVER_CORE_H

#include <cuda.h>

#include "sim/sim_internal.h"

#pragma GCC visibility push(hidden)

cudaError_t sim_drv_stream_synchronize(cudaStream_t stream, sim_default_t def);
cudaError_t sim_drv_ctx_synchronize(void);
cudaError_t sim_drv_event_synchronize(cudaEvent_t event);
cudaError_t sim_drv_memcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                           cudaStream_t stream, sim_default_t def, bool async);
cudaError_t sim_drv_memset_d8(void *dst, unsigned char value, size_t bytes, cudaStream_t stream,
                              sim_default_t def, bool async);
cudaError_t sim_drv_launch(const void *func, dim3 grid, dim3 block, size_t shmem,
                           cudaStream_t stream, sim_default_t def);
/* cuLaunchKernelEx: the kernel table's duration for func on config->hStream. */
cudaError_t sim_drv_launch_ex(const CUlaunchConfig *config, const void *func, void **params,
                              void **extra, sim_default_t def);
/* cuMemFree / cuMemFreeHost: an implicit device synchronize, then the release (NULL: nothing). */
cudaError_t sim_drv_free(void *p, bool host);

/* The table simcuda_private_ops() returns. */
extern const struct simcuda_private_ops sim_private_ops;

#pragma GCC visibility pop
#endif
