/* sim/vendor/cublas.c: the simulated libcublas.so.13's handle, settings and level-3 / batched /
 * extension routines (prototypes of cublas_api.h; levels 1 and 2 are in cublas_l12.c). A
 * routine checks its arguments as cuBLAS documents and queues one kernel on the handle's stream
 * (cublasSetStream; the legacy default stream until then) lasting the launch cost plus its
 * flops at the throughput of its types and math mode (sim/README.md, "Durations"). Nothing is
 * computed and nothing waits, except cublasDestroy (documented to synchronize) and results
 * read on the host. Never calls an exported name. */
#include <stdlib.h>
#include <string.h>

#include "sim/vendor/blas.h"

#define API VENDOR_API

VENDOR_KERNEL(k_gemm, "simcublas::gemm");
VENDOR_KERNEL(k_gemm_batched, "simcublas::gemm_batched");
VENDOR_KERNEL(k_symm, "simcublas::symm");
VENDOR_KERNEL(k_syrk, "simcublas::syrk");
VENDOR_KERNEL(k_trmm, "simcublas::trmm");
VENDOR_KERNEL(k_trsm, "simcublas::trsm");
VENDOR_KERNEL(k_getrf, "simcublas::getrf_batched");
VENDOR_KERNEL(k_getrs, "simcublas::getrs_batched");
VENDOR_KERNEL(k_geqrf, "simcublas::geqrf_batched");
VENDOR_KERNEL(k_gels, "simcublas::gels_batched");

/* ---- the handle --------------------------------------------------------------------------- */

API cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    return blas_handle_create(handle);
}

API cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    return blas_handle_destroy(handle);
}

/* "cublasSetStream ... unconditionally resets the cuBLAS library workspace back to the default
 * workspace pool". */
API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    BLAS_HANDLE(handle);
    handle->stream = streamId;
    handle->workspace = NULL;
    handle->workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(streamId != NULL);
    *streamId = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

/* "The workspace pointer has to be aligned to at least 256 bytes, otherwise
 * CUBLAS_STATUS_INVALID_VALUE error is returned." */
API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                         size_t workspaceSizeInBytes)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(((uintptr_t)workspace & 255) == 0);
    handle->workspace = workspace;
    handle->workspace_bytes = workspace != NULL ? workspaceSizeInBytes : 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* The emulated math modes: cuBLAS 13's (not in the cuBLAS 12.8 headers). */
static bool emulated_math(unsigned mode)
{
#if CUBLAS_VER_MAJOR >= 13
    return mode == CUBLAS_FP32_EMULATED_BF16X9_MATH || mode == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
#else
    (void)mode;
    return false;
#endif
}

API cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    BLAS_HANDLE(handle);
    unsigned base = (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    BLAS_REQUIRE(base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH ||
                 base == CUBLAS_PEDANTIC_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH ||
                 emulated_math(base));
    handle->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(mode != NULL);
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(mode == CUBLAS_POINTER_MODE_HOST || mode == CUBLAS_POINTER_MODE_DEVICE);
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(mode != NULL);
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(mode == CUBLAS_ATOMICS_NOT_ALLOWED || mode == CUBLAS_ATOMICS_ALLOWED);
    handle->atomics_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(mode != NULL);
    *mode = handle->atomics_mode;
    return CUBLAS_STATUS_SUCCESS;
}

/* 0 means every multiprocessor; the target changes nothing here. */
API cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(smCountTarget >= 0);
    handle->sm_count_target = smCountTarget;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int *smCountTarget)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(smCountTarget != NULL);
    *smCountTarget = handle->sm_count_target;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
    (void)handle;
    if (version == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *version = CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
    return blas_property(type, value);
}

API size_t cublasGetCudartVersion(void)
{
    return CUDART_VERSION;
}

API const char *cublasGetStatusName(cublasStatus_t status)
{
    return blas_status_name(status);
}

API const char *cublasGetStatusString(cublasStatus_t status)
{
    return blas_status_string(status);
}

