/* sim/cudart.c: every symbol the simulated libcudart.so.13 exports, and nothing else: the CUDA
 * runtime entry points (with the exact prototypes of the real headers), nvcc's __cuda*
 * registration and launch hooks, and the simcuda_* control API. Each one counts its call and
 * calls an implementation directly; no entry point ever calls another exported name, so an
 * LD_PRELOADed shim sees the program's calls and none of the simulator's. */

/* As when the real runtime is built: the header then declares every _ptsz / _ptds twin with
 * its full prototype and, at its end, the plain names as well. */
#define __CUDA_API_VERSION_INTERNAL 1

#include "sim/simcuda.h"
#include "sim/sim_internal.h"
#include "sim/cudart_api.h"
#include "sim/cupti_core.h"
#include "sim/driver_core.h"
#include "sim/driver_ops.h"

/* generated_cuda_runtime_api_meta.h: through sim/cudart_api.h (it has no include guard) */

#include <cuda_profiler_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nvcc's host-side hooks: declared only in the C++ headers crt/host_runtime.h and
 * crt/device_functions.h; the same types here so nvcc-compiled programs link and run. */
extern void **__cudaRegisterFatBinary(void *fatCubin);
extern void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
extern void __cudaUnregisterFatBinary(void **fatCubinHandle);
extern void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                                   dim3 *bDim, dim3 *gDim, int *wSize);
extern void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global);
extern void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                     char *deviceAddress, const char *deviceName, int ext,
                                     size_t size, int constant, int global);
extern char __cudaInitModule(void **fatCubinHandle);
extern unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                            struct CUstream_st *stream);
extern cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                              void *stream);
extern cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *entryFuncAddr);
extern cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                      size_t sharedMem, cudaStream_t stream);
extern cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                           void **args, size_t sharedMem, cudaStream_t stream);

/* ============================ device management ============================================ */

static _Atomic unsigned device_flags = cudaDeviceScheduleAuto | cudaDeviceMapHost;
static _Atomic int cache_config = cudaFuncCachePreferNone;
/* cudaLimit values 0..6 with the defaults of a compute capability 9.0 device. */
static _Atomic size_t limits[7] = {1024, 1 << 20, 8 << 20, 2, 2048, 32, 0};

SIM_API cudaError_t cudaGetDeviceCount(int *count)
{
    ENTER_QUERY();
    if (count == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *count = 1;
    return cudaSuccess;
}

SIM_API cudaError_t cudaSetDevice(int device)
{
    ENTER();
    return sim_ret(sim_device_check(device));
}

SIM_API cudaError_t cudaGetDevice(int *device)
{
    ENTER_QUERY();
    if (device == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}

SIM_API cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
{
    ENTER();
    (void)deviceFlags;
    (void)flags;
    return sim_ret(sim_device_check(device));
}

SIM_API cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    ENTER();
    if (flags & ~(unsigned)cudaDeviceMask)
        return sim_ret(cudaErrorInvalidValue);
    atomic_store(&device_flags, flags | cudaDeviceMapHost);
    return cudaSuccess;
}

SIM_API cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    ENTER_QUERY();
    if (flags == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *flags = atomic_load(&device_flags);
    return cudaSuccess;
}

SIM_API cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
    ENTER_QUERY();
    if (device == NULL || prop == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}

/* CUDA 12's headers call this entry point cudaGetDeviceProperties_v2 (cudaDeviceProp grew in
 * 12.0); libcudart.so.12's plain name fills CUDA 11's smaller structure, which no CUDA 12 header
 * declares, for programs built before 12.0: not simulated. CUDA 13 has the plain name only. */
#if CUDART_VERSION >= 13000
SIM_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
#else
SIM_API cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop, int device)
#endif
{
    ENTER_QUERY();
    return sim_ret(sim_device_properties(prop, device));
}

SIM_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    ENTER_QUERY();
    return sim_ret(sim_device_attribute(value, attr, device));
}

/* The one context's limits, for the runtime and the driver (cuCtxGetLimit: CUlimit has the
 * cudaLimit values). */
cudaError_t sim_limit_get(size_t *value, int limit)
{
    if (value == NULL || limit < 0 || (size_t)limit >= sizeof limits / sizeof limits[0])
        return value == NULL ? cudaErrorInvalidValue : cudaErrorUnsupportedLimit;
    *value = atomic_load(&limits[limit]);
    return cudaSuccess;
}

cudaError_t sim_limit_set(int limit, size_t value)
{
    if (limit < 0 || (size_t)limit >= sizeof limits / sizeof limits[0])
        return cudaErrorUnsupportedLimit;
    atomic_store(&limits[limit], value);
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit)
{
    ENTER();
    return sim_ret(sim_limit_get(pValue, (int)limit));
}

SIM_API cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    ENTER();
    return sim_ret(sim_limit_set((int)limit, value));
}

