/* sim/vendor/cublas_l12.c: the level-1 and level-2 BLAS routines of the simulated libcublas.so.13
 * (prototypes of cublas_api.h). Each validates its arguments as cuBLAS documents, then queues
 * one kernel on the handle's stream lasting the launch cost plus the bytes it touches at the
 * device memory speed (these routines are memory bound). A result read on the host (host
 * pointer mode: dot, nrm2, asum, amax, ...) makes the call wait for it, as cuBLAS does; in
 * device pointer mode nothing waits. Never calls an exported name. */
#include <string.h>

#include "sim/vendor/blas.h"

#define API VENDOR_API

VENDOR_KERNEL(k_amax, "simcublas::iamax");
VENDOR_KERNEL(k_amin, "simcublas::iamin");
VENDOR_KERNEL(k_asum, "simcublas::asum");
VENDOR_KERNEL(k_nrm2, "simcublas::nrm2");
VENDOR_KERNEL(k_dot, "simcublas::dot");
VENDOR_KERNEL(k_axpy, "simcublas::axpy");
VENDOR_KERNEL(k_scal, "simcublas::scal");
VENDOR_KERNEL(k_copy, "simcublas::copy");
VENDOR_KERNEL(k_swap, "simcublas::swap");
VENDOR_KERNEL(k_rot, "simcublas::rot");
VENDOR_KERNEL(k_rotg, "simcublas::rotg");
VENDOR_KERNEL(k_gemv, "simcublas::gemv");
VENDOR_KERNEL(k_ger, "simcublas::ger");
VENDOR_KERNEL(k_symv, "simcublas::symv");
VENDOR_KERNEL(k_syr, "simcublas::syr");
VENDOR_KERNEL(k_trmv, "simcublas::trmv");
VENDOR_KERNEL(k_trsv, "simcublas::trsv");

/* ---- level 1 ------------------------------------------------------------------------------ */

/* A routine with a scalar result: the kernel, then (host pointer mode) the read-back, which
 * waits for the stream. n <= 0 (and for the norms and index searches incx <= 0) returns 0 at
 * once, as cuBLAS does. */
static cublasStatus_t reduction(cublasHandle_t h, struct vendor_kernel *k, int n, bool empty,
                                double bytes, void *result, size_t result_bytes)
{
    BLAS_HANDLE(h);
    BLAS_REQUIRE(result != NULL);
    if (n <= 0 || empty) {
        if (h->pointer_mode == CUBLAS_POINTER_MODE_HOST)
            memset(result, 0, result_bytes);
        return CUBLAS_STATUS_SUCCESS;
    }
    cublasStatus_t st = blas_launch(h, k, vendor_memory_ns(bytes));
    if (st != CUBLAS_STATUS_SUCCESS || h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE)
        return st;
    return blas_status(vendor_read_back(result, h->scratch, result_bytes, h->stream));
}

/* A routine that updates vectors in place: bytes read and written; the scalar arguments
 * (alpha, c, s, param) must be there. */
static cublasStatus_t vector_op(cublasHandle_t h, struct vendor_kernel *k, int n, double bytes,
                                bool scalars_ok)
{
    BLAS_HANDLE(h);
    BLAS_REQUIRE(scalars_ok);
    if (n <= 0)
        return CUBLAS_STATUS_SUCCESS;
    return blas_launch(h, k, vendor_memory_ns(bytes));
}

/* rotg / rotmg: in host pointer mode computed on the host by the real library (no kernel, no
 * wait; here the outputs are left as they were: nothing is computed); in device pointer mode
 * one kernel. */
static cublasStatus_t scalar_op(cublasHandle_t h, bool pointers_ok)
{
    BLAS_HANDLE(h);
    BLAS_REQUIRE(pointers_ok);
    if (h->pointer_mode == CUBLAS_POINTER_MODE_HOST)
        return CUBLAS_STATUS_SUCCESS;
    return blas_launch(h, &k_rotg, 0);
}

#define ELEM(T) ((double)sizeof(T))