/* ---- level 3 ------------------------------------------------------------------------------ */

static bool op_ok(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static bool side_ok(cublasSideMode_t side)
{
    return side == CUBLAS_SIDE_LEFT || side == CUBLAS_SIDE_RIGHT;
}

static bool fill_ok(cublasFillMode_t uplo)
{
    return uplo == CUBLAS_FILL_MODE_LOWER || uplo == CUBLAS_FILL_MODE_UPPER;
}

static bool diag_ok(cublasDiagType_t diag)
{
    return diag == CUBLAS_DIAG_NON_UNIT || diag == CUBLAS_DIAG_UNIT;
}

/* How one family of types computes: the type of its inputs (cudaDataType: a complex one counts
 * four real multiply-adds per product) and the compute type cuBLAS uses for it. */
struct blas_types {
    cudaDataType a_type;
    cublasComputeType_t compute;
};
#define T_S ((struct blas_types){CUDA_R_32F, CUBLAS_COMPUTE_32F})
#define T_D ((struct blas_types){CUDA_R_64F, CUBLAS_COMPUTE_64F})
#define T_C ((struct blas_types){CUDA_C_32F, CUBLAS_COMPUTE_32F})
#define T_Z ((struct blas_types){CUDA_C_64F, CUBLAS_COMPUTE_64F})

static bool is_complex(cudaDataType t)
{
    switch (t) {
    case CUDA_C_16F:
    case CUDA_C_16BF:
    case CUDA_C_32F:
    case CUDA_C_64F:
    case CUDA_C_8I:
    case CUDA_C_8U:
    case CUDA_C_32I:
    case CUDA_C_32U: return true;
    default: return false;
    }
}

/* A level-3 routine whose arguments passed the documented checks (valid): one kernel for its
 * real flops (2 per multiply-add, 4 times that for complex types) at the types' rate. A batch
 * of zero matrices, or an empty product, queues nothing. */
static cublasStatus_t product(cublasHandle_t h, struct vendor_kernel *k, bool valid, double flops,
                              struct blas_types types)
{
    BLAS_HANDLE(h);
    BLAS_REQUIRE(valid);
    if (!(flops > 0.0))
        return CUBLAS_STATUS_SUCCESS;
    if (is_complex(types.a_type))
        flops *= 4.0;
    return blas_launch(
        h, k, vendor_compute_ns(flops, blas_rate(types.a_type, types.compute, h->math_mode)));
}

/* cuBLAS's rules for C = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n. */
static bool gemm_ok(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                    const void *alpha, int lda, int ldb, const void *beta, int ldc)
{
    return op_ok(transa) && op_ok(transb) && m >= 0 && n >= 0 && k >= 0 &&
           lda >= BLAS_MAX1(transa == CUBLAS_OP_N ? m : k) &&
           ldb >= BLAS_MAX1(transb == CUBLAS_OP_N ? k : n) && ldc >= BLAS_MAX1(m) &&
           alpha != NULL && beta != NULL;
}

static double gemm_flops(int m, int n, int k, int batch)
{
    return 2.0 * m * n * (double)k * batch;
}

#define GEMM(name, T, types)                                                               \
    API cublasStatus_t name(cublasHandle_t handle, cublasOperation_t transa,               \
                            cublasOperation_t transb, int m, int n, int k, const T *alpha, \
                            const T *A, int lda, const T *B, int ldb, const T *beta, T *C, \
                            int ldc)                                                       \
    {                                                                                      \
        (void)A;                                                                           \
        (void)B;                                                                           \
        (void)C;                                                                           \
        return product(handle, &k_gemm,                                                    \
                       gemm_ok(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc),       \
                       gemm_flops(m, n, k, 1), types);                                     \
    }
GEMM(cublasSgemm_v2, float, T_S)
GEMM(cublasDgemm_v2, double, T_D)
GEMM(cublasCgemm_v2, cuComplex, T_C)
GEMM(cublasZgemm_v2, cuDoubleComplex, T_Z)

#define GEMM_BATCHED(name, T, types)                                                               \
    API cublasStatus_t name(cublasHandle_t handle, cublasOperation_t transa,                       \
                            cublasOperation_t transb, int m, int n, int k, const T *alpha,         \
                            const T *const Aarray[], int lda, const T *const Barray[], int ldb,    \
                            const T *beta, T *const Carray[], int ldc, int batchCount)             \
    {                                                                                              \
        (void)Aarray;                                                                              \
        (void)Barray;                                                                              \
        (void)Carray;                                                                              \
        bool ok = gemm_ok(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc) && batchCount >= 0; \
        return product(handle, &k_gemm_batched, ok, gemm_flops(m, n, k, batchCount), types);       \
    }
GEMM_BATCHED(cublasSgemmBatched, float, T_S)
GEMM_BATCHED(cublasDgemmBatched, double, T_D)
GEMM_BATCHED(cublasCgemmBatched, cuComplex, T_C)
GEMM_BATCHED(cublasZgemmBatched, cuDoubleComplex, T_Z)

#define GEMM_STRIDED(name, T, types)                                                               \
    API cublasStatus_t name(cublasHandle_t handle, cublasOperation_t transa,                       \
                            cublasOperation_t transb, int m, int n, int k, const T *alpha,         \
                            const T *A, int lda, long long int strideA, const T *B, int ldb,       \
                            long long int strideB, const T *beta, T *C, int ldc,                   \
                            long long int strideC, int batchCount)                                 \
    {                                                                                              \
        (void)A;                                                                                   \
        (void)B;                                                                                   \
        (void)C;                                                                                   \
        (void)strideA;                                                                             \
        (void)strideB;                                                                             \
        (void)strideC;                                                                             \
        bool ok = gemm_ok(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc) && batchCount >= 0; \
        return product(handle, &k_gemm_batched, ok, gemm_flops(m, n, k, batchCount), types);       \
    }
GEMM_STRIDED(cublasSgemmStridedBatched, float, T_S)
GEMM_STRIDED(cublasDgemmStridedBatched, double, T_D)
GEMM_STRIDED(cublasCgemmStridedBatched, cuComplex, T_C)
GEMM_STRIDED(cublasZgemmStridedBatched, cuDoubleComplex, T_Z)

/* The type combinations of cublasGemmEx's table that the simulator takes: A and B of one
 * known type, C of a known type, a valid compute type of the same family (double with double,
 * integer with 8-bit integers, float or half otherwise). Others: CUBLAS_STATUS_NOT_SUPPORTED,
 * as cuBLAS answers for a combination outside its table. */
static bool gemm_ex_types_ok(cudaDataType a, cudaDataType b, cudaDataType c,
                             cublasComputeType_t compute)
{
    if (a != b || vendor_dtype_bytes(a) == 0 || vendor_dtype_bytes(c) == 0 ||
        !blas_compute_type_ok(compute))
        return false;
    bool dbl = compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC;
#if CUBLAS_VER_MAJOR >= 13
    dbl = dbl || compute == CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT;
#endif
    bool int32 = compute == CUBLAS_COMPUTE_32I || compute == CUBLAS_COMPUTE_32I_PEDANTIC;
    bool a_dbl = a == CUDA_R_64F || a == CUDA_C_64F;
    bool a_int = a == CUDA_R_8I || a == CUDA_C_8I;
    return dbl == a_dbl && (!int32 || a_int);
}

static cublasStatus_t gemm_ex(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const void *alpha,
                              cudaDataType Atype, int lda, cudaDataType Btype, int ldb,
                              const void *beta, cudaDataType Ctype, int ldc, int batch,
                              cublasComputeType_t compute, struct vendor_kernel *kernel)
{
    BLAS_HANDLE(handle);
    BLAS_REQUIRE(gemm_ok(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc) && batch >= 0);
    if (!gemm_ex_types_ok(Atype, Btype, Ctype, compute)) {
        VENDOR_DBG(1, "cublasGemmEx: types A %d B %d C %d compute %d not supported", (int)Atype,
                   (int)Btype, (int)Ctype, (int)compute);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return product(handle, kernel, true, gemm_flops(m, n, k, batch),
                   (struct blas_types){Atype, compute});
}

API cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                const void *A, cudaDataType Atype, int lda, const void *B,
                                cudaDataType Btype, int ldb, const void *beta, void *C,
                                cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                cublasGemmAlgo_t algo)
{
    (void)A;
    (void)B;
    (void)C;
    (void)algo;
    return gemm_ex(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc,
                   1, computeType, &k_gemm);
}

API cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
    const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    (void)A;
    (void)B;
    (void)C;
    (void)strideA;
    (void)strideB;
    (void)strideC;
    (void)algo;
    return gemm_ex(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc,
                   batchCount, computeType, &k_gemm_batched);
}

