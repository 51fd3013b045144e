/* entry/runtime.c: the interposed CUDA runtime entry points. Each one times the real call (found
 * through entry/real.h), says whether it was a sync (entry/sync_rules.h, asking the runtime's
 * cudaPointerGetAttributes what a pointer is) and hands one record to the agent (agent/core.h).
 * Launches only bump a per-thread counter. Runs on the application's thread inside its CUDA
 * call: no malloc, no locks, no stdio here. Exported without a symbol version (a versioned
 * definition would be skipped by the loader for unversioned references). */
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "agent/core.h"
#include "agent/gpu.h"
#include "common/compiler.h"
#include "entry/cupti.h"
#include "entry/real.h"
#include "entry/sync_rules.h"

/* The per-thread-default-stream twins have the base function's type; the CUDA headers declare
 * them only under __CUDART_API_PER_THREAD_DEFAULT_STREAM, so declare them here. */
#define TWIN(base, twin) extern __typeof__(base) twin;
TWIN(cudaStreamSynchronize, cudaStreamSynchronize_ptsz)
TWIN(cudaMemcpy, cudaMemcpy_ptds)
TWIN(cudaMemcpyAsync, cudaMemcpyAsync_ptsz)
TWIN(cudaMemcpy2D, cudaMemcpy2D_ptds)
TWIN(cudaMemcpy2DAsync, cudaMemcpy2DAsync_ptsz)
TWIN(cudaMemcpy3D, cudaMemcpy3D_ptds)
TWIN(cudaMemcpy3DAsync, cudaMemcpy3DAsync_ptsz)
TWIN(cudaMemcpy3DPeer, cudaMemcpy3DPeer_ptds)
TWIN(cudaMemcpy3DPeerAsync, cudaMemcpy3DPeerAsync_ptsz)
TWIN(cudaMemcpyFromSymbol, cudaMemcpyFromSymbol_ptds)
TWIN(cudaMemcpyFromSymbolAsync, cudaMemcpyFromSymbolAsync_ptsz)
TWIN(cudaMemcpyToSymbol, cudaMemcpyToSymbol_ptds)
TWIN(cudaMemcpyToSymbolAsync, cudaMemcpyToSymbolAsync_ptsz)
TWIN(cudaMemset, cudaMemset_ptds)
TWIN(cudaMemsetAsync, cudaMemsetAsync_ptsz)
TWIN(cudaMemset2D, cudaMemset2D_ptds)
TWIN(cudaMemset2DAsync, cudaMemset2DAsync_ptsz)
TWIN(cudaMemset3D, cudaMemset3D_ptds)
TWIN(cudaMemset3DAsync, cudaMemset3DAsync_ptsz)
TWIN(cudaLaunchKernel, cudaLaunchKernel_ptsz)
TWIN(cudaLaunchKernelExC, cudaLaunchKernelExC_ptsz)
TWIN(cudaLaunchCooperativeKernel, cudaLaunchCooperativeKernel_ptsz)

/* CUDA 13's <<<>>> launches call these (crt/device_functions.h, C++ only). */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);
TWIN(__cudaLaunchKernel, __cudaLaunchKernel_ptsz)

#define REAL(fn) ((__typeof__(&fn))real_get(API_##fn))

/* The host memory the thread's latest copy used (MEM_PINNED, MEM_PAGEABLE; MEM_UNKNOWN once a
 * stream synchronize took it): a stream synchronize right after a copy from pinned memory is a
 * copy that did not have to wait (non_blocking=False), which its hint says (output/hints.c). */
static SYNCSPY_TLS uint8_t last_host_memory;

/* What the runtime says p is. CUDA 11+ answers cudaSuccess with type Unregistered for ordinary
 * host memory, so this leaves no error behind for the application's cudaGetLastError. */
static enum mem_kind runtime_memory(const void *p)
{
    cudaError_t (*f)(struct cudaPointerAttributes *, const void *) =
        (__typeof__(f))real_get(REAL_cudaPointerGetAttributes);
    struct cudaPointerAttributes a;
    if (!f || f(&a, p) != cudaSuccess)
        return MEM_UNKNOWN;
    switch (a.type) {
    case cudaMemoryTypeDevice: return MEM_DEVICE;
    case cudaMemoryTypeHost: return last_host_memory = MEM_PINNED;
    case cudaMemoryTypeManaged: return MEM_MANAGED;
    case cudaMemoryTypeUnregistered: return last_host_memory = MEM_PAGEABLE;
    default: return MEM_UNKNOWN;
    }
}

