/* tests/progs/cupti_driver.c: syncs the runtime shim cannot see, next to syncs it can.
 * `cupti_driver N`: N steps; each calls libsimdriver.so (driver API only: stream, context and
 * event synchronize, a DtoH copy, a pageable DtoHAsync copy and a cuMemFree, each after a 4 ms
 * kernel; a pinned DtoHAsync and a DtoD copy, which are no syncs), then via_shim_sync (a 3 ms
 * kernel and cudaStreamSynchronize through the shim, which also reaches CUPTI's runtime and
 * driver callbacks: it must count once) and static_runtime_sync (the same, launch and sync,
 * through pointers from libcudart's own handle, which bypass the shim as a statically linked
 * runtime does: CUPTI's runtime callback records the sync, the nested driver callback must not
 * count it again, and the launch is counted once, by the driver launch inside it).
 * `cupti_driver N idle`: N steps of idle_after_sync (a 2 ms kernel, cudaStreamSynchronize, then
 * 5 ms of host work before the next kernel: the GPU idles 5 ms after each sync) and
 * busy_after_sync (a 2 ms kernel synchronized while a 30 ms kernel runs on another stream: the
 * GPU never idles), and a driver-API sync followed by 5 ms of host work. */
#include "common.h"
#include <string.h>
#include <time.h>

void drvlib_setup(unsigned long long kernel_ns);
void drvlib_stream_sync(void);
void drvlib_ctx_sync(void);
void drvlib_event_sync(void);
void drvlib_copy_dtoh(void);
void drvlib_copy_async_pinned(void);
void drvlib_copy_async_pageable(void);
void drvlib_copy_dtod(void);
void drvlib_free(void);
void drvlib_kernel(void);
void drvlib_teardown(void);

static void k_runtime(void) {}
static void k_short(void) {}
static void k_long(void) {}

static void host_work_ms(long ms)
{
    struct timespec t = {0, ms * 1000000L};
    while (nanosleep(&t, &t) != 0)
        ;
}

__attribute__((noinline)) void via_shim_sync(void)
{
    launch((const void *)k_runtime, 0);
    CHECK(cudaStreamSynchronize(0));
}

static cudaError_t (*runtime_stream_sync)(cudaStream_t);
static cudaError_t (*runtime_launch)(const void *, dim3, dim3, void **, size_t, cudaStream_t);

__attribute__((noinline)) void static_runtime_sync(void)
{
    dim3 one = {1, 1, 1};
    CHECK(runtime_launch((const void *)k_runtime, one, one, NULL, 0, 0));
    CHECK(runtime_stream_sync(0));
}

__attribute__((noinline)) void idle_after_sync(void)
{
    launch((const void *)k_short, 0);
    CHECK(cudaStreamSynchronize(0));
}

__attribute__((noinline)) void busy_after_sync(cudaStream_t mine, cudaStream_t other)
{
    launch((const void *)k_long, other);
    launch((const void *)k_short, mine);
    CHECK(cudaStreamSynchronize(mine));
}

static void run_driver(int n)
{
    simcuda_set_kernel_ns((const void *)k_runtime, 3 * MS);
    launch((const void *)k_runtime, 0); /* the first CUDA call: the agent subscribes to CUPTI */
    drvlib_setup(4 * MS);
    void *cudart = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    runtime_stream_sync = (cudaError_t (*)(cudaStream_t))dlsym(cudart, "cudaStreamSynchronize");
    runtime_launch = (__typeof__(runtime_launch))dlsym(cudart, "cudaLaunchKernel");
    if (!runtime_stream_sync || !runtime_launch)
        return;
    for (int i = 0; i < n; i++) {
        drvlib_stream_sync();
        drvlib_ctx_sync();
        drvlib_event_sync();
        drvlib_copy_dtoh();
        drvlib_copy_async_pinned();
        drvlib_copy_async_pageable();
        drvlib_copy_dtod();
        drvlib_free();
        via_shim_sync();
        static_runtime_sync();
        mark_step();
    }
    drvlib_teardown();
}

static void run_idle(int n)
{
    cudaStream_t mine, other;
    simcuda_set_kernel_ns((const void *)k_short, 2 * MS);
    simcuda_set_kernel_ns((const void *)k_long, 30 * MS);
    CHECK(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    drvlib_setup(2 * MS);
    for (int i = 0; i < n; i++) {
        idle_after_sync();
        host_work_ms(5);
        busy_after_sync(mine, other);
        CHECK(cudaStreamSynchronize(other)); /* the long kernel ends: the GPU is idle again */
        drvlib_stream_sync();
        host_work_ms(5);
        mark_step();
    }
    launch((const void *)k_short, 0); /* the device work after the last step's idle time */
    drvlib_teardown();
    CHECK(cudaStreamDestroy(mine));
    CHECK(cudaStreamDestroy(other));
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    if (argc > 2 && !strcmp(argv[2], "idle"))
        run_idle(n);
    else
        run_driver(n);
    printf("cupti_driver: %d steps done\n", n);
    return 0;
}