SIM_API cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *pCacheConfig)
{
    ENTER();
    if (pCacheConfig == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *pCacheConfig = (enum cudaFuncCache)atomic_load(&cache_config);
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig)
{
    ENTER();
    atomic_store(&cache_config, (int)cacheConfig);
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    ENTER_QUERY();
    if (leastPriority != NULL)
        *leastPriority = 0;
    if (greatestPriority != NULL)
        *greatestPriority = -5;
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    ENTER_QUERY();
    if (pciBusId == NULL || len <= 0)
        return sim_ret(cudaErrorInvalidValue);
    if (device != 0)
        return sim_ret(cudaErrorInvalidDevice);
    snprintf(pciBusId, (size_t)len, "0000:1B:00.0");
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    ENTER_QUERY();
    if (canAccessPeer == NULL)
        return sim_ret(cudaErrorInvalidValue);
    if (sim_device_check(device) != cudaSuccess || sim_device_check(peerDevice) != cudaSuccess)
        return sim_ret(cudaErrorInvalidDevice);
    *canAccessPeer = 0; /* a device is not its own peer */
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    ENTER();
    (void)peerDevice;
    (void)flags;
    return sim_ret(cudaErrorInvalidDevice);
}

SIM_API cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
    ENTER();
    (void)peerDevice;
    return sim_ret(cudaErrorInvalidDevice);
}

/* Waits for all work, then releases every allocation; streams and events stay usable. */
SIM_API cudaError_t cudaDeviceReset(void)
{
    ENTER();
    sim_device_synchronize();
    sim_mem_release_all();
    sim_take_last_error(true);
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceSynchronize(void)
{
    ENTER();
    struct sim_trace rt_;
    sim_trace_enter(&rt_, CUPTI_CB_DOMAIN_RUNTIME_API,
                    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, __func__, NULL);
    RT_RETURN(sim_drv_ctx_synchronize());
}

SIM_API cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    ENTER_PURE();
    if (driverVersion == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *driverVersion = CUDART_VERSION;
    return cudaSuccess;
}

SIM_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    ENTER_PURE();
    if (runtimeVersion == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

SIM_API cudaError_t cudaProfilerStart(void)
{
    ENTER();
    return cudaSuccess;
}

SIM_API cudaError_t cudaProfilerStop(void)
{
    ENTER();
    return cudaSuccess;
}

/* ============================ errors ======================================================= */

SIM_API cudaError_t cudaGetLastError(void)
{
    ENTER_PURE();
    return sim_take_last_error(true);
}

SIM_API cudaError_t cudaPeekAtLastError(void)
{
    ENTER_PURE();
    return sim_take_last_error(false);
}

SIM_API const char *cudaGetErrorName(cudaError_t error)
{
    ENTER_PURE();
    return sim_error_name(error);
}

SIM_API const char *cudaGetErrorString(cudaError_t error)
{
    ENTER_PURE();
    return sim_error_string(error);
}

/* ============================ streams ====================================================== */

SIM_API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    ENTER();
    return sim_ret(sim_stream_create(pStream, cudaStreamDefault, 0));
}

SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    ENTER();
    return sim_ret(sim_stream_create(pStream, flags, 0));
}

SIM_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                 int priority)
{
    ENTER();
    return sim_ret(sim_stream_create(pStream, flags, priority));
}

SIM_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    ENTER();
    return sim_ret(sim_stream_destroy(stream));
}

SIM_TWINS(cudaStreamQuery, _ptsz, (cudaStream_t stream),
          return sim_ret(sim_stream_query(stream, def));)

SIM_TWINS(cudaStreamSynchronize, _ptsz, (cudaStream_t stream),
          RT_ENTER_TWIN(cudaStreamSynchronize_v3020, cudaStreamSynchronize_ptsz_v7000,
                        cudaStreamSynchronize_v3020_params, stream);
          RT_RETURN(sim_drv_stream_synchronize(stream, def));)

SIM_TWINS(cudaStreamWaitEvent, _ptsz, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),
          return sim_ret(sim_stream_wait_event(stream, def, event, flags));)

SIM_TWINS(cudaStreamGetFlags, _ptsz, (cudaStream_t hStream, unsigned int *flags),
          return sim_ret(sim_stream_get_flags(hStream, def, flags));)

SIM_TWINS(cudaStreamGetPriority, _ptsz, (cudaStream_t hStream, int *priority),
          return sim_ret(sim_stream_get_priority(hStream, def, priority));)

SIM_TWINS(cudaStreamGetId, _ptsz, (cudaStream_t hStream, unsigned long long *streamId),
          return sim_ret(sim_stream_get_id(hStream, def, streamId));)

SIM_TWINS(cudaStreamGetDevice, _ptsz, (cudaStream_t hStream, int *device),
          if (device == NULL) return sim_ret(cudaErrorInvalidValue);
          cudaError_t err = sim_stream_check(hStream, def); if (err == cudaSuccess) *device = 0;
          return sim_ret(err);)

SIM_TWINS(cudaStreamIsCapturing, _ptsz,
          (cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus),
          return sim_ret(sim_capture_info(stream, def, pCaptureStatus, NULL, NULL));)