/* cublasSgemmEx: float scalars and compute, inputs float, half, bfloat16 or int8. */
API cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                 cublasOperation_t transb, int m, int n, int k, const float *alpha,
                                 const void *A, cudaDataType Atype, int lda, const void *B,
                                 cudaDataType Btype, int ldb, const float *beta, void *C,
                                 cudaDataType Ctype, int ldc)
{
    (void)A;
    (void)B;
    (void)C;
    BLAS_HANDLE(handle);
    if (Atype != CUDA_R_32F && Atype != CUDA_R_16F && Atype != CUDA_R_16BF && Atype != CUDA_R_8I)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm_ex(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc,
                   1, CUBLAS_COMPUTE_32F, &k_gemm);
}

/* symm / hemm: C = alpha A B + beta C (side left) with A m x m symmetric: 2 m m n flops
 * (2 m n n on the right). */
#define SYMM(name, T, types)                                                                      \
    API cublasStatus_t name(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,  \
                            int m, int n, const T *alpha, const T *A, int lda, const T *B,        \
                            int ldb, const T *beta, T *C, int ldc)                                \
    {                                                                                             \
        (void)A;                                                                                  \
        (void)B;                                                                                  \
        (void)C;                                                                                  \
        bool left = side == CUBLAS_SIDE_LEFT;                                                     \
        bool ok = side_ok(side) && fill_ok(uplo) && m >= 0 && n >= 0 &&                           \
                  lda >= BLAS_MAX1(left ? m : n) && ldb >= BLAS_MAX1(m) && ldc >= BLAS_MAX1(m) && \
                  alpha != NULL && beta != NULL;                                                  \
        return product(handle, &k_symm, ok, gemm_flops(m, n, left ? m : n, 1), types);            \
    }
