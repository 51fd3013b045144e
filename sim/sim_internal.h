/* sim/sim_internal.h: the internals shared by the files of the simulated CUDA runtime.
 * Everything declared here is hidden: the exported entry points live only in sim/cudart.c and
 * call these implementations directly, never another exported name, so an LD_PRELOADed shim
 * sees exactly the calls the program made and none of the simulator's own. */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* --- state.c: configuration, clock, sleeping, errors, call counters, debug output ---------- */

/* Configuration read once from SIMCUDA_* (see sim/README.md), changeable by the control API. */
extern _Atomic uint64_t sim_default_kernel_ns;
extern _Atomic double sim_copy_bytes_per_ns;
extern _Atomic double
    sim_device_bytes_per_ns; /* device memory, for the vendor libraries' kernels */
extern int sim_debug_level;  /* 0 quiet, 1 syncs and errors, 2 every call */

void sim_init(void);
uint64_t sim_now_ns(void);
/* The one way a call synchronizes with the device: counts it for the calling thread
 * (simcuda_thread_sync_count), then sleeps until deadline_ns on CLOCK_MONOTONIC (absolute,
 * no busy wait, restarts on EINTR; returns at once when the work is already done). */
void sim_wait_until(uint64_t deadline_ns);
unsigned long long sim_thread_sync_count(void);
/* ns from now until deadline_ns, 0 when it has passed (for debug output). */
long long sim_ns_left(uint64_t deadline_ns);
/* Timeline length of a copy or memset of bytes at the configured speed. */
uint64_t sim_copy_ns(size_t bytes);

/* One per exported entry point, placed in the section "simcuda_counters" so that
 * simcuda_call_count can find every counter without a hand-kept list. */
struct sim_counter {
    const char *name;
    _Atomic unsigned long long calls;
} __attribute__((aligned(16)));

/* Counts a call of an entry point; sim_enter also makes the primary context active, as every
 * runtime call does but the queries (device count and properties, versions, errors). Every one
 * but sim_enter_pure's (versions, errors) initializes the driver first, as the real runtime's
 * first call does. */
void sim_enter(struct sim_counter *counter);
void sim_enter_query(struct sim_counter *counter);
void sim_enter_pure(struct sim_counter *counter);
/* The driver: initialized by cuInit or the runtime's first call that needs it (as the real
 * runtime's first call runs cuInit); the simulated driver answers CUDA_ERROR_NOT_INITIALIZED for
 * its devices until then. Unlike the real runtime this one does not load libcuda.so.1 then: the
 * simulated libcuda.so.1 links this library, and would keep it from being unloaded. */
void sim_driver_init(void);
bool sim_driver_is_initialized(void);
void sim_ctx_activate(void);
bool sim_ctx_is_active(void);
unsigned long long sim_call_count(const char *api);

/* Records err as this thread's last error (cudaGetLastError) unless it is a success or a
 * "not ready" answer, and returns it. */
cudaError_t sim_ret(cudaError_t err);
cudaError_t sim_take_last_error(bool reset);

void sim_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define SIM_DBG(level, ...)                \
    do {                                   \
        if (sim_debug_level >= (level))    \
            sim_log((level), __VA_ARGS__); \
    } while (0)

/* --- timeline.c: streams, events, the device timeline, host functions ---------------------- */

/* Which stream a 0 handle means: the legacy default stream (plain entry points) or the
 * calling thread's per-thread default stream (_ptsz / _ptds entry points). */
typedef enum { SIM_DEF_LEGACY, SIM_DEF_PER_THREAD } sim_default_t;

/* Queues an operation of dur_ns on stream: it starts at max(now, the stream's queued work,
 * the implicit legacy-stream dependencies, dep_ns) and the stream is busy until it ends.
 * With all_streams it also waits for the work of every stream (cudaMemcpyPeer).
 * *start_ns / *end_ns (either may be NULL) receive its timeline position. */
cudaError_t sim_enqueue(cudaStream_t stream, sim_default_t def, uint64_t dur_ns, uint64_t dep_ns,
                        bool all_streams, uint64_t *start_ns, uint64_t *end_ns);
cudaError_t sim_stream_check(cudaStream_t stream, sim_default_t def);

