/* sim/driver_ext.c: the simulated libcuda.so.1's exports beyond sim/driver_api.c: the driver
 * functions a framework such as PyTorch looks up at its CUDA init (cuGetProcAddress and the
 * ~45 names of c10's driver table) or links from its NVRTC stub (libcaffe2_nvrtc.so). Each
 * has cuda.h's prototype (the header maps plain names to the _v2 ones where the driver exports
 * those) and reaches the device through simcuda_private_ops().
 *
 * What the simulated device lacks answers CUDA_ERROR_NOT_SUPPORTED as a real driver does on
 * hardware without the feature (and the matching device attribute reads 0): virtual memory
 * management (cuMem{Create,Map,AddressReserve,...}), multicast objects, green contexts, linking
 * (cuLink*). Modules and cuLaunchKernelEx are in sim/module_api.c. Never calls its own exports. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "sim/driver_ext.h"

TWIN(cuMemsetD32_v2, cuMemsetD32_v2_ptds)
TWIN(cuMemsetD32Async, cuMemsetD32Async_ptsz)
TWIN(cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz)

/* ---- the driver's own lookup ---------------------------------------------------------------- */

/* This library's handle, for looking up its own exports by name. */
static void *self(void)
{
    static void *_Atomic handle;
    void *h = atomic_load_explicit(&handle, memory_order_acquire);
    if (h == NULL) {
        Dl_info info;
        if (dladdr((void *)&self, &info) == 0 || info.dli_fname == NULL)
            return NULL;
        h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        atomic_store_explicit(&handle, h, memory_order_release);
    }
    return h;
}

static void *own(const char *name, const char *suffix)
{
    char full[256];
    int n = snprintf(full, sizeof full, "%s%s", name, suffix);
    if (n <= 0 || (size_t)n >= sizeof full)
        return NULL;
    void *h = self();
    return h != NULL ? dlsym(h, full) : NULL;
}

/* cuGetProcAddress: the newest form of symbol this driver exports (name_v3, name_v2, name),
 * the per-thread-default-stream twin first when flags ask for it (_ptsz, _ptds). The versioned
 * names of a real driver appear only for cudaVersion at or above their introduction; every
 * form here is CUDA 12/13's, which is what a caller built against CUDA 12+ asks for. */
DRV_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    if (symbol == NULL || pfn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (cudaVersion < 2000)
        return CUDA_ERROR_INVALID_VALUE;
    static const char *const plain[] = {"_v3", "_v2", ""};
    static const char *const twins[] = {"_v3_ptsz", "_v3_ptds", "_v2_ptsz",
                                        "_v2_ptds", "_ptsz",    "_ptds"};
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        for (size_t i = 0; *pfn == NULL && i < sizeof twins / sizeof twins[0]; i++)
            *pfn = own(symbol, twins[i]);
    for (size_t i = 0; *pfn == NULL && i < sizeof plain / sizeof plain[0]; i++)
        *pfn = own(symbol, plain[i]);
    if (symbolStatus != NULL)
        *symbolStatus =
            *pfn != NULL ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* ---- devices and contexts ------------------------------------------------------------------- */

DRV_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    if (pi == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    /* The runtime's cudaDeviceAttr values are the driver's CUdevice_attribute values. */
    return R(ops()->device_attribute(pi, (int)attrib, dev));
}

DRV_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    if (name == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", SIM_DEVICE_NAME);
    return CUDA_SUCCESS;
}

DRV_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    memcpy(uuid->bytes, SIM_DEVICE_UUID, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}

DRV_API CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = SIM_DEVICE_BYTES;
    return CUDA_SUCCESS;
}

/* The primary context is active once the runtime (or cuDevicePrimaryCtxRetain) made it so. */
DRV_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    if (flags == NULL || active == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = ops()->ctx_is_active();
    return CUDA_SUCCESS;
}

DRV_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX)
               ? CUDA_ERROR_INVALID_VALUE
               : CUDA_SUCCESS;
}

DRV_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* One context, the primary one: pushing and popping it keeps a per-thread depth so that a pop
 * without a push fails as on an empty stack. */
static _Thread_local unsigned pushed;

DRV_API CUresult cuCtxPushCurrent(CUcontext ctx)
{
    if (ctx != ops()->context())
        return CUDA_ERROR_INVALID_CONTEXT;
    pushed++;
    return CUDA_SUCCESS;
}

DRV_API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    if (pushed == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    pushed--;
    if (pctx != NULL)
        *pctx = ops()->context();
    return CUDA_SUCCESS;
}