SIM_TWINS(cudaStreamAttachMemAsync, _ptsz,
          (cudaStream_t stream, void *devPtr, size_t length, unsigned int flags), (void)devPtr;
          (void)length; (void)flags; return sim_ret(sim_stream_check(stream, def));)

SIM_TWINS(cudaStreamAddCallback, _ptsz,
          (cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags),
          return sim_ret(sim_stream_add_callback(stream, def, callback, userData, flags));)

SIM_TWINS(cudaLaunchHostFunc, _ptsz, (cudaStream_t stream, cudaHostFn_t fn, void *userData),
          return sim_ret(sim_launch_host_func(stream, def, fn, userData));)

/* ============================ events ======================================================= */

SIM_API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    ENTER();
    return sim_ret(sim_event_create(event, cudaEventDefault));
}

SIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    ENTER();
    return sim_ret(sim_event_create(event, flags));
}

SIM_TWINS(cudaEventRecord, _ptsz, (cudaEvent_t event, cudaStream_t stream),
          return sim_ret(sim_event_record(event, stream, def));)

SIM_TWINS(cudaEventRecordWithFlags, _ptsz,
          (cudaEvent_t event, cudaStream_t stream, unsigned int flags),
          if (flags & ~(unsigned)cudaEventRecordExternal) return sim_ret(cudaErrorInvalidValue);
          return sim_ret(sim_event_record(event, stream, def));)

SIM_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
    ENTER();
    return sim_ret(sim_event_query(event));
}

SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    ENTER();
    RT_ENTER(cudaEventSynchronize_v3020, cudaEventSynchronize_v3020_params, event);
    RT_RETURN(sim_drv_event_synchronize(event));
}

SIM_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    ENTER();
    return sim_ret(sim_event_elapsed(ms, start, end));
}

SIM_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    ENTER();
    return sim_ret(sim_event_destroy(event));
}

/* ============================ memory ======================================================= */

#define MASK(kind) (1u << (kind))

/* cudaMallocPitch / cudaMalloc3D row pitch: a multiple of the texture pitch alignment. */
static size_t pitch_for(size_t width)
{
    return (width + 511) / 512 * 512;
}

/* An allocation is a "potentially unsafe" call during a capture (sim/timeline.c). */
SIM_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    ENTER();
    cudaError_t err = sim_capture_unsafe_call();
    return sim_ret(err != cudaSuccess ? err : sim_mem_alloc(devPtr, size, SIM_MEM_DEVICE, 0));
}

SIM_TWINS(cudaMallocAsync, _ptsz, (void **devPtr, size_t size, cudaStream_t hStream),
          cudaError_t err = sim_stream_check(hStream, def);
          if (err == cudaSuccess) err = sim_mem_alloc(devPtr, size, SIM_MEM_DEVICE, 0);
          return sim_ret(err);)

SIM_API cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    ENTER();
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
        return sim_ret(cudaErrorInvalidValue);
    return sim_ret(sim_mem_alloc(devPtr, size, SIM_MEM_MANAGED, flags));
}

SIM_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    ENTER();
    cudaError_t err = sim_capture_unsafe_call();
    return sim_ret(
        err != cudaSuccess ? err : sim_mem_alloc(ptr, size, SIM_MEM_PINNED, cudaHostAllocDefault));
}

SIM_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    ENTER();
    cudaError_t err = sim_capture_unsafe_call();
    return sim_ret(err != cudaSuccess ? err : sim_mem_alloc(pHost, size, SIM_MEM_PINNED, flags));
}

SIM_API cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    ENTER();
    if (pitch == NULL)
        return sim_ret(cudaErrorInvalidValue);
    *pitch = pitch_for(width);
    return sim_ret(sim_mem_alloc(devPtr, *pitch * height, SIM_MEM_DEVICE, 0));
}

SIM_API cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    ENTER();
    if (pitchedDevPtr == NULL)
        return sim_ret(cudaErrorInvalidValue);
    size_t pitch = pitch_for(extent.width);
    void *p;
    cudaError_t err = sim_mem_alloc(&p, pitch * extent.height * extent.depth, SIM_MEM_DEVICE, 0);
    if (err == cudaSuccess)
        *pitchedDevPtr = (struct cudaPitchedPtr){p, pitch, extent.width, extent.height};
    return sim_ret(err);
}

/* cudaFree and cudaFreeHost wait for the whole device before releasing (CUDA "API
 * synchronization behavior": they synchronize implicitly); NULL is a no-op (sim_drv_free). */
SIM_API cudaError_t cudaFree(void *devPtr)
{
    ENTER();
    RT_ENTER(cudaFree_v3020, cudaFree_v3020_params, devPtr);
    RT_RETURN(sim_drv_free(devPtr, false));
}

SIM_API cudaError_t cudaFreeHost(void *ptr)
{
    ENTER();
    RT_ENTER(cudaFreeHost_v3020, cudaFreeHost_v3020_params, ptr);
    RT_RETURN(sim_drv_free(ptr, true));
}

