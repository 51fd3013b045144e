/* sim/driver_api.c: every symbol the simulated libcuda.so.1 exports: CUDA driver API entry points
 * with the real prototypes of cuda.h (the _v2 names cuda.h maps the plain ones to, and the
 * _ptsz/_ptds twins). Each forwards to the one simulated device in libcudart.so.13 through
 * simcuda_private_ops() (sim/driver_ops.h), whose driver operations share the runtime's
 * timelines and are traced for CUPTI. A library that calls these directly bypasses libcudart's
 * exported functions, as one linked with the static runtime (cuBLAS, cuDNN, NCCL) or using the
 * driver API (Triton) does. What frameworks look up besides is in sim/driver_ext.c. */
#include <cuda.h>
#include <stdatomic.h>
#include <string.h>

#include "sim/driver_ext.h"

TWIN(cuStreamSynchronize, cuStreamSynchronize_ptsz)
TWIN(cuEventRecord, cuEventRecord_ptsz)
TWIN(cuMemcpy, cuMemcpy_ptds)
TWIN(cuMemcpyAsync, cuMemcpyAsync_ptsz)
TWIN(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds)
TWIN(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds)
TWIN(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds)
TWIN(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz)
TWIN(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz)
TWIN(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz)
TWIN(cuMemsetD8_v2, cuMemsetD8_v2_ptds)
TWIN(cuMemsetD8Async, cuMemsetD8Async_ptsz)
TWIN(cuLaunchKernel, cuLaunchKernel_ptsz)

/* ---- initialization, devices, contexts ------------------------------------------------------ */

DRV_API CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    ops()->driver_init();
    return CUDA_SUCCESS;
}

DRV_API CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

/* Before cuInit (or the runtime's first call) the driver knows no device, as every real driver:
 * tools ask this to learn whether the program initialized its driver. */
DRV_API CUresult cuDeviceGetCount(int *count)
{
    if (!ops()->driver_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

/* The checks of an entry point that answers in *out about device dev: the one device is 0. */
static CUresult check_device(const void *out, CUdevice dev)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

DRV_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!ops()->driver_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = check_device(device, ordinal);
    if (rc == CUDA_SUCCESS)
        *device = 0;
    return rc;
}

DRV_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = check_device(pctx, dev);
    if (rc == CUDA_SUCCESS) {
        ops()->ctx_activate();
        *pctx = ops()->context();
    }
    return rc;
}

DRV_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

DRV_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = ops()->context();
    return CUDA_SUCCESS;
}

DRV_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    return ctx == NULL || ctx == ops()->context() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

DRV_API CUresult cuCtxSynchronize(void)
{
    return R(ops()->ctx_synchronize());
}

/* ---- streams and events ---------------------------------------------------------------------- */

DRV_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return R(ops()->stream_create(phStream, Flags));
}

DRV_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
    return R(ops()->stream_destroy(hStream));
}

DRV_API CUresult cuStreamSynchronize(CUstream hStream)
{
    return R(ops()->stream_synchronize(hStream, false));
}

DRV_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return R(ops()->stream_synchronize(hStream, true));
}

DRV_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    return R(ops()->event_create(phEvent, Flags));
}

DRV_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
    return R(ops()->event_destroy(hEvent));
}

DRV_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return R(ops()->event_record(hEvent, hStream, false));
}

DRV_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return R(ops()->event_record(hEvent, hStream, true));
}

DRV_API CUresult cuEventSynchronize(CUevent hEvent)
{
    return R(ops()->event_synchronize(hEvent));
}

/* ---- memory ---------------------------------------------------------------------------------- */

DRV_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    cudaError_t err = ops()->mem_alloc(&p, bytesize, false);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return R(err);
}

DRV_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return R(ops()->mem_alloc(pp, bytesize, true));
}

DRV_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    (void)Flags;
    return R(ops()->mem_alloc(pp, bytesize, true));
}

DRV_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return R(ops()->mem_free(ptr(dptr), false));
}

DRV_API CUresult cuMemFreeHost(void *p)
{
    return R(ops()->mem_free(p, true));
}

/* cuPointerGetAttribute as the driver answers it: device, host (pinned) or managed memory (device
 * memory with CU_POINTER_ATTRIBUTE_IS_MANAGED set); for ordinary host memory that CUDA does not
 * know, CUDA_ERROR_INVALID_VALUE. The attributes are driver_ext.h's pointer_attribute. */
DRV_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr p)
{
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaPointerAttributes a;
    if (ops()->pointer_attributes(&a, ptr(p)) != cudaSuccess ||
        a.type == cudaMemoryTypeUnregistered)
        return CUDA_ERROR_INVALID_VALUE;
    return pointer_attribute(data, attribute, p, &a, true);
}

/* ---- copies and memsets ---------------------------------------------------------------------- */

