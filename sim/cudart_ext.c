/* sim/cudart_ext.c: the simulated libcudart.so.13's exports beyond the core of sim/cudart.c,
 * the ones a framework such as PyTorch imports and needs at load or CUDA init: stream capture
 * and graphs, memory pools, IPC, CUDA libraries (cudaLibrary*), user objects, and the driver
 * entry-point lookup. Each counts its call and calls hidden code only (the rule of cudart.c).
 *
 * Stream capture and graphs are simulated (sim/timeline.c, sim/graphs.c); graph editing (adding
 * nodes by hand, conditional nodes, user objects), IPC and libraries answer as a CUDA
 * installation without them does (cudaErrorNotSupported or invalid handles, documented in
 * sim/README.md). Memory pools are real: each device has its default pool, whose attributes can be
 * read and set; cudaMallocAsync allocates device memory as cudaMalloc does. */

#define __CUDA_API_VERSION_INTERNAL 1

#include "sim/cudart_api.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ============================ stream capture and graphs ==================================== */

/* The capture mode of each thread (cudaThreadExchangeStreamCaptureMode): CUDA's default is
 * global. It decides which calls a capture forbids (sim/timeline.c). */
static _Thread_local enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

enum cudaStreamCaptureMode sim_thread_capture_mode(void)
{
    return capture_mode;
}

SIM_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    ENTER_PURE();
    if (mode == NULL || (unsigned)*mode > cudaStreamCaptureModeRelaxed)
        return sim_ret(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

/* What a capture query says of a stream: its status and capture id. The other outputs of its
 * forms (the capture's graph and its dependencies) are set to none: the nodes a capture makes
 * form a chain that only the stream itself extends. */
static cudaError_t capture_info(cudaStream_t stream, sim_default_t def,
                                enum cudaStreamCaptureStatus *captureStatus_out,
                                unsigned long long *id_out, cudaGraph_t *graph_out,
                                const cudaGraphNode_t **dependencies_out,
                                const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    cudaError_t err = sim_capture_info(stream, def, captureStatus_out, id_out, graph_out);
    if (err == cudaSuccess && *captureStatus_out != cudaStreamCaptureStatusNone) {
        if (dependencies_out != NULL)
            *dependencies_out = NULL;
        if (edgeData_out != NULL)
            *edgeData_out = NULL;
        if (numDependencies_out != NULL)
            *numDependencies_out = 0;
    }
    return sim_ret(err);
}

/* The form with edge data is CUDA 13's cudaStreamGetCaptureInfo and CUDA 12's _v3; CUDA 12 also
 * has _v2 (what its headers call cudaStreamGetCaptureInfo) and the plain CUDA 11 form. */
#if CUDART_VERSION >= 13000
#define CAPTURE_INFO_WITH_EDGES cudaStreamGetCaptureInfo
#else
#define CAPTURE_INFO_WITH_EDGES cudaStreamGetCaptureInfo_v3

SIM_TWINS(cudaStreamGetCaptureInfo, _ptsz,
          (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
           unsigned long long *id_out),
          return capture_info(stream, def, captureStatus_out, id_out, NULL, NULL, NULL, NULL);)

SIM_TWINS(cudaStreamGetCaptureInfo_v2, _ptsz,
          (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
           unsigned long long *id_out, cudaGraph_t *graph_out,
           const cudaGraphNode_t **dependencies_out, size_t *numDependencies_out),
          return capture_info(stream, def, captureStatus_out, id_out, graph_out, dependencies_out,
                              NULL, numDependencies_out);)
#endif

SIM_TWINS_OF(CAPTURE_INFO_WITH_EDGES, _ptsz,
             (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
              unsigned long long *id_out, cudaGraph_t *graph_out,
              const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
              size_t *numDependencies_out),
             return capture_info(stream, def, captureStatus_out, id_out, graph_out,
                                 dependencies_out, edgeData_out, numDependencies_out);)

SIM_TWINS(cudaStreamBeginCapture, _ptsz, (cudaStream_t stream, enum cudaStreamCaptureMode mode),
          return sim_ret(sim_capture_begin(stream, def, mode));)

SIM_TWINS(cudaStreamBeginCaptureToGraph, _ptsz,
          (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
           const cudaGraphEdgeData *dependencyData, size_t numDependencies,
           enum cudaStreamCaptureMode mode),
          (void)graph;
          (void)dependencies; (void)dependencyData; (void)numDependencies; (void)mode;
          cudaError_t err = sim_stream_check(stream, def);
          return sim_ret(err != cudaSuccess ? err : cudaErrorNotSupported);)

/* Ending a capture that never began: cudaErrorIllegalState; one that a forbidden call
 * invalidated: cudaErrorStreamCaptureInvalidated and no graph. */
SIM_TWINS(cudaStreamEndCapture, _ptsz, (cudaStream_t stream, cudaGraph_t *pGraph),
          return sim_ret(sim_capture_end(stream, def, pGraph));)

/* Updating a capture's dependencies: accepted while the stream captures (its nodes stay one
 * chain), cudaErrorIllegalState where it does not. The form with edge data is CUDA 13's plain
 * one and CUDA 12's _v2. */
static cudaError_t update_capture(cudaStream_t stream, sim_default_t def)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t err = sim_capture_info(stream, def, &st, NULL, NULL);
    return sim_ret(err != cudaSuccess                  ? err
                   : st == cudaStreamCaptureStatusNone ? cudaErrorIllegalState
                                                       : cudaSuccess);
}

