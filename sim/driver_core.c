/* sim/driver_core.c: the simulated driver's operations (see driver_core.h), inside
 * libcudart.so.13 so that they share the runtime's timelines, memory table and tools interface.
 * Each one is traced in the CUPTI driver domain with the real params struct of
 * generated_cuda_meta.h, describes its device work for the activity records and, for the
 * synchronizing ones, leaves a synchronization record. Never calls an exported name. */
#include "sim/driver_core.h"

#include <cuda.h>
#include <cupti.h> /* and the params structs of generated_cuda_meta.h */
#include <string.h>

#include "sim/cupti_core.h"
#include "sim/driver_ops.h"

/* The driver's codes for the runtime errors the simulator returns. */
static CUresult cu_result(cudaError_t err)
{
    switch (err) {
    case cudaSuccess: return CUDA_SUCCESS;
    case cudaErrorInvalidValue: return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
    case cudaErrorInvalidDevice: return CUDA_ERROR_INVALID_DEVICE;
    case cudaErrorInvalidResourceHandle: return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorNotReady: return CUDA_ERROR_NOT_READY;
    case cudaErrorInvalidDeviceFunction: return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorInvalidConfiguration: return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorUnsupportedLimit: return CUDA_ERROR_UNSUPPORTED_LIMIT;
    case cudaErrorStreamCaptureUnsupported: return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    case cudaErrorStreamCaptureInvalidated: return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case cudaErrorStreamCaptureImplicit: return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    case cudaErrorStreamCaptureWrongThread: return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    case cudaErrorIllegalState: return CUDA_ERROR_ILLEGAL_STATE;
    default: return CUDA_ERROR_UNKNOWN;
    }
}

/* One traced driver call: DRV_ENTER opens it, DRV_RETURN closes it with the driver's code. */
#define DRV_ENTER(cbid, name, params) \
    struct sim_trace tr_;             \
    sim_trace_enter(&tr_, CUPTI_CB_DOMAIN_DRIVER_API, (cbid), (name), (params))

#define DRV_RETURN(err)               \
    do {                              \
        cudaError_t e_ = (err);       \
        CUresult cu_ = cu_result(e_); \
        sim_trace_exit(&tr_, &cu_);   \
        return e_;                    \
    } while (0)

/* The plain entry point's (cbid, name), or its per-thread twin's. */
#define PICK(pt, plain, twin) \
    ((pt) ? CUPTI_DRIVER_TRACE_CBID_##twin : CUPTI_DRIVER_TRACE_CBID_##plain)
#define PICK_NAME(pt, plain, twin) ((pt) ? #twin : #plain)

static unsigned long long stream_id(cudaStream_t stream, sim_default_t def)
{
    unsigned long long id = 0;
    sim_stream_get_id(stream, def, &id);
    return id;
}

cudaError_t sim_drv_stream_synchronize(cudaStream_t stream, sim_default_t def)
{
    bool pt = def == SIM_DEF_PER_THREAD;
    cuStreamSynchronize_params p = {stream};
    DRV_ENTER(PICK(pt, cuStreamSynchronize, cuStreamSynchronize_ptsz),
              PICK_NAME(pt, cuStreamSynchronize, cuStreamSynchronize_ptsz), &p);
    uint64_t t0 = sim_now_ns();
    cudaError_t err = sim_stream_synchronize(stream, def);
    if (err == cudaSuccess)
        sim_activity_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
                          stream_id(stream, def), t0, sim_now_ns());
    DRV_RETURN(err);
}

cudaError_t sim_drv_ctx_synchronize(void)
{
    DRV_ENTER(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", NULL);
    uint64_t t0 = sim_now_ns();
    cudaError_t err = sim_device_synchronize();
    sim_activity_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 0, t0, sim_now_ns());
    DRV_RETURN(err);
}

cudaError_t sim_drv_event_synchronize(cudaEvent_t event)
{
    cuEventSynchronize_params p = {event};
    DRV_ENTER(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cuEventSynchronize", &p);
    uint64_t t0 = sim_now_ns();
    cudaError_t err = sim_event_synchronize(event);
    if (err == cudaSuccess)
        sim_activity_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 0, t0,
                          sim_now_ns());
    DRV_RETURN(err);
}