/* Stream-ordered: queued, no host wait. The bytes go at once (all copies already happened). */
SIM_TWINS(cudaFreeAsync, _ptsz, (void *devPtr, cudaStream_t hStream),
          cudaError_t err = sim_enqueue(hStream, def, 0, 0, false, NULL, NULL);
          if (err == cudaSuccess && devPtr != NULL)
              err = sim_mem_release(devPtr, MASK(SIM_MEM_DEVICE) | MASK(SIM_MEM_MANAGED));
          return sim_ret(err);)

SIM_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    ENTER();
    return sim_ret(sim_mem_host_register(ptr, size, flags));
}

SIM_API cudaError_t cudaHostUnregister(void *ptr)
{
    ENTER();
    return sim_ret(sim_mem_host_unregister(ptr));
}

SIM_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    ENTER();
    if (pDevice == NULL || flags != 0 || sim_mem_lookup(pHost, NULL) != SIM_MEM_PINNED)
        return sim_ret(cudaErrorInvalidValue);
    *pDevice = pHost;
    return cudaSuccess;
}

SIM_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    ENTER();
    struct sim_range r;
    if (pFlags == NULL || sim_mem_lookup(pHost, &r) != SIM_MEM_PINNED)
        return sim_ret(cudaErrorInvalidValue);
    *pFlags = r.flags;
    return cudaSuccess;
}

SIM_API cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    ENTER();
    return sim_ret(sim_mem_get_info(free, total));
}

SIM_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                             const void *ptr)
{
    ENTER();
    return sim_ret(sim_mem_pointer_attributes(attributes, ptr));
}

/* Managed memory is host memory here: a prefetch is a zero-length operation on its stream and
 * advice changes nothing. CUDA 13 names the place by a cudaMemLocation; CUDA 12 has those forms
 * as _v2, and plain ones that take a device ordinal. */
static cudaError_t mem_prefetch(cudaStream_t stream, sim_default_t def)
{
    return sim_ret(sim_enqueue(stream, def, 0, 0, false, NULL, NULL));
}

static cudaError_t mem_advise(const void *devPtr)
{
    return sim_ret(devPtr == NULL ? cudaErrorInvalidValue : cudaSuccess);
}

#if CUDART_VERSION >= 13000
#define MEM_PREFETCH_TO_LOCATION cudaMemPrefetchAsync
#define MEM_ADVISE_FOR_LOCATION cudaMemAdvise
#else
#define MEM_PREFETCH_TO_LOCATION cudaMemPrefetchAsync_v2
#define MEM_ADVISE_FOR_LOCATION cudaMemAdvise_v2

SIM_TWINS(cudaMemPrefetchAsync, _ptsz,
          (const void *devPtr, size_t count, int dstDevice, cudaStream_t stream), (void)devPtr;
          (void)count; (void)dstDevice; return mem_prefetch(stream, def);)

SIM_API cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice,
                                  int device)
{
    ENTER();
    (void)count;
    (void)advice;
    (void)device;
    return mem_advise(devPtr);
}
#endif

SIM_TWINS_OF(MEM_PREFETCH_TO_LOCATION, _ptsz,
             (const void *devPtr, size_t count, struct cudaMemLocation location, unsigned int flags,
              cudaStream_t stream),
             (void)devPtr;
             (void)count; (void)location; (void)flags; return mem_prefetch(stream, def);)

SIM_API cudaError_t MEM_ADVISE_FOR_LOCATION(const void *devPtr, size_t count,
                                            enum cudaMemoryAdvise advice,
                                            struct cudaMemLocation location)
{
    ENTER();
    (void)count;
    (void)advice;
    (void)location;
    return mem_advise(devPtr);
}

/* A __device__ variable's device address is its host shadow's address. */
SIM_API cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    ENTER();
    if (devPtr == NULL)
        return sim_ret(cudaErrorInvalidValue);
    if (symbol == NULL)
        return sim_ret(cudaErrorInvalidSymbol);
    *devPtr = (void *)(uintptr_t)symbol;
    return cudaSuccess;
}

SIM_API cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    ENTER();
    struct sim_range r;
    if (size == NULL)
        return sim_ret(cudaErrorInvalidValue);
    if (sim_mem_lookup(symbol, &r) != SIM_MEM_DEVICE || !r.symbol || r.base != (uintptr_t)symbol)
        return sim_ret(cudaErrorInvalidSymbol);
    *size = r.size;
    return cudaSuccess;
}

SIM_API struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                           enum cudaChannelFormatKind f)
{
    ENTER();
    return (struct cudaChannelFormatDesc){x, y, z, w, f};
}

SIM_API cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                    size_t width, size_t height, unsigned int flags)
{
    ENTER();
    return sim_ret(sim_array_alloc(array, desc, width, height, 0, flags));
}

SIM_API cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                      struct cudaExtent extent, unsigned int flags)
{
    ENTER();
    return sim_ret(sim_array_alloc(array, desc, extent.width, extent.height, extent.depth, flags));
}

SIM_API cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent,
                                     unsigned int *flags, cudaArray_t array)
{
    ENTER();
    const struct cudaArray *a = sim_array_lookup(array);
    if (a == NULL)
        return sim_ret(cudaErrorInvalidResourceHandle);
    if (desc != NULL)
        *desc = a->desc;
    if (extent != NULL)
        *extent = (struct cudaExtent){a->width, a->height, a->depth};
    if (flags != NULL)
        *flags = a->flags;
    return cudaSuccess;
}

