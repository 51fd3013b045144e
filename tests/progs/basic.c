/* tests/progs/basic.c: known sync sites with known blocked times, for end-to-end tests.
 * Per step: loss_fn (20 ms kernel, then a device-to-host cudaMemcpy into pageable memory),
 * wait_all (10 ms kernel, then cudaDeviceSynchronize), a cudaMemcpyAsync into pinned memory
 * (not a sync), a cudaMemcpyAsync into pageable memory after a 5 ms kernel (a sync), and
 * per_thread_sync (cudaStreamSynchronize_ptsz after a 3 ms kernel on the per-thread stream).
 * 10 launches of a 0 ns kernel per step. Prints one line and exits with status 3. */
#include "common.h"
#include <string.h>

extern __typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;
extern __typeof__(cudaLaunchKernel) cudaLaunchKernel_ptsz;

static void k_loss(void) {}
static void k_forward(void) {}
static void k_small(void) {}
static void k_tail(void) {}

static float *dev_buf;
static float host_pageable[1024];
static float *host_pinned;

__attribute__((noinline)) void loss_fn(void)
{
    launch((const void *)k_loss, 0);
    CHECK(cudaMemcpy(host_pageable, dev_buf, sizeof host_pageable, cudaMemcpyDeviceToHost));
}

__attribute__((noinline)) void wait_all(void)
{
    launch((const void *)k_forward, 0);
    CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) void copy_pinned(void)
{
    CHECK(cudaMemcpyAsync(host_pinned, dev_buf, 4096, cudaMemcpyDeviceToHost, 0));
}

__attribute__((noinline)) void copy_pageable(void)
{
    launch((const void *)k_tail, 0);
    CHECK(cudaMemcpyAsync(host_pageable, dev_buf, 4096, cudaMemcpyDeviceToHost, 0));
}

__attribute__((noinline)) void per_thread_sync(void)
{
    dim3 one = {1, 1, 1};
    CHECK(cudaLaunchKernel_ptsz((const void *)k_tail, one, one, NULL, 0, cudaStreamPerThread));
    CHECK(cudaStreamSynchronize_ptsz(cudaStreamPerThread));
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 5;
    simcuda_set_kernel_ns((const void *)k_loss, 20 * MS);
    simcuda_set_kernel_ns((const void *)k_forward, 10 * MS);
    simcuda_set_kernel_ns((const void *)k_small, 0);
    simcuda_set_kernel_ns((const void *)k_tail, 3 * MS);
    CHECK(cudaMalloc((void **)&dev_buf, 1 << 20));
    CHECK(cudaMallocHost((void **)&host_pinned, 1 << 20));
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < 10; i++)
            launch((const void *)k_small, 0);
        loss_fn();
        wait_all();
        copy_pinned();
        copy_pageable();
        per_thread_sync();
        CHECK(cudaDeviceSynchronize()); /* drain the pinned copy outside the measured sites */
        mark_step();
    }
    CHECK(cudaFreeHost(host_pinned));
    CHECK(cudaFree(dev_buf));
    printf("basic: %d steps done\n", steps);
    return 3;
}