/* A sync, to the agent; under SYNCSPY_GPU=1 with the correlation ids CUPTI saw inside it. */
static void hand_over(struct sync_call *c)
{
    if (unlikely(atomic_load_explicit(&agent_gpu_tracking, memory_order_relaxed)))
        cupti_take_correlation(c);
    agent_sync(c);
}

/* When no CUDA runtime is loaded at all (a program found our symbol with dlsym), say so the
 * way the runtime says a missing symbol. */
#define NO_RUNTIME cudaErrorSharedObjectSymbolNotFound

/* BEGIN resolves the real function and starts the clock when the agent records this call;
 * END stops it and hands the call over when it succeeded and `is_sync` holds (evaluated only
 * then), and lets CUPTI subscribe if it waits for the driver this call's success proves. A call that failed (no driver, a bad argument, a job already broken) made no device
 * work wait for: it is forwarded with its error and not counted as a sync. */
#define BEGIN(fn)                                                                               \
    __typeof__(&fn) real_ = REAL(fn);                                                           \
    if (unlikely(!real_))                                                                       \
        return NO_RUNTIME;                                                                      \
    struct sync_call c_ = {.api = API_##fn};                                                    \
    struct agent_call k_;                                                                       \
    const int in_ = agent_enter_recording(&k_);                                                 \
    if (in_ == AGENT_RECORD)                                                                    \
        c_.start_ns = agent_now_ns()

#define END(result, is_sync)                                                                    \
    do {                                                                                        \
        if (in_ == AGENT_RECORD) {                                                              \
            c_.end_ns = agent_now_ns();                                                         \
            if ((result) == cudaSuccess && (is_sync))                                           \
                hand_over(&c_);                                                                 \
            agent_leave(&k_);                                                                   \
        } else if (in_ == AGENT_HELD) {                                                         \
            agent_leave_held(&k_);                                                              \
        }                                                                                       \
        if (unlikely(atomic_load_explicit(&cupti_waiting_for_driver, memory_order_relaxed)) &&  \
            in_ != AGENT_UNTOUCHED && (result) == cudaSuccess)                                  \
            cupti_retry();                                                                      \
    } while (0)

/* ---- explicit synchronization ---------------------------------------------------------- */

#define STREAM_SYNC(fn)                                                                         \
    SYNCSPY_EXPORT cudaError_t fn(cudaStream_t stream)                                          \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(stream);                                                          \
        c_.stream = (uintptr_t)stream;                                                          \
        c_.after_pinned_copy = last_host_memory == MEM_PINNED;                                  \
        last_host_memory = MEM_UNKNOWN;                                                         \
        END(r, true);                                                                           \
        return r;                                                                               \
    }
STREAM_SYNC(cudaStreamSynchronize)
STREAM_SYNC(cudaStreamSynchronize_ptsz)

SYNCSPY_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    BEGIN(cudaDeviceSynchronize);
    cudaError_t r = real_();
    END(r, true);
    return r;
}

/* cudaDeviceReset waits for the device's queued work before it destroys the context (the
 * simulator models it so; CUDA's page does not list it): a device-wide wait, counted as a sync
 * like cudaDeviceSynchronize. The interposed call only times it and forwards it; README ("What
 * it records") says why it is interposed at all. */
SYNCSPY_EXPORT cudaError_t cudaDeviceReset(void)
{
    BEGIN(cudaDeviceReset);
    cudaError_t r = real_();
    END(r, true);
    return r;
}

SYNCSPY_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    BEGIN(cudaEventSynchronize);
    cudaError_t r = real_(event);
    END(r, true);
    return r;
}

/* ---- copies ------------------------------------------------------------------------------ */

#define MEMCPY(fn, async)                                                                       \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, src, count, kind);                                           \
        c_.bytes = count;                                                                       \
        END(r, sync_rules_runtime_copy(kind, dst, src, async, runtime_memory, &c_.dir));        \
        return r;                                                                               \
    }
MEMCPY(cudaMemcpy, false)
MEMCPY(cudaMemcpy_ptds, false)

#define MEMCPY_ASYNC(fn)                                                                        \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, \
                                   cudaStream_t stream)                                         \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, src, count, kind, stream);                                   \
        c_.bytes = count;                                                                       \
        c_.stream = (uintptr_t)stream;                                                          \
        END(r, sync_rules_runtime_copy(kind, dst, src, true, runtime_memory, &c_.dir));         \
        return r;                                                                               \
    }
