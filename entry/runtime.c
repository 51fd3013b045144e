/* entry/runtime.c: the interposed CUDA runtime entry points. Each one times the real call (found
 * through entry/real.h), says whether it was a sync (entry/sync_rules.h, asking the runtime's
 * cudaPointerGetAttributes what a pointer is) and hands one record to the agent (agent/record/core.h).
 * Launches only bump a per-thread counter. Runs on the application's thread inside its CUDA
 * call: no malloc, no locks, no stdio here. Exported without a symbol version (a versioned
 * definition would be skipped by the loader for unversioned references). */
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "agent/record/core.h"
#include "agent/record/gpu.h"
#include "common/compiler.h"
#include "entry/cupti.h"
#include "entry/real.h"
#include "entry/start.h"
#include "entry/sync_rules.h"

/* The per-thread-default-stream twins have the base function's type; the CUDA headers declare
 * them only under __CUDART_API_PER_THREAD_DEFAULT_STREAM, so declare them here (those of the
 * sync table below are declared from it). */
#define TWIN(base, twin) extern __typeof__(base) twin;
TWIN(cudaLaunchKernel, cudaLaunchKernel_ptsz)
TWIN(cudaLaunchKernelExC, cudaLaunchKernelExC_ptsz)
TWIN(cudaLaunchCooperativeKernel, cudaLaunchCooperativeKernel_ptsz)

/* CUDA 13's <<<>>> launches call these (crt/device_functions.h, C++ only). */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);
TWIN(__cudaLaunchKernel, __cudaLaunchKernel_ptsz)

/* The runtime's own definition of a CUDA entry point. Its first lookup starts the entry layer
 * (entry/start.c): the first interposed CUDA call may come before our constructor ran. */
static inline void *real_cudart(int id)
{
    void *p = real_cached(id);
    if (likely(p != NULL))
        return p;
    entry_start();
    return real_resolve(id);
}
#define REAL(fn) ((__typeof__(&fn))real_cudart(API_##fn))

/* The host memory the thread's latest copy used (MEM_PINNED, MEM_PAGEABLE; MEM_UNKNOWN once a
 * stream synchronize took it): a stream synchronize right after a copy from pinned memory is a
 * copy that did not have to wait (non_blocking=False), which its hint says (output/hints.c). */
static SYNCSPY_TLS uint8_t last_host_memory;

/* What the runtime says p is. CUDA 11+ answers cudaSuccess with type Unregistered for ordinary
 * host memory, so this leaves no error behind for the application's cudaGetLastError. */