SIM_API cudaError_t cudaFreeArray(cudaArray_t array)
{
    ENTER();
    if (array == NULL)
        return cudaSuccess;
    sim_device_synchronize();
    return sim_ret(sim_array_release(array));
}

/* The simulator makes no mipmapped arrays, so no handle but NULL can be valid. */
SIM_API cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
    ENTER();
    if (mipmappedArray == NULL)
        return cudaSuccess;
    sim_device_synchronize();
    return sim_ret(cudaErrorInvalidResourceHandle);
}

/* ============================ memcpy ======================================================= */

/* The synchronous forms take no stream: theirs is the default one (legacy, or per-thread for
 * the _ptds twins), hence the NULL stream below. */

SIM_TWINS(cudaMemcpy, _ptds, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
          RT_ENTER_TWIN(cudaMemcpy_v3020, cudaMemcpy_ptds_v7000, cudaMemcpy_v3020_params, dst, src,
                        count, kind);
          RT_RETURN(sim_drv_memcpy(dst, src, count, kind, NULL, def, false));)

SIM_TWINS(cudaMemcpyAsync, _ptsz,
          (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),
          RT_ENTER_TWIN(cudaMemcpyAsync_v3020, cudaMemcpyAsync_ptsz_v7000,
                        cudaMemcpyAsync_v3020_params, dst, src, count, kind, stream);
          RT_RETURN(sim_drv_memcpy(dst, src, count, kind, stream, def, true));)

SIM_TWINS(cudaMemcpy2D, _ptds,
          (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
           enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, def,
                                       false));)

SIM_TWINS(cudaMemcpy2DAsync, _ptsz,
          (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
           enum cudaMemcpyKind kind, cudaStream_t stream),
          return sim_ret(sim_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, def,
                                       true));)

SIM_TWINS(cudaMemcpy3D, _ptds, (const struct cudaMemcpy3DParms *p),
          return sim_ret(sim_memcpy_3d(p, NULL, def, false));)

SIM_TWINS(cudaMemcpy3DAsync, _ptsz, (const struct cudaMemcpy3DParms *p, cudaStream_t stream),
          return sim_ret(sim_memcpy_3d(p, stream, def, true));)

SIM_TWINS(cudaMemcpy3DPeer, _ptds, (const struct cudaMemcpy3DPeerParms *p),
          return sim_ret(sim_memcpy_3d_peer(p, NULL, def, false));)

SIM_TWINS(cudaMemcpy3DPeerAsync, _ptsz,
          (const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream),
          return sim_ret(sim_memcpy_3d_peer(p, stream, def, true));)

SIM_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                   size_t count)
{
    ENTER();
    return sim_ret(
        sim_memcpy_peer(dst, dstDevice, src, srcDevice, count, NULL, SIM_DEF_LEGACY, false));
}

SIM_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                        size_t count, cudaStream_t stream)
{
    ENTER();
    return sim_ret(
        sim_memcpy_peer(dst, dstDevice, src, srcDevice, count, stream, SIM_DEF_LEGACY, true));
}

/* symbol + offset without arithmetic on NULL (sim_memcpy_symbol reports a NULL symbol). */
static void *at_offset(const void *symbol, size_t offset)
{
    return symbol == NULL ? NULL : (char *)(uintptr_t)symbol + offset;
}

SIM_TWINS(cudaMemcpyToSymbol, _ptds,
          (const void *symbol, const void *src, size_t count, size_t offset,
           enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_symbol(at_offset(symbol, offset), src, count, kind, true, NULL,
                                           def, false));)

SIM_TWINS(cudaMemcpyFromSymbol, _ptds,
          (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_symbol(dst, at_offset(symbol, offset), count, kind, false, NULL,
                                           def, false));)

SIM_TWINS(cudaMemcpyToSymbolAsync, _ptsz,
          (const void *symbol, const void *src, size_t count, size_t offset,
           enum cudaMemcpyKind kind, cudaStream_t stream),
          return sim_ret(sim_memcpy_symbol(at_offset(symbol, offset), src, count, kind, true,
                                           stream, def, true));)

SIM_TWINS(cudaMemcpyFromSymbolAsync, _ptsz,
          (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind,
           cudaStream_t stream),
          return sim_ret(sim_memcpy_symbol(dst, at_offset(symbol, offset), count, kind, false,
                                           stream, def, true));)

SIM_TWINS(cudaMemcpyToArray, _ptds,
          (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,
           enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_array_linear(dst, wOffset, hOffset, NULL, 0, 0, NULL, src,
                                                 count, kind, NULL, def, false));)

SIM_TWINS(cudaMemcpyFromArray, _ptds,
          (void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
           enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_array_linear(NULL, 0, 0, src, wOffset, hOffset, dst, NULL,
                                                 count, kind, NULL, def, false));)