SYMM(cublasSsymm_v2, float, T_S)
SYMM(cublasDsymm_v2, double, T_D)
SYMM(cublasCsymm_v2, cuComplex, T_C)
SYMM(cublasZsymm_v2, cuDoubleComplex, T_Z)
SYMM(cublasChemm_v2, cuComplex, T_C)
SYMM(cublasZhemm_v2, cuDoubleComplex, T_Z)

/* syrk / herk: C = alpha op(A) op(A)^T + beta C, one triangle of the n x n product: n (n+1) k
 * flops; syr2k / her2k twice that. */
static bool rank_k_ok(cublasFillMode_t uplo, cublasOperation_t trans, int n, int k, int lda,
                      int ldb, int ldc, const void *alpha, const void *beta)
{
    int rows = trans == CUBLAS_OP_N ? n : k;
    return fill_ok(uplo) && op_ok(trans) && n >= 0 && k >= 0 && lda >= BLAS_MAX1(rows) &&
           ldb >= BLAS_MAX1(rows) && ldc >= BLAS_MAX1(n) && alpha != NULL && beta != NULL;
}

#define SYRK(name, S, T, types)                                                                    \
    API cublasStatus_t name(cublasHandle_t handle, cublasFillMode_t uplo, cublasOperation_t trans, \
                            int n, int k, const S *alpha, const T *A, int lda, const S *beta,      \
                            T *C, int ldc)                                                         \
    {                                                                                              \
        (void)A;                                                                                   \
        (void)C;                                                                                   \
        bool ok = rank_k_ok(uplo, trans, n, k, lda, lda, ldc, alpha, beta);                        \
        return product(handle, &k_syrk, ok, (double)n * (n + 1) * (double)k, types);               \
    }