MEMCPY_ASYNC(cudaMemcpyAsync)
MEMCPY_ASYNC(cudaMemcpyAsync_ptsz)

#define MEMCPY_2D(fn, async)                                                                    \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, size_t dpitch, const void *src, size_t spitch,     \
                                   size_t width, size_t height, enum cudaMemcpyKind kind)       \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, dpitch, src, spitch, width, height, kind);                   \
        c_.bytes = (uint64_t)width * height;                                                    \
        END(r, sync_rules_runtime_copy(kind, dst, src, async, runtime_memory, &c_.dir));        \
        return r;                                                                               \
    }
MEMCPY_2D(cudaMemcpy2D, false)
MEMCPY_2D(cudaMemcpy2D_ptds, false)

#define MEMCPY_2D_ASYNC(fn)                                                                     \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, size_t dpitch, const void *src, size_t spitch,     \
                                   size_t width, size_t height, enum cudaMemcpyKind kind,       \
                                   cudaStream_t stream)                                         \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, dpitch, src, spitch, width, height, kind, stream);           \
        c_.bytes = (uint64_t)width * height;                                                    \
        c_.stream = (uintptr_t)stream;                                                          \
        END(r, sync_rules_runtime_copy(kind, dst, src, true, runtime_memory, &c_.dir));         \
        return r;                                                                               \
    }
MEMCPY_2D_ASYNC(cudaMemcpy2DAsync)
MEMCPY_2D_ASYNC(cudaMemcpy2DAsync_ptsz)

/* 3D copies: a CUDA array on either side is device memory. */
#define MEMCPY_3D(fn, async)                                                                    \
    SYNCSPY_EXPORT cudaError_t fn(const struct cudaMemcpy3DParms *p)                            \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(p);                                                               \
        END(r, sync_rules_copy_3d(p, async, runtime_memory, &c_.dir, &c_.bytes));               \
        return r;                                                                               \
    }
MEMCPY_3D(cudaMemcpy3D, false)
MEMCPY_3D(cudaMemcpy3D_ptds, false)

#define MEMCPY_3D_ASYNC(fn)                                                                     \
    SYNCSPY_EXPORT cudaError_t fn(const struct cudaMemcpy3DParms *p, cudaStream_t stream)       \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(p, stream);                                                       \
        c_.stream = (uintptr_t)stream;                                                          \
        END(r, sync_rules_copy_3d(p, true, runtime_memory, &c_.dir, &c_.bytes));                \
        return r;                                                                               \
    }
MEMCPY_3D_ASYNC(cudaMemcpy3DAsync)
MEMCPY_3D_ASYNC(cudaMemcpy3DAsync_ptsz)

/* Peer copies are device-to-device: asynchronous with respect to the host in both forms. They
 * are interposed so every copy entry point is seen, but never recorded as syncs. */
SYNCSPY_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    BEGIN(cudaMemcpyPeer);
    cudaError_t r = real_(dst, dstDevice, src, srcDevice, count);
    END(r, false);
    return r;
}

SYNCSPY_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                               size_t count, cudaStream_t stream)
{
    BEGIN(cudaMemcpyPeerAsync);
    cudaError_t r = real_(dst, dstDevice, src, srcDevice, count, stream);
    END(r, false);
    return r;
}

#define MEMCPY_3D_PEER(fn)                                                                      \
    SYNCSPY_EXPORT cudaError_t fn(const struct cudaMemcpy3DPeerParms *p)                        \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(p);                                                               \
        END(r, false);                                                                          \
        return r;                                                                               \
    }
MEMCPY_3D_PEER(cudaMemcpy3DPeer)
MEMCPY_3D_PEER(cudaMemcpy3DPeer_ptds)

#define MEMCPY_3D_PEER_ASYNC(fn)                                                                \
    SYNCSPY_EXPORT cudaError_t fn(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream)   \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(p, stream);                                                       \
        END(r, false);                                                                          \
        return r;                                                                               \
    }
MEMCPY_3D_PEER_ASYNC(cudaMemcpy3DPeerAsync)
MEMCPY_3D_PEER_ASYNC(cudaMemcpy3DPeerAsync_ptsz)

