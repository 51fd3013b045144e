/* tests/unit/test_sim_vendor.c: the simulated vendor libraries (build/sim/libcublas.so.13,
 * libcublasLt.so.13, libcudnn.so.9; as test_sim_vendor_cuda12 build/sim12's, against the CUDA 12
 * headers), linked like a CUDA program with the simulated runtime.
 * Checks what a program sees: handles, streams and descriptors as documented (status codes
 * for bad parameters), each GEMM / convolution / normalisation one kernel on the handle's
 * stream lasting the documented formula (sim/README.md), only host-pointer-mode results and the
 * documented synchronizing calls waiting, the kernels launched through the driver (CUPTI's
 * driver domain sees them, libcudart's exported cudaLaunchKernel never runs), the symbol
 * versions. Timeline positions are bracketed by clock readings taken around the call. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cublasLt.h>
#include <cublas_api.h>
#include <cudnn.h>
#include <cupti.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim/simcuda.h"

#define LAUNCH_NS 1000ull         /* SIMCUDA_KERNEL_NS, the launch cost of every kernel */
#define DEVICE_BYTES_PER_NS 100.0 /* main sets SIMCUDA_DEVICE_GBPS=100 */

static unsigned long long now(void)
{
    return simcuda_now_ns();
}

/* The work queued by call on an idle stream lasts ns: it ends within [t0 + ns, t1 + ns] for
 * clock readings t0 before and t1 after the call. The call itself does not wait. */
#define assert_kernel_ns(call, stream, ns)                                      \
    do {                                                                        \
        unsigned long long syncs_ = simcuda_thread_sync_count();                \
        unsigned long long t0_ = now();                                         \
        assert_int_equal((call), 0);                                            \
        unsigned long long t1_ = now(), end_ = simcuda_stream_ready_ns(stream); \
        unsigned long long want_ = (ns);                                        \
        assert_true(end_ + 1 >= t0_ + want_);                                   \
        assert_true(end_ <= t1_ + want_ + 1);                                   \
        assert_int_equal(simcuda_thread_sync_count(), syncs_);                  \
    } while (0)

static unsigned long long flops_ns(double flops, double tflops)
{
    return (unsigned long long)llround(flops / (tflops * 1000.0));
}

static unsigned long long bytes_ns(double bytes)
{
    return (unsigned long long)llround(bytes / DEVICE_BYTES_PER_NS);
}

static void *device(size_t n)
{
    void *p = NULL;
    assert_int_equal(cudaMalloc(&p, n), cudaSuccess);
    return p;
}

