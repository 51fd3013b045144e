/* bench/benchlib.c: the CUDA-using library of the Python benchmark (bench/bench_py.py loads it
 * with ctypes). bench_sync_batch(n, arm) makes n (0-ns launch + cudaStreamSynchronize) pairs and
 * returns ns per pair: arm 1 calls cudaStreamSynchronize through the PLT (the agent's shim when
 * it is preloaded), arm 0 the runtime's own definition (the A/B of bench/bench_cuda.c). */
#include <dlfcn.h>
#include <time.h>
#include <cuda_runtime_api.h>

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*sync_fn)(cudaStream_t);
static launch_fn launch_direct;
static sync_fn sync_direct;

static void kfn(void)
{
}

static unsigned long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

__attribute__((visibility("default"))) int bench_init(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    if (!rt)
        return -1;
    launch_direct = (launch_fn)dlsym(rt, "cudaLaunchKernel");
    sync_direct = (sync_fn)dlsym(rt, "cudaStreamSynchronize");
    return launch_direct && sync_direct ? 0 : -1;
}

__attribute__((visibility("default"), noinline)) double bench_sync_batch(long n, int arm)
{
    const dim3 one = {1, 1, 1};
    unsigned long long t0 = now_ns();
    if (arm) {
        for (long i = 0; i < n; i++) {
            launch_direct((const void *)kfn, one, one, 0, 0, 0);
            cudaStreamSynchronize(0);
            __asm__ volatile("" ::: "memory");
        }
    } else {
        for (long i = 0; i < n; i++) {
            launch_direct((const void *)kfn, one, one, 0, 0, 0);
            sync_direct(0);
            __asm__ volatile("" ::: "memory");
        }
    }
    return (double)(now_ns() - t0) / (double)n;
}
