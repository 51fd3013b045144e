/* tests/progs/real_runtime.c: linked against the CUDA toolkit's real libcudart.so.13 (not the
 * simulated one). Without a driver every call fails: the agent must forward each error untouched,
 * count nothing and stay silent; with a GPU the calls succeed. Prints each call's status. */
#include <cuda_runtime_api.h>
#include <stdio.h>
int main(void) {
    void *p = 0;
    cudaError_t e = cudaMalloc(&p, 16);
    printf("malloc: %d\n", (int)e);
    e = cudaDeviceSynchronize();
    printf("sync: %d\n", (int)e);
    char buf[16];
    e = cudaMemcpy(buf, p, 16, cudaMemcpyDeviceToHost);
    printf("memcpy: %d\n", (int)e);
    return 7;
}