#define SEARCH(name, T, kernel)                                                              \
    API cublasStatus_t name(cublasHandle_t handle, int n, const T *x, int incx, int *result) \
    {                                                                                        \
        (void)x;                                                                             \
        return reduction(handle, kernel, n, incx <= 0, n * ELEM(T), result, sizeof *result); \
    }
SEARCH(cublasIsamax_v2, float, &k_amax)
SEARCH(cublasIdamax_v2, double, &k_amax)
SEARCH(cublasIcamax_v2, cuComplex, &k_amax)
SEARCH(cublasIzamax_v2, cuDoubleComplex, &k_amax)
SEARCH(cublasIsamin_v2, float, &k_amin)
SEARCH(cublasIdamin_v2, double, &k_amin)
SEARCH(cublasIcamin_v2, cuComplex, &k_amin)
SEARCH(cublasIzamin_v2, cuDoubleComplex, &k_amin)

#define NORM(name, T, R, kernel)                                                             \
    API cublasStatus_t name(cublasHandle_t handle, int n, const T *x, int incx, R *result)   \
    {                                                                                        \
        (void)x;                                                                             \
        return reduction(handle, kernel, n, incx <= 0, n * ELEM(T), result, sizeof *result); \
    }
NORM(cublasSasum_v2, float, float, &k_asum)
NORM(cublasDasum_v2, double, double, &k_asum)
NORM(cublasScasum_v2, cuComplex, float, &k_asum)
NORM(cublasDzasum_v2, cuDoubleComplex, double, &k_asum)
NORM(cublasSnrm2_v2, float, float, &k_nrm2)
NORM(cublasDnrm2_v2, double, double, &k_nrm2)
NORM(cublasScnrm2_v2, cuComplex, float, &k_nrm2)
NORM(cublasDznrm2_v2, cuDoubleComplex, double, &k_nrm2)

#define DOT(name, T)                                                                           \
    API cublasStatus_t name(cublasHandle_t handle, int n, const T *x, int incx, const T *y,    \
                            int incy, T *result)                                               \
    {                                                                                          \
        (void)x;                                                                               \
        (void)incx;                                                                            \
        (void)y;                                                                               \
        (void)incy;                                                                            \
        return reduction(handle, &k_dot, n, false, 2.0 * n * ELEM(T), result, sizeof *result); \
    }
DOT(cublasSdot_v2, float)
DOT(cublasDdot_v2, double)
DOT(cublasCdotu_v2, cuComplex)
DOT(cublasCdotc_v2, cuComplex)
DOT(cublasZdotu_v2, cuDoubleComplex)
DOT(cublasZdotc_v2, cuDoubleComplex)

API cublasStatus_t cublasDotEx(cublasHandle_t handle, int n, const void *x, cudaDataType xType,
                               int incx, const void *y, cudaDataType yType, int incy, void *result,
                               cudaDataType resultType, cudaDataType executionType)
{
    (void)x;
    (void)incx;
    (void)y;
    (void)incy;
    BLAS_HANDLE(handle);
    size_t elem = vendor_dtype_bytes(xType), out = vendor_dtype_bytes(resultType);
    if (elem == 0 || xType != yType || out == 0 || vendor_dtype_bytes(executionType) == 0)
        return CUBLAS_STATUS_NOT_SUPPORTED; /* "the combination of the parameters ... is not supported" */
    return reduction(handle, &k_dot, n, false, 2.0 * n * (double)elem, result, out);
}

#define AXPY(name, T)                                                                           \
    API cublasStatus_t name(cublasHandle_t handle, int n, const T *alpha, const T *x, int incx, \
                            T *y, int incy)                                                     \
    {                                                                                           \
        (void)x;                                                                                \
        (void)incx;                                                                             \
        (void)y;                                                                                \
        (void)incy;                                                                             \
        return vector_op(handle, &k_axpy, n, 3.0 * n * ELEM(T), alpha != NULL);                 \
    }
AXPY(cublasSaxpy_v2, float)
AXPY(cublasDaxpy_v2, double)
AXPY(cublasCaxpy_v2, cuComplex)
AXPY(cublasZaxpy_v2, cuDoubleComplex)

