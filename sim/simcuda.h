/* sim/simcuda.h: the test-control API of syncspy's simulated CUDA device (build/sim/libcudart.so.13).
 * Not part of CUDA: test programs and the demo call these to choose how long kernels and copies
 * take, so a test knows exactly how long each sync must block. */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Duration of every later launch of the kernel whose host function (or cudaKernel_t) is func. */
void simcuda_set_kernel_ns(const void *func, unsigned long long ns);
/* Duration of kernels with no duration of their own (default: env SIMCUDA_KERNEL_NS, else 1000). */
void simcuda_set_default_kernel_ns(unsigned long long ns);
/* Device-side copy speed for memcpy/memset on the timeline (default: env SIMCUDA_COPY_GBPS,
 * else 10 GB/s, i.e. 10 bytes per ns). */
void simcuda_set_copy_bytes_per_ns(double bytes_per_ns);
/* The clock every timeline uses (CLOCK_MONOTONIC, ns). */
unsigned long long simcuda_now_ns(void);
/* When the work queued so far on stream finishes (CLOCK_MONOTONIC ns); 0 = legacy default. */
unsigned long long simcuda_stream_ready_ns(cudaStream_t stream);
/* Number of calls the simulated runtime served, by exported entry point name (0 if unknown). */
unsigned long long simcuda_call_count(const char *api);

/* Added by the simulator: when the work queued so far on every stream finishes (what
 * cudaDeviceSynchronize would wait for), CLOCK_MONOTONIC ns. */
unsigned long long simcuda_device_ready_ns(void);
/* Added by the simulator: how many calls of the calling thread so far synchronized with the
 * device (made the host wait for device work, even work already finished): the ground truth
 * of which calls are syncs. Unchanged across a call means the call did not wait. */
unsigned long long simcuda_thread_sync_count(void);
/* Added by the simulator: how many kernels were queued so far in the process, whatever the way
 * (runtime, driver API, the vendor libraries, graph launches: each kernel of a graph); a kernel
 * launched into a capturing stream is queued when its graph is launched. */
unsigned long long simcuda_kernel_count(void);
/* Added by the simulator: how many launch calls succeeded so far in the process: each kernel
 * launched by itself (any way, as simcuda_kernel_count, and also into a capturing stream, where
 * it is recorded rather than queued) and each graph launch once (its kernels are not launches
 * of their own): what a tool's launches per step are checked against. */
unsigned long long simcuda_launch_count(void);

#ifdef __cplusplus
}
#endif
#endif