static int idle(void **state)
{
    (void)state;
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

/* ---- cuBLAS ---------------------------------------------------------------------------------- */

static void test_cublas_handle_and_settings(void **state)
{
    (void)state;
    cublasHandle_t h;
    assert_int_equal(cublasCreate_v2(NULL), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    cudaStream_t s, got = (cudaStream_t)1;
    assert_int_equal(cublasGetStream_v2(h, &got), CUBLAS_STATUS_SUCCESS);
    assert_null(got); /* the default NULL stream until cublasSetStream */
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetStream_v2(h, &got), CUBLAS_STATUS_SUCCESS);
    assert_ptr_equal(got, s);
    /* The workspace must be 256-byte aligned. */
    char *ws = device(1 << 16);
    assert_int_equal(cublasSetWorkspace_v2(h, ws + 16, 4096), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetWorkspace_v2(h, ws, 1 << 16), CUBLAS_STATUS_SUCCESS);
    /* Math and pointer modes: valid ones round-trip, others are INVALID_VALUE. */
    cublasMath_t m;
    assert_int_equal(
        cublasSetMathMode(h, (cublasMath_t)(CUBLAS_TF32_TENSOR_OP_MATH |
                                            CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
        CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasGetMathMode(h, &m), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(m,
                     CUBLAS_TF32_TENSOR_OP_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    assert_int_equal(cublasSetMathMode(h, (cublasMath_t)5), CUBLAS_STATUS_INVALID_VALUE);
    cublasPointerMode_t pm;
    assert_int_equal(cublasSetPointerMode_v2(h, (cublasPointerMode_t)7),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasGetPointerMode_v2(h, &pm), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(pm, CUBLAS_POINTER_MODE_HOST);
    assert_int_equal(cublasSetSmCountTarget(h, -1), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasSetSmCountTarget(h, 66), CUBLAS_STATUS_SUCCESS);
    /* A handle that is not one: NOT_INITIALIZED. */
    assert_int_equal(cublasSetStream_v2((cublasHandle_t)&m, s), CUBLAS_STATUS_NOT_INITIALIZED);
    /* cublasDestroy waits for the device (cuBLAS documents the implicit synchronization). */
    unsigned long long syncs = simcuda_thread_sync_count();
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_true(simcuda_thread_sync_count() > syncs);
    assert_int_equal(cudaFree(ws), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* 2 m n k flops at 50 TFLOP/s (FP32), 400 (TF32 math), 800 (FP16 inputs), 50 (FP64), four
 * times the flops for complex types; on the handle's stream, none on the others. */
static void test_cublas_gemm_durations_and_streams(void **state)
{
    (void)state;
    const int n = 2048;
    const double flops = 2.0 * n * n * (double)n;
    float one = 1.0f, zero = 0.0f;
    double done = 1.0, dzero = 0.0;
    void *a = device((size_t)n * n * 16), *b = device((size_t)n * n * 16),
         *c = device((size_t)n * n * 16);
    cublasHandle_t h;
    cudaStream_t s;
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    /* No stream set: the legacy default stream. */
    assert_kernel_ns(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n), 0,
        LAUNCH_NS + flops_ns(flops, 50));
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    unsigned long long legacy = simcuda_stream_ready_ns(0);
    assert_kernel_ns(
        cublasSgemm_v2(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n), s,
        LAUNCH_NS + flops_ns(flops, 50));
    assert_int_equal(simcuda_stream_ready_ns(0), legacy);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
    assert_kernel_ns(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n), s,
        LAUNCH_NS + flops_ns(flops, 400));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_kernel_ns(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F, n, b,
                                  CUDA_R_16F, n, &zero, c, CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     s, LAUNCH_NS + flops_ns(flops, 800));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_kernel_ns(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &done, a,
                                               256, 0, b, 256, 0, &dzero, c, 256, 0, 8),
                     s, LAUNCH_NS + flops_ns(2.0 * 256 * 256 * 256 * 8, 50));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    cuComplex cone = {1, 0}, czero = {0, 0};
    assert_kernel_ns(cublasCgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_C, 512, 512, 512, &cone, a, 512, b,
                                    512, &czero, c, 512),
                     s, LAUNCH_NS + flops_ns(4 * 2.0 * 512 * 512 * 512, 400));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    /* An empty product queues nothing. */
    unsigned long long before = simcuda_stream_ready_ns(s);
    assert_int_equal(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, n, n, &one, a, 1, b, n, &zero, c, 1),
        CUBLAS_STATUS_SUCCESS);
    assert_int_equal(simcuda_stream_ready_ns(s), before);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
}

static void test_cublas_parameter_checks(void **state)
{
    (void)state;
    float one = 1.0f;
    void *p = device(1 << 20);
    cublasHandle_t h;
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(
        cublasSgemm_v2(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, p, 4, p, 4, &one, p, 4),
        CUBLAS_STATUS_NOT_INITIALIZED);
    assert_int_equal(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &one, p, 4, p, 4, &one, p, 4),
        CUBLAS_STATUS_INVALID_VALUE);
    /* lda < max(1, m) for op(A) = A, ldb < max(1, n) for op(B) = B^T, ldc < m, a bad op. */
    assert_int_equal(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 4, &one, p, 4, p, 4, &one, p, 8),
        CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_T, 4, 8, 4, &one, p, 4, p, 4, &one, p, 4),
        CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, p, 4, p, 4, &one, p, 2),
        CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(
        cublasSgemm_v2(h, (cublasOperation_t)9, CUBLAS_OP_N, 4, 4, 4, &one, p, 4, p, 4, &one, p, 4),
        CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, NULL, p, 4, p, 4, &one, p, 4),
        CUBLAS_STATUS_INVALID_VALUE);
    /* Mixed input types are outside cublasGemmEx's table. */
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, p, CUDA_R_16F, 4, p,
                                  CUDA_R_32F, 4, &one, p, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    /* gelsBatched: only non-transposed, m >= n ("CUBLAS_STATUS_NOT_SUPPORTED"). */
    int info = 7;
    float *arr[1] = {p};
    assert_int_equal(cublasSgelsBatched(h, CUBLAS_OP_T, 8, 4, 1, arr, 8, arr, 8, &info, NULL, 1),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(info, 0);
    assert_int_equal(cublasSgetrsBatched(h, CUBLAS_OP_N, 4, 1, (const float *const *)arr, 2, NULL,
                                         arr, 4, &info, 1),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(info, -6); /* lda is the 6th parameter */
    assert_int_equal(cublasSetMatrixAsync(4, 4, 4, p, 2, p, 4, 0), CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    cudaFree(p);
}

/* A result read on the host waits for the stream (the call is a sync); in device pointer mode
 * nothing waits. Level-1 kernels last the bytes they read at the device memory speed. */
static void test_cublas_host_results_wait(void **state)
{
    (void)state;
    const int n = 1 << 20;
    float *x = device((size_t)n * 4), *y = device((size_t)n * 4), *dres = device(64);
    float r = 42.0f;
    cublasHandle_t h;
    cudaStream_t s;
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
    unsigned long long syncs = simcuda_thread_sync_count();
    assert_int_equal(cublasSdot_v2(h, n, x, 1, y, 1, &r), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(simcuda_thread_sync_count(), syncs + 1); /* one cuStreamSynchronize */
    assert_true(now() >= simcuda_stream_ready_ns(s));
    assert_true(r == 0.0f); /* what the kernel "computed": device memory reads as zero after it */
    assert_int_equal(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
    assert_kernel_ns(cublasSdot_v2(h, n, x, 1, y, 1, dres), s, LAUNCH_NS + bytes_ns(2.0 * n * 4));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_kernel_ns(cublasSaxpy_v2(h, n, dres, x, 1, y, 1), s, LAUNCH_NS + bytes_ns(3.0 * n * 4));
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    cudaFree(x);
    cudaFree(y);
    cudaFree(dres);
}

/* ---- cuBLASLt -------------------------------------------------------------------------------- */

static void test_cublaslt_matmul(void **state)
{
    (void)state;
    const int m = 1024, n = 512, k = 2048;
    void *a = device((size_t)m * k * 4), *b = device((size_t)k * n * 4),
         *c = device((size_t)m * n * 4);
    float one = 1.0f, zero = 0.0f;
    cublasHandle_t h; /* a cuBLAS handle serves as a cuBLASLt handle, as torch uses it */
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    cublasLtHandle_t lt = (cublasLtHandle_t)h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    assert_int_equal(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F),
                     CUBLAS_STATUS_SUCCESS);
    int32_t trans = CUBLAS_OP_T;
    assert_int_equal(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, 8),
                     CUBLAS_STATUS_INVALID_VALUE); /* the attribute is an int32_t */
    assert_int_equal(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, 4),
                     CUBLAS_STATUS_SUCCESS);
    size_t written = 0;
    assert_int_equal(
        cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, NULL, 0, &written),
        CUBLAS_STATUS_SUCCESS);
    assert_int_equal(written, sizeof(void *));
    assert_int_equal(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, k, m, k), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulHeuristicResult_t res[4];
    int count = -1;
    assert_int_equal(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 0, res, &count),
                     CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 4, res, &count),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(res[0].state, CUBLAS_STATUS_SUCCESS);
    cudaStream_t s;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_kernel_ns(
        cublasLtMatmul(lt, op, &one, a, la, b, lb, &zero, c, lc, c, lc, &res[0].algo, NULL, 0, s),
        s, LAUNCH_NS + flops_ns(2.0 * m * n * (double)k, 400));
    /* Layouts that do not make one product. */
    assert_int_equal(
        cublasLtMatmul(lt, op, &one, a, lb, b, lb, &zero, c, lc, c, lc, NULL, NULL, 0, s),
        CUBLAS_STATUS_INVALID_VALUE);
    assert_int_equal(
        cublasLtMatmul(NULL, op, &one, a, la, b, lb, &zero, c, lc, c, lc, NULL, NULL, 0, s),
        CUBLAS_STATUS_NOT_INITIALIZED);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
}