cudaError_t sim_stream_create(cudaStream_t *out, unsigned flags, int priority);
cudaError_t sim_stream_destroy(cudaStream_t stream);
/* A kernel of dur_ns (sim_enqueue's), recorded as a kernel node when the stream captures. */
cudaError_t sim_enqueue_kernel(cudaStream_t stream, sim_default_t def, uint64_t dur_ns,
                               const void *kernel, uint64_t *start_ns, uint64_t *end_ns);
/* Whether this thread's last sim_enqueue[_kernel] was captured into a graph (not run: no bytes
 * move, nothing is waited for). */
bool sim_last_enqueue_captured(void);
/* Stream capture (sim/timeline.c): begin, end (the graph, or cudaErrorStreamCaptureInvalidated),
 * the status and id of a stream's capture. */
cudaError_t sim_capture_begin(cudaStream_t stream, sim_default_t def,
                              enum cudaStreamCaptureMode mode);
cudaError_t sim_capture_end(cudaStream_t stream, sim_default_t def, cudaGraph_t *out);
cudaError_t sim_capture_info(cudaStream_t stream, sim_default_t def,
                             enum cudaStreamCaptureStatus *status, unsigned long long *id,
                             cudaGraph_t *graph);
/* Before a call that may make the host wait or allocate ("potentially unsafe" during capture):
 * cudaErrorStreamCaptureUnsupported (and the conflicting captures invalidated) when this
 * thread's capture mode forbids it now; blocking_use also refuses waiting on a capturing stream. */
cudaError_t sim_capture_unsafe_call(void);
cudaError_t sim_capture_blocking_use(cudaStream_t stream, sim_default_t def);
/* The calling thread's capture mode (cudaThreadExchangeStreamCaptureMode; sim/cudart_ext.c). */
enum cudaStreamCaptureMode sim_thread_capture_mode(void);
/* Graphs (sim/graphs.c): made empty or by capture, a node per captured operation (its duration;
 * kernel: the kernel, else NULL), launched by replaying the durations on a stream. */
cudaError_t sim_graph_create(cudaGraph_t *out);
cudaError_t sim_graph_destroy(cudaGraph_t graph);
cudaError_t sim_graph_append(cudaGraph_t graph, uint64_t ns, const void *kernel);
cudaError_t sim_graph_nodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count);
cudaError_t sim_graph_instantiate(cudaGraphExec_t *out, cudaGraph_t graph);
cudaError_t sim_graph_exec_destroy(cudaGraphExec_t exec);
cudaError_t sim_graph_upload(cudaGraphExec_t exec, cudaStream_t stream, sim_default_t def);
cudaError_t sim_graph_launch(cudaGraphExec_t exec, cudaStream_t stream, sim_default_t def);
cudaError_t sim_graph_dot(cudaGraph_t graph, const char *path);
cudaError_t sim_stream_query(cudaStream_t stream, sim_default_t def);
cudaError_t sim_stream_synchronize(cudaStream_t stream, sim_default_t def);
cudaError_t sim_stream_wait_event(cudaStream_t stream, sim_default_t def, cudaEvent_t event,
                                  unsigned flags);
cudaError_t sim_stream_get_flags(cudaStream_t stream, sim_default_t def, unsigned *flags);
cudaError_t sim_stream_get_priority(cudaStream_t stream, sim_default_t def, int *priority);
cudaError_t sim_stream_get_id(cudaStream_t stream, sim_default_t def, unsigned long long *id);
uint64_t sim_stream_ready_ns(cudaStream_t stream);
uint64_t sim_device_ready_ns(void);
cudaError_t sim_device_synchronize(void);

cudaError_t sim_event_create(cudaEvent_t *out, unsigned flags);
cudaError_t sim_event_destroy(cudaEvent_t event);
cudaError_t sim_event_record(cudaEvent_t event, cudaStream_t stream, sim_default_t def);
cudaError_t sim_event_query(cudaEvent_t event);
cudaError_t sim_event_synchronize(cudaEvent_t event);
cudaError_t sim_event_elapsed(float *ms, cudaEvent_t start, cudaEvent_t end);

/* Host callbacks run on the simulator's host-function thread when the timeline reaches them. */
cudaError_t sim_launch_host_func(cudaStream_t stream, sim_default_t def, cudaHostFn_t fn,
                                 void *user);
cudaError_t sim_stream_add_callback(cudaStream_t stream, sim_default_t def, cudaStreamCallback_t cb,
                                    void *user, unsigned flags);