/* Symbols live in device memory: FromSymbol copies to dst, ToSymbol copies from src. */
#define FROM_SYMBOL(fn)                                                                         \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, const void *symbol, size_t count, size_t offset,   \
                                   enum cudaMemcpyKind kind)                                    \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, symbol, count, offset, kind);                                \
        c_.bytes = count;                                                                       \
        END(r, sync_rules_from_symbol(kind, dst, false, runtime_memory, &c_.dir));              \
        return r;                                                                               \
    }
FROM_SYMBOL(cudaMemcpyFromSymbol)
FROM_SYMBOL(cudaMemcpyFromSymbol_ptds)

#define FROM_SYMBOL_ASYNC(fn)                                                                   \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, const void *symbol, size_t count, size_t offset,   \
                                   enum cudaMemcpyKind kind, cudaStream_t stream)               \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, symbol, count, offset, kind, stream);                        \
        c_.bytes = count;                                                                       \
        c_.stream = (uintptr_t)stream;                                                          \
        END(r, sync_rules_from_symbol(kind, dst, true, runtime_memory, &c_.dir));               \
        return r;                                                                               \
    }
FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync)
FROM_SYMBOL_ASYNC(cudaMemcpyFromSymbolAsync_ptsz)

#define TO_SYMBOL(fn)                                                                           \
    SYNCSPY_EXPORT cudaError_t fn(const void *symbol, const void *src, size_t count, size_t offset, \
                                   enum cudaMemcpyKind kind)                                    \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(symbol, src, count, offset, kind);                                \
        c_.bytes = count;                                                                       \
        END(r, sync_rules_to_symbol(kind, src, false, runtime_memory, &c_.dir));                \
        return r;                                                                               \
    }
TO_SYMBOL(cudaMemcpyToSymbol)
TO_SYMBOL(cudaMemcpyToSymbol_ptds)

#define TO_SYMBOL_ASYNC(fn)                                                                     \
    SYNCSPY_EXPORT cudaError_t fn(const void *symbol, const void *src, size_t count, size_t offset, \
                                   enum cudaMemcpyKind kind, cudaStream_t stream)               \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(symbol, src, count, offset, kind, stream);                        \
        c_.bytes = count;                                                                       \
        c_.stream = (uintptr_t)stream;                                                          \
        END(r, sync_rules_to_symbol(kind, src, true, runtime_memory, &c_.dir));                 \
        return r;                                                                               \
    }
TO_SYMBOL_ASYNC(cudaMemcpyToSymbolAsync)
TO_SYMBOL_ASYNC(cudaMemcpyToSymbolAsync_ptsz)

/* ---- memsets: the synchronous forms on pinned or managed host memory (sync_rules_memset) ---- */

#define MEMSET(fn)                                                                              \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, int value, size_t count)                           \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, value, count);                                               \
        c_.bytes = count;                                                                       \
        END(r, sync_rules_memset(dst, false, runtime_memory));                                         \
        return r;                                                                               \
    }
MEMSET(cudaMemset)
MEMSET(cudaMemset_ptds)

#define MEMSET_ASYNC(fn)                                                                        \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, int value, size_t count, cudaStream_t stream)      \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, value, count, stream);                                       \
        END(r, sync_rules_memset(dst, true, runtime_memory));                                   \
        return r;                                                                               \
    }
MEMSET_ASYNC(cudaMemsetAsync)
MEMSET_ASYNC(cudaMemsetAsync_ptsz)

#define MEMSET_2D(fn)                                                                           \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, size_t pitch, int value, size_t width, size_t height) \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, pitch, value, width, height);                                \
        c_.bytes = (uint64_t)width * height;                                                    \
        END(r, sync_rules_memset(dst, false, runtime_memory));                                         \
        return r;                                                                               \
    }
MEMSET_2D(cudaMemset2D)
MEMSET_2D(cudaMemset2D_ptds)

#define MEMSET_2D_ASYNC(fn)                                                                     \
    SYNCSPY_EXPORT cudaError_t fn(void *dst, size_t pitch, int value, size_t width, size_t height, \
                                   cudaStream_t stream)                                         \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(dst, pitch, value, width, height, stream);                        \
        END(r, sync_rules_memset(dst, true, runtime_memory));                                   \
        return r;                                                                               \
    }
MEMSET_2D_ASYNC(cudaMemset2DAsync)
MEMSET_2D_ASYNC(cudaMemset2DAsync_ptsz)

#define MEMSET_3D(fn)                                                                           \
    SYNCSPY_EXPORT cudaError_t fn(struct cudaPitchedPtr p, int value, struct cudaExtent extent) \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(p, value, extent);                                                \
        c_.bytes = (uint64_t)extent.width * extent.height * extent.depth;                       \
        END(r, sync_rules_memset(p.ptr, false, runtime_memory));                                       \
        return r;                                                                               \
    }
