/* sim/vendor/vendor.h: what the simulated vendor libraries (libcublas.so.13, libcublasLt.so.13,
 * libcudnn.so.9) share: their export attribute, their kernels and the one duration formula.
 * Each GEMM, convolution or normalisation is one simulated kernel queued on the handle's stream
 * through the device's private ops table (sim/driver_ops.h): a traced cuLaunchKernel, never
 * libcudart's exported cudaLaunchKernel, as the real libraries (static runtime) do, so an
 * LD_PRELOADed shim never sees them and CUPTI's driver domain does. Nothing is computed.
 * Everything declared here is hidden; each library links its own copy (vendor.c). */
#ifndef SIM_VENDOR_H
#define SIM_VENDOR_H

#include <cuda_runtime_api.h>
#include <library_types.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/driver_ops.h"

#define VENDOR_API __attribute__((visibility("default")))

#pragma GCC visibility push(hidden)

/* The throughput classes of the formula (sim/README.md, "Durations"): FP64 and FP32 on the
 * FMA units, TF32, FP16/BF16 and 8-bit on the tensor cores. */
enum vendor_rate { VENDOR_FP64, VENDOR_FP32, VENDOR_TF32, VENDOR_FP16, VENDOR_FP8 };

double vendor_tflops(enum vendor_rate rate);
/* The work of a kernel in ns: flops at the class's rate; bytes moved at the device memory
 * speed (SIMCUDA_DEVICE_GBPS). A kernel lasts the launch cost (SIMCUDA_KERNEL_NS) plus this. */
uint64_t vendor_compute_ns(double flops, enum vendor_rate rate);
uint64_t vendor_memory_ns(double bytes);

/* One kind of kernel a library launches: its address stands for it on the device (the kernel
 * table's key), name is what activity records and cudaFuncGetName show. */
struct vendor_kernel {
    const char *name;
    _Atomic bool named;
};
#define VENDOR_KERNEL(var, text) static struct vendor_kernel var = {text, false}

/* Queues kernel k on stream for the launch cost plus work_ns; the driver's error if the
 * stream is not a live one. */
cudaError_t vendor_launch(struct vendor_kernel *k, uint64_t work_ns, cudaStream_t stream);
/* A result the caller reads on the host (host pointer mode): waits for the stream (one
 * cuStreamSynchronize: the call is a sync, as cuBLAS documents), then stores what the kernel
 * left at device_src, which reads as zero like all device memory after a kernel. */
cudaError_t vendor_read_back(void *dst, const void *device_src, size_t bytes, cudaStream_t stream);
/* A copy between host and device memory on stream (the cublasSet/GetMatrixAsync family). */
cudaError_t vendor_copy(void *dst, const void *src, size_t bytes, bool to_device,
                        cudaStream_t stream);
/* Device memory the library owns (a handle's scratch); released with vendor_free. */
void *vendor_alloc(size_t bytes);
void vendor_free(void *p);
/* Waits for every stream: what the libraries' documented implicit synchronizations do. */
void vendor_device_synchronize(void);

/* Bytes of one element of a cudaDataType (cuBLAS, cuBLASLt), 0 for an unknown one. */
size_t vendor_dtype_bytes(cudaDataType type);
/* The throughput class of a matrix product on inputs of that type (cudaDataType). */
enum vendor_rate vendor_dtype_rate(cudaDataType type);

/* SIMCUDA_DEBUG: 1 says why a call failed, 2 also names every call. */
#define VENDOR_DBG(level, ...)                                \
    do {                                                      \
        if (vendor_debug_level() >= (level))                  \
            simcuda_private_ops()->log((level), __VA_ARGS__); \
    } while (0)
int vendor_debug_level(void);

#pragma GCC visibility pop
#endif