DRV_API CUresult cuCtxGetDevice(CUdevice *device)
{
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

DRV_API CUresult cuCtxGetFlags(unsigned int *flags)
{
    if (flags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    return CUDA_SUCCESS;
}

DRV_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    (void)hStream;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = ops()->context();
    return CUDA_SUCCESS;
}

/* ---- green contexts and device resources: not supported -------------------------------------- */

DRV_API CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource,
                                        CUdevResourceType type)
{
    (void)type;
    if (resource == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return device == 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_DEVICE;
}

DRV_API CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
                                             const CUdevResource *input, CUdevResource *remaining,
                                             unsigned int useFlags, unsigned int minCount)
{
    (void)result;
    (void)remaining;
    (void)useFlags;
    (void)minCount;
    return nbGroups == NULL || input == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources,
                                           unsigned int nbResources)
{
    (void)nbResources;
    return phDesc == NULL || resources == NULL ? CUDA_ERROR_INVALID_VALUE
                                               : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                                  unsigned int flags)
{
    (void)desc;
    (void)flags;
    if (phCtx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return dev == 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_DEVICE;
}

DRV_API CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    (void)hCtx;
    return CUDA_ERROR_INVALID_HANDLE;
}

DRV_API CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags,
                                        int priority)
{
    (void)greenCtx;
    (void)flags;
    (void)priority;
    return phStream == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
}

DRV_API CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
    (void)hCtx;
    return pContext == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- log callbacks: accepted, never called (the simulated driver logs nothing) --------------- */
/* (CUDA 12.9 added them: the CUDA 12.8 headers of the CUDA 12 build have none.) */
#if CUDA_VERSION >= 12090

struct CUlogsCallbackEntry_st {
    CUlogsCallback fn;
    void *user;
};

DRV_API CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void *userData,
                                        CUlogsCallbackHandle *callback_out)
{
    if (callbackFunc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUlogsCallbackHandle h = malloc(sizeof *h);
    if (h == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->fn = callbackFunc;
    h->user = userData;
    if (callback_out != NULL)
        *callback_out = h;
    /* else the registration lasts as long as the process: nothing could unregister it */
    return CUDA_SUCCESS;
}

DRV_API CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback)
{
    if (callback == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    free(callback);
    return CUDA_SUCCESS;
}
#endif

/* ---- memory ----------------------------------------------------------------------------------- */

DRV_API CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    void *base = NULL;
    size_t size = 0;
    if (ops()->mem_range(ptr(dptr), &base, &size) != cudaSuccess)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase != NULL)
        *pbase = (CUdeviceptr)(uintptr_t)base;
    if (psize != NULL)
        *psize = size;
    return CUDA_SUCCESS;
}

DRV_API CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return R(ops()->memset_d32(ptr(dstDevice), ui, N, NULL, false, false));
}

DRV_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return R(ops()->memset_d32(ptr(dstDevice), ui, N, NULL, true, false));
}

DRV_API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                  CUstream hStream)
{
    return R(ops()->memset_d32(ptr(dstDevice), ui, N, hStream, false, true));
}

DRV_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                       CUstream hStream)
{
    return R(ops()->memset_d32(ptr(dstDevice), ui, N, hStream, true, true));
}

DRV_API CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                      unsigned int flags)
{
    if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_INVALID_VALUE;
    return R(ops()->write_value32(ptr(addr), value, stream, false));
}

DRV_API CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                              unsigned int flags)
{
    if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_INVALID_VALUE;
    return R(ops()->write_value32(ptr(addr), value, stream, true));
}

/* Virtual memory management: the device attribute
 * CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED reads 0, and every call answers as a
 * driver without it does. */
DRV_API CUresult cuMemAddressReserve(CUdeviceptr *ptr_, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags)
{
    (void)size;
    (void)alignment;
    (void)addr;
    (void)flags;
    return ptr_ == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMemAddressFree(CUdeviceptr ptr_, size_t size)
{
    (void)ptr_;
    (void)size;
    return CUDA_ERROR_INVALID_VALUE; /* nothing was ever reserved */
}

DRV_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)size;
    (void)flags;
    return handle == NULL || prop == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    (void)handle;
    return CUDA_ERROR_INVALID_VALUE;
}

DRV_API CUresult cuMemMap(CUdeviceptr ptr_, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    (void)ptr_;
    (void)size;
    (void)offset;
    (void)handle;
    (void)flags;
    return CUDA_ERROR_INVALID_VALUE;
}