/* ---- cuDNN: handle, descriptors, legacy functions -------------------------------------------- */

static void set4(cudnnTensorDescriptor_t d, cudnnDataType_t t, int n, int c, int h, int w)
{
    int dims[4] = {n, c, h, w}, strides[4] = {c * h * w, h * w, w, 1};
    assert_int_equal(cudnnSetTensorNdDescriptor(d, t, 4, dims, strides), CUDNN_STATUS_SUCCESS);
}

static void test_cudnn_handle_and_descriptors(void **state)
{
    (void)state;
    assert_int_equal(cudnnGetVersion(), 92600);
    int minor = 0;
    assert_int_equal(cudnnGetProperty(MINOR_VERSION, &minor), CUDNN_STATUS_SUCCESS);
    assert_int_equal(minor, 26);
    assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
    cudnnHandle_t h;
    cudaStream_t s, got = (cudaStream_t)1;
    assert_int_equal(cudnnCreate(NULL), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnGetStream(h, &got), CUDNN_STATUS_SUCCESS);
    assert_null(got);
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cudnnSetStream(h, s), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnGetStream(h, &got), CUDNN_STATUS_SUCCESS);
    assert_ptr_equal(got, s);
    cudnnTensorDescriptor_t t;
    assert_int_equal(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
    int dims[4] = {2, 3, 0, 4}, strides[4] = {1, 1, 1, 1};
    assert_int_equal(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, dims, strides),
                     CUDNN_STATUS_BAD_PARAM);
    char msg[256];
    cudnnGetLastErrorString(msg, sizeof msg);
    assert_non_null(strstr(msg, "cudnnSetTensorNdDescriptor"));
    assert_int_equal(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 2, dims, strides),
                     CUDNN_STATUS_NOT_SUPPORTED);
    set4(t, CUDNN_DATA_HALF, 2, 3, 5, 7);
    cudnnDataType_t dt;
    int nd = 0, gd[4], gs[4];
    assert_int_equal(cudnnGetTensorNdDescriptor(t, 4, &dt, &nd, gd, gs), CUDNN_STATUS_SUCCESS);
    assert_int_equal(dt, CUDNN_DATA_HALF);
    assert_int_equal(nd, 4);
    assert_int_equal(gd[3], 7);
    assert_int_equal(gs[1], 35);
    cudnnConvolutionDescriptor_t c;
    assert_int_equal(cudnnCreateConvolutionDescriptor(&c), CUDNN_STATUS_SUCCESS);
    int pad[2] = {1, 1}, str[2] = {0, 1}, dil[2] = {1, 1};
    assert_int_equal(cudnnSetConvolutionNdDescriptor(c, 2, pad, str, dil, CUDNN_CROSS_CORRELATION,
                                                     CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolutionGroupCount(c, 0), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolutionMathType(c, (cudnnMathType_t)9), CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyConvolutionDescriptor(c);
    cudnnDestroyTensorDescriptor(t);
    /* cudnnDestroy synchronizes the device, as documented. */
    unsigned long long syncs = simcuda_thread_sync_count();
    assert_int_equal(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
    assert_true(simcuda_thread_sync_count() > syncs);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

struct conv_case {
    cudnnHandle_t h;
    cudaStream_t s;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    void *xp, *yp, *wp;
    double flops;
};

/* x 16x64x56x56, w 128x64x3x3, pad 1: y 16x128x56x56. */
static void conv_case_make(struct conv_case *k)
{
    assert_int_equal(cudnnCreate(&k->h), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaStreamCreateWithFlags(&k->s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudnnSetStream(k->h, k->s), CUDNN_STATUS_SUCCESS);
    cudnnCreateTensorDescriptor(&k->x);
    cudnnCreateTensorDescriptor(&k->y);
    cudnnCreateFilterDescriptor(&k->w);
    cudnnCreateConvolutionDescriptor(&k->c);
    set4(k->x, CUDNN_DATA_FLOAT, 16, 64, 56, 56);
    set4(k->y, CUDNN_DATA_FLOAT, 16, 128, 56, 56);
    int wd[4] = {128, 64, 3, 3}, pad[2] = {1, 1}, one[2] = {1, 1};
    assert_int_equal(cudnnSetFilterNdDescriptor(k->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wd),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetConvolutionNdDescriptor(k->c, 2, pad, one, one,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_SUCCESS);
    k->xp = device(16 * 64 * 56 * 56 * 4);
    k->yp = device(16 * 128 * 56 * 56 * 4);
    k->wp = device(128 * 64 * 9 * 4);
    k->flops = 2.0 * 16 * 128 * 56 * 56 * 64 * 9;
}

static void conv_case_free(struct conv_case *k)
{
    cudnnDestroyTensorDescriptor(k->x);
    cudnnDestroyTensorDescriptor(k->y);
    cudnnDestroyFilterDescriptor(k->w);
    cudnnDestroyConvolutionDescriptor(k->c);
    cudaFree(k->xp);
    cudaFree(k->yp);
    cudaFree(k->wp);
    assert_int_equal(cudnnDestroy(k->h), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(k->s), cudaSuccess);
}

/* The implied GEMM 2 N K prod(out) C prod(filter) at 400 TFLOP/s for FP32 with tensor-core
 * math, 50 with CUDNN_FMA_MATH; shapes that do not fit are BAD_PARAM; Find*Ex runs and waits. */
static void test_cudnn_legacy_convolution(void **state)
{
    (void)state;
    struct conv_case k;
    conv_case_make(&k);
    float one = 1.0f, zero = 0.0f;
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    assert_kernel_ns(cudnnConvolutionForward(k.h, &one, k.x, k.xp, k.w, k.wp, k.c, algo, NULL, 0,
                                             &zero, k.y, k.yp),
                     k.s, LAUNCH_NS + flops_ns(k.flops, 400));
    assert_int_equal(cudaStreamSynchronize(k.s), cudaSuccess);
    assert_int_equal(cudnnSetConvolutionMathType(k.c, CUDNN_FMA_MATH), CUDNN_STATUS_SUCCESS);
    assert_kernel_ns(cudnnConvolutionBackwardFilter(k.h, &one, k.x, k.xp, k.y, k.yp, k.c,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, NULL, 0,
                                                    &zero, k.w, k.wp),
                     k.s, LAUNCH_NS + flops_ns(k.flops, 50));
    /* y of the wrong size. */
    cudnnTensorDescriptor_t bad;
    cudnnCreateTensorDescriptor(&bad);
    set4(bad, CUDNN_DATA_FLOAT, 16, 128, 54, 54);
    assert_int_equal(cudnnConvolutionForward(k.h, &one, k.x, k.xp, k.w, k.wp, k.c, algo, NULL, 0,
                                             &zero, bad, k.yp),
                     CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(bad);
    /* Heuristics rank deterministic algorithms first; Find*Ex waits for its runs. */
    cudnnConvolutionBwdDataAlgoPerf_t perf[4];
    int count = 0;
    assert_int_equal(
        cudnnGetConvolutionBackwardDataAlgorithm_v7(k.h, k.w, k.y, k.c, k.x, 4, &count, perf),
        CUDNN_STATUS_SUCCESS);
    assert_int_equal(count, 2);
    assert_int_equal(perf[0].determinism, CUDNN_DETERMINISTIC);
    assert_int_equal(perf[1].determinism, CUDNN_NON_DETERMINISTIC);
    cudnnConvolutionFwdAlgoPerf_t fperf[4];
    unsigned long long syncs = simcuda_thread_sync_count();
    assert_int_equal(cudnnFindConvolutionForwardAlgorithmEx(k.h, k.x, k.xp, k.w, k.wp, k.c, k.y,
                                                            k.yp, 4, &count, fperf, NULL, 0),
                     CUDNN_STATUS_SUCCESS);
    assert_true(simcuda_thread_sync_count() > syncs);
    assert_true(now() >= simcuda_stream_ready_ns(k.s));
    assert_true(fperf[0].time > 0.0f);
    conv_case_free(&k);
}

/* Training reads x twice and writes y, at the device memory speed. */
static void test_cudnn_batch_norm(void **state)
{
    (void)state;
    cudnnHandle_t h;
    assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
    cudnnTensorDescriptor_t x, p;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&p);
    set4(x, CUDNN_DATA_FLOAT, 32, 64, 56, 56);
    set4(p, CUDNN_DATA_FLOAT, 1, 64, 1, 1);
    const double bytes = 32.0 * 64 * 56 * 56 * 4;
    void *xp = device((size_t)bytes), *yp = device((size_t)bytes), *pp = device(64 * 4 * 4);
    float one = 1.0f, zero = 0.0f;
    char *pb = pp;
    assert_kernel_ns(cudnnBatchNormalizationForwardTrainingEx(
                         h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, x, xp,
                         NULL, NULL, x, yp, p, pb, pb + 256, 0.1, pb + 512, pb + 768, 1e-5, NULL,
                         NULL, NULL, NULL, 0, NULL, 0),
                     0, LAUNCH_NS + bytes_ns(3.0 * bytes));
    /* Parameters not 1 x C x 1 x 1. */
    assert_int_equal(cudnnBatchNormalizationForwardTrainingEx(
                         h, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, x, xp,
                         NULL, NULL, x, yp, x, pb, pb + 256, 0.1, NULL, NULL, 1e-5, NULL, NULL,
                         NULL, NULL, 0, NULL, 0),
                     CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(p);
    cudaFree(xp);
    cudaFree(yp);
    cudaFree(pp);
    assert_int_equal(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
}

/* ---- cuDNN: the backend graph API ------------------------------------------------------------ */

typedef cudnnBackendDescriptor_t bd;

static bd make(cudnnBackendDescriptorType_t type)
{
    bd d = NULL;
    assert_int_equal(cudnnBackendCreateDescriptor(type, &d), CUDNN_STATUS_SUCCESS);
    return d;
}

static void set(bd d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
                const void *v)
{
    assert_int_equal(cudnnBackendSetAttribute(d, name, type, n, v), CUDNN_STATUS_SUCCESS);
}

static bd tensor(int64_t uid, const int64_t dims[4], bool finalize)
{
    bd t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1}, align = 16;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (finalize)
        assert_int_equal(cudnnBackendFinalize(t), CUDNN_STATUS_SUCCESS);
    return t;
}

/* The graph torch builds for a forward convolution (its Conv_v8.cpp): x, w, y tensors, a
 * convolution descriptor, the operation, the graph. Returns the graph; *parts the rest. */
static bd conv_graph(cudnnHandle_t h, bd parts[5])
{
    static const int64_t xd[4] = {16, 64, 56, 56}, wd[4] = {128, 64, 3, 3},
                         yd[4] = {16, 128, 56, 56};
    bd x = tensor('x', xd, true), w = tensor('w', wd, true), y = tensor('y', yd, true);
    bd c = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    int64_t two = 2, ones[2] = {1, 1}, pads[2] = {1, 1};
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two);
    set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones);
    set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones);
    set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
    set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
    assert_int_equal(cudnnBackendFinalize(c), CUDNN_STATUS_SUCCESS);
    bd op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    float alpha = 1.0f, beta = 0.0f;
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &c);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    assert_int_equal(cudnnBackendFinalize(op), CUDNN_STATUS_SUCCESS);
    bd g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    assert_int_equal(cudnnBackendFinalize(g), CUDNN_STATUS_SUCCESS);
    parts[0] = x;
    parts[1] = w;
    parts[2] = y;
    parts[3] = c;
    parts[4] = op;
    return g;
}

static bool has_tensor_core_note(bd cfg)
{
    bd engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = 0;
    assert_int_equal(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine),
                     CUDNN_STATUS_SUCCESS);
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    assert_int_equal(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                              CUDNN_TYPE_NUMERICAL_NOTE,
                                              CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes),
                     CUDNN_STATUS_SUCCESS);
    cudnnBackendDestroyDescriptor(engine);
    for (int64_t i = 0; i < n; i++)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE)
            return true;
    return false;
}