/* --- memory.c: the range table (which bytes are device, pinned, managed) and arrays -------- */

enum sim_mem_kind { SIM_MEM_PAGEABLE = 0, SIM_MEM_PINNED, SIM_MEM_DEVICE, SIM_MEM_MANAGED };

struct sim_range {
    uintptr_t base;
    size_t size;
    enum sim_mem_kind kind;
    unsigned flags; /* cudaHostAlloc / cudaHostRegister / cudaMallocManaged flags */
    bool owned;     /* allocated by the simulator: released with free() */
    bool symbol;    /* a __device__ variable registered by __cudaRegisterVar */
};

/* Kind of the memory at p; *out (optional) receives its range when it is not pageable. */
enum sim_mem_kind sim_mem_lookup(const void *p, struct sim_range *out);
/* The allocation holding p (device, pinned or managed): its base and size. */
cudaError_t sim_mem_range(const void *p, void **base, size_t *size);
/* cudaErrorInvalidValue when [p, p+len) starts inside a known range but runs past its end. */
cudaError_t sim_mem_check_span(const void *p, size_t len);

cudaError_t sim_mem_alloc(void **out, size_t size, enum sim_mem_kind kind, unsigned flags);
/* Releases an allocation of one of the kinds in kind_mask (1 << kind); no synchronization. */
cudaError_t sim_mem_release(void *p, unsigned kind_mask);
cudaError_t sim_mem_host_register(void *p, size_t size, unsigned flags);
cudaError_t sim_mem_host_unregister(void *p);
void sim_mem_register_symbol(void *p, size_t size);
cudaError_t sim_mem_get_info(size_t *free_bytes, size_t *total_bytes);
cudaError_t sim_mem_pointer_attributes(struct cudaPointerAttributes *attr, const void *p);
void sim_mem_release_all(void);

struct cudaArray {
    struct cudaArray *next;
    struct cudaChannelFormatDesc desc;
    size_t width, height, depth; /* as allocated: elements, rows, slices (0 for 1D / 2D) */
    size_t rows, slices;         /* height and depth, at least 1 */
    size_t elem_bytes;
    size_t pitch; /* bytes per row: width * elem_bytes */
    unsigned flags;
    unsigned char *data;
};
cudaError_t sim_array_alloc(cudaArray_t *out, const struct cudaChannelFormatDesc *desc,
                            size_t width, size_t height, size_t depth, unsigned flags);
cudaError_t sim_array_release(cudaArray_t array);
/* The array if it is a live one, else NULL. */
struct cudaArray *sim_array_lookup(cudaArray_const_t array);

/* --- contents.c: what device memory reads as (written by copies/memsets, else zero) -------- */

void sim_contents_kernel(void);                               /* a kernel was launched */
void sim_contents_written(const void *p, size_t n);           /* a copy or memset wrote [p, p+n) */
void sim_contents_read(void *dst, const void *src, size_t n); /* a copy reads [src, src+n) */

/* --- copy.c: memcpy and memset, with their synchronization rules ---------------------------- */

cudaError_t sim_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                       cudaStream_t stream, sim_default_t def, bool async_api);
cudaError_t sim_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                          size_t height, enum cudaMemcpyKind kind, cudaStream_t stream,
                          sim_default_t def, bool async_api);
cudaError_t sim_memcpy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t stream, sim_default_t def,
                          bool async_api);
cudaError_t sim_memcpy_3d_peer(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream,
                               sim_default_t def, bool async_api);
cudaError_t sim_memcpy_peer(void *dst, int dst_dev, const void *src, int src_dev, size_t count,
                            cudaStream_t stream, sim_default_t def, bool async_api);
cudaError_t sim_memcpy_symbol(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                              bool to_symbol, cudaStream_t stream, sim_default_t def,
                              bool async_api);
/* Array copies: the legacy 1D/2D forms with byte offsets. to_array: host/device -> array. */
cudaError_t sim_memcpy_array_2d(cudaArray_t dst_arr, size_t dst_w, size_t dst_h,
                                cudaArray_const_t src_arr, size_t src_w, size_t src_h, void *dst,
                                size_t dpitch, const void *src, size_t spitch, size_t width,
                                size_t height, enum cudaMemcpyKind kind, cudaStream_t stream,
                                sim_default_t def, bool async_api);
