/* tests/progs/first_sync.c N: loads the driver (libcuda.so.1) as a program using the driver API
 * beside the runtime does, then makes its very first CUDA call an interposed sync
 * (cudaDeviceSynchronize), before which the driver is not initialized; then N device-to-host
 * copies into pageable memory. Prints "first_sync: N copies". */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL))
        return 1;
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 2;
    void *dev = NULL;
    static char host[1 << 16];
    if (cudaMalloc(&dev, sizeof host) != cudaSuccess)
        return 3;
    for (int i = 0; i < n; i++)
        if (cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess)
            return 4;
    cudaFree(dev);
    printf("first_sync: %d copies\n", n);
    return 0;
}