static enum mem_kind runtime_memory(const void *p)
{
    cudaError_t (*f)(struct cudaPointerAttributes *, const void *) =
        (__typeof__(f))real_cudart(REAL_cudaPointerGetAttributes);
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

/* A stream synchronize right after a copy from pinned memory: noted in the record, and the
 * thread's latest copy forgotten (whether or not this call is recorded). */
static inline void note_pinned_copy(struct sync_call *call)
{
    call->after_pinned_copy = last_host_memory == MEM_PINNED;
    last_host_memory = MEM_UNKNOWN;
}

/* ---- the table: every interposed runtime call that may wait for the device ----------------
 *
 * One row per API: W(name, twin, parameters, arguments, stream, bytes, note, sync rule)
 * - twin: the suffix of its per-thread-default-stream twin (ptsz, ptds), none: it has none.
 *   The twin gets the same wrapper.
 * - parameters, arguments: its signature and the call that forwards them to the real one.
 * - stream, bytes: what the record says (0: none given, not known).
 * - note: done after the real call, recorded or not (note_pinned_copy, or NONE).
 * - sync rule: whether a call that succeeded waited for the device (entry/sync_rules.h),
 *   evaluated only when the call is recorded and succeeded. In stream, bytes and the rule, the
 *   parameters are in scope and `call` is the record being filled (a rule may set call.dir and
 *   call.bytes). A call that failed (no driver, a bad argument, a job already broken) made no
 *   device work wait: it is forwarded with its error and not counted.
 * Copies: symbols live in device memory (FromSymbol copies to dst, ToSymbol from src); a CUDA
 * array on either side of a 3D copy is device memory. Peer copies are device-to-device,
 * asynchronous with respect to the host in both forms: interposed so every copy entry point is
 * seen, never recorded as syncs. Memsets: the synchronous forms on pinned or managed host
 * memory. Frees: an implicit device synchronization (cudaFree(NULL) only initializes the
 * context). cudaDeviceReset waits for the device's queued work before it destroys the context
 * (the simulator models it so; CUDA's page does not list it): a device-wide wait, counted like
 * cudaDeviceSynchronize; README ("What it records") says why it is interposed at all. */
#define AREA ((uint64_t)width * height)
#define VOLUME ((uint64_t)extent.width * extent.height * extent.depth)
#define COPY_RULE(async) sync_rules_runtime_copy(kind, dst, src, async, runtime_memory, &call.dir)
#define COPY_3D_RULE(async) sync_rules_copy_3d(p, async, runtime_memory, &call.dir, &call.bytes)
#define FROM_SYMBOL_RULE(async) sync_rules_from_symbol(kind, dst, async, runtime_memory, &call.dir)
#define TO_SYMBOL_RULE(async) sync_rules_to_symbol(kind, src, async, runtime_memory, &call.dir)
#define MEMSET_RULE(ptr, async) sync_rules_memset(ptr, async, runtime_memory)

/* clang-format off */
#define RUNTIME_SYNC_APIS(W)                                                                        \
    /* explicit synchronization */                                                                  \
    W(cudaStreamSynchronize, ptsz, (cudaStream_t stream),                                           \
      (stream), stream, 0, note_pinned_copy, true)                                                  \
    W(cudaDeviceSynchronize, none, (void),                                                          \
      (), 0, 0, NONE, true)                                                                         \
    W(cudaDeviceReset, none, (void),                                                                \
      (), 0, 0, NONE, true)                                                                         \
    W(cudaEventSynchronize, none, (cudaEvent_t event),                                              \
      (event), 0, 0, NONE, true)                                                                    \
    /* copies */                                                                                    \
    W(cudaMemcpy, ptds, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),       \
      (dst, src, count, kind), 0, count, NONE, COPY_RULE(false))                                    \
    W(cudaMemcpyAsync, ptsz, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream), \
      (dst, src, count, kind, stream), stream, count, NONE, COPY_RULE(true))                        \
    W(cudaMemcpy2D, ptds, (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind), \
      (dst, dpitch, src, spitch, width, height, kind), 0, AREA, NONE, COPY_RULE(false))             \
    W(cudaMemcpy2DAsync, ptsz, (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream), \
      (dst, dpitch, src, spitch, width, height, kind, stream), stream, AREA, NONE, COPY_RULE(true)) \
    W(cudaMemcpy3D, ptds, (const struct cudaMemcpy3DParms *p),                                      \
      (p), 0, 0, NONE, COPY_3D_RULE(false))                                                         \
    W(cudaMemcpy3DAsync, ptsz, (const struct cudaMemcpy3DParms *p, cudaStream_t stream),            \
      (p, stream), stream, 0, NONE, COPY_3D_RULE(true))                                             \
    W(cudaMemcpyPeer, none, (void *dst, int dstDevice, const void *src, int srcDevice, size_t count), \
      (dst, dstDevice, src, srcDevice, count), 0, 0, NONE, false)                                   \
    W(cudaMemcpyPeerAsync, none, (void *dst, int dstDevice, const void *src, int srcDevice, size_t count, cudaStream_t stream), \
      (dst, dstDevice, src, srcDevice, count, stream), 0, 0, NONE, false)                           \
    W(cudaMemcpy3DPeer, ptds, (const struct cudaMemcpy3DPeerParms *p),                              \
      (p), 0, 0, NONE, false)                                                                       \
    W(cudaMemcpy3DPeerAsync, ptsz, (const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream),    \
      (p, stream), 0, 0, NONE, false)                                                               \
    W(cudaMemcpyFromSymbol, ptds, (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind), \
      (dst, symbol, count, offset, kind), 0, count, NONE, FROM_SYMBOL_RULE(false))                  \
    W(cudaMemcpyFromSymbolAsync, ptsz, (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream), \
      (dst, symbol, count, offset, kind, stream), stream, count, NONE, FROM_SYMBOL_RULE(true))      \
    W(cudaMemcpyToSymbol, ptds, (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind), \
      (symbol, src, count, offset, kind), 0, count, NONE, TO_SYMBOL_RULE(false))                    \
    W(cudaMemcpyToSymbolAsync, ptsz, (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream), \
      (symbol, src, count, offset, kind, stream), stream, count, NONE, TO_SYMBOL_RULE(true))        \
    /* memsets */                                                                                   \
    W(cudaMemset, ptds, (void *dst, int value, size_t count),                                       \
      (dst, value, count), 0, count, NONE, MEMSET_RULE(dst, false))                                 \
    W(cudaMemsetAsync, ptsz, (void *dst, int value, size_t count, cudaStream_t stream),             \
      (dst, value, count, stream), 0, 0, NONE, MEMSET_RULE(dst, true))                              \
    W(cudaMemset2D, ptds, (void *dst, size_t pitch, int value, size_t width, size_t height),        \
      (dst, pitch, value, width, height), 0, AREA, NONE, MEMSET_RULE(dst, false))                   \
    W(cudaMemset2DAsync, ptsz, (void *dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream), \
      (dst, pitch, value, width, height, stream), 0, 0, NONE, MEMSET_RULE(dst, true))               \
    W(cudaMemset3D, ptds, (struct cudaPitchedPtr p, int value, struct cudaExtent extent),           \
      (p, value, extent), 0, VOLUME, NONE, MEMSET_RULE(p.ptr, false))                               \
    W(cudaMemset3DAsync, ptsz, (struct cudaPitchedPtr p, int value, struct cudaExtent extent, cudaStream_t stream), \
      (p, value, extent, stream), 0, 0, NONE, MEMSET_RULE(p.ptr, true))                             \
    /* frees */                                                                                     \
    W(cudaFree, none, (void *ptr),                                                                  \
      (ptr), 0, 0, NONE, ptr != NULL)                                                               \
    W(cudaFreeHost, none, (void *ptr),                                                              \
      (ptr), 0, 0, NONE, ptr != NULL)