cudaError_t sim_memcpy_array_linear(cudaArray_t dst_arr, size_t dst_w, size_t dst_h,
                                    cudaArray_const_t src_arr, size_t src_w, size_t src_h,
                                    void *dst, const void *src, size_t count,
                                    enum cudaMemcpyKind kind, cudaStream_t stream,
                                    sim_default_t def, bool async_api);
cudaError_t sim_memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes,
                             size_t count, cudaStream_t stream, sim_default_t def);
cudaError_t sim_memcpy_3d_batch(size_t n, const struct cudaMemcpy3DBatchOp *ops,
                                cudaStream_t stream, sim_default_t def);
cudaError_t sim_memset(void *p, size_t pitch, int value, size_t width, size_t height, size_t depth,
                       size_t slice_rows, cudaStream_t stream, sim_default_t def, bool async_api);

/* cuMemsetD32[Async]: count 32-bit words of value (p 4-byte aligned). */
cudaError_t sim_memset_d32(void *p, uint32_t value, size_t count, cudaStream_t stream,
                           sim_default_t def, bool async_api);

/* --- kernels.c: kernel table, registration, launches --------------------------------------- */

cudaError_t sim_launch(const void *func, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
                       sim_default_t def);
/* A kernel of exactly ns on the stream, without the launch-configuration checks (the vendor
 * libraries' kernels, whose durations come from their sizes). */
cudaError_t sim_launch_ns(const void *func, uint64_t ns, cudaStream_t stream, sim_default_t def);
void sim_kernel_set_ns(const void *func, uint64_t ns);
cudaError_t sim_kernel_handle(cudaKernel_t *out, const void *func);
cudaError_t sim_kernel_name(const char **name, const void *func);
void sim_kernel_register(const void *host_fn, const char *device_name);
/* The context's limits (cudaLimit / CUlimit values; cudaErrorUnsupportedLimit beyond them). */
cudaError_t sim_limit_get(size_t *value, int limit);
cudaError_t sim_limit_set(int limit, size_t value);
/* Kernels queued so far (simcuda_kernel_count), and launch calls (simcuda_launch_count: each
 * kernel launched by itself, captured or not, each graph launch once); sim_graph_replay(true/false) brackets a
 * graph launch's replay on the calling thread. */
unsigned long long sim_kernel_count(void);
unsigned long long sim_launch_count(void);
void sim_graph_replay(bool begin);
cudaError_t sim_occupancy(int *blocks_per_sm, const void *func, int block_size);
unsigned sim_push_call_config(dim3 grid, dim3 block, size_t shmem, cudaStream_t stream);
cudaError_t sim_pop_call_config(dim3 *grid, dim3 *block, size_t *shmem, cudaStream_t *stream);

/* --- device.c: the one simulated device ---------------------------------------------------- */

cudaError_t sim_device_check(int device);
cudaError_t sim_device_properties(struct cudaDeviceProp *prop, int device);
cudaError_t sim_device_attribute(int *value, enum cudaDeviceAttr attr, int device);
const char *sim_error_name(cudaError_t err);
const char *sim_error_string(cudaError_t err);

/* --- pools.c: memory pools (cudaMemPool_t) ---------------------------------------------- */

cudaMemPool_t sim_pool_default(void);
cudaMemPool_t sim_pool_current(void);
cudaError_t sim_pool_check(cudaMemPool_t pool);
cudaError_t sim_pool_set_current(cudaMemPool_t pool);
cudaError_t sim_pool_create(cudaMemPool_t *out, const struct cudaMemPoolProps *props);
cudaError_t sim_pool_destroy(cudaMemPool_t pool);
cudaError_t sim_pool_attribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value,
                               bool set);
cudaError_t sim_pool_set_access(cudaMemPool_t pool, const struct cudaMemAccessDesc *list,
                                size_t count);
cudaError_t sim_pool_get_access(enum cudaMemAccessFlags *flags, cudaMemPool_t pool,
                                struct cudaMemLocation *location);

/* --- driver_lookup.c: the driver under this runtime ----------------------------------------- */

/* The simulated libcuda.so.1's function for a driver symbol (cuGetProcAddress's answer for
 * cudaVersion, the per-thread-default-stream form when per_thread), or NULL. */
void *sim_driver_proc(const char *symbol, unsigned cuda_version, bool per_thread);

#define SIM_MAX(a, b) ((a) > (b) ? (a) : (b))

#pragma GCC visibility pop
#endif
