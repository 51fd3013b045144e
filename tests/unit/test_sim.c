/* tests/unit/test_sim.c: the simulated CUDA device (build/sim/libcudart.so.13), linked like a
 * CUDA program; built again against the CUDA 12 headers and build/sim12/libcudart.so.12 as
 * test_sim_cuda12 (`make test-sim12`), where it also checks the forms only CUDA 12 has.
 * Checks that each call blocks exactly when CUDA's "API synchronization behavior" says it does,
 * for as long as the timeline says, and that copies move real bytes.
 * Robust on a loaded machine: whether a call waited is read from simcuda_thread_sync_count,
 * how long from the clock by lower bounds only, and timeline positions are bracketed by clock
 * readings taken before and after the call, never by guessed upper bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "sim/simcuda.h"

#include <cupti.h>

#define MS 1000000ull

/* The twins the header declares only under CUDA_API_PER_THREAD_DEFAULT_STREAM, and nvcc's
 * hooks: the same types as the plain entry points / crt/host_runtime.h. */
extern __typeof__(cudaMemcpy) cudaMemcpy_ptds;
extern __typeof__(cudaMemcpyAsync) cudaMemcpyAsync_ptsz;
extern __typeof__(cudaMemsetAsync) cudaMemsetAsync_ptsz;
extern __typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz;
extern __typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;
extern __typeof__(cudaStreamQuery) cudaStreamQuery_ptsz;
#if CUDART_VERSION >= 13000
extern __typeof__(cudaStreamGetCaptureInfo) cudaStreamGetCaptureInfo_ptsz;
#else
extern __typeof__(cudaStreamGetCaptureInfo_v3) cudaStreamGetCaptureInfo_v3_ptsz;
extern __typeof__(cudaStreamGetCaptureInfo_v2) cudaStreamGetCaptureInfo_v2_ptsz;
#endif
extern __typeof__(cudaEventRecord) cudaEventRecord_ptsz;
extern cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *entryFuncAddr);
extern cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                      size_t sharedMem, cudaStream_t stream);
extern void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global);
extern void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                                   dim3 *bDim, dim3 *gDim, int *wSize);

/* "Kernels": any host address names one. */
static void k_20ms(void)
{
}
static void k_30ms(void)
{
}
static void k_10ms(void)
{
}
static void k_short(void)
{
}
static void k_handle(void)
{
}
static void k_named(void)
{
}
static void k_unnamed(void)
{
}

static const dim3 one = {1, 1, 1};

static unsigned long long now(void)
{
    return simcuda_now_ns();
}

static void launch(void (*k)(void), cudaStream_t s)
{
    assert_int_equal(cudaLaunchKernel((const void *)k, one, one, NULL, 0, s), cudaSuccess);
}

/* call succeeds without making the host wait for the device. */
#define assert_no_wait(call)                                     \
    do {                                                         \
        unsigned long long syncs_ = simcuda_thread_sync_count(); \
        assert_int_equal((call), cudaSuccess);                   \
        assert_int_equal(simcuda_thread_sync_count(), syncs_);   \
    } while (0)

/* call succeeds after waiting for the device, not returning before stream's work ended. */
#define assert_waits(call, stream)                                 \
    do {                                                           \
        unsigned long long syncs_ = simcuda_thread_sync_count();   \
        assert_int_equal((call), cudaSuccess);                     \
        assert_int_equal(simcuda_thread_sync_count(), syncs_ + 1); \
        assert_true(now() >= simcuda_stream_ready_ns(stream));     \
    } while (0)

static int setup(void **state)
{
    (void)state;
    simcuda_set_kernel_ns((const void *)k_20ms, 20 * MS);
    simcuda_set_kernel_ns((const void *)k_30ms, 30 * MS);
    simcuda_set_kernel_ns((const void *)k_10ms, 10 * MS);
    simcuda_set_kernel_ns((const void *)k_short, 1000);
    return 0;
}