#define COPY(name, kind, pt, dst_t, src_t, dst, src)                         \
    DRV_API CUresult name(dst_t dst_, src_t src_, size_t ByteCount)          \
    {                                                                        \
        return R(ops()->memcpy(dst, src, ByteCount, kind, NULL, pt, false)); \
    }
#define COPY_ASYNC(name, kind, pt, dst_t, src_t, dst, src)                            \
    DRV_API CUresult name(dst_t dst_, src_t src_, size_t ByteCount, CUstream hStream) \
    {                                                                                 \
        return R(ops()->memcpy(dst, src, ByteCount, kind, hStream, pt, true));        \
    }

COPY(cuMemcpyHtoD_v2, cudaMemcpyHostToDevice, false, CUdeviceptr, const void *, ptr(dst_), src_)
COPY(cuMemcpyHtoD_v2_ptds, cudaMemcpyHostToDevice, true, CUdeviceptr, const void *, ptr(dst_), src_)
COPY(cuMemcpyDtoH_v2, cudaMemcpyDeviceToHost, false, void *, CUdeviceptr, dst_, ptr(src_))
COPY(cuMemcpyDtoH_v2_ptds, cudaMemcpyDeviceToHost, true, void *, CUdeviceptr, dst_, ptr(src_))
COPY(cuMemcpyDtoD_v2, cudaMemcpyDeviceToDevice, false, CUdeviceptr, CUdeviceptr, ptr(dst_),
     ptr(src_))
COPY(cuMemcpyDtoD_v2_ptds, cudaMemcpyDeviceToDevice, true, CUdeviceptr, CUdeviceptr, ptr(dst_),
     ptr(src_))
COPY(cuMemcpy, cudaMemcpyDefault, false, CUdeviceptr, CUdeviceptr, ptr(dst_), ptr(src_))
COPY(cuMemcpy_ptds, cudaMemcpyDefault, true, CUdeviceptr, CUdeviceptr, ptr(dst_), ptr(src_))
COPY_ASYNC(cuMemcpyHtoDAsync_v2, cudaMemcpyHostToDevice, false, CUdeviceptr, const void *,
           ptr(dst_), src_)
COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, cudaMemcpyHostToDevice, true, CUdeviceptr, const void *,
           ptr(dst_), src_)
COPY_ASYNC(cuMemcpyDtoHAsync_v2, cudaMemcpyDeviceToHost, false, void *, CUdeviceptr, dst_,
           ptr(src_))
COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, cudaMemcpyDeviceToHost, true, void *, CUdeviceptr, dst_,
           ptr(src_))
COPY_ASYNC(cuMemcpyDtoDAsync_v2, cudaMemcpyDeviceToDevice, false, CUdeviceptr, CUdeviceptr,
           ptr(dst_), ptr(src_))
COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, cudaMemcpyDeviceToDevice, true, CUdeviceptr, CUdeviceptr,
           ptr(dst_), ptr(src_))
COPY_ASYNC(cuMemcpyAsync, cudaMemcpyDefault, false, CUdeviceptr, CUdeviceptr, ptr(dst_), ptr(src_))
COPY_ASYNC(cuMemcpyAsync_ptsz, cudaMemcpyDefault, true, CUdeviceptr, CUdeviceptr, ptr(dst_),
           ptr(src_))

DRV_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return R(ops()->memset_d8(ptr(dstDevice), uc, N, NULL, false, false));
}

DRV_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return R(ops()->memset_d8(ptr(dstDevice), uc, N, NULL, true, false));
}

DRV_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                 CUstream hStream)
{
    return R(ops()->memset_d8(ptr(dstDevice), uc, N, hStream, false, true));
}

DRV_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                      CUstream hStream)
{
    return R(ops()->memset_d8(ptr(dstDevice), uc, N, hStream, true, true));
}

/* ---- kernels --------------------------------------------------------------------------------- */

/* Any non-NULL CUfunction names a kernel (simcuda_set_kernel_ns sets its duration). */
#define LAUNCH(name, pt)                                                                         \
    DRV_API CUresult name(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,            \
                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
                          void **kernelParams, void **extra)                                     \
    {                                                                                            \
        (void)kernelParams;                                                                      \
        (void)extra;                                                                             \
        dim3 grid = {gridDimX, gridDimY, gridDimZ};                                              \
        dim3 block = {blockDimX, blockDimY, blockDimZ};                                          \
        return R(ops()->launch((const void *)f, grid, block, sharedMemBytes, hStream, pt));      \
    }

LAUNCH(cuLaunchKernel, false)
LAUNCH(cuLaunchKernel_ptsz, true)

/* ---- errors ---------------------------------------------------------------------------------- */

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult describe(CUresult error, const char **out, bool text)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == error) {
            *out = text ? errors[i].text : errors[i].name;
            return CUDA_SUCCESS;
        }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

DRV_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    return describe(error, pStr, false);
}

DRV_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    return describe(error, pStr, true);
}