SYRK(cublasSsyrk_v2, float, float, T_S)
SYRK(cublasDsyrk_v2, double, double, T_D)
SYRK(cublasCsyrk_v2, cuComplex, cuComplex, T_C)
SYRK(cublasZsyrk_v2, cuDoubleComplex, cuDoubleComplex, T_Z)
SYRK(cublasCherk_v2, float, cuComplex, T_C)
SYRK(cublasZherk_v2, double, cuDoubleComplex, T_Z)

#define SYR2K(name, T, BT, types)                                                                  \
    API cublasStatus_t name(cublasHandle_t handle, cublasFillMode_t uplo, cublasOperation_t trans, \
                            int n, int k, const T *alpha, const T *A, int lda, const T *Bm,        \
                            int ldb, const BT *beta, T *C, int ldc)                                \
    {                                                                                              \
        (void)A;                                                                                   \
        (void)Bm;                                                                                  \
        (void)C;                                                                                   \
        bool ok = rank_k_ok(uplo, trans, n, k, lda, ldb, ldc, alpha, beta);                        \
        return product(handle, &k_syrk, ok, 2.0 * n * (n + 1) * (double)k, types);                 \
    }
SYR2K(cublasSsyr2k_v2, float, float, T_S)
SYR2K(cublasDsyr2k_v2, double, double, T_D)
SYR2K(cublasCsyr2k_v2, cuComplex, cuComplex, T_C)
SYR2K(cublasZsyr2k_v2, cuDoubleComplex, cuDoubleComplex, T_Z)
SYR2K(cublasCher2k_v2, cuComplex, float, T_C)
SYR2K(cublasZher2k_v2, cuDoubleComplex, double, T_Z)

/* trmm / trsm: op(A) triangular m x m (side left): m m n flops (m n n on the right). */
static bool triangular_ok(cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t trans,
                          cublasDiagType_t diag, int m, int n, int lda, int ldb, const void *alpha)
{
    return side_ok(side) && fill_ok(uplo) && op_ok(trans) && diag_ok(diag) && m >= 0 && n >= 0 &&
           lda >= BLAS_MAX1(side == CUBLAS_SIDE_LEFT ? m : n) && ldb >= BLAS_MAX1(m) &&
           alpha != NULL;
}

static double triangular_flops(cublasSideMode_t side, int m, int n, int batch)
{
    int a = side == CUBLAS_SIDE_LEFT ? m : n;
    return (double)a * a * (side == CUBLAS_SIDE_LEFT ? n : m) * (double)batch;
}

#define TRMM(name, T, types)                                                                      \
    API cublasStatus_t name(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,  \
                            cublasOperation_t trans, cublasDiagType_t diag, int m, int n,         \
                            const T *alpha, const T *A, int lda, const T *B, int ldb, T *C,       \
                            int ldc)                                                              \
    {                                                                                             \
        (void)A;                                                                                  \
        (void)B;                                                                                  \
        (void)C;                                                                                  \
        bool ok =                                                                                 \
            triangular_ok(side, uplo, trans, diag, m, n, lda, ldb, alpha) && ldc >= BLAS_MAX1(m); \
        return product(handle, &k_trmm, ok, triangular_flops(side, m, n, 1), types);              \
    }
TRMM(cublasStrmm_v2, float, T_S)
TRMM(cublasDtrmm_v2, double, T_D)
TRMM(cublasCtrmm_v2, cuComplex, T_C)
TRMM(cublasZtrmm_v2, cuDoubleComplex, T_Z)