#define SCAL(name, S, T)                                                                  \
    API cublasStatus_t name(cublasHandle_t handle, int n, const S *alpha, T *x, int incx) \
    {                                                                                     \
        (void)x;                                                                          \
        (void)incx;                                                                       \
        return vector_op(handle, &k_scal, n, 2.0 * n * ELEM(T), alpha != NULL);           \
    }
SCAL(cublasSscal_v2, float, float)
SCAL(cublasDscal_v2, double, double)
SCAL(cublasCscal_v2, cuComplex, cuComplex)
SCAL(cublasCsscal_v2, float, cuComplex)
SCAL(cublasZscal_v2, cuDoubleComplex, cuDoubleComplex)
SCAL(cublasZdscal_v2, double, cuDoubleComplex)

#define COPY(name, T, CT, kernel, vectors)                                                 \
    API cublasStatus_t name(cublasHandle_t handle, int n, CT *x, int incx, T *y, int incy) \
    {                                                                                      \
        (void)x;                                                                           \
        (void)incx;                                                                        \
        (void)y;                                                                           \
        (void)incy;                                                                        \
        return vector_op(handle, kernel, n, (vectors)*n * ELEM(T), true);                  \
    }
COPY(cublasScopy_v2, float, const float, &k_copy, 2.0)
COPY(cublasDcopy_v2, double, const double, &k_copy, 2.0)
COPY(cublasCcopy_v2, cuComplex, const cuComplex, &k_copy, 2.0)
COPY(cublasZcopy_v2, cuDoubleComplex, const cuDoubleComplex, &k_copy, 2.0)
COPY(cublasSswap_v2, float, float, &k_swap, 4.0)
COPY(cublasDswap_v2, double, double, &k_swap, 4.0)
COPY(cublasCswap_v2, cuComplex, cuComplex, &k_swap, 4.0)
COPY(cublasZswap_v2, cuDoubleComplex, cuDoubleComplex, &k_swap, 4.0)

#define ROT(name, T, C, S)                                                                \
    API cublasStatus_t name(cublasHandle_t handle, int n, T *x, int incx, T *y, int incy, \
                            const C *c, const S *s)                                       \
    {                                                                                     \
        (void)x;                                                                          \
        (void)incx;                                                                       \
        (void)y;                                                                          \
        (void)incy;                                                                       \
        return vector_op(handle, &k_rot, n, 4.0 * n * ELEM(T), c != NULL && s != NULL);   \
    }
ROT(cublasSrot_v2, float, float, float)
ROT(cublasDrot_v2, double, double, double)
ROT(cublasCrot_v2, cuComplex, float, cuComplex)
ROT(cublasCsrot_v2, cuComplex, float, float)
ROT(cublasZrot_v2, cuDoubleComplex, double, cuDoubleComplex)
ROT(cublasZdrot_v2, cuDoubleComplex, double, double)

#define ROTM(name, T)                                                                     \
    API cublasStatus_t name(cublasHandle_t handle, int n, T *x, int incx, T *y, int incy, \
                            const T *param)                                               \
    {                                                                                     \
        (void)x;                                                                          \
        (void)incx;                                                                       \
        (void)y;                                                                          \
        (void)incy;                                                                       \
        return vector_op(handle, &k_rot, n, 4.0 * n * ELEM(T), param != NULL);            \
    }
ROTM(cublasSrotm_v2, float)
ROTM(cublasDrotm_v2, double)

#define ROTG(name, T, C)                                                            \
    API cublasStatus_t name(cublasHandle_t handle, T *a, T *b, C *c, T *s)          \
    {                                                                               \
        return scalar_op(handle, a != NULL && b != NULL && c != NULL && s != NULL); \
    }
ROTG(cublasSrotg_v2, float, float)
ROTG(cublasDrotg_v2, double, double)
ROTG(cublasCrotg_v2, cuComplex, float)
ROTG(cublasZrotg_v2, cuDoubleComplex, double)