/* clang-format on */

/* The wrapper of one row: resolves the real function and, when the agent records this call,
 * times it and hands the record over when it succeeded and the rule holds; lets CUPTI subscribe
 * if it waits for the driver this call's success proves. */
#define NONE(call) ((void)(call))
/* No store where a row says 0, the value the record starts with (the wrappers stay as lean as
 * the hand-written ones were). */
#define SET_UNLESS_ZERO(field, value)                       \
    do {                                                    \
        if (!(__builtin_constant_p(value) && (value) == 0)) \
            field = (value);                                \
    } while (0)
#define SYNC_WRAPPER(fn, params, args, stream_, bytes_, note, rule)                            \
    SYNCSPY_EXPORT cudaError_t fn params                                                       \
    {                                                                                          \
        __typeof__(&fn) real_ = REAL(fn);                                                      \
        if (unlikely(!real_))                                                                  \
            return NO_RUNTIME;                                                                 \
        struct sync_call call = {.api = API_##fn};                                             \
        struct agent_call k_;                                                                  \
        const int in_ = agent_enter_recording(&k_);                                            \
        if (in_ == AGENT_RECORD)                                                               \
            call.start_ns = agent_now_ns();                                                    \
        cudaError_t r_ = real_ args;                                                           \
        SET_UNLESS_ZERO(call.bytes, bytes_);                                                   \
        SET_UNLESS_ZERO(call.stream, (uintptr_t)(stream_));                                    \
        note(&call);                                                                           \
        if (in_ == AGENT_RECORD) {                                                             \
            call.end_ns = agent_now_ns();                                                      \
            if (r_ == cudaSuccess && (rule))                                                   \
                hand_over(&call);                                                              \
            agent_leave(&k_);                                                                  \
        } else if (in_ == AGENT_HELD) {                                                        \
            agent_leave_held(&k_);                                                             \
        }                                                                                      \
        if (unlikely(atomic_load_explicit(&cupti_waiting_for_driver, memory_order_relaxed)) && \
            in_ != AGENT_UNTOUCHED && r_ == cudaSuccess)                                       \
            cupti_retry();                                                                     \
        return r_;                                                                             \
    }

#define TWIN_none(...)
#define TWIN_ptsz(fn, ...) SYNC_WRAPPER(fn##_ptsz, __VA_ARGS__)
#define TWIN_ptds(fn, ...) SYNC_WRAPPER(fn##_ptds, __VA_ARGS__)
#define DEFINE_WRAPPERS(fn, twin, ...) SYNC_WRAPPER(fn, __VA_ARGS__) TWIN_##twin(fn, __VA_ARGS__)

#define DECLARE_none(fn)
#define DECLARE_ptsz(fn) extern __typeof__(fn) fn##_ptsz;
#define DECLARE_ptds(fn) extern __typeof__(fn) fn##_ptds;
#define DECLARE_TWIN(fn, twin, ...) DECLARE_##twin(fn)

RUNTIME_SYNC_APIS(DECLARE_TWIN)
RUNTIME_SYNC_APIS(DEFINE_WRAPPERS)

/* ---- launches: counted per step, never attributed ------------------------------------------ */

SYNCSPY_TLS uintptr_t entry_launch_frame;

/* The fast path makes no call before the tail call to the real function, so the arguments stay
 * where the caller put them (no spills): a thread-local load, the cached real function, the
 * slow-path flag, the counter. Anything else (first launch of a thread, every 256th launch,
 * tracing, the Python step hook still wanted, the runtime not resolved yet, CUPTI watching the
 * driver's launches) goes through fn##_slow, which counts the launch there and sets
 * entry_launch_frame around the real call (entry/cupti.h: a driver launch inside it is this
 * launch's own; two CUPTI callbacks cheaper than the runtime-domain callbacks that told it). */
#define LAUNCH(fn, params, args, func, stream)                                                 \
    __attribute__((noinline)) static cudaError_t fn##_slow params                              \
    {                                                                                          \
        __typeof__(&fn) real_ = REAL(fn); /* first: the entry layer's start (entry/start.c) */ \
        agent_count_launch();                                                                  \
        if (unlikely(atomic_load_explicit(&agent_launch_tracing, memory_order_relaxed)))       \
            agent_trace_launch(API_##fn, (func), (uintptr_t)(stream));                         \
        if (unlikely(!real_))                                                                  \
            return NO_RUNTIME;                                                                 \
        uintptr_t outer_ = entry_launch_frame;                                                 \
        entry_launch_frame = (uintptr_t)__builtin_frame_address(0);                            \
        cudaError_t r_ = real_ args;                                                           \
        entry_launch_frame = outer_;                                                           \
        if (unlikely(atomic_load_explicit(&cupti_waiting_for_driver, memory_order_relaxed)) && \
            r_ == cudaSuccess)                                                                 \
            cupti_retry();                                                                     \
        return r_;                                                                             \
    }                                                                                          \
    SYNCSPY_EXPORT cudaError_t fn params                                                       \
    {                                                                                          \
        _Atomic uint64_t *c_ = agent_tls_launches;                                             \
        __typeof__(&fn) real_ =                                                                \
            (__typeof__(&fn))atomic_load_explicit(&real_fns[API_##fn], memory_order_relaxed);  \
        if (likely(c_ && real_ &&                                                              \
                   !atomic_load_explicit(&agent_launch_slow, memory_order_relaxed))) {         \
            uint64_t n_ = atomic_load_explicit(c_, memory_order_relaxed) + 1;                  \
            if (likely(n_ & 255)) {                                                            \
                atomic_store_explicit(c_, n_, memory_order_relaxed);                           \
                return real_ args;                                                             \
            }                                                                                  \
        }                                                                                      \
        return fn##_slow args;                                                                 \
    }
#define KERNEL_PARAMS \
    (const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream)
#define KERNEL_ARGS (func, grid, block, args, shmem, stream)
LAUNCH(cudaLaunchKernel, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchKernel_ptsz, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchCooperativeKernel, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchCooperativeKernel_ptsz, KERNEL_PARAMS, KERNEL_ARGS, func, stream)
LAUNCH(cudaLaunchKernelExC, (const cudaLaunchConfig_t *config, const void *func, void **args),
       (config, func, args), func, config ? config->stream : 0)
LAUNCH(cudaLaunchKernelExC_ptsz, (const cudaLaunchConfig_t *config, const void *func, void **args),
       (config, func, args), func, config ? config->stream : 0)
LAUNCH(__cudaLaunchKernel,
       (cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream),
       (kernel, grid, block, args, shmem, stream), (const void *)kernel, stream)
LAUNCH(__cudaLaunchKernel_ptsz,
       (cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t stream),
       (kernel, grid, block, args, shmem, stream), (const void *)kernel, stream)