#define TRSM(name, T, types)                                                                     \
    API cublasStatus_t name(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo, \
                            cublasOperation_t trans, cublasDiagType_t diag, int m, int n,        \
                            const T *alpha, const T *A, int lda, T *B, int ldb)                  \
    {                                                                                            \
        (void)A;                                                                                 \
        (void)B;                                                                                 \
        bool ok = triangular_ok(side, uplo, trans, diag, m, n, lda, ldb, alpha);                 \
        return product(handle, &k_trsm, ok, triangular_flops(side, m, n, 1), types);             \
    }
TRSM(cublasStrsm_v2, float, T_S)
TRSM(cublasDtrsm_v2, double, T_D)
TRSM(cublasCtrsm_v2, cuComplex, T_C)
TRSM(cublasZtrsm_v2, cuDoubleComplex, T_Z)

#define TRSM_BATCHED(name, T, types)                                                             \
    API cublasStatus_t name(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo, \
                            cublasOperation_t trans, cublasDiagType_t diag, int m, int n,        \
                            const T *alpha, const T *const A[], int lda, T *const B[], int ldb,  \
                            int batchCount)                                                      \
    {                                                                                            \
        (void)A;                                                                                 \
        (void)B;                                                                                 \
        bool ok =                                                                                \
            triangular_ok(side, uplo, trans, diag, m, n, lda, ldb, alpha) && batchCount >= 0;    \
        return product(handle, &k_trsm, ok, triangular_flops(side, m, n, batchCount), types);    \
    }
TRSM_BATCHED(cublasStrsmBatched, float, T_S)
TRSM_BATCHED(cublasDtrsmBatched, double, T_D)
TRSM_BATCHED(cublasCtrsmBatched, cuComplex, T_C)
TRSM_BATCHED(cublasZtrsmBatched, cuDoubleComplex, T_Z)

/* ---- batched factorizations --------------------------------------------------------------- */

/* The routines whose info is a host pointer: "if info = 0, the parameters passed to the
 * function are valid; if info < 0, the parameter in position -info is invalid" (counting the
 * handle as 1). bad: that position, 0 when every parameter is valid. */