#define ROTMG(name, T)                                                                           \
    API cublasStatus_t name(cublasHandle_t handle, T *d1, T *d2, T *x1, const T *y1, T *param)   \
    {                                                                                            \
        return scalar_op(handle,                                                                 \
                         d1 != NULL && d2 != NULL && x1 != NULL && y1 != NULL && param != NULL); \
    }
ROTMG(cublasSrotmg_v2, float)
ROTMG(cublasDrotmg_v2, double)

/* ---- level 2 ------------------------------------------------------------------------------ */

static bool op_ok(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static bool fill_ok(cublasFillMode_t uplo)
{
    return uplo == CUBLAS_FILL_MODE_LOWER || uplo == CUBLAS_FILL_MODE_UPPER;
}

static bool diag_ok(cublasDiagType_t diag)
{
    return diag == CUBLAS_DIAG_NON_UNIT || diag == CUBLAS_DIAG_UNIT;
}

/* A matrix-vector routine whose arguments passed the documented checks (valid): bytes of the
 * matrix part it reads or writes, plus its vectors. */
static cublasStatus_t matrix_op(cublasHandle_t h, struct vendor_kernel *k, bool valid, int64_t rows,
                                int64_t cols, double elem, double vector_elems)
{
    BLAS_HANDLE(h);
    BLAS_REQUIRE(valid);
    if (rows == 0 || cols == 0)
        return CUBLAS_STATUS_SUCCESS;
    return blas_launch(h, k, vendor_memory_ns(((double)rows * (double)cols + vector_elems) * elem));
}

#define GEMV(name, T)                                                                     \
    API cublasStatus_t name(cublasHandle_t handle, cublasOperation_t trans, int m, int n, \
                            const T *alpha, const T *A, int lda, const T *x, int incx,    \
                            const T *beta, T *y, int incy)                                \
    {                                                                                     \
        (void)A;                                                                          \
        (void)x;                                                                          \
        (void)y;                                                                          \
        bool ok = op_ok(trans) && m >= 0 && n >= 0 && lda >= BLAS_MAX1(m) && incx != 0 && \
                  incy != 0 && alpha != NULL && beta != NULL;                             \
        return matrix_op(handle, &k_gemv, ok, m, n, ELEM(T), (double)m + n);              \
    }
GEMV(cublasSgemv_v2, float)
GEMV(cublasDgemv_v2, double)
GEMV(cublasCgemv_v2, cuComplex)
GEMV(cublasZgemv_v2, cuDoubleComplex)

/* ger: A += alpha x y^T, A read and written. */
#define GER(name, T)                                                                            \
    API cublasStatus_t name(cublasHandle_t handle, int m, int n, const T *alpha, const T *x,    \
                            int incx, const T *y, int incy, T *A, int lda)                      \
    {                                                                                           \
        (void)x;                                                                                \
        (void)y;                                                                                \
        (void)A;                                                                                \
        bool ok =                                                                               \
            m >= 0 && n >= 0 && incx != 0 && incy != 0 && lda >= BLAS_MAX1(m) && alpha != NULL; \
        return matrix_op(handle, &k_ger, ok, m, 2 * (int64_t)n, ELEM(T), (double)m + n);        \
    }
GER(cublasSger_v2, float)
GER(cublasDger_v2, double)
GER(cublasCgeru_v2, cuComplex)
GER(cublasCgerc_v2, cuComplex)
GER(cublasZgeru_v2, cuDoubleComplex)
GER(cublasZgerc_v2, cuDoubleComplex)

/* symv / hemv: y = alpha A x + beta y with A symmetric (one triangle read: n*n/2 elements,
 * counted as n*n with the symmetric reads). */
#define SYMV(name, T)                                                                            \
    API cublasStatus_t name(cublasHandle_t handle, cublasFillMode_t uplo, int n, const T *alpha, \
                            const T *A, int lda, const T *x, int incx, const T *beta, T *y,      \
                            int incy)                                                            \
    {                                                                                            \
        (void)A;                                                                                 \
        (void)x;                                                                                 \
        (void)y;                                                                                 \
        bool ok = fill_ok(uplo) && n >= 0 && lda >= BLAS_MAX1(n) && incx != 0 && incy != 0 &&    \
                  alpha != NULL && beta != NULL;                                                 \
        return matrix_op(handle, &k_symv, ok, n, n, ELEM(T), 2.0 * n);                           \
    }
SYMV(cublasSsymv_v2, float)
SYMV(cublasDsymv_v2, double)
SYMV(cublasCsymv_v2, cuComplex)
SYMV(cublasZsymv_v2, cuDoubleComplex)
SYMV(cublasChemv_v2, cuComplex)
SYMV(cublasZhemv_v2, cuDoubleComplex)

/* syr / her: one triangle read and written (n*n elements moved). */
#define SYR(name, S, T)                                                                          \
    API cublasStatus_t name(cublasHandle_t handle, cublasFillMode_t uplo, int n, const S *alpha, \
                            const T *x, int incx, T *A, int lda)                                 \
    {                                                                                            \
        (void)x;                                                                                 \
        (void)A;                                                                                 \
        bool ok = fill_ok(uplo) && n >= 0 && incx != 0 && lda >= BLAS_MAX1(n) && alpha != NULL;  \
        return matrix_op(handle, &k_syr, ok, n, n, ELEM(T), (double)n);                          \
    }
SYR(cublasSsyr_v2, float, float)
SYR(cublasDsyr_v2, double, double)
SYR(cublasCsyr_v2, cuComplex, cuComplex)
SYR(cublasZsyr_v2, cuDoubleComplex, cuDoubleComplex)
SYR(cublasCher_v2, float, cuComplex)
SYR(cublasZher_v2, double, cuDoubleComplex)

#define SYR2(name, T)                                                                            \
    API cublasStatus_t name(cublasHandle_t handle, cublasFillMode_t uplo, int n, const T *alpha, \
                            const T *x, int incx, const T *y, int incy, T *A, int lda)           \
    {                                                                                            \
        (void)x;                                                                                 \
        (void)y;                                                                                 \
        (void)A;                                                                                 \
        bool ok = fill_ok(uplo) && n >= 0 && incx != 0 && incy != 0 && lda >= BLAS_MAX1(n) &&    \
                  alpha != NULL;                                                                 \
        return matrix_op(handle, &k_syr, ok, n, n, ELEM(T), 2.0 * n);                            \
    }
SYR2(cublasSsyr2_v2, float)
SYR2(cublasDsyr2_v2, double)
SYR2(cublasCsyr2_v2, cuComplex)
SYR2(cublasZsyr2_v2, cuDoubleComplex)
SYR2(cublasCher2_v2, cuComplex)
SYR2(cublasZher2_v2, cuDoubleComplex)

/* trmv / trsv: one triangle read (n*n/2 elements), x read and written. */
#define TRMV(name, T, kernel)                                                                      \
    API cublasStatus_t name(cublasHandle_t handle, cublasFillMode_t uplo, cublasOperation_t trans, \
                            cublasDiagType_t diag, int n, const T *A, int lda, T *x, int incx)     \
    {                                                                                              \
        (void)A;                                                                                   \
        (void)x;                                                                                   \
        bool ok = fill_ok(uplo) && op_ok(trans) && diag_ok(diag) && n >= 0 &&                      \
                  lda >= BLAS_MAX1(n) && incx != 0;                                                \
        return matrix_op(handle, kernel, ok, n, (n + 1) / 2, ELEM(T), 2.0 * n);                    \
    }
TRMV(cublasStrmv_v2, float, &k_trmv)
TRMV(cublasDtrmv_v2, double, &k_trmv)
TRMV(cublasCtrmv_v2, cuComplex, &k_trmv)
TRMV(cublasZtrmv_v2, cuDoubleComplex, &k_trmv)
TRMV(cublasStrsv_v2, float, &k_trsv)
TRMV(cublasDtrsv_v2, double, &k_trsv)
TRMV(cublasCtrsv_v2, cuComplex, &k_trsv)
TRMV(cublasZtrsv_v2, cuDoubleComplex, &k_trsv)
