/* agent/record/apis.h: the CUDA entry points syncspy interposes, named once, and the ids of the APIs
 * seen only through CUPTI. The entry layer defines each entry point and finds its real symbol by
 * this list (entry/runtime.c, entry/real.h); the agent names them in the trace and the report. */
#ifndef SYNCSPY_APIS_H
#define SYNCSPY_APIS_H

#include <pthread.h>
#include <stdint.h>

#define SYNCSPY_APIS(X)                 \
    X(cudaStreamSynchronize)            \
    X(cudaStreamSynchronize_ptsz)       \
    X(cudaDeviceSynchronize)            \
    X(cudaDeviceReset)                  \
    X(cudaEventSynchronize)             \
    X(cudaMemcpy)                       \
    X(cudaMemcpy_ptds)                  \
    X(cudaMemcpyAsync)                  \
    X(cudaMemcpyAsync_ptsz)             \
    X(cudaMemcpy2D)                     \
    X(cudaMemcpy2D_ptds)                \
    X(cudaMemcpy2DAsync)                \
    X(cudaMemcpy2DAsync_ptsz)           \
    X(cudaMemcpy3D)                     \
    X(cudaMemcpy3D_ptds)                \
    X(cudaMemcpy3DAsync)                \
    X(cudaMemcpy3DAsync_ptsz)           \
    X(cudaMemcpyPeer)                   \
    X(cudaMemcpyPeerAsync)              \
    X(cudaMemcpy3DPeer)                 \
    X(cudaMemcpy3DPeer_ptds)            \
    X(cudaMemcpy3DPeerAsync)            \
    X(cudaMemcpy3DPeerAsync_ptsz)       \
    X(cudaMemcpyFromSymbol)             \
    X(cudaMemcpyFromSymbol_ptds)        \
    X(cudaMemcpyFromSymbolAsync)        \
    X(cudaMemcpyFromSymbolAsync_ptsz)   \
    X(cudaMemcpyToSymbol)               \
    X(cudaMemcpyToSymbol_ptds)          \
    X(cudaMemcpyToSymbolAsync)          \
    X(cudaMemcpyToSymbolAsync_ptsz)     \
    X(cudaMemset)                       \
    X(cudaMemset_ptds)                  \
    X(cudaMemsetAsync)                  \
    X(cudaMemsetAsync_ptsz)             \
    X(cudaMemset2D)                     \
    X(cudaMemset2D_ptds)                \
    X(cudaMemset2DAsync)                \
    X(cudaMemset2DAsync_ptsz)           \
    X(cudaMemset3D)                     \
    X(cudaMemset3D_ptds)                \
    X(cudaMemset3DAsync)                \
    X(cudaMemset3DAsync_ptsz)           \
    X(cudaFree)                         \
    X(cudaFreeHost)                     \
    X(cudaLaunchKernel)                 \
    X(cudaLaunchKernel_ptsz)            \
    X(cudaLaunchKernelExC)              \
    X(cudaLaunchKernelExC_ptsz)         \
    X(cudaLaunchCooperativeKernel)      \
    X(cudaLaunchCooperativeKernel_ptsz) \
    X(__cudaLaunchKernel)               \
    X(__cudaLaunchKernel_ptsz)

enum api_id {
#define X(name) API_##name,
    SYNCSPY_APIS(X)
#undef X
        API_COUNT
};

/* APIs seen only through CUPTI (driver calls, runtime calls the shim cannot see) get ids from
 * API_COUNT on, by name, for the life of the process. */
#define API_DYNAMIC_MAX 256

/* The id of a CUPTI-seen API (name copied); thread-safe, never blocks for long (a lock on
 * first sight of a name only). The last id stands for "other" once the table is full. */
uint32_t api_intern(const char *name);
/* The lock api_intern takes, for the fork handlers (agent/process/fork_locks.h: taken around fork()). */
pthread_mutex_t *apis_lock(void);

const char *api_name(uint32_t id);

#endif