static uint8_t memory_kind(const void *p)
{
    switch (sim_mem_lookup(p, NULL)) {
    case SIM_MEM_PINNED: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case SIM_MEM_DEVICE: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case SIM_MEM_MANAGED: return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    default: return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    }
}

static bool on_host(uint8_t memory)
{
    return memory == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
           memory == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
}

static void describe_copy(const void *dst, const void *src, size_t bytes)
{
    struct sim_op op = {.kind = SIM_OP_MEMCPY, .bytes = bytes};
    op.src_kind = memory_kind(src);
    op.dst_kind = memory_kind(dst);
    bool sh = on_host(op.src_kind), dh = on_host(op.dst_kind);
    op.copy_kind = sh && dh ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOH
                   : sh     ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
                   : dh     ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
                            : CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    sim_op_describe(&op);
}

/* The driver entry point a copy of this kind goes through (what the runtime would call):
 * cuMemcpyHtoD_v2, cuMemcpyDtoHAsync_v2_ptsz, ..., cuMemcpy for host to host and unified. */
static void copy_entry(enum cudaMemcpyKind kind, bool async, bool pt, CUpti_CallbackId *cbid,
                       const char **name)
{
#define COPY_ENTRY(base)                                                \
    do {                                                                \
        if (async) {                                                    \
            *cbid = PICK(pt, base##Async_v2, base##Async_v2_ptsz);      \
            *name = PICK_NAME(pt, base##Async_v2, base##Async_v2_ptsz); \
        } else {                                                        \
            *cbid = PICK(pt, base##_v2, base##_v2_ptds);                \
            *name = PICK_NAME(pt, base##_v2, base##_v2_ptds);           \
        }                                                               \
    } while (0)
    switch (kind) {
    case cudaMemcpyHostToDevice: COPY_ENTRY(cuMemcpyHtoD); return;
    case cudaMemcpyDeviceToHost: COPY_ENTRY(cuMemcpyDtoH); return;
    case cudaMemcpyDeviceToDevice: COPY_ENTRY(cuMemcpyDtoD); return;
    default:
        *cbid =
            async ? PICK(pt, cuMemcpyAsync, cuMemcpyAsync_ptsz) : PICK(pt, cuMemcpy, cuMemcpy_ptds);
        *name = async ? PICK_NAME(pt, cuMemcpyAsync, cuMemcpyAsync_ptsz)
                      : PICK_NAME(pt, cuMemcpy, cuMemcpy_ptds);
        return;
    }
#undef COPY_ENTRY
}

cudaError_t sim_drv_memcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                           cudaStream_t stream, sim_default_t def, bool async)
{
    /* The four layouts share their first fields (destination, source, bytes, stream). */
    union {
        cuMemcpyHtoDAsync_v2_params h2d;
        cuMemcpyDtoHAsync_v2_params d2h;
        cuMemcpyDtoDAsync_v2_params d2d;
        cuMemcpyAsync_params any;
    } p;
    memset(&p, 0, sizeof p);
    switch (kind) {
    case cudaMemcpyHostToDevice:
        p.h2d = (cuMemcpyHtoDAsync_v2_params){(CUdeviceptr)(uintptr_t)dst, src, bytes, stream};
        break;
    case cudaMemcpyDeviceToHost:
        p.d2h = (cuMemcpyDtoHAsync_v2_params){dst, (CUdeviceptr)(uintptr_t)src, bytes, stream};
        break;
    case cudaMemcpyDeviceToDevice:
        p.d2d = (cuMemcpyDtoDAsync_v2_params){(CUdeviceptr)(uintptr_t)dst,
                                              (CUdeviceptr)(uintptr_t)src, bytes, stream};
        break;
    default:
        p.any = (cuMemcpyAsync_params){(CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src,
                                       bytes, stream};
        break;
    }
    CUpti_CallbackId cbid;
    const char *name;
    copy_entry(kind, async, def == SIM_DEF_PER_THREAD, &cbid, &name);
    DRV_ENTER(cbid, name, &p);
    describe_copy(dst, src, bytes);
    cudaError_t err = sim_memcpy(dst, src, bytes, kind, async ? stream : NULL, def, async);
    sim_op_clear();
    DRV_RETURN(err);
}

cudaError_t sim_drv_memset_d8(void *dst, unsigned char value, size_t bytes, cudaStream_t stream,
                              sim_default_t def, bool async)
{
    bool pt = def == SIM_DEF_PER_THREAD;
    cuMemsetD8Async_params p = {(CUdeviceptr)(uintptr_t)dst, value, bytes, stream};
    DRV_ENTER(async ? PICK(pt, cuMemsetD8Async, cuMemsetD8Async_ptsz)
                    : PICK(pt, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
              async ? PICK_NAME(pt, cuMemsetD8Async, cuMemsetD8Async_ptsz)
                    : PICK_NAME(pt, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
              &p);
    sim_op_describe(&(struct sim_op){.kind = SIM_OP_MEMSET, .bytes = bytes});
    cudaError_t err =
        sim_memset(dst, bytes, value, bytes, 1, 1, 1, async ? stream : NULL, def, async);
    sim_op_clear();
    DRV_RETURN(err);
}

/* A launch with the kernel table's duration (ns NULL) or exactly *ns (the vendor libraries'). */
static cudaError_t drv_launch(const void *func, dim3 grid, dim3 block, size_t shmem,
                              cudaStream_t stream, sim_default_t def, const uint64_t *ns)
{
    bool pt = def == SIM_DEF_PER_THREAD;
    cuLaunchKernel_params p = {(CUfunction)(uintptr_t)func,
                               grid.x,
                               grid.y,
                               grid.z,
                               block.x,
                               block.y,
                               block.z,
                               (unsigned)shmem,
                               stream,
                               NULL,
                               NULL};
    DRV_ENTER(PICK(pt, cuLaunchKernel, cuLaunchKernel_ptsz),
              PICK_NAME(pt, cuLaunchKernel, cuLaunchKernel_ptsz), &p);
    const char *name = NULL;
    if (func != NULL && atomic_load_explicit(&sim_activity_on, memory_order_relaxed))
        sim_kernel_name(&name, func);
    sim_op_describe(&(struct sim_op){.kind = SIM_OP_KERNEL, .kernel_name = name});
    cudaError_t err = ns != NULL ? sim_launch_ns(func, *ns, stream, def)
                                 : sim_launch(func, grid, block, shmem, stream, def);
    sim_op_clear();
    DRV_RETURN(err);
}

cudaError_t sim_drv_launch(const void *func, dim3 grid, dim3 block, size_t shmem,
                           cudaStream_t stream, sim_default_t def)
{
    return drv_launch(func, grid, block, shmem, stream, def, NULL);
}

cudaError_t sim_drv_launch_ex(const CUlaunchConfig *config, const void *func, void **params,
                              void **extra, sim_default_t def)
{
    bool pt = def == SIM_DEF_PER_THREAD;
    cuLaunchKernelEx_params p = {config, (CUfunction)(uintptr_t)func, params, extra};
    DRV_ENTER(PICK(pt, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
              PICK_NAME(pt, cuLaunchKernelEx, cuLaunchKernelEx_ptsz), &p);
    if (config->numAttrs != 0 && config->attrs == NULL)
        DRV_RETURN(cudaErrorInvalidValue);
    const char *name = NULL;
    if (func != NULL && atomic_load_explicit(&sim_activity_on, memory_order_relaxed))
        sim_kernel_name(&name, func);
    sim_op_describe(&(struct sim_op){.kind = SIM_OP_KERNEL, .kernel_name = name});
    dim3 grid = {config->gridDimX, config->gridDimY, config->gridDimZ};
    dim3 block = {config->blockDimX, config->blockDimY, config->blockDimZ};
    cudaError_t err = sim_launch(func, grid, block, config->sharedMemBytes, config->hStream, def);
    sim_op_clear();
    DRV_RETURN(err);
}

#define MASK(kind) (1u << (kind))

cudaError_t sim_drv_free(void *ptr, bool host)
{
    cuMemFree_v2_params pd = {(CUdeviceptr)(uintptr_t)ptr};
    cuMemFreeHost_params ph = {ptr};
    DRV_ENTER(host ? CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost : CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
              host ? "cuMemFreeHost" : "cuMemFree_v2",
              host ? (const void *)&ph : (const void *)&pd);
    if (ptr == NULL)
        DRV_RETURN(cudaSuccess);
    unsigned mask = host ? MASK(SIM_MEM_PINNED) : MASK(SIM_MEM_DEVICE) | MASK(SIM_MEM_MANAGED);
    struct sim_range r;
    enum sim_mem_kind kind = sim_mem_lookup(ptr, &r);
    if (!(MASK(kind) & mask) || kind == SIM_MEM_PAGEABLE || r.base != (uintptr_t)ptr || !r.owned)
        DRV_RETURN(cudaErrorInvalidValue);
    /* frees synchronize implicitly (CUDA "API synchronization behavior"): refused during a
     * capture that forbids it, the memory kept */
    cudaError_t err = sim_device_synchronize();
    DRV_RETURN(err != cudaSuccess ? err : sim_mem_release(ptr, mask));
}

/* ---- the table for libcuda.so.1 and libcupti.so.13 ------------------------------------------ */

static cudaError_t ops_stream_create(cudaStream_t *out, unsigned flags)
{
    return sim_stream_create(out, flags, 0);
}

static cudaError_t ops_stream_synchronize(cudaStream_t stream, bool per_thread)
{
    return sim_drv_stream_synchronize(stream, per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY);
}

static cudaError_t ops_event_record(cudaEvent_t event, cudaStream_t stream, bool per_thread)
{
    return sim_event_record(event, stream, per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY);
}

static cudaError_t ops_mem_alloc(void **out, size_t bytes, bool host)
{
    return sim_mem_alloc(out, bytes, host ? SIM_MEM_PINNED : SIM_MEM_DEVICE, 0);
}

static cudaError_t ops_memcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                              cudaStream_t stream, bool per_thread, bool async)
{
    return sim_drv_memcpy(dst, src, bytes, kind, stream,
                          per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY, async);
}

static cudaError_t ops_memset_d8(void *dst, unsigned char value, size_t bytes, cudaStream_t stream,
                                 bool per_thread, bool async)
{
    return sim_drv_memset_d8(dst, value, bytes, stream,
                             per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY, async);
}

static cudaError_t ops_launch(const void *func, dim3 grid, dim3 block, size_t shmem,
                              cudaStream_t stream, bool per_thread)
{
    return sim_drv_launch(func, grid, block, shmem, stream,
                          per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY);
}

/* A vendor library's kernel: one block of 128 threads in the traced params (the grid a real
 * GEMM or convolution uses depends on its tiling, which nothing here models). */
static cudaError_t ops_launch_ns(const void *func, uint64_t ns, cudaStream_t stream,
                                 bool per_thread)
{
    return drv_launch(func, (dim3){1, 1, 1}, (dim3){128, 1, 1}, 0, stream,
                      per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY, &ns);
}

static cudaError_t ops_launch_ex(const CUlaunchConfig *config, const void *func, void **params,
                                 void **extra, bool per_thread)
{
    return sim_drv_launch_ex(config, func, params, extra,
                             per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY);
}

static cudaError_t ops_stream_check(cudaStream_t stream, bool per_thread)
{
    return sim_stream_check(stream, per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY);
}

static cudaError_t ops_capture_status(cudaStream_t stream, bool per_thread, int *status)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t err =
        sim_capture_info(stream, per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY, &st, NULL, NULL);
    *status = (int)st; /* CUstreamCaptureStatus has the same values */
    return err;
}

static uint64_t ops_default_kernel_ns(void)
{
    return atomic_load(&sim_default_kernel_ns);
}

static double ops_device_bytes_per_ns(void)
{
    return atomic_load(&sim_device_bytes_per_ns);
}

static int ops_debug_level(void)
{
    return sim_debug_level;
}

static uint64_t ops_now_ns(void)
{
    return sim_now_ns();
}

/* cuMemsetD32[Async]: traced like the byte form (the synchronous form has no per-thread twin
 * in the tests' needs, so only the async one is a traced driver operation with both ids). */
static cudaError_t ops_memset_d32(void *dst, unsigned value, size_t count, cudaStream_t stream,
                                  bool per_thread, bool async)
{
    sim_default_t def = per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY;
    cuMemsetD32Async_params p = {(CUdeviceptr)(uintptr_t)dst, value, count, stream};
    DRV_ENTER(async ? PICK(per_thread, cuMemsetD32Async, cuMemsetD32Async_ptsz)
                    : PICK(per_thread, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
              async ? PICK_NAME(per_thread, cuMemsetD32Async, cuMemsetD32Async_ptsz)
                    : PICK_NAME(per_thread, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
              &p);
    sim_op_describe(&(struct sim_op){.kind = SIM_OP_MEMSET, .bytes = count * 4});
    cudaError_t err = sim_memset_d32(dst, value, count, async ? stream : NULL, def, async);
    sim_op_clear();
    DRV_RETURN(err);
}

/* cuStreamWriteValue32: a zero-length operation on the stream's timeline; the value is
 * written at the call, like every write of the simulator. The target must be memory CUDA
 * knows (device, pinned or managed). */
static cudaError_t ops_write_value32(void *addr, uint32_t value, cudaStream_t stream,
                                     bool per_thread)
{
    sim_default_t def = per_thread ? SIM_DEF_PER_THREAD : SIM_DEF_LEGACY;
    cuStreamWriteValue32_v2_params p = {stream, (CUdeviceptr)(uintptr_t)addr, value, 0};
    DRV_ENTER(PICK(per_thread, cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz),
              PICK_NAME(per_thread, cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz), &p);
    cudaError_t err = cudaErrorInvalidValue;
    if (addr != NULL && ((uintptr_t)addr & 3) == 0 &&
        sim_mem_lookup(addr, NULL) != SIM_MEM_PAGEABLE &&
        sim_mem_check_span(addr, 4) == cudaSuccess)
        err = sim_enqueue(stream, def, 0, 0, false, NULL, NULL);
    if (err == cudaSuccess) {
        memcpy(addr, &value, 4);
        sim_contents_written(addr, 4);
    }
    DRV_RETURN(err);
}

static cudaError_t ops_device_attribute(int *value, int attr, int device)
{
    return sim_device_attribute(value, (enum cudaDeviceAttr)attr, device);
}

const struct simcuda_private_ops sim_private_ops = {
    .version = SIMCUDA_PRIVATE_OPS_VERSION,
    .subscribe = sim_cupti_subscribe,
    .unsubscribe = sim_cupti_unsubscribe,
    .enable_callback = sim_cupti_enable_callback,
    .enable_domain = sim_cupti_enable_domain,
    .get_callback_state = sim_cupti_get_callback_state,
    .activity_enable = sim_cupti_activity_enable,
    .activity_register = sim_cupti_activity_register,
    .activity_flush = sim_cupti_activity_flush,
    .activity_next = sim_cupti_activity_next,
    .activity_dropped = sim_cupti_dropped,
    .now_ns = ops_now_ns,
    .context = sim_cupti_context,
    .stream_create = ops_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_synchronize = ops_stream_synchronize,
    .ctx_synchronize = sim_drv_ctx_synchronize,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = ops_event_record,
    .event_synchronize = sim_drv_event_synchronize,
    .mem_alloc = ops_mem_alloc,
    .mem_free = sim_drv_free,
    .memcpy = ops_memcpy,
    .memset_d8 = ops_memset_d8,
    .launch = ops_launch,
    .pointer_attributes = sim_mem_pointer_attributes,
    .error_name = sim_error_name,
    .error_string = sim_error_string,
    .cu_result = cu_result,
    .ctx_activate = sim_ctx_activate,
    .ctx_is_active = sim_ctx_is_active,
    .device_attribute = ops_device_attribute,
    .mem_range = sim_mem_range,
    .memset_d32 = ops_memset_d32,
    .write_value32 = ops_write_value32,
    .occupancy = sim_occupancy,
    .finalize = sim_cupti_finalize,
    .launch_ns = ops_launch_ns,
    .kernel_register = sim_kernel_register,
    .default_kernel_ns = ops_default_kernel_ns,
    .device_bytes_per_ns = ops_device_bytes_per_ns,
    .debug_level = ops_debug_level,
    .log = sim_log,
    .driver_init = sim_driver_init,
    .driver_is_initialized = sim_driver_is_initialized,
    .launch_ex = ops_launch_ex,
    .stream_check = ops_stream_check,
    .capture_status = ops_capture_status,
    .limit_get = sim_limit_get,
    .limit_set = sim_limit_set,
};
