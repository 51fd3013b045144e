/* sim/driver_ops.h: how the simulated libcuda.so.1 (sim/driver_api.c) and libcupti.so.13
 * (sim/cupti_api.c) reach the one simulated device, which lives in libcudart.so.13 with its
 * timelines and its tools interface: simcuda_private_ops() (exported by libcudart.so.13) hands
 * them this table. Not a CUDA interface: private to the simulator's three libraries. Every
 * driver operation here is traced in the driver domain (CUPTI callbacks at ENTER and EXIT) and
 * leaves its activity records, like the real driver's entry points. */
#ifndef SIM_DRIVER_OPS_H
#define SIM_DRIVER_OPS_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/device_facts.h"

#define SIMCUDA_PRIVATE_OPS_VERSION 1

struct simcuda_private_ops {
    unsigned version;

    /* the CUPTI backends */
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *out, CUpti_CallbackFunc cb, void *userdata,
                             const char *name, char *old_name, size_t old_size);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle h);
    CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle h,
                                   CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
    CUptiResult (*enable_domain)(uint32_t enable, CUpti_SubscriberHandle h,
                                 CUpti_CallbackDomain domain);
    CUptiResult (*get_callback_state)(uint32_t *enable, CUpti_SubscriberHandle h,
                                      CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
    CUptiResult (*activity_enable)(CUpti_ActivityKind kind, bool enable);
    CUptiResult (*activity_register)(CUpti_BuffersCallbackRequestFunc request,
                                     CUpti_BuffersCallbackCompleteFunc complete);
    CUptiResult (*activity_flush)(uint32_t flag);
    CUptiResult (*activity_next)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
    uint64_t (*activity_dropped)(void);
    uint64_t (*now_ns)(void); /* the timelines' clock: CLOCK_MONOTONIC */

    /* the device, as the driver API sees it (per_thread: a _ptsz/_ptds entry point) */
    CUcontext (*context)(void);
    cudaError_t (*stream_create)(cudaStream_t *out, unsigned flags);
    cudaError_t (*stream_destroy)(cudaStream_t stream);
    cudaError_t (*stream_synchronize)(cudaStream_t stream, bool per_thread);
    cudaError_t (*ctx_synchronize)(void);
    cudaError_t (*event_create)(cudaEvent_t *out, unsigned flags);
    cudaError_t (*event_destroy)(cudaEvent_t event);
    cudaError_t (*event_record)(cudaEvent_t event, cudaStream_t stream, bool per_thread);
    cudaError_t (*event_synchronize)(cudaEvent_t event);
    cudaError_t (*mem_alloc)(void **out, size_t bytes, bool host);
    cudaError_t (*mem_free)(void *p, bool host);
    cudaError_t (*memcpy)(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                          cudaStream_t stream, bool per_thread, bool async);
    cudaError_t (*memset_d8)(void *dst, unsigned char value, size_t bytes, cudaStream_t stream,
                             bool per_thread, bool async);
    cudaError_t (*launch)(const void *func, dim3 grid, dim3 block, size_t shmem,
                          cudaStream_t stream, bool per_thread);
    cudaError_t (*pointer_attributes)(struct cudaPointerAttributes *attr, const void *p);
    const char *(*error_name)(cudaError_t err);
    const char *(*error_string)(cudaError_t err);
    CUresult (*cu_result)(cudaError_t err); /* the driver's code for a runtime error */

    /* added for frameworks (PyTorch) at version 1 as well: both ends are built together */
    void (*ctx_activate)(void);
    bool (*ctx_is_active)(void);
    cudaError_t (*device_attribute)(int *value, int attr, int device);
    /* the allocation holding p: [*base, *base + *size) (cuMemGetAddressRange) */
    cudaError_t (*mem_range)(const void *p, void **base, size_t *size);
    cudaError_t (*memset_d32)(void *dst, unsigned value, size_t count, cudaStream_t stream,
                              bool per_thread, bool async);
    /* cuStreamWriteValue32: the value lands when the stream reaches it (here: at the call,
     * like every other write of the simulator), ordered on the stream's timeline */
    cudaError_t (*write_value32)(void *addr, uint32_t value, cudaStream_t stream, bool per_thread);
    cudaError_t (*occupancy)(int *blocks_per_sm, const void *func, int block_size);
    CUptiResult (*finalize)(void); /* cuptiFinalize */

    /* added for the vendor libraries (sim/vendor/: cuBLAS, cuBLASLt, cuDNN), which link the
     * runtime statically and so launch through the driver: a kernel of exactly ns on stream,
     * traced as cuLaunchKernel; the name of a kernel for activity records and
     * cudaFuncGetName; the launch cost (SIMCUDA_KERNEL_NS) and device memory speed
     * (SIMCUDA_DEVICE_GBPS, bytes per ns) their durations are made of; the simulator's one
     * debug switch and stderr line writer. */
    cudaError_t (*launch_ns)(const void *func, uint64_t ns, cudaStream_t stream, bool per_thread);
    void (*kernel_register)(const void *func, const char *name);
    uint64_t (*default_kernel_ns)(void);
    double (*device_bytes_per_ns)(void);
    int (*debug_level)(void); /* SIMCUDA_DEBUG */
    void (*log)(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

    /* added for the driver's initialization (cuInit; CUDA_ERROR_NOT_INITIALIZED before it) */
    void (*driver_init)(void);
    bool (*driver_is_initialized)(void);

    /* added for Triton and Inductor (sim/module_api.c): cuLaunchKernelEx (config checked by the
     * caller for NULL; traced as cuLaunchKernelEx[_ptsz]), whether a stream handle is valid,
     * and the context's limits (the runtime's cudaDeviceGetLimit/SetLimit: one context). */
    cudaError_t (*launch_ex)(const CUlaunchConfig *config, const void *func, void **params,
                             void **extra, bool per_thread);
    cudaError_t (*stream_check)(cudaStream_t stream, bool per_thread);
    /* the stream's capture status (a cudaStreamCaptureStatus / CUstreamCaptureStatus value) */
    cudaError_t (*capture_status)(cudaStream_t stream, bool per_thread, int *status);
    cudaError_t (*limit_get)(size_t *value, int limit);
    cudaError_t (*limit_set)(int limit, size_t value);
};

/* Exported by the simulated libcudart.so.13. */
const struct simcuda_private_ops *simcuda_private_ops(void);

#endif