DRV_API CUresult cuMemUnmap(CUdeviceptr ptr_, size_t size)
{
    (void)ptr_;
    (void)size;
    return CUDA_ERROR_INVALID_VALUE;
}

DRV_API CUresult cuMemSetAccess(CUdeviceptr ptr_, size_t size, const CUmemAccessDesc *desc,
                                size_t count)
{
    (void)ptr_;
    (void)size;
    (void)count;
    return desc == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option)
{
    (void)option;
    return granularity == NULL || prop == NULL ? CUDA_ERROR_INVALID_VALUE
                                               : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                        CUmemGenericAllocationHandle handle)
{
    (void)handle;
    return prop == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
}

DRV_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    (void)addr;
    return handle == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                              CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType,
                                              unsigned long long flags)
{
    (void)handle;
    (void)handleType;
    (void)flags;
    return shareableHandle == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                void *osHandle,
                                                CUmemAllocationHandleType shHandleType)
{
    (void)osHandle;
    (void)shHandleType;
    return handle == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

/* Multicast objects: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED reads 0. */
DRV_API CUresult cuMulticastCreate(CUmemGenericAllocationHandle *mcHandle,
                                   const CUmulticastObjectProp *prop)
{
    return mcHandle == NULL || prop == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev)
{
    (void)mcHandle;
    (void)dev;
    return CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                    CUmemGenericAllocationHandle memHandle, size_t memOffset,
                                    size_t size, unsigned long long flags)
{
    (void)mcHandle;
    (void)mcOffset;
    (void)memHandle;
    (void)memOffset;
    (void)size;
    (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                   size_t mcOffset, size_t size)
{
    (void)mcHandle;
    (void)dev;
    (void)mcOffset;
    (void)size;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- functions and kernels -------------------------------------------------------------------- */

/* The attributes cudaFuncGetAttributes reports (sim/cudart.c), in the driver's terms. */
static CUresult function_attribute(int *pi, CUfunction_attribute attrib, const void *f)
{
    if (pi == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 48 * 1024; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

DRV_API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    return function_attribute(pi, attrib, hfunc);
}

DRV_API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return function_attribute(pi, attrib, kernel);
}

DRV_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)attrib;
    (void)value;
    return hfunc == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

DRV_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    (void)config;
    return hfunc == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

DRV_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                             int blockSize, size_t dynamicSMemSize)
{
    (void)dynamicSMemSize;
    return R(ops()->occupancy(numBlocks, func, blockSize));
}

DRV_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           CUstream hStream, void **kernelParams)
{
    (void)kernelParams;
    dim3 grid = {gridDimX, gridDimY, gridDimZ};
    dim3 block = {blockDimX, blockDimY, blockDimZ};
    return R(ops()->launch((const void *)f, grid, block, sharedMemBytes, hStream, false));
}

/* A tensor map only describes memory for kernels, which compute nothing here: it is checked
 * for the arguments every call needs and encoded as zeros. */
DRV_API CUresult cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    (void)tensorDataType;
    (void)globalStrides;
    (void)interleave;
    (void)swizzle;
    (void)l2Promotion;
    (void)oobFill;
    if (tensorMap == NULL || globalAddress == NULL || globalDim == NULL || boxDim == NULL ||
        elementStrides == NULL || tensorRank == 0 || tensorRank > 5 ||
        ((uintptr_t)globalAddress & 15) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    memset(tensorMap, 0, sizeof *tensorMap);
    return CUDA_SUCCESS;
}

/* ---- linking (NVRTC's path): not supported; modules are in sim/module_api.c --------------- */

DRV_API CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
                              CUlinkState *stateOut)
{
    (void)numOptions;
    (void)options;
    (void)optionValues;
    return stateOut == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}

DRV_API CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                               const char *name, unsigned int numOptions, CUjit_option *options,
                               void **optionValues)
{
    (void)state;
    (void)type;
    (void)data;
    (void)size;
    (void)name;
    (void)numOptions;
    (void)options;
    (void)optionValues;
    return CUDA_ERROR_INVALID_HANDLE;
}

DRV_API CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    (void)state;
    (void)cubinOut;
    (void)sizeOut;
    return CUDA_ERROR_INVALID_HANDLE;
}

DRV_API CUresult cuLinkDestroy(CUlinkState state)
{
    (void)state;
    return CUDA_ERROR_INVALID_HANDLE;
}