SIM_TWINS(cudaMemcpyArrayToArray, _ptds,
          (cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
           size_t wOffsetSrc, size_t hOffsetSrc, size_t count, enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_array_linear(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc,
                                                 hOffsetSrc, NULL, NULL, count, kind, NULL, def,
                                                 false));)

SIM_TWINS(cudaMemcpy2DToArray, _ptds,
          (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
           size_t width, size_t height, enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_array_2d(dst, wOffset, hOffset, NULL, 0, 0, NULL, 0, src,
                                             spitch, width, height, kind, NULL, def, false));)

SIM_TWINS(cudaMemcpy2DFromArray, _ptds,
          (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
           size_t width, size_t height, enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_array_2d(NULL, 0, 0, src, wOffset, hOffset, dst, dpitch, NULL,
                                             0, width, height, kind, NULL, def, false));)

SIM_TWINS(cudaMemcpy2DArrayToArray, _ptds,
          (cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
           size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,
           enum cudaMemcpyKind kind),
          return sim_ret(sim_memcpy_array_2d(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc,
                                             hOffsetSrc, NULL, 0, NULL, 0, width, height, kind,
                                             NULL, def, false));)

SIM_TWINS(cudaMemcpyToArrayAsync, _ptsz,
          (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,
           enum cudaMemcpyKind kind, cudaStream_t stream),
          return sim_ret(sim_memcpy_array_linear(dst, wOffset, hOffset, NULL, 0, 0, NULL, src,
                                                 count, kind, stream, def, true));)

SIM_TWINS(cudaMemcpyFromArrayAsync, _ptsz,
          (void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
           enum cudaMemcpyKind kind, cudaStream_t stream),
          return sim_ret(sim_memcpy_array_linear(NULL, 0, 0, src, wOffset, hOffset, dst, NULL,
                                                 count, kind, stream, def, true));)

SIM_TWINS(cudaMemcpy2DToArrayAsync, _ptsz,
          (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
           size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),
          return sim_ret(sim_memcpy_array_2d(dst, wOffset, hOffset, NULL, 0, 0, NULL, 0, src,
                                             spitch, width, height, kind, stream, def, true));)

SIM_TWINS(cudaMemcpy2DFromArrayAsync, _ptsz,
          (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
           size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),
          return sim_ret(sim_memcpy_array_2d(NULL, 0, 0, src, wOffset, hOffset, dst, dpitch, NULL,
                                             0, width, height, kind, stream, def, true));)

#if CUDART_VERSION >= 13000
SIM_TWINS(cudaMemcpyBatchAsync, _ptsz,
          (void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
           struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
           cudaStream_t stream),
          (void)attrs;
          (void)attrsIdxs; (void)numAttrs;
          return sim_ret(sim_memcpy_batch(dsts, srcs, sizes, count, stream, def));)

SIM_TWINS(cudaMemcpy3DBatchAsync, _ptsz,
          (size_t numOps, struct cudaMemcpy3DBatchOp *opList, unsigned long long flags,
           cudaStream_t stream),
          if (flags != 0) return sim_ret(cudaErrorInvalidValue);
          return sim_ret(sim_memcpy_3d_batch(numOps, opList, stream, def));)
#else
/* CUDA 12's batches also say which copy failed: failIdx, SIZE_MAX for an error that is no
 * single copy's (the simulator checks the batch as a whole). */
static cudaError_t batch_failed(cudaError_t err, size_t *failIdx)
{
    if (err != cudaSuccess && failIdx != NULL)
        *failIdx = SIZE_MAX;
    return sim_ret(err);
}

SIM_TWINS(cudaMemcpyBatchAsync, _ptsz,
          (void **dsts, void **srcs, size_t *sizes, size_t count,
           struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
           cudaStream_t stream),
          (void)attrs;
          (void)attrsIdxs; (void)numAttrs;
          return batch_failed(sim_memcpy_batch(dsts, (const void *const *)srcs, sizes, count,
                                               stream, def),
                              failIdx);)

SIM_TWINS(cudaMemcpy3DBatchAsync, _ptsz,
          (size_t numOps, struct cudaMemcpy3DBatchOp *opList, size_t *failIdx,
           unsigned long long flags, cudaStream_t stream),
          if (flags != 0) return batch_failed(cudaErrorInvalidValue, failIdx);
          return batch_failed(sim_memcpy_3d_batch(numOps, opList, stream, def), failIdx);)
#endif

/* ============================ memset ======================================================= */

SIM_TWINS(cudaMemset, _ptds, (void *devPtr, int value, size_t count),
          RT_ENTER_TWIN(cudaMemset_v3020, cudaMemset_ptds_v7000, cudaMemset_v3020_params, devPtr,
                        value, count);
          RT_RETURN(sim_drv_memset_d8(devPtr, (unsigned char)value, count, NULL, def, false));)

SIM_TWINS(cudaMemset2D, _ptds, (void *devPtr, size_t pitch, int value, size_t width, size_t height),
          return sim_ret(sim_memset(devPtr, pitch, value, width, height, 1, height, NULL, def,
                                    false));)