#if CUDART_VERSION >= 13000
#define UPDATE_CAPTURE_WITH_EDGES cudaStreamUpdateCaptureDependencies
#else
#define UPDATE_CAPTURE_WITH_EDGES cudaStreamUpdateCaptureDependencies_v2

SIM_TWINS(cudaStreamUpdateCaptureDependencies, _ptsz,
          (cudaStream_t stream, cudaGraphNode_t *dependencies, size_t numDependencies,
           unsigned int flags),
          (void)dependencies;
          (void)numDependencies; (void)flags; return update_capture(stream, def);)
#endif

SIM_TWINS_OF(UPDATE_CAPTURE_WITH_EDGES, _ptsz,
             (cudaStream_t stream, cudaGraphNode_t *dependencies,
              const cudaGraphEdgeData *dependencyData, size_t numDependencies, unsigned int flags),
             (void)dependencies;
             (void)dependencyData; (void)numDependencies; (void)flags;
             return update_capture(stream, def);)

/* Graphs (sim/graphs.c): made by capture or empty by cudaGraphCreate, instantiated, launched by
 * replaying their nodes' durations on the stream. cudaGraphLaunch is traced for CUPTI, as the
 * launches are. */
SIM_TWINS(cudaGraphLaunch, _ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream),
          RT_ENTER_TWIN(cudaGraphLaunch_v10000, cudaGraphLaunch_ptsz_v10000,
                        cudaGraphLaunch_v10000_params, graphExec, stream);
          RT_RETURN(sim_graph_launch(graphExec, stream, def));)

SIM_TWINS(cudaGraphUpload, _ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream),
          return sim_ret(sim_graph_upload(graphExec, stream, def));)

SIM_API cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    ENTER();
    if (flags != 0)
        return sim_ret(cudaErrorInvalidValue);
    return sim_ret(sim_graph_create(pGraph));
}

SIM_API cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    ENTER();
    return sim_ret(sim_graph_destroy(graph));
}

SIM_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    ENTER();
    return sim_ret(sim_graph_exec_destroy(graphExec));
}

/* The flags (auto-free on launch, upload, device launch, node priority) change nothing here. */
SIM_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                         unsigned long long flags)
{
    ENTER();
    (void)flags;
    return sim_ret(sim_graph_instantiate(pGraphExec, graph));
}

SIM_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                  unsigned long long flags)
{
    ENTER();
    (void)flags;
    return sim_ret(sim_graph_instantiate(pGraphExec, graph));
}

SIM_API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    ENTER();
    return sim_ret(sim_graph_nodes(graph, nodes, numNodes));
}

/* Adding a node to, or reading the edges of, a graph that cannot exist. The forms with edge data
 * are CUDA 13's plain ones and CUDA 12's _v2; CUDA 12's plain ones have none. */
static cudaError_t graph_add_node(cudaGraphNode_t *pGraphNode,
                                  struct cudaGraphNodeParams *nodeParams)
{
    if (pGraphNode == NULL || nodeParams == NULL)
        return sim_ret(cudaErrorInvalidValue);
    return sim_ret(cudaErrorInvalidResourceHandle);
}

