/* examples/train_loop.c: the bundled demo. A training loop in the style of a segmentation
 * loss, on the simulated CUDA device: each step runs a forward pass (40 kernels), a loss that
 * syncs three times the way torch.nonzero, torch.unique and boolean-mask indexing do (a
 * device-to-host copy of a count into pageable memory), and every 5th step logs the loss with
 * an .item()-style copy. Run it with `make demo`. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "simcuda.h"

#define MS 1000000ull
#define STEPS 20

static void k_conv(void) {}
static void k_where(void) {}
static void k_sort(void) {}
static void k_mask(void) {}
static void k_reduce(void) {}

static float *dev;
static long long host_count; /* pageable, like a fresh CPU tensor */

static void launch(const void *k)
{
    dim3 one = {1, 1, 1};
    cudaLaunchKernel(k, one, one, NULL, 0, 0);
}

/* torch.nonzero(mask): the output size depends on the data, so the count comes to the host. */
__attribute__((noinline)) static long long nonzero_foreground(void)
{
    launch((const void *)k_where);
    cudaMemcpyAsync(&host_count, dev, sizeof host_count, cudaMemcpyDeviceToHost, 0);
    return host_count;
}

/* torch.unique(labels): sorts, then copies the number of unique values to the host. */
__attribute__((noinline)) static long long unique_classes(void)
{
    launch((const void *)k_sort);
    cudaMemcpy(&host_count, dev, sizeof host_count, cudaMemcpyDeviceToHost);
    return host_count;
}

/* pred[mask]: boolean-mask indexing sizes its output on the host, then waits for the stream. */
__attribute__((noinline)) static void ignore_background(void)
{
    launch((const void *)k_mask);
    cudaMemcpyAsync(&host_count, dev, sizeof host_count, cudaMemcpyDeviceToHost, 0);
    cudaStreamSynchronize(0);
}

__attribute__((noinline)) static void masked_loss(void)
{
    nonzero_foreground();
    unique_classes();
    ignore_background();
    launch((const void *)k_reduce);
}

/* loss.item(): one scalar to the host, every 5th step. */
__attribute__((noinline)) static float log_loss_item(void)
{
    float v;
    cudaMemcpy(&v, dev, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}

int main(void)
{
    void (*step)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncspy_step");
    simcuda_set_kernel_ns((const void *)k_conv, 300000);   /* 40 x 0.3 ms forward */
    simcuda_set_kernel_ns((const void *)k_where, 2 * MS);
    simcuda_set_kernel_ns((const void *)k_sort, 3 * MS);
    simcuda_set_kernel_ns((const void *)k_mask, 1 * MS);
    simcuda_set_kernel_ns((const void *)k_reduce, 500000);
    if (cudaMalloc((void **)&dev, 1 << 20) != cudaSuccess) {
        fprintf(stderr, "train_loop: no CUDA device\n");
        return 1;
    }
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < 40; i++)
            launch((const void *)k_conv);
        masked_loss();
        if (s % 5 == 4)
            printf("step %2d loss %.3f\n", s, log_loss_item());
        if (step)
            step();
    }
    cudaFree(dev);
    return 0;
}