SIM_TWINS(cudaMemset3D, _ptds,
          (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent),
          return sim_ret(sim_memset(pitchedDevPtr.ptr, pitchedDevPtr.pitch, value, extent.width,
                                    extent.height, extent.depth, pitchedDevPtr.ysize, NULL, def,
                                    false));)

SIM_TWINS(cudaMemsetAsync, _ptsz, (void *devPtr, int value, size_t count, cudaStream_t stream),
          RT_ENTER_TWIN(cudaMemsetAsync_v3020, cudaMemsetAsync_ptsz_v7000,
                        cudaMemsetAsync_v3020_params, devPtr, value, count, stream);
          RT_RETURN(sim_drv_memset_d8(devPtr, (unsigned char)value, count, stream, def, true));)

SIM_TWINS(cudaMemset2DAsync, _ptsz,
          (void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream),
          return sim_ret(sim_memset(devPtr, pitch, value, width, height, 1, height, stream, def,
                                    true));)

SIM_TWINS(cudaMemset3DAsync, _ptsz,
          (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent,
           cudaStream_t stream),
          return sim_ret(sim_memset(pitchedDevPtr.ptr, pitchedDevPtr.pitch, value, extent.width,
                                    extent.height, extent.depth, pitchedDevPtr.ysize, stream, def,
                                    true));)

/* ============================ kernels ====================================================== */

SIM_TWINS(cudaLaunchKernel, _ptsz,
          (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
           cudaStream_t stream),
          RT_ENTER_TWIN(cudaLaunchKernel_v7000, cudaLaunchKernel_ptsz_v7000,
                        cudaLaunchKernel_v7000_params, func, gridDim, blockDim, args, sharedMem,
                        stream);
          RT_RETURN(sim_drv_launch(func, gridDim, blockDim, sharedMem, stream, def));)

SIM_TWINS(cudaLaunchKernelExC, _ptsz,
          (const cudaLaunchConfig_t *config, const void *func, void **args),
          RT_ENTER_TWIN(cudaLaunchKernelExC_v11060, cudaLaunchKernelExC_ptsz_v11060,
                        cudaLaunchKernelExC_v11060_params, config, func, args);
          if (config == NULL) RT_RETURN(cudaErrorInvalidValue);
          RT_RETURN(sim_drv_launch(func, config->gridDim, config->blockDim,
                                   config->dynamicSmemBytes, config->stream, def));)

SIM_TWINS(cudaLaunchCooperativeKernel, _ptsz,
          (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
           cudaStream_t stream),
          RT_ENTER_TWIN(cudaLaunchCooperativeKernel_v9000, cudaLaunchCooperativeKernel_ptsz_v9000,
                        cudaLaunchCooperativeKernel_v9000_params, func, gridDim, blockDim, args,
                        sharedMem, stream);
          RT_RETURN(sim_drv_launch(func, gridDim, blockDim, sharedMem, stream, def));)

/* What nvcc's <<<...>>> stubs call (CUDA 12.8+): the handle from __cudaGetKernel. CUPTI 12 has
 * no callback ids of its own for it: it is traced as cudaLaunchKernel there. */
#if CUDART_VERSION >= 13000
#define HANDLE_LAUNCH_CBIDS __cudaLaunchKernel_v13000, __cudaLaunchKernel_ptsz_v13000
#else
#define HANDLE_LAUNCH_CBIDS cudaLaunchKernel_v7000, cudaLaunchKernel_ptsz_v7000
#endif
SIM_TWINS(__cudaLaunchKernel, _ptsz,
          (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
           cudaStream_t stream),
          RT_ENTER_TWIN_OF(HANDLE_LAUNCH_CBIDS, cudaLaunchKernel_v7000_params, kernel, gridDim,
                           blockDim, args, sharedMem, stream);
          RT_RETURN(sim_drv_launch(kernel, gridDim, blockDim, sharedMem, stream, def));)

SIM_API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    ENTER();
    if (attr == NULL)
        return sim_ret(cudaErrorInvalidValue);
    if (func == NULL)
        return sim_ret(cudaErrorInvalidDeviceFunction);
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    attr->numRegs = 32;
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    attr->maxDynamicSharedSizeBytes = 48 * 1024;
    attr->preferredShmemCarveout = -1;
    return cudaSuccess;
}

SIM_API cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    ENTER();
    (void)attr;
    (void)value;
    return sim_ret(func == NULL ? cudaErrorInvalidDeviceFunction : cudaSuccess);
}

SIM_API cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig)
{
    ENTER();
    (void)cacheConfig;
    return sim_ret(func == NULL ? cudaErrorInvalidDeviceFunction : cudaSuccess);
}

SIM_API cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    ENTER();
    return sim_ret(sim_kernel_name(name, func));
}

SIM_API cudaError_t cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr)
{
    ENTER();
    return sim_ret(sim_kernel_handle(kernelPtr, entryFuncAddr));
}

SIM_API cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr)
{
    ENTER();
    if (functionPtr == NULL)
        return sim_ret(cudaErrorInvalidValue);
    cudaKernel_t k;
    cudaError_t err = sim_kernel_handle(&k, symbolPtr);
    if (err == cudaSuccess)
        *functionPtr = (cudaFunction_t)(void *)k;
    return sim_ret(err);
}

