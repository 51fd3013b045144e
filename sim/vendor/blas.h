/* sim/vendor/blas.h: what the simulated libcublas.so.13 and libcublasLt.so.13 share: the
 * handle (a cuBLAS handle is also a valid cuBLASLt handle, as NVIDIA documents: "any valid
 * cublasHandle_t can be used in place of cublasLtHandle_t with a simple cast", which is how
 * PyTorch uses it) and the throughput class of a matrix product. Hidden (blas.c). */
#ifndef SIM_VENDOR_BLAS_H
#define SIM_VENDOR_BLAS_H

#include <cublas_api.h>

#include "sim/vendor/vendor.h"

#pragma GCC visibility push(hidden)

#define BLAS_HANDLE_MAGIC 0x53424c41u /* "ALBS" */
#define BLAS_SCRATCH_BYTES 256        /* where a result lands before a host-mode read-back */

struct cublasContext {
    uint32_t magic;
    cudaStream_t stream; /* cublasSetStream; NULL: the legacy default stream */
    void *workspace;     /* cublasSetWorkspace; NULL: the default pool */
    size_t workspace_bytes;
    cublasPointerMode_t pointer_mode;
    cublasMath_t math_mode;
    cublasAtomicsMode_t atomics_mode;
    int sm_count_target;
    void *scratch; /* BLAS_SCRATCH_BYTES of device memory */
};

/* A live handle made by cublasCreate or cublasLtCreate (NULL or anything else: false). */
bool blas_handle_ok(const void *handle);
/* cublasCreate / cublasLtCreate: a new handle on the legacy default stream. */
cublasStatus_t blas_handle_create(struct cublasContext **out);
/* cublasDestroy / cublasLtDestroy: waits for the device (cuBLAS documents the implicit
 * cudaDeviceSynchronize) and frees the handle. */
cublasStatus_t blas_handle_destroy(struct cublasContext *h);

/* The throughput class of a matrix product: by the inputs' type, then for FP32 inputs by the
 * compute type (CUBLAS_COMPUTE_32F_FAST_*) or the handle's math mode
 * (CUBLAS_TF32_TENSOR_OP_MATH); pedantic compute types stay on the FMA units. */
enum vendor_rate blas_rate(cudaDataType a_type, cublasComputeType_t compute, cublasMath_t math);
/* Whether computeType is one of cublasComputeType_t's. */
bool blas_compute_type_ok(cublasComputeType_t compute);
/* cuBLAS's status for a runtime error of the device (a dead stream). */
cublasStatus_t blas_status(cudaError_t err);
/* cublasGetStatusName / String and cublasGetProperty (the same in both libraries). */
const char *blas_status_name(cublasStatus_t status);
const char *blas_status_string(cublasStatus_t status);
cublasStatus_t blas_property(libraryPropertyType type, int *value);
/* Queues kernel k on the handle's stream: the launch cost plus work_ns. */
cublasStatus_t blas_launch(const struct cublasContext *h, struct vendor_kernel *k,
                           uint64_t work_ns);

/* The checks every cuBLAS routine makes first: a handle cublasCreate made
 * (CUBLAS_STATUS_NOT_INITIALIZED otherwise), then its documented parameter rules
 * (CUBLAS_STATUS_INVALID_VALUE). */
#define BLAS_HANDLE(handle)                       \
    do {                                          \
        if (!blas_handle_ok(handle))              \
            return CUBLAS_STATUS_NOT_INITIALIZED; \
    } while (0)
#define BLAS_REQUIRE(cond)                      \
    do {                                        \
        if (!(cond))                            \
            return CUBLAS_STATUS_INVALID_VALUE; \
    } while (0)
#define BLAS_MAX1(x) ((x) > 1 ? (x) : 1)

#pragma GCC visibility pop
#endif