static cublasStatus_t host_info(int *info, int bad)
{
    if (info == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *info = -bad;
    return bad != 0 ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}

/* getrfBatched: LU of n x n matrices, 2/3 n^3 flops each; info is a device array. */
#define GETRF(name, T, types)                                                                   \
    API cublasStatus_t name(cublasHandle_t handle, int n, T *const A[], int lda, int *P,        \
                            int *info, int batchSize)                                           \
    {                                                                                           \
        (void)A;                                                                                \
        (void)P;                                                                                \
        bool ok = n >= 0 && lda >= BLAS_MAX1(n) && batchSize >= 0 && info != NULL;              \
        return product(handle, &k_getrf, ok, 2.0 / 3.0 * n * n * (double)n * batchSize, types); \
    }
GETRF(cublasSgetrfBatched, float, T_S)
GETRF(cublasDgetrfBatched, double, T_D)
GETRF(cublasCgetrfBatched, cuComplex, T_C)
GETRF(cublasZgetrfBatched, cuDoubleComplex, T_Z)

static int getrs_bad(cublasOperation_t trans, int n, int nrhs, int lda, int ldb, int batch)
{
    if (!op_ok(trans))
        return 2;
    if (n < 0)
        return 3;
    if (nrhs < 0)
        return 4;
    if (lda < BLAS_MAX1(n))
        return 6;
    if (ldb < BLAS_MAX1(n))
        return 9;
    if (batch < 0)
        return 11;
    return 0;
}

/* getrsBatched: two triangular solves per matrix, 2 n^2 nrhs flops. */
#define GETRS(name, T, types)                                                                  \
    API cublasStatus_t name(cublasHandle_t handle, cublasOperation_t trans, int n, int nrhs,   \
                            const T *const Aarray[], int lda, const int *devIpiv,              \
                            T *const Barray[], int ldb, int *info, int batchSize)              \
    {                                                                                          \
        (void)Aarray;                                                                          \
        (void)devIpiv;                                                                         \
        (void)Barray;                                                                          \
        BLAS_HANDLE(handle);                                                                   \
        cublasStatus_t st = host_info(info, getrs_bad(trans, n, nrhs, lda, ldb, batchSize));   \
        if (st != CUBLAS_STATUS_SUCCESS)                                                       \
            return st;                                                                         \
        return product(handle, &k_getrs, true, 2.0 * n * n * (double)nrhs * batchSize, types); \
    }
GETRS(cublasSgetrsBatched, float, T_S)
GETRS(cublasDgetrsBatched, double, T_D)
GETRS(cublasCgetrsBatched, cuComplex, T_C)
GETRS(cublasZgetrsBatched, cuDoubleComplex, T_Z)

static double qr_flops(int m, int n)
{
    double mn = m < n ? m : n;
    return 2.0 * m * n * mn - 2.0 / 3.0 * mn * mn * mn;
}

static int geqrf_bad(int m, int n, int lda, int batch)
{
    if (m < 0)
        return 2;
    if (n < 0)
        return 3;
    if (lda < BLAS_MAX1(m))
        return 5;
    if (batch < 0)
        return 8;
    return 0;
}

#define GEQRF(name, T, types)                                                                \
    API cublasStatus_t name(cublasHandle_t handle, int m, int n, T *const Aarray[], int lda, \
                            T *const TauArray[], int *info, int batchSize)                   \
    {                                                                                        \
        (void)Aarray;                                                                        \
        (void)TauArray;                                                                      \
        BLAS_HANDLE(handle);                                                                 \
        cublasStatus_t st = host_info(info, geqrf_bad(m, n, lda, batchSize));                \
        if (st != CUBLAS_STATUS_SUCCESS)                                                     \
            return st;                                                                       \
        return product(handle, &k_geqrf, true, qr_flops(m, n) * batchSize, types);           \
    }
GEQRF(cublasSgeqrfBatched, float, T_S)
GEQRF(cublasDgeqrfBatched, double, T_D)
GEQRF(cublasCgeqrfBatched, cuComplex, T_C)
GEQRF(cublasZgeqrfBatched, cuDoubleComplex, T_Z)

static int gels_bad(int m, int n, int nrhs, int lda, int ldc, int batch)
{
    if (m < 0)
        return 3;
    if (n < 0)
        return 4;
    if (nrhs < 0)
        return 5;
    if (lda < BLAS_MAX1(m))
        return 7;
    if (ldc < BLAS_MAX1(m))
        return 9;
    if (batch < 0)
        return 12;
    return 0;
}

/* gelsBatched: QR then the solve. "CUBLAS_STATUS_NOT_SUPPORTED: the parameters m < n or trans
 * is different from non-transpose." */
#define GELS(name, T, types)                                                                  \
    API cublasStatus_t name(cublasHandle_t handle, cublasOperation_t trans, int m, int n,     \
                            int nrhs, T *const Aarray[], int lda, T *const Carray[], int ldc, \
                            int *info, int *devInfoArray, int batchSize)                      \
    {                                                                                         \
        (void)Aarray;                                                                         \
        (void)Carray;                                                                         \
        (void)devInfoArray;                                                                   \
        BLAS_HANDLE(handle);                                                                  \
        cublasStatus_t st = host_info(info, gels_bad(m, n, nrhs, lda, ldc, batchSize));       \
        if (st != CUBLAS_STATUS_SUCCESS)                                                      \
            return st;                                                                        \
        if (m < n || trans != CUBLAS_OP_N)                                                    \
            return CUBLAS_STATUS_NOT_SUPPORTED;                                               \
        double flops = qr_flops(m, n) + 4.0 * m * n * (double)nrhs;                           \
        return product(handle, &k_gels, true, flops * batchSize, types);                      \
    }
GELS(cublasSgelsBatched, float, T_S)
GELS(cublasDgelsBatched, double, T_D)
GELS(cublasCgelsBatched, cuComplex, T_C)
GELS(cublasZgelsBatched, cuDoubleComplex, T_Z)

/* ---- host <-> device copies on a stream ---------------------------------------------------- */

/* count blocks of block_bytes, src_stride / dst_stride bytes apart: one copy when both sides are
 * contiguous, else one per block (what cudaMemcpy2DAsync does in one). */
static cublasStatus_t strided_copy(void *dst, size_t dst_stride, const void *src, size_t src_stride,
                                   size_t block_bytes, size_t count, bool to_device,
                                   cudaStream_t stream)
{
    if (count == 0 || block_bytes == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (dst_stride == block_bytes && src_stride == block_bytes)
        return vendor_copy(dst, src, block_bytes * count, to_device, stream) == cudaSuccess
                   ? CUBLAS_STATUS_SUCCESS
                   : CUBLAS_STATUS_MAPPING_ERROR;
    for (size_t i = 0; i < count; i++)
        if (vendor_copy((char *)dst + i * dst_stride, (const char *)src + i * src_stride,
                        block_bytes, to_device, stream) != cudaSuccess)
            return CUBLAS_STATUS_MAPPING_ERROR;
    return CUBLAS_STATUS_SUCCESS;
}

/* "CUBLAS_STATUS_INVALID_VALUE: the parameters rows, cols < 0 or elemSize, lda, ldb <= 0"
 * (and lda, ldb < rows). */
static cublasStatus_t matrix_copy(int rows, int cols, int elemSize, const void *A, int lda, void *B,
                                  int ldb, bool to_device, cudaStream_t stream)
{
    if (rows < 0 || cols < 0 || elemSize <= 0 || lda <= 0 || ldb <= 0 || lda < rows || ldb < rows)
        return CUBLAS_STATUS_INVALID_VALUE;
    size_t e = (size_t)elemSize;
    return strided_copy(B, (size_t)ldb * e, A, (size_t)lda * e, (size_t)rows * e, (size_t)cols,
                        to_device, stream);
}

static cublasStatus_t vector_copy(int n, int elemSize, const void *x, int incx, void *y, int incy,
                                  bool to_device, cudaStream_t stream)
{
    if (n < 0 || elemSize <= 0 || incx <= 0 || incy <= 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    size_t e = (size_t)elemSize;
    return strided_copy(y, (size_t)incy * e, x, (size_t)incx * e, e, (size_t)n, to_device, stream);
}

API cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elemSize, const void *A, int lda,
                                        void *B, int ldb, cudaStream_t stream)
{
    return matrix_copy(rows, cols, elemSize, A, lda, B, ldb, true, stream);
}

API cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elemSize, const void *A, int lda,
                                        void *B, int ldb, cudaStream_t stream)
{
    return matrix_copy(rows, cols, elemSize, A, lda, B, ldb, false, stream);
}

API cublasStatus_t cublasSetVectorAsync(int n, int elemSize, const void *hostPtr, int incx,
                                        void *devicePtr, int incy, cudaStream_t stream)
{
    return vector_copy(n, elemSize, hostPtr, incx, devicePtr, incy, true, stream);
}

API cublasStatus_t cublasGetVectorAsync(int n, int elemSize, const void *devicePtr, int incx,
                                        void *hostPtr, int incy, cudaStream_t stream)
{
    return vector_copy(n, elemSize, devicePtr, incx, hostPtr, incy, false, stream);
}

/* Not in cublas_api.h: an internal entry point NVIDIA's other libraries call (libcusolver,
 * libcusolverMg import it), so that they load; its arguments are not documented. */
API cublasStatus_t cublasSetEnvironmentMode(int mode);
API cublasStatus_t cublasSetEnvironmentMode(int mode)
{
    (void)mode;
    return CUBLAS_STATUS_SUCCESS;
}
