/* sim/vendor/vendor.c: the kernels, copies and duration formula of the simulated vendor
 * libraries (see vendor.h), linked into each of them. Reaches the device only through
 * simcuda_private_ops() (sim/driver_ops.h): the driver's traced operations, never an exported
 * libcudart name. */
#include "sim/vendor/vendor.h"

#include <math.h>
#include <string.h>

/* TFLOP/s of each class: round figures of an H100 SXM's dense throughput (FP64 67 and FP32 67
 * on the FMA units, TF32 495, FP16/BF16 989, FP8 1979), rounded down so step times stay
 * readable; 1 TFLOP/s is 1000 flops per ns. */
double vendor_tflops(enum vendor_rate rate)
{
    switch (rate) {
    case VENDOR_FP64: return 50.0;
    case VENDOR_FP32: return 50.0;
    case VENDOR_TF32: return 400.0;
    case VENDOR_FP16: return 800.0;
    case VENDOR_FP8: return 1600.0;
    }
    return 50.0;
}

static uint64_t round_ns(double ns)
{
    if (!(ns > 0.0))
        return 0;
    if (ns > 3600e9)
        return 3600000000000ull; /* an hour: nothing sane lasts longer */
    return (uint64_t)llround(ns);
}

uint64_t vendor_compute_ns(double flops, enum vendor_rate rate)
{
    return round_ns(flops / (vendor_tflops(rate) * 1000.0));
}

uint64_t vendor_memory_ns(double bytes)
{
    return round_ns(bytes / simcuda_private_ops()->device_bytes_per_ns());
}

cudaError_t vendor_launch(struct vendor_kernel *k, uint64_t work_ns, cudaStream_t stream)
{
    const struct simcuda_private_ops *ops = simcuda_private_ops();
    if (!atomic_load_explicit(&k->named, memory_order_acquire)) {
        ops->kernel_register(k, k->name); /* idempotent: a race registers it twice */
        atomic_store_explicit(&k->named, true, memory_order_release);
    }
    uint64_t ns = ops->default_kernel_ns() + work_ns;
    VENDOR_DBG(2, "%s: %llu ns on stream %p", k->name, (unsigned long long)ns, (void *)stream);
    return ops->launch_ns(k, ns, stream, false);
}

cudaError_t vendor_read_back(void *dst, const void *device_src, size_t bytes, cudaStream_t stream)
{
    (void)device_src;
    cudaError_t err = simcuda_private_ops()->stream_synchronize(stream, false);
    if (err == cudaSuccess)
        memset(dst, 0,
               bytes); /* what the kernel "computed": device memory reads as zero after it */
    return err;
}

cudaError_t vendor_copy(void *dst, const void *src, size_t bytes, bool to_device,
                        cudaStream_t stream)
{
    return simcuda_private_ops()->memcpy(
        dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream, false,
        true);
}

void *vendor_alloc(size_t bytes)
{
    void *p = NULL;
    if (simcuda_private_ops()->mem_alloc(&p, bytes, false) != cudaSuccess)
        return NULL;
    return p;
}

void vendor_free(void *p)
{
    if (p != NULL)
        simcuda_private_ops()->mem_free(p, false); /* cuMemFree: synchronizes the device */
}

void vendor_device_synchronize(void)
{
    simcuda_private_ops()->ctx_synchronize();
}

size_t vendor_dtype_bytes(cudaDataType type)
{
    switch (type) {
    case CUDA_R_8I:
    case CUDA_R_8U:
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
    case CUDA_R_8F_UE8M0: return 1;
    case CUDA_C_8I:
    case CUDA_C_8U:
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_32F:
    case CUDA_R_32I:
    case CUDA_R_32U:
    case CUDA_C_16F:
    case CUDA_C_16BF: return 4;
    case CUDA_C_32F:
    case CUDA_R_64F:
    case CUDA_C_32I:
    case CUDA_C_32U: return 8;
    case CUDA_C_64F: return 16;
    default: return 0;
    }
}

enum vendor_rate vendor_dtype_rate(cudaDataType type)
{
    switch (type) {
    case CUDA_R_64F:
    case CUDA_C_64F: return VENDOR_FP64;
    case CUDA_R_16F:
    case CUDA_C_16F:
    case CUDA_R_16BF:
    case CUDA_C_16BF: return VENDOR_FP16;
    case CUDA_R_8I:
    case CUDA_C_8I:
    case CUDA_R_8U:
    case CUDA_C_8U:
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2: return VENDOR_FP8;
    default: return VENDOR_FP32;
    }
}

int vendor_debug_level(void)
{
    return simcuda_private_ops()->debug_level();
}
