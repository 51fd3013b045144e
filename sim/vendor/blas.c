/* sim/vendor/blas.c: the handle and the throughput rule shared by the simulated libcublas.so.13
 * and libcublasLt.so.13 (blas.h), linked into both. */
#include "sim/vendor/blas.h"

#include <stdlib.h>

bool blas_handle_ok(const void *handle)
{
    return handle != NULL && ((const struct cublasContext *)handle)->magic == BLAS_HANDLE_MAGIC;
}

cublasStatus_t blas_handle_create(struct cublasContext **out)
{
    if (out == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    struct cublasContext *h = calloc(1, sizeof *h);
    if (h == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    h->scratch = vendor_alloc(BLAS_SCRATCH_BYTES);
    if (h->scratch == NULL) {
        free(h);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    h->magic = BLAS_HANDLE_MAGIC;
    h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    h->math_mode = CUBLAS_DEFAULT_MATH;
    h->atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
    *out = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t blas_handle_destroy(struct cublasContext *h)
{
    if (!blas_handle_ok(h))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    vendor_device_synchronize();
    vendor_free(h->scratch);
    h->magic = 0;
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

enum vendor_rate blas_rate(cudaDataType a_type, cublasComputeType_t compute, cublasMath_t math)
{
    enum vendor_rate by_type = vendor_dtype_rate(a_type);
    if (by_type != VENDOR_FP32)
        return by_type;
    switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_TF32: return VENDOR_TF32;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF: return VENDOR_FP16;
    case CUBLAS_COMPUTE_32F:
        return ((unsigned)math & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH ? VENDOR_TF32 : VENDOR_FP32;
    default: return VENDOR_FP32;
    }
}

bool blas_compute_type_ok(cublasComputeType_t compute)
{
    switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
#if CUBLAS_VER_MAJOR >= 13 /* the emulations: not in the cuBLAS 12.8 headers */
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
#endif
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC: return true;
    default: return false;
    }
}

cublasStatus_t blas_status(cudaError_t err)
{
    switch (err) {
    case cudaSuccess: return CUBLAS_STATUS_SUCCESS;
    case cudaErrorMemoryAllocation: return CUBLAS_STATUS_ALLOC_FAILED;
    case cudaErrorInvalidValue: return CUBLAS_STATUS_INVALID_VALUE;
    default: return CUBLAS_STATUS_EXECUTION_FAILED;
    }
}

cublasStatus_t blas_launch(const struct cublasContext *h, struct vendor_kernel *k, uint64_t work_ns)
{
    return blas_status(vendor_launch(k, work_ns, h->stream));
}

const char *blas_status_name(cublasStatus_t status)
{
    switch (status) {
#define NAME(s) \
    case s: return #s;
        NAME(CUBLAS_STATUS_SUCCESS)
        NAME(CUBLAS_STATUS_NOT_INITIALIZED)
        NAME(CUBLAS_STATUS_ALLOC_FAILED)
        NAME(CUBLAS_STATUS_INVALID_VALUE)
        NAME(CUBLAS_STATUS_ARCH_MISMATCH)
        NAME(CUBLAS_STATUS_MAPPING_ERROR)
        NAME(CUBLAS_STATUS_EXECUTION_FAILED)
        NAME(CUBLAS_STATUS_INTERNAL_ERROR)
        NAME(CUBLAS_STATUS_NOT_SUPPORTED)
        NAME(CUBLAS_STATUS_LICENSE_ERROR)
#undef NAME
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *blas_status_string(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
    }
    return "unknown error";
}

cublasStatus_t blas_property(libraryPropertyType type, int *value)
{
    if (value == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
}
