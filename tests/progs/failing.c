/* tests/progs/failing.c: calls that fail are forwarded with their error and are not syncs:
 * bad_copy() (cudaMemcpy with an invalid direction) and bad_sync() (cudaEventSynchronize of an
 * event that was never created) fail; good_sync() (a 1 ms kernel, then cudaDeviceSynchronize)
 * is the one sync. Prints each call's error code. */
#include "common.h"

static void k(void) {}

__attribute__((noinline)) int bad_copy(void *dst, const void *src)
{
    return (int)cudaMemcpy(dst, src, 16, (enum cudaMemcpyKind)42);
}

__attribute__((noinline)) int bad_sync(void)
{
    return (int)cudaEventSynchronize((cudaEvent_t)0x10);
}

__attribute__((noinline)) int good_sync(void)
{
    launch((const void *)k, 0);
    return (int)cudaDeviceSynchronize();
}

int main(void)
{
    simcuda_set_kernel_ns((const void *)k, 1 * MS);
    char host[16], *dev;
    CHECK(cudaMalloc((void **)&dev, 16));
    printf("bad_copy %d\n", bad_copy(host, dev));
    printf("bad_sync %d\n", bad_sync());
    printf("good_sync %d\n", good_sync());
    return 0;
}