static bd plan_for(cudnnHandle_t h, bd cfg)
{
    bd plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    assert_int_equal(cudnnBackendFinalize(plan), CUDNN_STATUS_SUCCESS);
    return plan;
}

static bd variant_pack(void *const ptrs[3], int n)
{
    static const int64_t uids[3] = {'x', 'w', 'y'};
    bd pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    assert_int_equal(cudnnBackendFinalize(pack), CUDNN_STATUS_SUCCESS);
    return pack;
}

/* The frontend's path: heuristics -> two engine configurations (engine 0 with the TENSOR_CORE
 * note, engine 1 without), the fallback list -> engine 1 only, plans that outlive their graph,
 * execution for the convolution's flops at TF32 (engine 0) or FP32 (engine 1) rate. */
static void test_cudnn_backend_convolution(void **state)
{
    (void)state;
    cudnnHandle_t h;
    cudaStream_t s;
    assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudnnSetStream(h, s), CUDNN_STATUS_SUCCESS);
    bd parts[5];
    bd g = conv_graph(h, parts);
    const double flops = 2.0 * 16 * 128 * 56 * 56 * 64 * 9;
    bd heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT;
    set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    assert_int_equal(cudnnBackendFinalize(heur), CUDNN_STATUS_SUCCESS);
    int64_t count = -1;
    assert_int_equal(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(count, 2);
    bd cfgs[2] = {make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR),
                  make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)};
    assert_int_equal(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 2, &count, cfgs),
                     CUDNN_STATUS_SUCCESS);
    assert_true(has_tensor_core_note(cfgs[0]));
    assert_false(has_tensor_core_note(cfgs[1]));
    bd plans[2] = {plan_for(h, cfgs[0]), plan_for(h, cfgs[1])};
    int64_t ws = -1;
    assert_int_equal(cudnnBackendGetAttribute(plans[0], CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                              CUDNN_TYPE_INT64, 1, &count, &ws),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(ws, 0);
    /* The plan holds what it needs: the graph and its parts can go first. */
    cudnnBackendDestroyDescriptor(heur);
    cudnnBackendDestroyDescriptor(g);
    for (int i = 0; i < 5; i++)
        cudnnBackendDestroyDescriptor(parts[i]);
    void *ptrs[3] = {device(16 * 64 * 56 * 56 * 4), device(128 * 64 * 9 * 4),
                     device(16 * 128 * 56 * 56 * 4)};
    bd pack = variant_pack(ptrs, 3);
    assert_kernel_ns(cudnnBackendExecute(h, plans[0], pack), s, LAUNCH_NS + flops_ns(flops, 400));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_kernel_ns(cudnnBackendExecute(h, plans[1], pack), s, LAUNCH_NS + flops_ns(flops, 50));
    /* A variant pack without y's pointer. */
    bd short_pack = variant_pack(ptrs, 2);
    assert_int_equal(cudnnBackendExecute(h, plans[0], short_pack), CUDNN_STATUS_BAD_PARAM);
    /* A plan serialized and loaded again runs the same. */
    char json[4096];
    assert_int_equal(cudnnBackendGetAttribute(plans[1],
                                              CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                              CUDNN_TYPE_CHAR, sizeof json, &count, json),
                     CUDNN_STATUS_SUCCESS);
    bd loaded = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set(loaded, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, count, json);
    set(loaded, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    assert_int_equal(cudnnBackendFinalize(loaded), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_kernel_ns(cudnnBackendExecute(h, loaded, pack), s, LAUNCH_NS + flops_ns(flops, 50));
    bd all[] = {loaded, short_pack, pack, plans[0], plans[1], cfgs[0], cfgs[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        assert_int_equal(cudnnBackendDestroyDescriptor(all[i]), CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < 3; i++)
        cudaFree(ptrs[i]);
    assert_int_equal(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* What finalize refuses, and the fallback list. */
static void test_cudnn_backend_checks(void **state)
{
    (void)state;
    cudnnHandle_t h;
    assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
    static const int64_t d4[4] = {1, 2, 3, 4};
    bd t = tensor(1, d4, false);
    int64_t n = 0, v = 0;
    /* Not finalized: no attributes can be read yet. */
    assert_int_equal(
        cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &v),
        CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
    assert_int_equal(cudnnBackendFinalize(t), CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &v),
        CUDNN_STATUS_NOT_INITIALIZED);
    assert_int_equal(
        cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT32, 1, &n, &v),
        CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
    /* A tensor without its unique id; a convolution whose output size is wrong. */
    bd incomplete = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    assert_int_equal(cudnnBackendFinalize(incomplete), CUDNN_STATUS_BAD_PARAM);
    bd parts[5];
    bd g = conv_graph(h, parts);
    static const int64_t wrong[4] = {16, 128, 55, 56};
    bd y2 = tensor('z', wrong, true);
    bd op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &parts[0]);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &parts[1]);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y2);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &parts[3]);
    assert_int_equal(cudnnBackendFinalize(op), CUDNN_STATUS_BAD_PARAM);
    /* The fallback list offers the FMA engine only. */
    bd heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_FALLBACK;
    set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    assert_int_equal(cudnnBackendFinalize(heur), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(n, 1);
    /* An engine index beyond the two. */
    bd engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t index = 5;
    set(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
    set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index);
    assert_int_equal(cudnnBackendFinalize(engine), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnBackendCreateDescriptor((cudnnBackendDescriptorType_t)99, &engine),
                     CUDNN_STATUS_NOT_SUPPORTED);
    bd all[] = {t,      incomplete, g,        y2,       op,       heur,
                engine, parts[0],   parts[1], parts[2], parts[3], parts[4]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        assert_int_equal(cudnnBackendDestroyDescriptor(all[i]), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
}

/* ---- how the kernels reach the device -------------------------------------------------------- */

static int driver_launches, runtime_launches;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)userdata;
    const CUpti_CallbackData *cb = data;
    if (cb->callbackSite != CUPTI_API_ENTER)
        return;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        driver_launches++;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
        cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        runtime_launches++;
}

/* Like the real libraries (static runtime): a driver-domain cuLaunchKernel that CUPTI sees,
 * never libcudart's exported cudaLaunchKernel (which an LD_PRELOADed shim would see). */
static void test_kernels_launch_through_the_driver(void **state)
{
    (void)state;
    CUpti_SubscriberHandle sub;
    assert_int_equal(cuptiSubscribe(&sub, on_callback, NULL), CUPTI_SUCCESS);
    assert_int_equal(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
    assert_int_equal(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API), CUPTI_SUCCESS);
    unsigned long long exported = simcuda_call_count("cudaLaunchKernel");
    cublasHandle_t h;
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    float one = 1.0f;
    void *p = device(1 << 16);
    driver_launches = runtime_launches = 0;
    assert_int_equal(
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, p, 16, p, 16, &one, p, 16),
        CUBLAS_STATUS_SUCCESS);
    assert_int_equal(driver_launches, 1);
    assert_int_equal(runtime_launches, 0);
    assert_int_equal(simcuda_call_count("cudaLaunchKernel"), exported);
    assert_int_equal(cuptiUnsubscribe(sub), CUPTI_SUCCESS);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    cudaFree(p);
}

/* Every export carries the real library's version node (what torch's imports name). */
/* the CUDA major version of the headers (and of the simulator built with them): 13, or 12 for
 * build/sim12 (test_sim_vendor_cuda12) */
#define SO_VERSION_(major) ".so." #major
#define SO_VERSION(major) SO_VERSION_(major)
#define CUDA_SO(name) name SO_VERSION(CUBLAS_VER_MAJOR)

static void test_symbol_versions(void **state)
{
    (void)state;
    static const char *const libs[][3] = {
        {CUDA_SO("libcublas"), "cublasSgemm_v2", CUDA_SO("libcublas")},
        {CUDA_SO("libcublas"), "cublasGemmStridedBatchedEx", CUDA_SO("libcublas")},
        {CUDA_SO("libcublasLt"), "cublasLtMatmul", CUDA_SO("libcublasLt")},
        {"libcudnn.so.9", "cudnnBackendExecute", "libcudnn.so.9"},
        {"libcudnn.so.9", "cudnnBatchNormalizationForwardTrainingEx", "libcudnn.so.9"},
    };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        void *lib = dlopen(libs[i][0], RTLD_NOW | RTLD_NOLOAD);
        assert_non_null(lib);
        assert_non_null(dlvsym(lib, libs[i][1], libs[i][2]));
        assert_null(dlvsym(lib, libs[i][1], CUDA_SO("libcudart")));
        dlclose(lib);
    }
}