static cudaError_t graph_node_dependencies(size_t *pNumDependencies)
{
    return sim_ret(pNumDependencies == NULL ? cudaErrorInvalidValue
                                            : cudaErrorInvalidResourceHandle);
}

#if CUDART_VERSION >= 13000
#define GRAPH_ADD_NODE_WITH_EDGES cudaGraphAddNode
#define GRAPH_NODE_DEPENDENCIES_WITH_EDGES cudaGraphNodeGetDependencies
#else
#define GRAPH_ADD_NODE_WITH_EDGES cudaGraphAddNode_v2
#define GRAPH_NODE_DEPENDENCIES_WITH_EDGES cudaGraphNodeGetDependencies_v2

SIM_API cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                     struct cudaGraphNodeParams *nodeParams)
{
    ENTER();
    (void)graph;
    (void)pDependencies;
    (void)numDependencies;
    return graph_add_node(pGraphNode, nodeParams);
}

SIM_API cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node,
                                                 cudaGraphNode_t *pDependencies,
                                                 size_t *pNumDependencies)
{
    ENTER();
    (void)node;
    (void)pDependencies;
    return graph_node_dependencies(pNumDependencies);
}
#endif

SIM_API cudaError_t GRAPH_ADD_NODE_WITH_EDGES(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                              const cudaGraphNode_t *pDependencies,
                                              const cudaGraphEdgeData *dependencyData,
                                              size_t numDependencies,
                                              struct cudaGraphNodeParams *nodeParams)
{
    ENTER();
    (void)graph;
    (void)pDependencies;
    (void)dependencyData;
    (void)numDependencies;
    return graph_add_node(pGraphNode, nodeParams);
}

SIM_API cudaError_t GRAPH_NODE_DEPENDENCIES_WITH_EDGES(cudaGraphNode_t node,
                                                       cudaGraphNode_t *pDependencies,
                                                       cudaGraphEdgeData *edgeData,
                                                       size_t *pNumDependencies)
{
    ENTER();
    (void)node;
    (void)pDependencies;
    (void)edgeData;
    return graph_node_dependencies(pNumDependencies);
}

/* A graph as a Graphviz file: there is no graph to print. */
SIM_API cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char *path, unsigned int flags)
{
    ENTER();
    (void)flags;
    return sim_ret(sim_graph_dot(graph, path));
}

SIM_API cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *pHandle_out,
                                                     cudaGraph_t graph,
                                                     unsigned int defaultLaunchValue,
                                                     unsigned int flags)
{
    ENTER();
    (void)graph;
    (void)defaultLaunchValue;
    (void)flags;
    return sim_ret(pHandle_out == NULL ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                              unsigned int count, unsigned int flags)
{
    ENTER();
    (void)graph;
    (void)object;
    (void)count;
    (void)flags;
    return sim_ret(cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object,
                                               unsigned int count)
{
    ENTER();
    (void)graph;
    (void)object;
    (void)count;
    return sim_ret(cudaErrorInvalidResourceHandle);
}

/* User objects exist only to be owned by graphs. */
SIM_API cudaError_t cudaUserObjectCreate(cudaUserObject_t *object_out, void *ptr,
                                         cudaHostFn_t destroy, unsigned int initialRefcount,
                                         unsigned int flags)
{
    ENTER();
    (void)ptr;
    (void)flags;
    if (object_out == NULL || destroy == NULL || initialRefcount == 0)
        return sim_ret(cudaErrorInvalidValue);
    return sim_ret(cudaErrorNotSupported);
}

SIM_API cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count)
{
    ENTER();
    (void)object;
    (void)count;
    return sim_ret(cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count)
{
    ENTER();
    (void)object;
    (void)count;
    return sim_ret(cudaErrorInvalidResourceHandle);
}

/* Graph-owned memory: none is ever allocated, so every counter reads 0. */
SIM_API cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                   void *value)
{
    ENTER();
    cudaError_t err = sim_device_check(device);
    if (err != cudaSuccess)
        return sim_ret(err);
    if (value == NULL || (unsigned)attr > cudaGraphMemAttrReservedMemHigh)
        return sim_ret(cudaErrorInvalidValue);
    *(uint64_t *)value = 0;
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                   void *value)
{
    ENTER();
    cudaError_t err = sim_device_check(device);
    if (err != cudaSuccess)
        return sim_ret(err);
    /* Only the high watermarks can be set, and only reset to 0. */
    if (value == NULL ||
        (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh) ||
        *(uint64_t *)value != 0)
        return sim_ret(cudaErrorInvalidValue);
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGraphMemTrim(int device)
{
    ENTER();
    return sim_ret(sim_device_check(device));
}

/* ============================ memory pools ================================================= */

SIM_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    ENTER();
    if (memPool == NULL)
        return sim_ret(cudaErrorInvalidValue);
    cudaError_t err = sim_device_check(device);
    if (err == cudaSuccess)
        *memPool = sim_pool_default();
    return sim_ret(err);
}

SIM_API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    ENTER();
    if (memPool == NULL)
        return sim_ret(cudaErrorInvalidValue);
    cudaError_t err = sim_device_check(device);
    if (err == cudaSuccess)
        *memPool = sim_pool_current();
    return sim_ret(err);
}

