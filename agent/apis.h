/* agent/apis.h: the CUDA entry points syncspy interposes, named once. X(name, family):
 * family says how the agent classifies a call (see agent/classify.c). Shared by the shim
 * (which defines each entry point) and the agent (names in reports). */
#ifndef SYNCSPY_APIS_H
#define SYNCSPY_APIS_H

#include <stdint.h>

#define SYNCSPY_APIS(X)                                        \
    X(cudaStreamSynchronize, FAM_SYNC)                         \
    X(cudaStreamSynchronize_ptsz, FAM_SYNC)                    \
    X(cudaDeviceSynchronize, FAM_SYNC)                         \
    X(cudaEventSynchronize, FAM_SYNC)                          \
    X(cudaMemcpy, FAM_MEMCPY)                                  \
    X(cudaMemcpy_ptds, FAM_MEMCPY)                             \
    X(cudaMemcpyAsync, FAM_MEMCPY_ASYNC)                       \
    X(cudaMemcpyAsync_ptsz, FAM_MEMCPY_ASYNC)                  \
    X(cudaMemcpy2D, FAM_MEMCPY)                                \
    X(cudaMemcpy2D_ptds, FAM_MEMCPY)                           \
    X(cudaMemcpy2DAsync, FAM_MEMCPY_ASYNC)                     \
    X(cudaMemcpy2DAsync_ptsz, FAM_MEMCPY_ASYNC)                \
    X(cudaMemcpy3D, FAM_MEMCPY)                                \
    X(cudaMemcpy3D_ptds, FAM_MEMCPY)                           \
    X(cudaMemcpy3DAsync, FAM_MEMCPY_ASYNC)                     \
    X(cudaMemcpy3DAsync_ptsz, FAM_MEMCPY_ASYNC)                \
    X(cudaMemcpyPeer, FAM_MEMCPY)                              \
    X(cudaMemcpyPeerAsync, FAM_MEMCPY_ASYNC)                   \
    X(cudaMemcpy3DPeer, FAM_MEMCPY)                            \
    X(cudaMemcpy3DPeer_ptds, FAM_MEMCPY)                       \
    X(cudaMemcpy3DPeerAsync, FAM_MEMCPY_ASYNC)                 \
    X(cudaMemcpy3DPeerAsync_ptsz, FAM_MEMCPY_ASYNC)            \
    X(cudaMemcpyFromSymbol, FAM_MEMCPY)                        \
    X(cudaMemcpyFromSymbol_ptds, FAM_MEMCPY)                   \
    X(cudaMemcpyFromSymbolAsync, FAM_MEMCPY_ASYNC)             \
    X(cudaMemcpyFromSymbolAsync_ptsz, FAM_MEMCPY_ASYNC)        \
    X(cudaMemcpyToSymbol, FAM_MEMCPY)                          \
    X(cudaMemcpyToSymbol_ptds, FAM_MEMCPY)                     \
    X(cudaMemcpyToSymbolAsync, FAM_MEMCPY_ASYNC)               \
    X(cudaMemcpyToSymbolAsync_ptsz, FAM_MEMCPY_ASYNC)          \
    X(cudaMemset, FAM_MEMSET)                                  \
    X(cudaMemset_ptds, FAM_MEMSET)                             \
    X(cudaMemsetAsync, FAM_MEMSET_ASYNC)                       \
    X(cudaMemsetAsync_ptsz, FAM_MEMSET_ASYNC)                  \
    X(cudaMemset2D, FAM_MEMSET)                                \
    X(cudaMemset2D_ptds, FAM_MEMSET)                           \
    X(cudaMemset2DAsync, FAM_MEMSET_ASYNC)                     \
    X(cudaMemset2DAsync_ptsz, FAM_MEMSET_ASYNC)                \
    X(cudaMemset3D, FAM_MEMSET)                                \
    X(cudaMemset3D_ptds, FAM_MEMSET)                           \
    X(cudaMemset3DAsync, FAM_MEMSET_ASYNC)                     \
    X(cudaMemset3DAsync_ptsz, FAM_MEMSET_ASYNC)                \
    X(cudaFree, FAM_FREE)                                      \
    X(cudaFreeHost, FAM_FREE)                                  \
    X(cudaLaunchKernel, FAM_LAUNCH)                            \
    X(cudaLaunchKernel_ptsz, FAM_LAUNCH)                       \
    X(cudaLaunchKernelExC, FAM_LAUNCH)                         \
    X(cudaLaunchKernelExC_ptsz, FAM_LAUNCH)                    \
    X(cudaLaunchCooperativeKernel, FAM_LAUNCH)                 \
    X(cudaLaunchCooperativeKernel_ptsz, FAM_LAUNCH)            \
    X(__cudaLaunchKernel, FAM_LAUNCH)                          \
    X(__cudaLaunchKernel_ptsz, FAM_LAUNCH)

enum api_id {
#define X(name, fam) API_##name,
    SYNCSPY_APIS(X)
#undef X
    API_COUNT
};

enum api_family { FAM_SYNC, FAM_MEMCPY, FAM_MEMCPY_ASYNC, FAM_MEMSET, FAM_MEMSET_ASYNC, FAM_FREE, FAM_LAUNCH };

/* APIs seen only through CUPTI (driver calls, runtime calls the shim cannot see) get ids from
 * API_COUNT on, by name, for the life of the process. */
#define API_DYNAMIC_MAX 256

/* The id of a CUPTI-seen API (name copied); thread-safe, never blocks for long (a lock on
 * first sight of a name only). The last id stands for "other" once the table is full. */
uint32_t api_intern(const char *name);

const char *api_name(uint32_t id);
enum api_family api_family(uint32_t id);

#endif