MEMSET_3D(cudaMemset3D)
MEMSET_3D(cudaMemset3D_ptds)

#define MEMSET_3D_ASYNC(fn)                                                                     \
    SYNCSPY_EXPORT cudaError_t fn(struct cudaPitchedPtr p, int value, struct cudaExtent extent, \
                                   cudaStream_t stream)                                         \
    {                                                                                           \
        BEGIN(fn);                                                                              \
        cudaError_t r = real_(p, value, extent, stream);                                        \
        END(r, sync_rules_memset(p.ptr, true, runtime_memory));                                 \
        return r;                                                                               \
    }
MEMSET_3D_ASYNC(cudaMemset3DAsync)
MEMSET_3D_ASYNC(cudaMemset3DAsync_ptsz)

/* ---- frees: implicit device synchronization (cudaFree(NULL) only initializes the context) --- */

SYNCSPY_EXPORT cudaError_t cudaFree(void *ptr)
{
    BEGIN(cudaFree);
    cudaError_t r = real_(ptr);
    END(r, ptr != NULL);
    return r;
}

SYNCSPY_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    BEGIN(cudaFreeHost);
    cudaError_t r = real_(ptr);
    END(r, ptr != NULL);
    return r;
}

/* ---- launches: counted per step, never attributed ------------------------------------------ */

/* The fast path makes no call before the tail call to the real function, so the arguments stay
 * where the caller put them (no spills): a thread-local load, the cached real function, the
 * slow-path flag, the counter. Anything else (first launch of a thread, every 256th launch,
 * tracing, the Python step hook still wanted, the runtime not resolved yet) goes through
 * fn##_slow, which counts the launch there. */
#define LAUNCH(fn, params, args, func, stream)                                                  \
    __attribute__((noinline)) static cudaError_t fn##_slow params                               \
    {                                                                                           \
        agent_count_launch();                                                                   \
        if (unlikely(atomic_load_explicit(&agent_launch_tracing, memory_order_relaxed)))        \
            agent_trace_launch(API_##fn, (func), (uintptr_t)(stream));                          \
        __typeof__(&fn) real_ = REAL(fn);                                                       \
        if (unlikely(!real_))                                                                   \
            return NO_RUNTIME;                                                                  \
        cudaError_t r_ = real_ args;                                                            \
        if (unlikely(atomic_load_explicit(&cupti_waiting_for_driver, memory_order_relaxed)) &&  \
            r_ == cudaSuccess)                                                                  \
            cupti_retry();                                                                      \
        return r_;                                                                              \
    }                                                                                           \
    SYNCSPY_EXPORT cudaError_t fn params                                                        \
    {                                                                                           \
        _Atomic uint64_t *c_ = agent_tls_launches;                                              \
        __typeof__(&fn) real_ = (__typeof__(&fn))atomic_load_explicit(&real_fns[API_##fn], memory_order_relaxed); \
        if (likely(c_ && real_ && !atomic_load_explicit(&agent_launch_slow, memory_order_relaxed))) { \
            uint64_t n_ = atomic_load_explicit(c_, memory_order_relaxed) + 1;                   \
            if (likely(n_ & 255)) {                                                             \
                atomic_store_explicit(c_, n_, memory_order_relaxed);                            \
                return real_ args;                                                              \
            }                                                                                   \
        }                                                                                       \
        return fn##_slow args;                                                                  \
    }
#define KERNEL_PARAMS (const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream)
#define KERNEL_ARGS (func, grid, block, args, shmem, stream)
LAUNCH(cudaLaunchKernel, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchKernel_ptsz, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchCooperativeKernel, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchCooperativeKernel_ptsz, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchKernelExC, (const cudaLaunchConfig_t *config, const void *func, void **args), (config, func, args),
       func, config ? config->stream : 0)
LAUNCH(cudaLaunchKernelExC_ptsz, (const cudaLaunchConfig_t *config, const void *func, void **args), (config, func, args),
       func, config ? config->stream : 0)
LAUNCH(__cudaLaunchKernel, (cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream),
       (kernel, grid, block, args, shmem, stream), (const void *)kernel, stream)
LAUNCH(__cudaLaunchKernel_ptsz, (cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream),
       (kernel, grid, block, args, shmem, stream), (const void *)kernel, stream)