SIM_API cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    ENTER();
    cudaError_t err = sim_device_check(device);
    return sim_ret(err != cudaSuccess ? err : sim_pool_set_current(memPool));
}

SIM_API cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool,
                                      const struct cudaMemPoolProps *poolProps)
{
    ENTER();
    return sim_ret(sim_pool_create(memPool, poolProps));
}

SIM_API cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    ENTER();
    return sim_ret(sim_pool_destroy(memPool));
}

SIM_API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                            void *value)
{
    ENTER();
    return sim_ret(sim_pool_attribute(memPool, attr, value, false));
}

SIM_API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                            void *value)
{
    ENTER();
    return sim_ret(sim_pool_attribute(memPool, attr, value, true));
}

SIM_API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                         const struct cudaMemAccessDesc *descList, size_t count)
{
    ENTER();
    return sim_ret(sim_pool_set_access(memPool, descList, count));
}

SIM_API cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t memPool,
                                         struct cudaMemLocation *location)
{
    ENTER();
    return sim_ret(sim_pool_get_access(flags, memPool, location));
}

/* Allocations are released at once (cudaFreeAsync), so no pool ever holds memory to trim. */
SIM_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    ENTER();
    (void)minBytesToKeep;
    return sim_ret(sim_pool_check(memPool));
}

SIM_TWINS(cudaMallocFromPoolAsync, _ptsz,
          (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),
          cudaError_t err = sim_pool_check(memPool);
          if (err == cudaSuccess) err = sim_stream_check(stream, def);
          if (err == cudaSuccess) err = sim_mem_alloc(ptr, size, SIM_MEM_DEVICE, 0);
          return sim_ret(err);)

/* ============================ IPC ========================================================== */

/* Like a system without CUDA IPC (one simulated device in one process): every call is
 * cudaErrorNotSupported after its argument checks. */
SIM_API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    ENTER();
    if (handle == NULL || devPtr == NULL)
        return sim_ret(cudaErrorInvalidValue);
    return sim_ret(cudaErrorNotSupported);
}

SIM_API cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle,
                                         unsigned int flags)
{
    ENTER();
    (void)handle;
    (void)flags;
    return sim_ret(devPtr == NULL ? cudaErrorInvalidValue : cudaErrorNotSupported);
}

SIM_API cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    ENTER();
    return sim_ret(devPtr == NULL ? cudaErrorInvalidValue : cudaErrorNotSupported);
}

SIM_API cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
    ENTER();
    return sim_ret(handle == NULL || event == NULL ? cudaErrorInvalidValue : cudaErrorNotSupported);
}

SIM_API cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
    ENTER();
    (void)handle;
    return sim_ret(event == NULL ? cudaErrorInvalidValue : cudaErrorNotSupported);
}

/* ============================ CUDA libraries (cudaLibrary*) ================================ */

/* Loading device code needs a device that runs it: cudaErrorNotSupported. No library handle is
 * ever valid, so the getters answer cudaErrorInvalidResourceHandle. */
SIM_API cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code,
                                        enum cudaJitOption *jitOptions, void **jitOptionsValues,
                                        unsigned int numJitOptions,
                                        enum cudaLibraryOption *libraryOptions,
                                        void **libraryOptionValues, unsigned int numLibraryOptions)
{
    ENTER();
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (library == NULL || code == NULL)
        return sim_ret(cudaErrorInvalidValue);
    return sim_ret(cudaErrorNotSupported);
}