/* Each test starts on an idle device. */
static int idle(void **state)
{
    (void)state;
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

/* main sets SIMCUDA_KERNEL_NS=4000000 and SIMCUDA_COPY_GBPS=5 before the first CUDA call;
 * afterwards the control API restores the defaults (1000 ns, 10 bytes/ns). */
/* The driver as a tool sees it (entry/cuda_driver.h): until the runtime's first call that needs
 * the driver (not the pure ones: versions, error strings) the driver knows no device:
 * CUDA_ERROR_NOT_INITIALIZED (3). Runs first: the driver's state is the process's. */
static void test_driver_initialized_by_the_runtimes_first_call(void **state)
{
    (void)state;
    /* the libcuda.so.1 beside the runtime (by path: under ASan its dlopen interceptor is the
     * caller, and this program's RUNPATH is not searched) */
    Dl_info info;
    assert_true(dladdr((void *)&cudaGetDeviceCount, &info) && info.dli_fname);
    char path[4096];
    const char *slash = strrchr(info.dli_fname, '/');
    assert_non_null(slash);
    snprintf(path, sizeof path, "%.*s/libcuda.so.1", (int)(slash - info.dli_fname), info.dli_fname);
    void *h = dlopen(path, RTLD_LAZY);
    assert_non_null(h);
    int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    assert_non_null(count);
    assert_non_null(get);
    int n = -1, dev = -1, v = 0;
    assert_int_equal(count(&n), 3 /* CUDA_ERROR_NOT_INITIALIZED */);
    assert_int_equal(cudaRuntimeGetVersion(&v), cudaSuccess);
    assert_int_equal(cudaDriverGetVersion(&v), cudaSuccess);
    assert_non_null(cudaGetErrorString(cudaErrorInvalidValue));
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(count(&n), 3);
    assert_int_equal(get(&dev, 0), 3);
    int devices = 0;
    assert_int_equal(cudaGetDeviceCount(&devices), cudaSuccess);
    assert_int_equal(devices, 1);
    assert_int_equal(count(&n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(get(&dev, 0), 0);
    assert_int_equal(dev, 0);
    dlclose(h);
}

static void test_environment_sets_the_defaults(void **state)
{
    (void)state;
    const size_t n = 1 << 20;
    void *a, *b;
    assert_int_equal(cudaMalloc(&a, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&b, n), cudaSuccess);
    unsigned long long t0 = now();
    launch(k_unnamed, 0);
    unsigned long long t1 = now(), kernel_end = simcuda_stream_ready_ns(0);
    assert_true(kernel_end >= t0 + 4 * MS && kernel_end <= t1 + 4 * MS);
    unsigned long long t2 = now();
    assert_int_equal(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0), cudaSuccess);
    unsigned long long t3 = now();
    /* The copy starts at the later of the kernel's end and its enqueue, and lasts n / 5 ns. */
    unsigned long long copy_start = simcuda_stream_ready_ns(0) - (n + 2) / 5;
    assert_true(copy_start >= (kernel_end > t2 ? kernel_end : t2));
    assert_true(copy_start <= (kernel_end > t3 ? kernel_end : t3));
    simcuda_set_default_kernel_ns(1000);
    simcuda_set_copy_bytes_per_ns(10.0);
    assert_int_equal(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaFree(a), cudaSuccess);
    assert_int_equal(cudaFree(b), cudaSuccess);
}

static void test_kernel_then_stream_synchronize_blocks_for_its_duration(void **state)
{
    (void)state;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    unsigned long long launches = simcuda_call_count("cudaLaunchKernel");
    unsigned long long t0 = now();
    assert_no_wait(cudaLaunchKernel((const void *)k_20ms, one, one, NULL, 0, s));
    unsigned long long t1 = now(), end = simcuda_stream_ready_ns(s);
    assert_true(end >= t0 + 20 * MS && end <= t1 + 20 * MS);
    if (now() < end)
        assert_int_equal(cudaStreamQuery(s), cudaErrorNotReady);
    assert_waits(cudaStreamSynchronize(s), s);
    unsigned long long blocked = now() - t0;
    assert_true(blocked >= 20 * MS);
    assert_true(blocked < 20 * MS + 500 * MS); /* only the lower bound is strict */
    assert_int_equal(cudaStreamQuery(s), cudaSuccess);
    assert_int_equal(simcuda_call_count("cudaLaunchKernel"), launches + 1);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static unsigned char pageable_buf[1 << 20]; /* static: a failing assertion cannot leak it */

static void test_async_copy_pinned_returns_pageable_blocks(void **state)
{
    (void)state;
    const size_t n = sizeof pageable_buf; /* 1 MiB at 10 bytes/ns: 105 us on the timeline */
    cudaStream_t s;
    void *dev, *pinned;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cudaMalloc(&dev, n), cudaSuccess);
    assert_int_equal(cudaMallocHost(&pinned, n), cudaSuccess);
    launch(k_20ms, s);
    /* Set after the kernel, so the bytes read back (sim/contents.c). */
    assert_int_equal(cudaMemsetAsync(dev, 0x5a, n, s), cudaSuccess);
    unsigned long long kernel_end = simcuda_stream_ready_ns(s);
    assert_no_wait(cudaMemcpyAsync(pinned, dev, n, cudaMemcpyDeviceToHost, s));
    unsigned long long pinned_end = simcuda_stream_ready_ns(s);
    assert_true(pinned_end >= kernel_end + n / 10);

    assert_waits(cudaMemcpyAsync(pageable_buf, dev, n, cudaMemcpyDeviceToHost, s), s);
    assert_true(simcuda_stream_ready_ns(s) >= pinned_end + n / 10);
    assert_int_equal(pageable_buf[n - 1], 0x5a);

    /* Host-to-device from pageable memory through the async API waits as well. */
    launch(k_10ms, s);
    assert_waits(cudaMemcpyAsync(dev, pageable_buf, n, cudaMemcpyHostToDevice, s), s);

    assert_int_equal(cudaFreeHost(pinned), cudaSuccess);
    assert_int_equal(cudaFree(dev), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void test_memcpy_sync_rules(void **state)
{
    (void)state;
    const size_t n = 4096;
    void *a, *b, *pinned;
    assert_int_equal(cudaMalloc(&a, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&b, n), cudaSuccess);
    assert_int_equal(cudaMallocHost(&pinned, n), cudaSuccess);

    /* Device to device: only queued behind the legacy stream's kernel. */
    launch(k_20ms, 0);
    unsigned long long kernel_end = simcuda_stream_ready_ns(0);
    assert_no_wait(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
    assert_no_wait(cudaMemcpyPeer(b, 0, a, 0, n));
    /* Host to device from pinned memory: synchronous for the host. */
    assert_waits(cudaMemcpy(a, pinned, n, cudaMemcpyHostToDevice), 0);
    assert_true(now() >= kernel_end);
    /* cudaMemcpyDefault infers device to host and waits. */
    launch(k_10ms, 0);
    assert_waits(cudaMemcpy(pinned, a, n, cudaMemcpyDefault), 0);
    /* An async copy with pinned memory does not wait, nor does device to device. */
    launch(k_10ms, 0);
    assert_no_wait(cudaMemcpyAsync(pinned, a, n, cudaMemcpyDefault, 0));
    assert_no_wait(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, 0));
    /* Host to host always waits. */
    assert_waits(cudaMemcpy(a, pinned, n, cudaMemcpyHostToHost), 0);
    assert_int_equal(cudaMemcpy(a, pinned, n, (enum cudaMemcpyKind)7),
                     cudaErrorInvalidMemcpyDirection);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
    assert_int_equal(cudaGetLastError(), cudaSuccess);

    assert_int_equal(cudaFree(a), cudaSuccess);
    assert_int_equal(cudaFree(b), cudaSuccess);
    assert_int_equal(cudaFreeHost(pinned), cudaSuccess);
}

static void test_memset_rules(void **state)
{
    (void)state;
    const size_t n = 4096;
    unsigned char *dev, *pinned, *managed, pageable[64];
    assert_int_equal(cudaMalloc((void **)&dev, n), cudaSuccess);
    assert_int_equal(cudaMallocHost((void **)&pinned, n), cudaSuccess);
    assert_int_equal(cudaMallocManaged((void **)&managed, n, cudaMemAttachGlobal), cudaSuccess);

    launch(k_20ms, 0);
    assert_no_wait(cudaMemset(dev, 7, n));
    assert_int_equal(dev[n - 1], 7);
    assert_no_wait(cudaMemset2DAsync(dev, 64, 1, 32, 4, 0));
    assert_int_equal(dev[64 + 31], 1);
    assert_int_equal(dev[64 + 32], 7);
    /* "The Async versions are always asynchronous with respect to the host" */
    assert_no_wait(cudaMemsetAsync(pinned, 9, n, 0));
    assert_int_equal(pinned[0], 9);
    assert_no_wait(cudaMemsetAsync(managed, 4, n, 0));
    assert_no_wait(cudaMemset2DAsync(pinned, 64, 5, 32, 4, 0));
    assert_waits(cudaMemset(pinned, 6, n), 0);
    assert_waits(cudaMemset(managed, 3, n), 0);
    assert_int_equal(managed[17], 3);
    assert_int_equal(cudaMemset(pageable, 0, sizeof pageable), cudaErrorInvalidValue);
    assert_int_equal(cudaMemset(dev, 0, n + 1), cudaErrorInvalidValue); /* runs past the end */

    assert_int_equal(cudaFree(dev), cudaSuccess);
    assert_int_equal(cudaFree(managed), cudaSuccess);
    assert_int_equal(cudaFreeHost(pinned), cudaSuccess);
}

static void test_pointer_attributes(void **state)
{
    (void)state;
    struct cudaPointerAttributes a;
    static char heap[64]; /* static: a failing assertion cannot leak it */
    void *dev, *pinned, *managed;
    int stack;
    assert_int_equal(cudaMalloc(&dev, 256), cudaSuccess);
    assert_int_equal(cudaHostAlloc(&pinned, 256, cudaHostAllocDefault), cudaSuccess);
    assert_int_equal(cudaMallocManaged(&managed, 256, cudaMemAttachGlobal), cudaSuccess);

    assert_int_equal(cudaPointerGetAttributes(&a, (char *)dev + 10), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeDevice);
    assert_int_equal(a.device, 0);
    assert_ptr_equal(a.devicePointer, (char *)dev + 10);
    assert_null(a.hostPointer);

    assert_int_equal(cudaPointerGetAttributes(&a, pinned), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeHost);
    assert_ptr_equal(a.hostPointer, pinned);
    assert_ptr_equal(a.devicePointer, pinned);

    assert_int_equal(cudaPointerGetAttributes(&a, managed), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeManaged);

    const void *unknown[] = {heap, &stack, NULL};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(cudaPointerGetAttributes(&a, unknown[i]), cudaSuccess);
        assert_int_equal(a.type, cudaMemoryTypeUnregistered);
        assert_int_equal(a.device, cudaInvalidDeviceId);
        assert_null(a.devicePointer);
        assert_ptr_equal(a.hostPointer, unknown[i]);
    }

    assert_int_equal(cudaHostRegister(heap, 64, cudaHostRegisterDefault), cudaSuccess);
    assert_int_equal(cudaHostRegister(heap, 64, cudaHostRegisterDefault),
                     cudaErrorHostMemoryAlreadyRegistered);
    assert_int_equal(cudaPointerGetAttributes(&a, (char *)heap + 63), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeHost);
    assert_int_equal(cudaHostUnregister(heap), cudaSuccess);
    assert_int_equal(cudaHostUnregister(heap), cudaErrorHostMemoryNotRegistered);
    assert_int_equal(cudaPointerGetAttributes(&a, heap), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeUnregistered);

    assert_int_equal(cudaFree(dev), cudaSuccess);
    assert_int_equal(cudaFreeHost(pinned), cudaSuccess);
    assert_int_equal(cudaFree(managed), cudaSuccess);
    assert_int_equal(cudaPointerGetAttributes(&a, dev), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeUnregistered);
}

static void test_legacy_stream_waits_for_blocking_streams_only(void **state)
{
    (void)state;
    cudaStream_t blocking, nonblocking;
    assert_int_equal(cudaStreamCreate(&blocking), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);

    /* Legacy work queued after a blocking stream's work starts after it. */
    launch(k_20ms, blocking);
    unsigned long long blocking_end = simcuda_stream_ready_ns(blocking);
    launch(k_short, 0);
    assert_true(simcuda_stream_ready_ns(0) >= blocking_end + 1000);
    assert_waits(cudaStreamSynchronize(0), 0);
    assert_true(now() >= blocking_end);

    /* ...and a blocking stream's later work waits for the legacy stream's. */
    launch(k_10ms, 0);
    launch(k_short, blocking);
    assert_true(simcuda_stream_ready_ns(blocking) >= simcuda_stream_ready_ns(0) + 1000);

    /* A non-blocking stream neither waits (it starts at the later of now and its own
     * work) nor is waited for. */
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    launch(k_20ms, nonblocking);
    unsigned long long nonblocking_end = simcuda_stream_ready_ns(nonblocking);
    unsigned long long legacy_before = simcuda_stream_ready_ns(0);
    launch(k_short, cudaStreamLegacy);
    unsigned long long t1 = now();
    assert_true(simcuda_stream_ready_ns(0) <= (legacy_before > t1 ? legacy_before : t1) + 1000);
    launch(k_30ms, 0);
    launch(k_short, nonblocking);
    t1 = now();
    assert_true(simcuda_stream_ready_ns(nonblocking) <=
                (nonblocking_end > t1 ? nonblocking_end : t1) + 1000);

    /* cudaStreamWaitEvent makes one stream wait for a point of another. */
    cudaEvent_t e;
    assert_int_equal(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    assert_int_equal(cudaEventRecord(e, 0), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(nonblocking, e, 0), cudaSuccess);
    launch(k_short, nonblocking);
    assert_true(simcuda_stream_ready_ns(nonblocking) >= simcuda_stream_ready_ns(0) + 1000);
    assert_int_equal(cudaEventDestroy(e), cudaSuccess);

    /* Device synchronize waits for every stream. */
    unsigned long long device_end = simcuda_device_ready_ns();
    assert_true(device_end >= simcuda_stream_ready_ns(nonblocking));
    assert_waits(cudaDeviceSynchronize(), nonblocking);
    assert_true(now() >= device_end);
    assert_int_equal(cudaStreamDestroy(blocking), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(nonblocking), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(nonblocking), cudaErrorInvalidResourceHandle);
}

static void test_events(void **state)
{
    (void)state;
    cudaStream_t s;
    cudaEvent_t start, stop, never;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cudaEventCreate(&start), cudaSuccess);
    assert_int_equal(cudaEventCreate(&stop), cudaSuccess);
    assert_int_equal(cudaEventCreate(&never), cudaSuccess);

    assert_no_wait(cudaEventRecord(start, s));
    unsigned long long start_at = simcuda_stream_ready_ns(s);
    launch(k_10ms, s);
    assert_no_wait(cudaEventRecord(stop, s));
    unsigned long long stop_at = simcuda_stream_ready_ns(s);
    assert_true(stop_at >= start_at + 10 * MS);
    float ms = 0;
    if (now() < stop_at) {
        assert_int_equal(cudaEventQuery(stop), cudaErrorNotReady);
        assert_int_equal(cudaEventElapsedTime(&ms, start, stop), cudaErrorNotReady);
    }
    assert_waits(cudaEventSynchronize(stop), s);
    assert_int_equal(cudaEventQuery(stop), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    double expect_ms = (double)(stop_at - start_at) / 1e6;
    assert_true(ms >= 10.0f && ms > expect_ms - 1e-3 && ms < expect_ms + 1e-3);

    /* Never recorded: query and synchronize succeed at once, elapsed time cannot be had. */
    assert_int_equal(cudaEventQuery(never), cudaSuccess);
    assert_waits(cudaEventSynchronize(never), s);
    assert_int_equal(cudaEventElapsedTime(&ms, start, never), cudaErrorInvalidResourceHandle);

    assert_int_equal(cudaEventDestroy(start), cudaSuccess);
    assert_int_equal(cudaEventDestroy(stop), cudaSuccess);
    assert_int_equal(cudaEventDestroy(never), cudaSuccess);
    assert_int_equal(cudaEventDestroy(never), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void test_free_synchronizes_free_null_does_not(void **state)
{
    (void)state;
    cudaStream_t s;
    void *dev, *pinned;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaMalloc(&dev, 1024), cudaSuccess);
    assert_int_equal(cudaMallocHost(&pinned, 1024), cudaSuccess);

    launch(k_20ms, s);
    assert_no_wait(cudaFree(NULL));
    assert_no_wait(cudaFreeHost(NULL));
    unsigned long long t0 = now();
    assert_waits(cudaFree(dev), s); /* waits for the whole device, this stream included */
    assert_true(now() - t0 >= 10 * MS);

    launch(k_10ms, s);
    assert_waits(cudaFreeHost(pinned), s);

    /* cudaFreeAsync is stream-ordered: no host wait. */
    assert_int_equal(cudaMallocAsync(&dev, 1024, s), cudaSuccess);
    launch(k_10ms, s);
    assert_no_wait(cudaFreeAsync(dev, s));

    int local;
    assert_int_equal(cudaFree(&local), cudaErrorInvalidValue);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

struct per_thread_run {
    pthread_barrier_t *launched;
    void (*kernel)(void);
    unsigned long long ns;
    unsigned long long before, launched_at, end, returned;
};

static void *per_thread_worker(void *arg)
{
    struct per_thread_run *r = arg;
    /* Stream 0 through a _ptsz entry point is this thread's own default stream. */
    r->before = simcuda_stream_ready_ns(cudaStreamPerThread);
    r->launched_at = simcuda_now_ns();
    cudaLaunchKernel_ptsz((const void *)r->kernel, one, one, NULL, 0, 0);
    r->end = simcuda_stream_ready_ns(cudaStreamPerThread);
    r->returned = simcuda_now_ns(); /* now: after the launch */
    pthread_barrier_wait(r->launched);
    cudaStreamSynchronize_ptsz(0);
    return NULL;
}

static void test_per_thread_default_streams_are_independent(void **state)
{
    (void)state;
    pthread_barrier_t launched;
    pthread_barrier_init(&launched, NULL, 2);
    struct per_thread_run slow = {&launched, k_30ms, 30 * MS, 0, 0, 0, 0};
    struct per_thread_run fast = {&launched, k_short, 1000, 0, 0, 0, 0};
    pthread_t a, b;
    pthread_create(&a, NULL, per_thread_worker, &slow);
    pthread_create(&b, NULL, per_thread_worker, &fast);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&launched);
    /* Each thread's kernel starts at the later of its launch and its own stream's work: a
     * stream of its own, not shared with the other thread. */
    const struct per_thread_run *runs[] = {&slow, &fast};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(runs[i]->before, 0); /* no work yet: a fresh stream */
        assert_true(runs[i]->end >= runs[i]->launched_at + runs[i]->ns);
        assert_true(runs[i]->end <= runs[i]->returned + runs[i]->ns);
    }

    /* A per-thread stream still synchronizes with the legacy stream. */
    launch(k_10ms, 0);
    assert_int_equal(cudaLaunchKernel_ptsz((const void *)k_short, one, one, NULL, 0, 0),
                     cudaSuccess);
    assert_true(simcuda_stream_ready_ns(cudaStreamPerThread) >= simcuda_stream_ready_ns(0) + 1000);
    if (now() < simcuda_stream_ready_ns(cudaStreamPerThread))
        assert_int_equal(cudaStreamQuery_ptsz(0), cudaErrorNotReady);
    assert_waits(cudaStreamSynchronize_ptsz(cudaStreamPerThread), cudaStreamPerThread);
    assert_int_equal(cudaStreamQuery_ptsz(0), cudaSuccess);
}

static void test_ptsz_entry_points(void **state)
{
    (void)state;
    const size_t n = 256;
    unsigned char src[256], dst[256];
    void *dev;
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)i;
    assert_int_equal(cudaMalloc(&dev, n), cudaSuccess);
    unsigned long long before = simcuda_call_count("cudaMemcpyAsync_ptsz");

    assert_int_equal(cudaMemsetAsync_ptsz(dev, 0, n, 0), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync_ptsz(dev, src, n, cudaMemcpyHostToDevice, 0), cudaSuccess);
    assert_int_equal(cudaMemcpy_ptds(dst, dev, n, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(dst, src, n);
    cudaEvent_t e;
    assert_int_equal(cudaEventCreate(&e), cudaSuccess);
    assert_int_equal(cudaEventRecord_ptsz(e, 0), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(e), cudaSuccess);
    assert_int_equal(cudaEventDestroy(e), cudaSuccess);

    assert_int_equal(simcuda_call_count("cudaMemcpyAsync_ptsz"), before + 1);
    assert_true(simcuda_call_count("cudaMemcpy_ptds") >= 1);
    assert_true(simcuda_call_count("cudaMemsetAsync_ptsz") >= 1);
    assert_int_equal(simcuda_call_count("noSuchEntryPoint"), 0);
    assert_int_equal(cudaFree(dev), cudaSuccess);
}

static int symbol_shadow[16]; /* the host shadow of a __device__ int[16] */

static void test_memcpy_really_copies_bytes(void **state)
{
    (void)state;
    enum { W = 24, H = 5, PITCH = 32 };
    unsigned char host[H * PITCH], back[H * PITCH];
    for (size_t i = 0; i < sizeof host; i++)
        host[i] = (unsigned char)(i * 7 + 1);

    /* 1D there and back, through a device-to-device hop. */
    void *d1, *d2;
    assert_int_equal(cudaMalloc(&d1, sizeof host), cudaSuccess);
    assert_int_equal(cudaMalloc(&d2, sizeof host), cudaSuccess);
    assert_int_equal(cudaMemcpy(d1, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(d2, d1, sizeof host, cudaMemcpyDeviceToDevice), cudaSuccess);
    memset(back, 0, sizeof back);
    assert_int_equal(cudaMemcpy(back, d2, sizeof host, cudaMemcpyDefault), cudaSuccess);
    assert_memory_equal(back, host, sizeof host);

    /* 2D into a pitched allocation and out again. */
    void *pitched;
    size_t pitch;
    assert_int_equal(cudaMallocPitch(&pitched, &pitch, W, H), cudaSuccess);
    assert_true(pitch >= W);
    assert_int_equal(cudaMemcpy2D(pitched, pitch, host, PITCH, W, H, cudaMemcpyHostToDevice),
                     cudaSuccess);
    memset(back, 0, sizeof back);
    assert_int_equal(cudaMemcpy2D(back, PITCH, pitched, pitch, W, H, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    for (int y = 0; y < H; y++)
        assert_memory_equal(back + y * PITCH, host + y * PITCH, W);
    assert_int_equal(cudaMemcpy2D(back, 8, pitched, pitch, W, H, cudaMemcpyDeviceToHost),
                     cudaErrorInvalidPitchValue);

    /* 3D with a cudaMalloc3D allocation. */
    struct cudaPitchedPtr p3;
    struct cudaExtent ext = {W, H, 2};
    assert_int_equal(cudaMalloc3D(&p3, ext), cudaSuccess);
    struct cudaMemcpy3DParms parms = {0};
    parms.srcPtr = (struct cudaPitchedPtr){host, PITCH, W, H};
    parms.dstPtr = p3;
    parms.extent = (struct cudaExtent){W, H, 1};
    parms.kind = cudaMemcpyHostToDevice;
    assert_int_equal(cudaMemcpy3D(&parms), cudaSuccess);
    assert_memory_equal((unsigned char *)p3.ptr + 2 * p3.pitch, host + 2 * PITCH, W);

    /* A CUDA array round trip. */
    struct cudaChannelFormatDesc desc =
        cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
    cudaArray_t arr;
    assert_int_equal(cudaMallocArray(&arr, &desc, W, H, 0), cudaSuccess);
    assert_int_equal(cudaMemcpy2DToArray(arr, 0, 0, host, PITCH, W, H, cudaMemcpyHostToDevice),
                     cudaSuccess);
    memset(back, 0, sizeof back);
    assert_int_equal(cudaMemcpy2DFromArray(back, PITCH, arr, 0, 0, W, H, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    for (int y = 0; y < H; y++)
        assert_memory_equal(back + y * PITCH, host + y * PITCH, W);
    assert_int_equal(cudaFreeArray(arr), cudaSuccess);

    /* Symbols: the host shadow is the device memory. */
    __cudaRegisterVar(NULL, (char *)symbol_shadow, NULL, "symbol_shadow", 0, sizeof symbol_shadow,
                      0, 0);
    size_t symbol_size = 0;
    assert_int_equal(cudaGetSymbolSize(&symbol_size, symbol_shadow), cudaSuccess);
    assert_int_equal(symbol_size, sizeof symbol_shadow);
    int values[16];
    for (int i = 0; i < 16; i++)
        values[i] = i * i;
    assert_int_equal(
        cudaMemcpyToSymbol(symbol_shadow, values, sizeof values, 0, cudaMemcpyHostToDevice),
        cudaSuccess);
    int out[4] = {0};
    assert_int_equal(cudaMemcpyFromSymbol(out, symbol_shadow, sizeof out, 8 * sizeof(int),
                                          cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_int_equal(out[0], 64);
    assert_int_equal(out[3], 121);
    assert_int_equal(cudaMemcpyToSymbol(symbol_shadow, values, 4, 0, cudaMemcpyDeviceToHost),
                     cudaErrorInvalidMemcpyDirection);
    assert_int_equal(cudaMemcpyToSymbol(symbol_shadow, values, 8, sizeof symbol_shadow - 4,
                                        cudaMemcpyHostToDevice),
                     cudaErrorInvalidValue);

    /* Copies past the end of an allocation are refused. */
    assert_int_equal(cudaMemcpy(d1, host, sizeof host + 1, cudaMemcpyHostToDevice),
                     cudaErrorInvalidValue);

    assert_int_equal(cudaFree(d1), cudaSuccess);
    assert_int_equal(cudaFree(d2), cudaSuccess);
    assert_int_equal(cudaFree(pitched), cudaSuccess);
    assert_int_equal(cudaFree(p3.ptr), cudaSuccess);
}

static void test_kernel_handles_and_names(void **state)
{
    (void)state;
    cudaKernel_t h, h2;
    assert_int_equal(__cudaGetKernel(&h, (const void *)k_handle), cudaSuccess);
    assert_int_equal(__cudaGetKernel(&h2, (const void *)k_handle), cudaSuccess);
    assert_ptr_equal(h, h2);
    /* A duration set through the host function applies to the handle and back. */
    simcuda_set_kernel_ns((const void *)k_handle, 5 * MS);
    unsigned long long t0 = now();
    assert_no_wait(__cudaLaunchKernel(h, one, one, NULL, 0, 0));
    unsigned long long t1 = now();
    assert_true(simcuda_stream_ready_ns(0) >= t0 + 5 * MS &&
                simcuda_stream_ready_ns(0) <= t1 + 5 * MS);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    simcuda_set_kernel_ns(h, 2 * MS);
    t0 = now();
    launch(k_handle, 0);
    t1 = now();
    assert_true(simcuda_stream_ready_ns(0) >= t0 + 2 * MS &&
                simcuda_stream_ready_ns(0) <= t1 + 2 * MS);
    /* The default duration for kernels without one. */
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    simcuda_set_default_kernel_ns(3 * MS);
    t0 = now();
    launch(k_unnamed, 0);
    t1 = now();
    assert_true(simcuda_stream_ready_ns(0) >= t0 + 3 * MS &&
                simcuda_stream_ready_ns(0) <= t1 + 3 * MS);
    simcuda_set_default_kernel_ns(1000);

    const char *name = NULL;
    __cudaRegisterFunction(NULL, (const char *)k_named, NULL, "_Z7k_namedv", -1, NULL, NULL, NULL,
                           NULL, NULL);
    assert_int_equal(cudaFuncGetName(&name, (const void *)k_named), cudaSuccess);
    assert_string_equal(name, "_Z7k_namedv");
    assert_int_equal(cudaFuncGetName(&name, (const void *)k_unnamed), cudaSuccess);
    assert_true(strncmp(name, "kernel@", 7) == 0);

    /* Launch checks. */
    dim3 too_big = {2048, 1, 1};
    assert_int_equal(cudaLaunchKernel((const void *)k_short, one, too_big, NULL, 0, 0),
                     cudaErrorInvalidConfiguration);
    assert_int_equal(cudaLaunchKernel(NULL, one, one, NULL, 0, 0), cudaErrorInvalidDeviceFunction);
    assert_int_equal(
        cudaLaunchKernel((const void *)k_short, one, one, NULL, 0, (cudaStream_t)&name),
        cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
}

static _Atomic int host_fn_calls;
static unsigned long long host_fn_ran_at;

static void host_fn(void *arg)
{
    (void)arg;
    host_fn_ran_at = simcuda_now_ns();
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL); /* a slow callback: the sync must wait for it to return */
    host_fn_calls++;
}

static void test_host_functions_run_at_their_place(void **state)
{
    (void)state;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    launch(k_10ms, s);
    unsigned long long kernel_end = simcuda_stream_ready_ns(s);
    assert_no_wait(cudaLaunchHostFunc(s, host_fn, NULL));
    if (now() < kernel_end)
        assert_int_equal(host_fn_calls, 0);
    assert_waits(cudaStreamSynchronize(s), s);
    assert_int_equal(host_fn_calls, 1);
    assert_true(host_fn_ran_at >= kernel_end);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void test_device_and_errors(void **state)
{
    (void)state;
    int n = 0, dev = -1, v = 0;
    struct cudaDeviceProp prop;
    assert_int_equal(cudaGetDeviceCount(&n), cudaSuccess);
    assert_int_equal(n, 1);
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaSetDevice(1), cudaErrorInvalidDevice);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidDevice);
    assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
    assert_int_equal(dev, 0);
    assert_int_equal(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    assert_string_equal(prop.name, "Simulated CUDA device (syncspy)");
    assert_int_equal(prop.major, 9);
    assert_int_equal(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    assert_int_equal(v, prop.multiProcessorCount);
#if CUDART_VERSION < 13000
    /* CUDA 12's structure also holds what CUDA 13 reports as attributes only */
    assert_int_equal(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0), cudaSuccess);
    assert_int_equal(prop.clockRate, v);
    assert_int_equal(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, 0), cudaSuccess);
    assert_int_equal(prop.memoryClockRate, v);
    assert_int_equal(prop.computeMode, cudaComputeModeDefault);
#endif
    /* the version of the headers the device was built with: 13000, or 12080 in build/sim12 */
    assert_int_equal(cudaRuntimeGetVersion(&v), cudaSuccess);
    assert_int_equal(v, CUDART_VERSION);
    assert_int_equal(cudaDriverGetVersion(&v), cudaSuccess);
    assert_int_equal(v, CUDART_VERSION);
    size_t free_b, total_b, free_after;
    void *p;
    assert_int_equal(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 1 << 20), cudaSuccess);
    assert_int_equal(cudaMemGetInfo(&free_after, &total_b), cudaSuccess);
    assert_int_equal(free_b - free_after, 1 << 20);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_string_equal(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
    assert_string_equal(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady");
    assert_string_equal(cudaGetErrorName((cudaError_t)12345), "unrecognized error code");
}

/* sim/contents.c: device bytes read back as copies and memsets wrote them until a kernel is
 * launched (on any stream); what a kernel would have written reads as zero. */
static void test_device_contents(void **state)
{
    (void)state;
    enum { N = 4096 };
    static unsigned char host[N], back[N], zeros[N];
    unsigned char *dev, *dev2;
    cudaStream_t other;
    assert_int_equal(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&dev, N), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&dev2, N), cudaSuccess);
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7 + 1);

    assert_int_equal(cudaMemcpy(dev, host, N, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(back, dev, N, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(back, host, N);
    /* Device to device carries the bytes, and half a buffer reads back half. */
    assert_int_equal(cudaMemcpy(dev2, dev, N / 2, cudaMemcpyDeviceToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(back, dev2, N, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(back, host, N / 2);
    assert_memory_equal(back + N / 2, zeros, N / 2);

    /* A kernel on another stream: everything it could have written reads as zero. */
    launch(k_short, other);
    assert_int_equal(cudaMemcpy(back, dev, N, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(back, zeros, N);

    /* A memset and a partial copy after it are known again; the rest stays zero. */
    assert_int_equal(cudaMemset(dev, 0x33, 16), cudaSuccess);
    assert_int_equal(cudaMemcpy(dev + 100, host, 8, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemcpy(back, dev, 128, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 16; i++)
        assert_int_equal(back[i], 0x33);
    assert_memory_equal(back + 16, zeros, 84);
    assert_memory_equal(back + 100, host, 8);
    assert_memory_equal(back + 108, zeros, 20);

    /* Many scattered writes between two launches: every one is remembered up to the bound. */
    launch(k_short, other);
    for (int i = 0; i < 512; i++)
        assert_int_equal(cudaMemset(dev + 8 * i, i & 0xff, 1), cudaSuccess);
    assert_int_equal(cudaMemcpy(back, dev, N, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 512; i++) {
        assert_int_equal(back[8 * i], i & 0xff);
        assert_int_equal(back[8 * i + 1], 0);
    }
    assert_int_equal(cudaStreamSynchronize(other), cudaSuccess);
    assert_int_equal(cudaFree(dev), cudaSuccess);
    assert_int_equal(cudaFree(dev2), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(other), cudaSuccess);
}

/* What PyTorch needs at its CUDA init: no stream ever capturing, the capture mode swapped per
 * thread, a default memory pool with attributes, the missing features answering as CUDA
 * without them does, and the driver's functions through the runtime's lookup. */
static void test_framework_entry_points(void **state)
{
    (void)state;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    unsigned long long id = 99;
#if CUDART_VERSION >= 13000
    assert_int_equal(cudaStreamGetCaptureInfo(0, &st, &id, NULL, NULL, NULL, NULL), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    assert_int_equal(id, 0);
    assert_int_equal(
        cudaStreamGetCaptureInfo_ptsz(cudaStreamPerThread, &st, NULL, NULL, NULL, NULL, NULL),
        cudaSuccess);
#else
    /* CUDA 12: the headers' cudaStreamGetCaptureInfo is _v2 (what torch 2.4 to 2.10 call);
     * _v3 has the edge data */
    assert_int_equal(cudaStreamGetCaptureInfo(0, &st, &id, NULL, NULL, NULL), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    assert_int_equal(id, 0);
    st = cudaStreamCaptureStatusActive;
    id = 99;
    assert_int_equal(cudaStreamGetCaptureInfo_v3(0, &st, &id, NULL, NULL, NULL, NULL), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    assert_int_equal(id, 0);
    st = cudaStreamCaptureStatusActive;
    assert_int_equal(
        cudaStreamGetCaptureInfo_v2_ptsz(cudaStreamPerThread, &st, NULL, NULL, NULL, NULL),
        cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    assert_int_equal(
        cudaStreamGetCaptureInfo_v3_ptsz(cudaStreamPerThread, &st, NULL, NULL, NULL, NULL, NULL),
        cudaSuccess);
    assert_int_equal(cudaStreamGetCaptureInfo_v2((cudaStream_t)0x1234, &st, NULL, NULL, NULL, NULL),
                     cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamGetCaptureInfo_v2(0, NULL, NULL, NULL, NULL, NULL),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    cudaGraphNode_t deps[1];
    assert_int_equal(cudaStreamUpdateCaptureDependencies(0, deps, 0, 0), cudaErrorIllegalState);
    assert_int_equal(cudaStreamUpdateCaptureDependencies_v2(0, deps, NULL, 0, 0),
                     cudaErrorIllegalState);
#endif
    /* "Capture may not be initiated if stream is cudaStreamLegacy" */
    assert_int_equal(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    cudaGraph_t g;
    assert_int_equal(cudaStreamEndCapture(0, &g), cudaErrorIllegalState);

    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    assert_int_equal(mode, cudaStreamCaptureModeGlobal);
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    assert_int_equal(mode, cudaStreamCaptureModeRelaxed);

    cudaMemPool_t pool;
    uint64_t threshold = 1 << 20, used = 7;
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                     cudaSuccess);
    threshold = 0;
    assert_int_equal(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                     cudaSuccess);
    assert_int_equal(threshold, 1 << 20);
    assert_int_equal(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used),
                     cudaSuccess);
    assert_int_equal(used, 0);
    assert_int_equal(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaDeviceGetDefaultMemPool(&pool, 1), cudaErrorInvalidDevice);

    void *dev;
    cudaIpcMemHandle_t h;
    assert_int_equal(cudaMalloc(&dev, 64), cudaSuccess);
    assert_int_equal(cudaIpcGetMemHandle(&h, dev), cudaErrorNotSupported);
    assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
    assert_int_equal(cudaFree(dev), cudaSuccess);

    typedef int (*state_fn)(int dev, unsigned *flags, int *active);
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000,
                                                      cudaEnableDefault, &q),
                     cudaSuccess);
    assert_int_equal(q, cudaDriverEntryPointSuccess);
    assert_non_null(fn);
    unsigned flags = 1;
    int active = 0;
    assert_int_equal(((state_fn)fn)(0, &flags, &active), 0);
    assert_int_equal(active, 1); /* cudaMalloc made the primary context active */
    /* The versioned and per-thread forms, as cuGetProcAddress picks them. */
    Dl_info info;
    assert_int_equal(
        cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, cudaEnableDefault, &q),
        cudaSuccess);
    assert_true(dladdr(fn, &info) != 0);
    assert_string_equal(info.dli_sname, "cuMemAlloc_v2");
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuStreamSynchronize", &fn, 13000,
                                                      cudaEnablePerThreadDefaultStream, &q),
                     cudaSuccess);
    assert_true(dladdr(fn, &info) != 0);
    assert_string_equal(info.dli_sname, "cuStreamSynchronize_ptsz");
    assert_int_equal(
        cudaGetDriverEntryPointByVersion("cuNoSuchThing", &fn, 13000, cudaEnableDefault, &q),
        cudaSuccess);
    assert_int_equal(q, cudaDriverEntryPointSymbolNotFound);
    assert_null(fn);
}

/* An unknown graph handle is invalid: printing it too, after the path is checked; no file is
 * written. */
static void test_graph_debug_dot_print(void **state)
{
    (void)state;
    char path[] = "/tmp/syncspy-test-sim-graph-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    cudaGraph_t g = (cudaGraph_t)0x1000;
    assert_int_equal(cudaGraphDebugDotPrint(g, path, 0), cudaErrorInvalidResourceHandle);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(cudaGraphDebugDotPrint(g, NULL, 0), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(simcuda_call_count("cudaGraphDebugDotPrint"), 2);
}

/* ---- stream capture and graphs (sim/timeline.c, sim/graphs.c) -------------------------------- */

/* Work queued on a capturing stream is recorded, not run: no time on the timeline, no kernel
 * queued, no host wait; a launch of the graph replays its nodes' durations on the stream. */
static void test_capture_records_and_graph_launch_replays(void **state)
{
    (void)state;
    cudaStream_t s;
    void *dev;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaMalloc(&dev, 1 << 20), cudaSuccess);
    ((unsigned char *)dev)[0] =
        0x5a; /* the simulator's device memory is the host's (never zeroed) */
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusActive);
#if CUDART_VERSION >= 13000
    cudaGraph_t capturing = NULL;
    assert_int_equal(cudaStreamGetCaptureInfo(s, &st, &id, &capturing, NULL, NULL, NULL),
                     cudaSuccess);
    assert_non_null(capturing);
#else
    assert_int_equal(cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL), cudaSuccess);
#endif
    assert_true(id != 0);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);

    unsigned long long kernels = simcuda_kernel_count(), launches = simcuda_launch_count();
    unsigned long long before = simcuda_stream_ready_ns(s);
    assert_no_wait(cudaLaunchKernel((const void *)k_20ms, one, one, NULL, 0, s));
    assert_no_wait(cudaMemsetAsync(dev, 1, 1 << 20, s));
    assert_no_wait(cudaLaunchKernel((const void *)k_30ms, one, one, NULL, 0, s));
    assert_int_equal(simcuda_stream_ready_ns(s), before); /* nothing ran */
    assert_int_equal(simcuda_kernel_count(), kernels);
    assert_int_equal(simcuda_launch_count(), launches + 2); /* two launch calls */
    assert_int_equal(((unsigned char *)dev)[0], 0x5a);      /* the memset set nothing */

    cudaGraph_t g = NULL;
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
    assert_non_null(g);
    assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusNone);
    size_t n = 0;
    assert_int_equal(cudaGraphGetNodes(g, NULL, &n), cudaSuccess);
    assert_int_equal(n, 3);
    cudaGraphNode_t nodes[2];
    n = 2;
    assert_int_equal(cudaGraphGetNodes(g, nodes, &n), cudaSuccess);
    assert_int_equal(n, 2);
    cudaGraphExec_t exec = NULL;
    assert_int_equal(cudaGraphInstantiateWithFlags(&exec, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess); /* the exec keeps its own copy */
    assert_int_equal(cudaGraphDestroy(g), cudaErrorInvalidResourceHandle);

    for (int round = 0; round < 2; round++) {
        unsigned long long t0 = now();
        kernels = simcuda_kernel_count();
        launches = simcuda_launch_count();
        assert_no_wait(cudaGraphLaunch(exec, s));
        /* 20 ms + the memset (1 MiB at 5 GB/s: 0.2 ms) + 30 ms, in order */
        assert_true(simcuda_stream_ready_ns(s) >= t0 + 50 * MS);
        assert_int_equal(simcuda_kernel_count(), kernels + 2);
        assert_int_equal(simcuda_launch_count(), launches + 1); /* one graph launch */
        assert_waits(cudaStreamSynchronize(s), s);
        assert_true(now() >= t0 + 50 * MS);
    }
    assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(exec, s), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaGraphExecDestroy(exec), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    assert_int_equal(cudaFree(dev), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* One capture that a call invalidates: the call fails without waiting and the capture ends with
 * cudaErrorStreamCaptureInvalidated and no graph. */
static void expect_invalidated(cudaStream_t s, cudaError_t got, cudaError_t want)
{
    assert_int_equal(got, want);
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusInvalidated);
    cudaGraph_t g = (cudaGraph_t)0x1;
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    assert_null(g);
}

/* A sync during capture is an error as CUDA defines it: waiting for (or querying) the capturing
 * stream in any mode; the "potentially unsafe" calls (device synchronize, a blocking copy, an
 * allocation) where the thread's mode forbids them; the legacy stream while a blocking stream
 * captures (an implicit dependency). None of them waits. */
static void test_sync_during_capture_is_an_error(void **state)
{
    (void)state;
    cudaStream_t s, blocking;
    void *dev, *p = NULL;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaStreamCreate(&blocking), cudaSuccess);
    assert_int_equal(cudaMalloc(&dev, 4096), cudaSuccess);
    unsigned long long syncs = simcuda_thread_sync_count();

    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    launch(k_20ms, s);
    expect_invalidated(s, cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    expect_invalidated(s, cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported);

    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    expect_invalidated(s, cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    expect_invalidated(s, cudaMemcpy(pageable_buf, dev, 4096, cudaMemcpyDeviceToHost),
                       cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    expect_invalidated(s, cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
    assert_null(p);
    assert_int_equal(simcuda_thread_sync_count(), syncs); /* none of them waited */

    /* the thread's own mode relaxed (what torch's allocator does around cudaMalloc): allowed */
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 64), cudaSuccess);
    assert_int_equal(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    cudaGraph_t g = NULL;
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    /* a capture begun relaxed forbids nothing but waiting for its own stream: cudaFree waits
     * for the device, as always */
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(simcuda_thread_sync_count(), syncs + 1);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);

    assert_int_equal(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal), cudaSuccess);
    expect_invalidated(blocking, cudaMemsetAsync(dev, 0, 64, 0), cudaErrorStreamCaptureImplicit);
    assert_int_equal(simcuda_thread_sync_count(), syncs + 1);
    assert_int_equal(cudaFree(dev), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(blocking), cudaSuccess);
}

/* A graph's DOT file: one line per node, chained in capture order. */
static void test_graph_dot_of_a_capture(void **state)
{
    (void)state;
    cudaStream_t s;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    launch(k_short, s);
    launch(k_short, s);
    cudaGraph_t g = NULL;
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
    char path[] = "/tmp/syncspy-test-sim-dot-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(cudaGraphDebugDotPrint(g, path, 0), cudaSuccess);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[1024];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    unlink(path);
    text[len] = '\0';
    assert_non_null(strstr(text, "digraph"));
    assert_non_null(strstr(text, "node0 -> node1"));
    assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* The structures a program hands in are filled exactly to the size its headers give them, no
 * byte beyond: CUDA 12's cudaPointerAttributes is 24 bytes (CUDA 13's 88), and a caller's
 * 24 bytes on its stack (torch 2.8's pin_memory) must not be overrun. */
#define CANARY 0xa5
static void assert_untouched_after(const unsigned char *buf, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        assert_int_equal(buf[i], CANARY);
}

static void test_structures_end_where_the_headers_say(void **state)
{
    (void)state;
    union {
        unsigned char bytes[sizeof(struct cudaDeviceProp) + 256];
        struct cudaDeviceProp prop;
        struct cudaPointerAttributes attr;
        max_align_t align;
    } buf;
    void *dev;
    assert_int_equal(cudaMalloc(&dev, 64), cudaSuccess);
    memset(buf.bytes, CANARY, sizeof buf.bytes);
    assert_int_equal(cudaPointerGetAttributes(&buf.attr, dev), cudaSuccess);
    assert_int_equal(buf.attr.type, cudaMemoryTypeDevice);
    assert_untouched_after(buf.bytes, sizeof buf.attr, sizeof buf.bytes);
    memset(buf.bytes, CANARY, sizeof buf.bytes);
    assert_int_equal(cudaPointerGetAttributes(&buf.attr, &buf), cudaSuccess);
    assert_int_equal(buf.attr.type, cudaMemoryTypeUnregistered);
    assert_untouched_after(buf.bytes, sizeof buf.attr, sizeof buf.bytes);
    memset(buf.bytes, CANARY, sizeof buf.bytes);
    assert_int_equal(cudaGetDeviceProperties(&buf.prop, 0), cudaSuccess);
    assert_int_equal(buf.prop.major, 9);
    assert_untouched_after(buf.bytes, sizeof buf.prop, sizeof buf.bytes);
    assert_int_equal(cudaFree(dev), cudaSuccess);
#if CUDART_VERSION < 13000
    /* the name CUDA 12's headers give cudaGetDeviceProperties */
    assert_true(simcuda_call_count("cudaGetDeviceProperties_v2") > 0);
    assert_int_equal(simcuda_call_count("cudaGetDeviceProperties"), 0);
#endif
}

/* Managed memory is host memory here: a prefetch is a zero-length operation on its stream (it
 * makes no one wait), advice is accepted. CUDA 12 also has the forms with a device ordinal. */
static void test_prefetch_and_advice(void **state)
{
    (void)state;
    void *managed;
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = 0};
    assert_int_equal(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
    unsigned long long syncs = simcuda_thread_sync_count();
#if CUDART_VERSION >= 13000
    assert_int_equal(cudaMemPrefetchAsync(managed, 4096, loc, 0, 0), cudaSuccess);
    assert_int_equal(cudaMemAdvise(managed, 4096, cudaMemAdviseSetReadMostly, loc), cudaSuccess);
    assert_int_equal(cudaMemAdvise(NULL, 4096, cudaMemAdviseSetReadMostly, loc),
                     cudaErrorInvalidValue);
#else
    assert_int_equal(cudaMemPrefetchAsync(managed, 4096, 0, 0), cudaSuccess);
    assert_int_equal(cudaMemPrefetchAsync_v2(managed, 4096, loc, 0, 0), cudaSuccess);
    assert_int_equal(cudaMemAdvise(managed, 4096, cudaMemAdviseSetReadMostly, 0), cudaSuccess);
    assert_int_equal(cudaMemAdvise_v2(managed, 4096, cudaMemAdviseSetReadMostly, loc), cudaSuccess);
    assert_int_equal(cudaMemAdvise(NULL, 4096, cudaMemAdviseSetReadMostly, 0),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaMemAdvise_v2(NULL, 4096, cudaMemAdviseSetReadMostly, loc),
                     cudaErrorInvalidValue);
    assert_int_equal(simcuda_call_count("cudaMemPrefetchAsync_v2"), 1);
#endif
    assert_int_equal(simcuda_thread_sync_count(), syncs);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(managed), cudaSuccess);
}

/* CUPTI's event and metric API (kineto links it): not supported on a compute capability 9.0
 * device, as on a real one; no id is handed out. */
static void test_cupti_event_api_says_legacy_profiler_not_supported(void **state)
{
    (void)state;
    uint32_t device = 7;
    CUpti_EventID event = 0;
    CUpti_MetricID metric = 0;
    CUpti_EventGroupSets *sets = NULL;
    assert_int_equal(cuptiGetDeviceId(NULL, &device), CUPTI_SUCCESS);
    assert_int_equal(device, 0);
    assert_int_equal(cuptiEventGetIdFromName(0, "inst_executed", &event),
                     CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
    assert_int_equal(cuptiMetricGetIdFromName(0, "ipc", &metric),
                     CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
    assert_int_equal(cuptiEventGroupSetsCreate(NULL, sizeof event, &event, &sets),
                     CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
    assert_null(sets);
    assert_int_equal(cuptiSetEventCollectionMode(NULL, CUPTI_EVENT_COLLECTION_MODE_KERNEL),
                     CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
    assert_int_equal(cuptiEventGetIdFromName(0, "inst_executed", NULL),
                     CUPTI_ERROR_INVALID_PARAMETER);
    assert_int_equal(cuptiMetricGetNumEvents(metric, NULL), CUPTI_ERROR_INVALID_PARAMETER);
    const char *text = NULL;
    assert_int_equal(cuptiGetResultString(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, &text),
                     CUPTI_SUCCESS);
    assert_string_equal(text, "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED");
}

/* CUPTI's resource domain (Kineto enables CONTEXT_CREATED at its start, and gives up on CUPTI
 * when it cannot): the context's creation is reported once, when the first runtime call that
 * needs it makes it, never by a query. Run in a fresh process (this program, re-executed with
 * --context-created), where no call has made the context yet; its exit status says which
 * check failed. */
static int context_created_calls;
static CUcontext context_created;

static void CUPTIAPI on_resource(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)userdata;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        context_created_calls++;
        context_created = ((const CUpti_ResourceData *)data)->context;
    }
}

static int context_created_child(void)
{
    CUpti_SubscriberHandle sub;
    uint32_t on = 0;
    int n = 0;
    void *dev;
    if (cuptiSubscribe(&sub, on_resource, NULL) != CUPTI_SUCCESS)
        return 10;
    if (cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_CONTEXT_CREATED) != CUPTI_SUCCESS ||
        cuptiGetCallbackState(&on, sub, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_CONTEXT_CREATED) != CUPTI_SUCCESS ||
        on != 1)
        return 11;
    if (cudaGetDeviceCount(&n) != cudaSuccess || context_created_calls != 0)
        return 12; /* a query makes no context */
    if (cudaMalloc(&dev, 64) != cudaSuccess || context_created_calls != 1 ||
        context_created == NULL)
        return 13;
    if (cudaFree(dev) != cudaSuccess || context_created_calls != 1)
        return 14;
    return cuptiUnsubscribe(sub) == CUPTI_SUCCESS ? 0 : 15;
}

static void test_cupti_reports_the_context_created(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_sim", "--context-created", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--context-created") == 0)
        return context_created_child();
    setenv("SIMCUDA_KERNEL_NS", "4000000", 1);
    setenv("SIMCUDA_COPY_GBPS", "5", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_initialized_by_the_runtimes_first_call),
        cmocka_unit_test(test_environment_sets_the_defaults),
        cmocka_unit_test_setup(test_kernel_then_stream_synchronize_blocks_for_its_duration, idle),
        cmocka_unit_test_setup(test_async_copy_pinned_returns_pageable_blocks, idle),
        cmocka_unit_test_setup(test_memcpy_sync_rules, idle),
        cmocka_unit_test_setup(test_memset_rules, idle),
        cmocka_unit_test_setup(test_pointer_attributes, idle),
        cmocka_unit_test_setup(test_legacy_stream_waits_for_blocking_streams_only, idle),
        cmocka_unit_test_setup(test_events, idle),
        cmocka_unit_test_setup(test_free_synchronizes_free_null_does_not, idle),
        cmocka_unit_test_setup(test_per_thread_default_streams_are_independent, idle),
        cmocka_unit_test_setup(test_ptsz_entry_points, idle),
        cmocka_unit_test_setup(test_memcpy_really_copies_bytes, idle),
        cmocka_unit_test_setup(test_kernel_handles_and_names, idle),
        cmocka_unit_test_setup(test_host_functions_run_at_their_place, idle),
        cmocka_unit_test_setup(test_device_and_errors, idle),
        cmocka_unit_test_setup(test_device_contents, idle),
        cmocka_unit_test_setup(test_framework_entry_points, idle),
        cmocka_unit_test_setup(test_graph_debug_dot_print, idle),
        cmocka_unit_test_setup(test_capture_records_and_graph_launch_replays, idle),
        cmocka_unit_test_setup(test_sync_during_capture_is_an_error, idle),
        cmocka_unit_test_setup(test_graph_dot_of_a_capture, idle),
        cmocka_unit_test_setup(test_structures_end_where_the_headers_say, idle),
        cmocka_unit_test_setup(test_prefetch_and_advice, idle),
        cmocka_unit_test_setup(test_cupti_event_api_says_legacy_profiler_not_supported, idle),
        cmocka_unit_test(test_cupti_reports_the_context_created),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