SIM_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func,
                                                                  int blockSize,
                                                                  size_t dynamicSMemSize)
{
    ENTER();
    (void)dynamicSMemSize;
    return sim_ret(sim_occupancy(numBlocks, func, blockSize));
}

SIM_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
{
    ENTER();
    (void)dynamicSMemSize;
    (void)flags;
    return sim_ret(sim_occupancy(numBlocks, func, blockSize));
}

/* ============================ nvcc registration hooks ====================================== */

static void *no_module; /* the handle when no memory is left for a real one */

SIM_API void **__cudaRegisterFatBinary(void *fatCubin)
{
    ENTER();
    void **handle = malloc(sizeof *handle);
    if (handle == NULL)
        return &no_module;
    *handle = fatCubin;
    return handle;
}

SIM_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    ENTER();
    (void)fatCubinHandle;
}

SIM_API void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    ENTER();
    if (fatCubinHandle != &no_module)
        free(fatCubinHandle);
}

SIM_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                    const char *deviceName, int thread_limit, uint3 *tid,
                                    uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    ENTER();
    (void)fatCubinHandle;
    (void)deviceFun;
    (void)thread_limit;
    (void)tid;
    (void)bid;
    (void)bDim;
    (void)gDim;
    (void)wSize;
    sim_kernel_register(hostFun, deviceName);
}

/* A __device__ / __constant__ variable: its host shadow becomes device memory. */
SIM_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                               const char *deviceName, int ext, size_t size, int constant,
                               int global)
{
    ENTER();
    (void)fatCubinHandle;
    (void)deviceAddress;
    (void)deviceName;
    (void)ext;
    (void)constant;
    (void)global;
    sim_mem_register_symbol(hostVar, size);
}

/* A __managed__ variable: managed memory of its size (zeroed: the initial value lives in the
 * device image, which the simulator does not read), its address stored where nvcc looks. */
SIM_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                      char *deviceAddress, const char *deviceName, int ext,
                                      size_t size, int constant, int global)
{
    ENTER();
    (void)fatCubinHandle;
    (void)deviceAddress;
    (void)deviceName;
    (void)ext;
    (void)constant;
    (void)global;
    void *p;
    if (hostVarPtrAddress != NULL &&
        sim_mem_alloc(&p, size, SIM_MEM_MANAGED, cudaMemAttachGlobal) == cudaSuccess && p != NULL) {
        memset(p, 0, size);
        *hostVarPtrAddress = p;
    }
}

SIM_API char __cudaInitModule(void **fatCubinHandle)
{
    ENTER();
    (void)fatCubinHandle;
    return 1;
}

SIM_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                             struct CUstream_st *stream)
{
    ENTER();
    return sim_push_call_config(gridDim, blockDim, sharedMem, stream);
}

SIM_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                               void *stream)
{
    ENTER();
    return sim_ret(sim_pop_call_config(gridDim, blockDim, sharedMem, stream));
}

SIM_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *entryFuncAddr)
{
    ENTER();
    return sim_ret(sim_kernel_handle(kernel, entryFuncAddr));
}

/* ============================ simcuda_* control API (sim/simcuda.h) ========================= */
/* sim_init first: the environment is read once, before any setting made here, never after. */

SIM_API void simcuda_set_kernel_ns(const void *func, unsigned long long ns)
{
    sim_init();
    sim_kernel_set_ns(func, ns);
}

SIM_API void simcuda_set_default_kernel_ns(unsigned long long ns)
{
    sim_init();
    atomic_store(&sim_default_kernel_ns, ns);
}

SIM_API void simcuda_set_copy_bytes_per_ns(double bytes_per_ns)
{
    sim_init();
    if (isfinite(bytes_per_ns) && bytes_per_ns > 0.0)
        atomic_store(&sim_copy_bytes_per_ns, bytes_per_ns);
}

SIM_API unsigned long long simcuda_now_ns(void)
{
    return sim_now_ns();
}

SIM_API unsigned long long simcuda_stream_ready_ns(cudaStream_t stream)
{
    sim_init();
    return sim_stream_ready_ns(stream);
}

SIM_API unsigned long long simcuda_device_ready_ns(void)
{
    sim_init();
    return sim_device_ready_ns();
}

SIM_API unsigned long long simcuda_thread_sync_count(void)
{
    return sim_thread_sync_count();
}

SIM_API unsigned long long simcuda_kernel_count(void)
{
    return sim_kernel_count();
}

SIM_API unsigned long long simcuda_launch_count(void)
{
    return sim_launch_count();
}

SIM_API unsigned long long simcuda_call_count(const char *api)
{
    return sim_call_count(api);
}

/* Not part of the control API: the simulated libcuda.so.1 and libcupti.so.13 reach the device
 * through this table (sim/driver_ops.h). */
SIM_API const struct simcuda_private_ops *simcuda_private_ops(void)
{
    sim_init();
    return &sim_private_ops;
}