SIM_API cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t *library, const char *fileName,
                                            enum cudaJitOption *jitOptions, void **jitOptionsValues,
                                            unsigned int numJitOptions,
                                            enum cudaLibraryOption *libraryOptions,
                                            void **libraryOptionValues,
                                            unsigned int numLibraryOptions)
{
    ENTER();
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (library == NULL || fileName == NULL)
        return sim_ret(cudaErrorInvalidValue);
    return sim_ret(cudaErrorNotSupported);
}

SIM_API cudaError_t cudaLibraryUnload(cudaLibrary_t library)
{
    ENTER();
    (void)library;
    return sim_ret(cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, cudaLibrary_t library,
                                         const char *name)
{
    ENTER();
    (void)library;
    return sim_ret(pKernel == NULL || name == NULL ? cudaErrorInvalidValue
                                                   : cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaLibraryGetKernelCount(unsigned int *count, cudaLibrary_t lib)
{
    ENTER();
    (void)lib;
    return sim_ret(count == NULL ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t *kernels, unsigned int numKernels,
                                                cudaLibrary_t lib)
{
    ENTER();
    (void)numKernels;
    (void)lib;
    return sim_ret(kernels == NULL ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaLibraryGetGlobal(void **dptr, size_t *bytes, cudaLibrary_t library,
                                         const char *name)
{
    ENTER();
    (void)bytes;
    (void)library;
    return sim_ret(dptr == NULL || name == NULL ? cudaErrorInvalidValue
                                                : cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaLibraryGetManaged(void **dptr, size_t *bytes, cudaLibrary_t library,
                                          const char *name)
{
    ENTER();
    (void)bytes;
    (void)library;
    return sim_ret(dptr == NULL || name == NULL ? cudaErrorInvalidValue
                                                : cudaErrorInvalidResourceHandle);
}

SIM_API cudaError_t cudaLibraryGetUnifiedFunction(void **fptr, cudaLibrary_t library,
                                                  const char *symbol)
{
    ENTER();
    (void)library;
    return sim_ret(fptr == NULL || symbol == NULL ? cudaErrorInvalidValue
                                                  : cudaErrorInvalidResourceHandle);
}

/* A kernel handle from cudaGetKernel / __cudaGetKernel: its attributes change nothing here. */
SIM_API cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel,
                                                    enum cudaFuncAttribute attr, int value,
                                                    int device)
{
    ENTER();
    (void)attr;
    (void)value;
    cudaError_t err = sim_device_check(device);
    if (err == cudaSuccess && kernel == NULL)
        err = cudaErrorInvalidDeviceFunction;
    return sim_ret(err);
}

/* ============================ the driver entry-point lookup ================================ */

/* cudaGetDriverEntryPoint*: the driver function of that name from the driver this runtime runs
 * on, the simulated libcuda.so.1 (sim_driver_proc, which picks the versioned symbol as the
 * driver's cuGetProcAddress does). */
static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned cuda_version,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *status)
{
    if (symbol == NULL || funcPtr == NULL)
        return cudaErrorInvalidValue;
    if (flags & ~(unsigned long long)(cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream))
        return cudaErrorInvalidValue;
    *funcPtr =
        sim_driver_proc(symbol, cuda_version, (flags & cudaEnablePerThreadDefaultStream) != 0);
    if (status != NULL)
        *status =
            *funcPtr != NULL ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    /* As the real runtime: success with a status saying the symbol is missing; without a status
     * to say it in, the error itself. */
    if (*funcPtr == NULL && status == NULL)
        return cudaErrorSymbolNotFound;
    return cudaSuccess;
}

SIM_API cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    ENTER_QUERY();
    return sim_ret(entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus));
}

SIM_API cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    ENTER_QUERY();
    return sim_ret(entry_point(symbol, funcPtr, cudaVersion,
                               flags | cudaEnablePerThreadDefaultStream, driverStatus));
}

SIM_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                            unsigned long long flags,
                                            enum cudaDriverEntryPointQueryResult *driverStatus)
{
    ENTER_QUERY();
    return sim_ret(entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus));
}

SIM_API cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                                 unsigned long long flags,
                                                 enum cudaDriverEntryPointQueryResult *driverStatus)
{
    ENTER_QUERY();
    return sim_ret(entry_point(symbol, funcPtr, CUDART_VERSION,
                               flags | cudaEnablePerThreadDefaultStream, driverStatus));
}