/* The functions the simulator does not implement exist too (other NVIDIA libraries link
 * against them) and answer NOT_SUPPORTED. */
static void test_the_rest_answers_not_supported(void **state)
{
    (void)state;
    cublasHandle_t h;
    assert_int_equal(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
    float one = 1.0f;
    assert_int_equal(cublasSgemv_v2_64(h, CUBLAS_OP_N, 4, 4, &one, NULL, 4, NULL, 1, &one, NULL, 1),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
    cublasLtMatrixTransformDesc_t t = NULL;
    assert_int_equal(cublasLtMatrixTransformDescCreate(&t, CUDA_R_32F),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    cudnnOpTensorDescriptor_t op = NULL;
    assert_int_equal(cudnnCreateOpTensorDescriptor(&op), CUDNN_STATUS_NOT_SUPPORTED);
}

int main(void)
{
    /* Read at the first call: the device memory speed the formulas here assume. */
    setenv("SIMCUDA_DEVICE_GBPS", "100", 1);
    simcuda_set_default_kernel_ns(LAUNCH_NS);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_cublas_handle_and_settings, idle),
        cmocka_unit_test_setup(test_cublas_gemm_durations_and_streams, idle),
        cmocka_unit_test_setup(test_cublas_parameter_checks, idle),
        cmocka_unit_test_setup(test_cublas_host_results_wait, idle),
        cmocka_unit_test_setup(test_cublaslt_matmul, idle),
        cmocka_unit_test_setup(test_cudnn_handle_and_descriptors, idle),
        cmocka_unit_test_setup(test_cudnn_legacy_convolution, idle),
        cmocka_unit_test_setup(test_cudnn_batch_norm, idle),
        cmocka_unit_test_setup(test_cudnn_backend_convolution, idle),
        cmocka_unit_test_setup(test_cudnn_backend_checks, idle),
        cmocka_unit_test_setup(test_kernels_launch_through_the_driver, idle),
        cmocka_unit_test_setup(test_symbol_versions, idle),
        cmocka_unit_test_setup(test_the_rest_answers_not_supported, idle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
