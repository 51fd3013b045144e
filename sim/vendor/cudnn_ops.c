/* sim/vendor/cudnn_ops.c: the legacy compute functions of the simulated libcudnn.so.9:
 * convolutions with their algorithm queries, batch normalization, pooling, the spatial
 * transformer, CTC loss, RNNs (prototypes of the toolkit's cudnn_*.h). Each checks its
 * descriptors as cuDNN does (CUDNN_STATUS_BAD_PARAM for shapes that do not fit together) and
 * queues one kernel on the handle's stream: convolutions and RNNs for their flops at the rate of
 * their types and math type, the rest for the bytes they read and write at the device memory
 * speed (sim/README.md, "cuDNN"). Nothing is computed. cudnnFind*AlgorithmEx run every
 * candidate and wait for them, as the real ones (which time them) do. Never calls an export. */
#include <stdlib.h>
#include <string.h>

#include "sim/vendor/dnn.h"

#define API VENDOR_API

VENDOR_KERNEL(k_conv_fwd, "simcudnn::convolution_fprop");
VENDOR_KERNEL(k_conv_bias_act, "simcudnn::convolution_bias_activation_fprop");
VENDOR_KERNEL(k_conv_dgrad, "simcudnn::convolution_dgrad");
VENDOR_KERNEL(k_conv_wgrad, "simcudnn::convolution_wgrad");
VENDOR_KERNEL(k_bn_fwd_train, "simcudnn::batchnorm_fwd_training");
VENDOR_KERNEL(k_bn_fwd_infer, "simcudnn::batchnorm_fwd_inference");
VENDOR_KERNEL(k_bn_bwd, "simcudnn::batchnorm_bwd");
VENDOR_KERNEL(k_pool_fwd, "simcudnn::pooling_fwd");
VENDOR_KERNEL(k_st_grid, "simcudnn::spatial_tf_grid");
VENDOR_KERNEL(k_st_sampler, "simcudnn::spatial_tf_sampler");
VENDOR_KERNEL(k_ctc, "simcudnn::ctc_loss");
VENDOR_KERNEL(k_rnn_fwd, "simcudnn::rnn_fwd");
VENDOR_KERNEL(k_rnn_bwd_data, "simcudnn::rnn_bwd_data");
VENDOR_KERNEL(k_rnn_bwd_weights, "simcudnn::rnn_bwd_weights");

/* ---- convolutions ---------------------------------------------------------------------------- */

/* A convolution as the three descriptors describe it, once they fit together: x (N, C, in...),
 * w (K, C / groups, filter...), y (N, K, out...) with out = 1 + (in + 2 pad - ((f - 1) dilation
 * + 1)) / stride. */
struct conv_problem {
    double flops, y_bytes;
    cudnnDataType_t type;
    bool tensor_ops;
};

static cudnnStatus_t conv_problem(const char *fn, cudnnHandle_t handle, cudnnTensorDescriptor_t xd,
                                  cudnnFilterDescriptor_t wd, cudnnConvolutionDescriptor_t cd,
                                  cudnnTensorDescriptor_t yd, struct conv_problem *out)
{
    const struct cudnnTensorStruct *x = dnn_tensor(xd), *y = dnn_tensor(yd);
    const struct cudnnFilterStruct *w = dnn_filter(wd);
    const struct cudnnConvolutionStruct *c = dnn_conv(cd);
    if (dnn_handle(handle) == NULL || x == NULL || y == NULL || w == NULL || c == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: a handle or descriptor is not set", fn);
    int nd = c->spatial + 2;
    if (x->nb_dims != nd || w->nb_dims != nd || y->nb_dims != nd)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "%s: %d-D x, %d-D w, %d-D y for %d spatial "
                        "dimensions",
                        fn, x->nb_dims, w->nb_dims, y->nb_dims, c->spatial);
    if (x->type != w->type)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x and w types differ", fn);
    if (x->dims[1] != w->dims[1] * c->groups || w->dims[0] % c->groups != 0 ||
        y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0])
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: channels x %d, w %dx%d, y %d with %d groups",
                        fn, x->dims[1], w->dims[0], w->dims[1], y->dims[1], c->groups);
    double out_elems = 1.0, taps = 1.0;
    for (int i = 0; i < c->spatial; i++) {
        int span = (w->dims[i + 2] - 1) * c->dilations[i] + 1;
        int o = (x->dims[i + 2] + 2 * c->pads[i] - span) / c->strides[i] + 1;
        if (x->dims[i + 2] + 2 * c->pads[i] < span || y->dims[i + 2] != o)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "%s: spatial dimension %d: y has %d, the "
                            "convolution gives %d",
                            fn, i, y->dims[i + 2], o);
        out_elems *= o;
        taps *= w->dims[i + 2];
    }
    out->flops = dnn_conv_flops(x->dims[0], w->dims[0], out_elems, w->dims[1], taps);
    out->y_bytes = dnn_tensor_bytes(y);
    out->type = x->type;
    /* CUDNN_DEFAULT_MATH permits tensor cores (TF32 for float) on this device generation;
     * CUDNN_FMA_MATH keeps to the FMA units. */
    out->tensor_ops = c->math != CUDNN_FMA_MATH;
    return CUDNN_STATUS_SUCCESS;
}

static uint64_t conv_ns(const struct conv_problem *p)
{
    return vendor_compute_ns(p->flops, dnn_rate(p->type, p->tensor_ops));
}

static float conv_ms(const struct conv_problem *p)
{
    return (float)((double)(simcuda_private_ops()->default_kernel_ns() + conv_ns(p)) / 1e6);
}

/* The algorithms each pass offers, best first: deterministic ones, then (backward) the
 * non-deterministic ALGO_0 that real cuDNN also lists. None needs a workspace. */
static const int fwd_algos[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM};
static const int bwd_algos[] = {1 /* ALGO_1 */, 0 /* ALGO_0, non-deterministic */};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Fills a perf-results array of any of the three pass types (the same layout, algo typed);
 * backward: ALGO_0 is the non-deterministic one. */
#define FILL_PERF(results, requested, returned, algos, backward, problem, math)                 \
    do {                                                                                        \
        int n_ = N_OF(algos) < (requested) ? N_OF(algos) : (requested);                         \
        for (int i_ = 0; i_ < n_; i_++) {                                                       \
            memset(&(results)[i_], 0, sizeof(results)[i_]);                                     \
            (results)[i_].algo = (algos)[i_];                                                   \
            (results)[i_].status = CUDNN_STATUS_SUCCESS;                                        \
            (results)[i_].time = conv_ms(problem);                                              \
            (results)[i_].memory = 0;                                                           \
            (results)[i_].determinism =                                                         \
                (backward) && (algos)[i_] == 0 ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC; \
            (results)[i_].mathType = (math);                                                    \
        }                                                                                       \
        *(returned) = n_;                                                                       \
    } while (0)

static cudnnStatus_t perf_args(const char *fn, int requested, const int *returned,
                               const void *results)
{
    if (requested <= 0 || returned == NULL || results == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: requestedAlgoCount %d, or NULL outputs", fn,
                        requested);
    return CUDNN_STATUS_SUCCESS;
}

/* The Find*Ex forms really run each candidate (here: queue it) and wait for the stream, to
 * time them: they are syncs, as with the real library. */
static cudnnStatus_t find_run(cudnnHandle_t handle, struct vendor_kernel *k,
                              const struct conv_problem *p, int candidates)
{
    const struct cudnnContext *h = dnn_handle(handle);
    for (int i = 0; i < candidates; i++) {
        cudnnStatus_t st = dnn_launch(h, k, conv_ns(p));
        if (st != CUDNN_STATUS_SUCCESS)
            return st;
    }
    if (simcuda_private_ops()->stream_synchronize(h->stream, false) != cudaSuccess)
        return dnn_fail(CUDNN_STATUS_EXECUTION_FAILED, "cudnnFind*AlgorithmEx: the stream failed");
    return CUDNN_STATUS_SUCCESS;
}

static cudnnMathType_t math_of(cudnnConvolutionDescriptor_t cd)
{
    const struct cudnnConvolutionStruct *c = dnn_conv(cd);
    return c != NULL ? c->math : CUDNN_DEFAULT_MATH;
}

API cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
    struct conv_problem p;
    cudnnStatus_t st = conv_problem(__func__, handle, srcDesc, filterDesc, convDesc, destDesc, &p);
    if (st == CUDNN_STATUS_SUCCESS)
        st = perf_args(__func__, requestedAlgoCount, returnedAlgoCount, perfResults);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    FILL_PERF(perfResults, requestedAlgoCount, returnedAlgoCount, fwd_algos, false, &p,
              math_of(convDesc));
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
    struct conv_problem p;
    cudnnStatus_t st = conv_problem(__func__, handle, gradDesc, filterDesc, convDesc, diffDesc, &p);
    if (st == CUDNN_STATUS_SUCCESS)
        st = perf_args(__func__, requestedAlgoCount, returnedAlgoCount, perfResults);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    FILL_PERF(perfResults, requestedAlgoCount, returnedAlgoCount, bwd_algos, true, &p,
              math_of(convDesc));
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
    struct conv_problem p;
    cudnnStatus_t st = conv_problem(__func__, handle, srcDesc, gradDesc, convDesc, diffDesc, &p);
    if (st == CUDNN_STATUS_SUCCESS)
        st = perf_args(__func__, requestedAlgoCount, returnedAlgoCount, perfResults);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    FILL_PERF(perfResults, requestedAlgoCount, returnedAlgoCount, bwd_algos, true, &p,
              math_of(convDesc));
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, void *y, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes)
{
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    struct conv_problem p;
    cudnnStatus_t st = conv_problem(__func__, handle, xDesc, wDesc, convDesc, yDesc, &p);
    if (st == CUDNN_STATUS_SUCCESS)
        st = perf_args(__func__, requestedAlgoCount, returnedAlgoCount, perfResults);
    if (st == CUDNN_STATUS_SUCCESS && (x == NULL || w == NULL || y == NULL))
        st = dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data", __func__);
    if (st == CUDNN_STATUS_SUCCESS)
        st = find_run(handle, &k_conv_fwd, &p, N_OF(fwd_algos));
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    FILL_PERF(perfResults, requestedAlgoCount, returnedAlgoCount, fwd_algos, false, &p,
              math_of(convDesc));
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t *perfResults, void *workSpace, size_t workSpaceSizeInBytes)
{
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    struct conv_problem p;
    cudnnStatus_t st = conv_problem(__func__, handle, dxDesc, wDesc, convDesc, dyDesc, &p);
    if (st == CUDNN_STATUS_SUCCESS)
        st = perf_args(__func__, requestedAlgoCount, returnedAlgoCount, perfResults);
    if (st == CUDNN_STATUS_SUCCESS && (w == NULL || dy == NULL || dx == NULL))
        st = dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data", __func__);
    if (st == CUDNN_STATUS_SUCCESS)
        st = find_run(handle, &k_conv_dgrad, &p, N_OF(bwd_algos));
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    FILL_PERF(perfResults, requestedAlgoCount, returnedAlgoCount, bwd_algos, true, &p,
              math_of(convDesc));
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *y,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void *dw,
    const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t *perfResults, void *workSpace, size_t workSpaceSizeInBytes)
{
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    struct conv_problem p;
    cudnnStatus_t st = conv_problem(__func__, handle, xDesc, dwDesc, convDesc, dyDesc, &p);
    if (st == CUDNN_STATUS_SUCCESS)
        st = perf_args(__func__, requestedAlgoCount, returnedAlgoCount, perfResults);
    if (st == CUDNN_STATUS_SUCCESS && (x == NULL || y == NULL || dw == NULL))
        st = dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data", __func__);
    if (st == CUDNN_STATUS_SUCCESS)
        st = find_run(handle, &k_conv_wgrad, &p, N_OF(bwd_algos));
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    FILL_PERF(perfResults, requestedAlgoCount, returnedAlgoCount, bwd_algos, true, &p,
              math_of(convDesc));
    return CUDNN_STATUS_SUCCESS;
}

/* Workspace sizes: no simulated algorithm needs one; an algorithm outside the enum is
 * CUDNN_STATUS_BAD_PARAM, the unimplemented backward-filter Winograd NOT_SUPPORTED. */
static cudnnStatus_t workspace(const char *fn, cudnnStatus_t shape, int algo, int count,
                               int unimplemented, size_t *sizeInBytes)
{
    if (shape != CUDNN_STATUS_SUCCESS)
        return shape;
    if (sizeInBytes == NULL || algo < 0 || algo >= count)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: algorithm %d", fn, algo);
    if (algo == unimplemented)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: algorithm %d is not implemented", fn,
                        algo);
    *sizeInBytes = 0;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes)
{
    struct conv_problem p;
    return workspace(__func__, conv_problem(__func__, handle, xDesc, wDesc, convDesc, yDesc, &p),
                     algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, -1, sizeInBytes);
}

API cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes)
{
    struct conv_problem p;
    return workspace(__func__, conv_problem(__func__, handle, dxDesc, wDesc, convDesc, dyDesc, &p),
                     algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, -1, sizeInBytes);
}

API cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes)
{
    struct conv_problem p;
    return workspace(__func__,
                     conv_problem(__func__, handle, xDesc, gradDesc, convDesc, dyDesc, &p), algo,
                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, sizeInBytes);
}

/* One pass: the shapes, the algorithm, the data pointers and scalars, then the kernel. */
static cudnnStatus_t conv_run(const char *fn, cudnnHandle_t handle, cudnnTensorDescriptor_t xd,
                              cudnnFilterDescriptor_t wd, cudnnConvolutionDescriptor_t cd,
                              cudnnTensorDescriptor_t yd, int algo, int count, bool data_ok,
                              struct vendor_kernel *k, double extra_bytes)
{
    struct conv_problem p;
    cudnnStatus_t st = conv_problem(fn, handle, xd, wd, cd, yd, &p);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!data_ok || algo < 0 || algo >= count)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data or scalars, or algorithm %d", fn,
                        algo);
    return dnn_launch(dnn_handle(handle), k, conv_ns(&p) + vendor_memory_ns(extra_bytes));
}

API cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                                          const cudnnTensorDescriptor_t xDesc, const void *x,
                                          const cudnnFilterDescriptor_t wDesc, const void *w,
                                          const cudnnConvolutionDescriptor_t convDesc,
                                          cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                                          size_t workSpaceSizeInBytes, const void *beta,
                                          const cudnnTensorDescriptor_t yDesc, void *y)
{
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    return conv_run(
        __func__, handle, xDesc, wDesc, convDesc, yDesc, algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
        alpha != NULL && beta != NULL && x != NULL && w != NULL && y != NULL, &k_conv_fwd, 0.0);
}

API cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                                               const cudnnFilterDescriptor_t wDesc, const void *w,
                                               const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                               const cudnnConvolutionDescriptor_t convDesc,
                                               cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                               size_t workSpaceSizeInBytes, const void *beta,
                                               const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    return conv_run(__func__, handle, dxDesc, wDesc, convDesc, dyDesc, algo,
                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                    alpha != NULL && beta != NULL && w != NULL && dy != NULL && dx != NULL,
                    &k_conv_dgrad, 0.0);
}

API cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
    void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnFilterDescriptor_t dwDesc, void *dw)
{
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED,
                        "%s: the Winograd algorithm is not "
                        "implemented",
                        __func__);
    return conv_run(__func__, handle, xDesc, dwDesc, convDesc, dyDesc, algo,
                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                    alpha != NULL && beta != NULL && x != NULL && dy != NULL && dw != NULL,
                    &k_conv_wgrad, 0.0);
}

/* y = act(alpha1 conv(x, w) + alpha2 z + bias): the convolution plus its epilogue's reads of
 * z and writes of y. */
API cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes,
    const void *alpha2, const cudnnTensorDescriptor_t zDesc, const void *z,
    const cudnnTensorDescriptor_t biasDesc, const void *bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void *y)
{
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    bool ok = alpha1 != NULL && alpha2 != NULL && x != NULL && w != NULL && y != NULL &&
              z != NULL && bias != NULL && dnn_tensor(zDesc) != NULL &&
              dnn_tensor(biasDesc) != NULL && activationDesc != NULL &&
              activationDesc->magic == DNN_MAGIC;
    double epilogue = dnn_tensor_bytes(dnn_tensor(zDesc)) + dnn_tensor_bytes(dnn_tensor(yDesc));
    return conv_run(__func__, handle, xDesc, wDesc, convDesc, yDesc, algo,
                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, ok, &k_conv_bias_act, epilogue);
}

/* ---- batch normalization --------------------------------------------------------------------- */

static bool same_shape(const struct cudnnTensorStruct *a, const struct cudnnTensorStruct *b)
{
    if (a == NULL || b == NULL || a->nb_dims != b->nb_dims)
        return false;
    for (int i = 0; i < a->nb_dims; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* The checks of the batch-normalization functions: mode and ops known, x and y of one shape,
 * the parameters' descriptor 1 x C x 1 x 1 (spatial) or 1 x C x H x W (per activation). */
static cudnnStatus_t bn_check(const char *fn, cudnnHandle_t handle, cudnnBatchNormMode_t mode,
                              cudnnBatchNormOps_t ops, const struct cudnnTensorStruct *x,
                              const struct cudnnTensorStruct *y,
                              const struct cudnnTensorStruct *params, bool data_ok)
{
    if (dnn_handle(handle) == NULL || (unsigned)mode > CUDNN_BATCHNORM_SPATIAL_PERSISTENT ||
        (unsigned)ops > CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION || !data_ok)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad handle, mode, ops or NULL data", fn);
    if (!same_shape(x, y) || params == NULL || params->nb_dims != x->nb_dims)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x, y and the parameters' shapes differ", fn);
    for (int i = 0; i < x->nb_dims; i++) {
        int want = i == 1                                             ? x->dims[1]
                   : i == 0 || mode != CUDNN_BATCHNORM_PER_ACTIVATION ? 1
                                                                      : x->dims[i];
        if (params->dims[i] != want)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: parameter dimension %d is %d, not %d", fn,
                            i, params->dims[i], want);
    }
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t bn_size(const char *fn, cudnnHandle_t handle, size_t *sizeInBytes, size_t n)
{
    if (dnn_handle(handle) == NULL || sizeInBytes == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad handle or NULL size", fn);
    *sizeInBytes = n;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t zDesc,
    const cudnnTensorDescriptor_t yDesc, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
    const cudnnActivationDescriptor_t activationDesc, size_t *sizeInBytes)
{
    (void)mode;
    (void)bnOps;
    (void)xDesc;
    (void)zDesc;
    (void)yDesc;
    (void)bnScaleBiasMeanVarDesc;
    (void)activationDesc;
    return bn_size(__func__, handle, sizeInBytes, 0);
}

API cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t yDesc,
    const cudnnTensorDescriptor_t dyDesc, const cudnnTensorDescriptor_t dzDesc,
    const cudnnTensorDescriptor_t dxDesc, const cudnnTensorDescriptor_t dBnScaleBiasDesc,
    const cudnnActivationDescriptor_t activationDesc, size_t *sizeInBytes)
{
    (void)mode;
    (void)bnOps;
    (void)xDesc;
    (void)yDesc;
    (void)dyDesc;
    (void)dzDesc;
    (void)dxDesc;
    (void)dBnScaleBiasDesc;
    (void)activationDesc;
    return bn_size(__func__, handle, sizeInBytes, 0);
}

/* The reserve space of a training pass with an activation: its bit mask, one bit per element. */
API cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t xDesc,
    size_t *sizeInBytes)
{
    (void)mode;
    (void)activationDesc;
    const struct cudnnTensorStruct *x = dnn_tensor(xDesc);
    if (x == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x is not set", __func__);
    size_t elems = (size_t)(dnn_tensor_bytes(x) / (double)dnn_type_bytes(x->type));
    return bn_size(__func__, handle, sizeInBytes,
                   bnOps == CUDNN_BATCHNORM_OPS_BN ? 0 : (elems + 7) / 8);
}

/* Training: x read twice (statistics, then normalization), y written, z read. */
API cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void *alpha,
    const void *beta, const cudnnTensorDescriptor_t xDesc, const void *xData,
    const cudnnTensorDescriptor_t zDesc, const void *zData, const cudnnTensorDescriptor_t yDesc,
    void *yData, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale,
    const void *bnBias, double exponentialAverageFactor, void *resultRunningMean,
    void *resultRunningVariance, double epsilon, void *resultSaveMean, void *resultSaveInvVariance,
    cudnnActivationDescriptor_t activationDesc, void *workspace, size_t workSpaceSizeInBytes,
    void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
    (void)exponentialAverageFactor;
    (void)workspace;
    (void)workSpaceSizeInBytes;
    (void)reserveSpace;
    (void)reserveSpaceSizeInBytes;
    const struct cudnnTensorStruct *x = dnn_tensor(xDesc), *y = dnn_tensor(yDesc);
    bool with_z = bnOps == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    bool ok = alpha != NULL && beta != NULL && xData != NULL && yData != NULL && bnScale != NULL &&
              bnBias != NULL && epsilon >= CUDNN_BN_MIN_EPSILON &&
              (resultRunningMean == NULL) == (resultRunningVariance == NULL) &&
              (resultSaveMean == NULL) == (resultSaveInvVariance == NULL) &&
              (!with_z || (zData != NULL && same_shape(x, dnn_tensor(zDesc)))) &&
              (bnOps == CUDNN_BATCHNORM_OPS_BN || activationDesc != NULL);
    cudnnStatus_t st =
        bn_check(__func__, handle, mode, bnOps, x, y, dnn_tensor(bnScaleBiasMeanVarDesc), ok);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    double bytes = 2.0 * dnn_tensor_bytes(x) + dnn_tensor_bytes(y) +
                   (with_z ? dnn_tensor_bytes(dnn_tensor(zDesc)) : 0.0);
    return dnn_launch(dnn_handle(handle), &k_bn_fwd_train, vendor_memory_ns(bytes));
}

API cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc,
    void *y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale,
    const void *bnBias, const void *estimatedMean, const void *estimatedVariance, double epsilon)
{
    const struct cudnnTensorStruct *xt = dnn_tensor(xDesc), *yt = dnn_tensor(yDesc);
    bool ok = alpha != NULL && beta != NULL && x != NULL && y != NULL && bnScale != NULL &&
              bnBias != NULL && estimatedMean != NULL && estimatedVariance != NULL &&
              epsilon >= CUDNN_BN_MIN_EPSILON;
    cudnnStatus_t st = bn_check(__func__, handle, mode, CUDNN_BATCHNORM_OPS_BN, xt, yt,
                                dnn_tensor(bnScaleBiasMeanVarDesc), ok);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return dnn_launch(dnn_handle(handle), &k_bn_fwd_infer,
                      vendor_memory_ns(dnn_tensor_bytes(xt) + dnn_tensor_bytes(yt)));
}

/* Backward: x and dy read twice (the reductions, then dx), dx written, dz written. */
API cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const void *alphaDataDiff, const void *betaDataDiff, const void *alphaParamDiff,
    const void *betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void *xData,
    const cudnnTensorDescriptor_t yDesc, const void *yData, const cudnnTensorDescriptor_t dyDesc,
    const void *dyData, const cudnnTensorDescriptor_t dzDesc, void *dzData,
    const cudnnTensorDescriptor_t dxDesc, void *dxData,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScaleData, const void *bnBiasData,
    void *dBnScaleData, void *dBnBiasData, double epsilon, const void *savedMean,
    const void *savedInvVariance, cudnnActivationDescriptor_t activationDesc, void *workSpace,
    size_t workSpaceSizeInBytes, void *reserveSpace, size_t reserveSpaceSizeInBytes)
{
    (void)yDesc;
    (void)yData;
    (void)bnBiasData;
    (void)savedMean;
    (void)savedInvVariance;
    (void)workSpace;
    (void)workSpaceSizeInBytes;
    (void)reserveSpace;
    (void)reserveSpaceSizeInBytes;
    const struct cudnnTensorStruct *x = dnn_tensor(xDesc), *dy = dnn_tensor(dyDesc),
                                   *dx = dnn_tensor(dxDesc);
    bool with_z = bnOps == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    bool ok = alphaDataDiff != NULL && betaDataDiff != NULL && alphaParamDiff != NULL &&
              betaParamDiff != NULL && xData != NULL && dyData != NULL && dxData != NULL &&
              bnScaleData != NULL && dBnScaleData != NULL && dBnBiasData != NULL &&
              epsilon >= CUDNN_BN_MIN_EPSILON && same_shape(x, dy) &&
              (!with_z || (dzData != NULL && same_shape(x, dnn_tensor(dzDesc)))) &&
              (bnOps == CUDNN_BATCHNORM_OPS_BN || activationDesc != NULL);
    cudnnStatus_t st =
        bn_check(__func__, handle, mode, bnOps, x, dx, dnn_tensor(dBnScaleBiasDesc), ok);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    double bytes = 2.0 * dnn_tensor_bytes(x) + 2.0 * dnn_tensor_bytes(dy) + dnn_tensor_bytes(dx) +
                   (with_z ? dnn_tensor_bytes(dnn_tensor(dzDesc)) : 0.0);
    return dnn_launch(dnn_handle(handle), &k_bn_bwd, vendor_memory_ns(bytes));
}

/* ---- pooling, spatial transformer ------------------------------------------------------------ */

API cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle,
                                      const cudnnPoolingDescriptor_t poolingDesc, const void *alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void *x,
                                      const void *beta, const cudnnTensorDescriptor_t yDesc,
                                      void *y)
{
    const struct cudnnTensorStruct *xt = dnn_tensor(xDesc), *yt = dnn_tensor(yDesc);
    const struct cudnnPoolingStruct *p = poolingDesc;
    if (dnn_handle(handle) == NULL || p == NULL || p->magic != DNN_MAGIC || !p->set ||
        alpha == NULL || beta == NULL || x == NULL || y == NULL || xt == NULL || yt == NULL ||
        xt->nb_dims != 4 || yt->nb_dims != 4 || xt->dims[0] != yt->dims[0] ||
        xt->dims[1] != yt->dims[1])
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad arguments", __func__);
    for (int i = 0; i < 2; i++) {
        int o = (xt->dims[i + 2] + 2 * p->pads[i] - p->window[i]) / p->strides[i] + 1;
        if (yt->dims[i + 2] != o)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "%s: y dimension %d is %d, the window gives "
                            "%d",
                            __func__, i + 2, yt->dims[i + 2], o);
    }
    return dnn_launch(dnn_handle(handle), &k_pool_fwd,
                      vendor_memory_ns(dnn_tensor_bytes(xt) + dnn_tensor_bytes(yt)));
}

static const struct cudnnSpatialTransformerStruct *st_of(cudnnSpatialTransformerDescriptor_t d)
{
    return d != NULL && d->magic == DNN_MAGIC && d->set ? d : NULL;
}

/* The sampling grid: N x H x W points of two coordinates. */
static double grid_bytes(const struct cudnnSpatialTransformerStruct *st)
{
    return (double)st->dims[0] * st->dims[2] * st->dims[3] * 2.0 * (double)dnn_type_bytes(st->type);
}

static cudnnStatus_t grid_op(const char *fn, cudnnHandle_t handle,
                             cudnnSpatialTransformerDescriptor_t stDesc, const void *in, void *out)
{
    const struct cudnnSpatialTransformerStruct *st = st_of(stDesc);
    if (dnn_handle(handle) == NULL || st == NULL || in == NULL || out == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad arguments", fn);
    return dnn_launch(dnn_handle(handle), &k_st_grid, vendor_memory_ns(grid_bytes(st)));
}

API cudnnStatus_t cudnnSpatialTfGridGeneratorForward(
    cudnnHandle_t handle, const cudnnSpatialTransformerDescriptor_t stDesc, const void *theta,
    void *grid)
{
    return grid_op(__func__, handle, stDesc, theta, grid);
}

API cudnnStatus_t cudnnSpatialTfGridGeneratorBackward(
    cudnnHandle_t handle, const cudnnSpatialTransformerDescriptor_t stDesc, const void *dgrid,
    void *dtheta)
{
    return grid_op(__func__, handle, stDesc, dgrid, dtheta);
}

API cudnnStatus_t cudnnSpatialTfSamplerForward(cudnnHandle_t handle,
                                               cudnnSpatialTransformerDescriptor_t stDesc,
                                               const void *alpha,
                                               const cudnnTensorDescriptor_t xDesc, const void *x,
                                               const void *grid, const void *beta,
                                               cudnnTensorDescriptor_t yDesc, void *y)
{
    const struct cudnnSpatialTransformerStruct *st = st_of(stDesc);
    const struct cudnnTensorStruct *xt = dnn_tensor(xDesc), *yt = dnn_tensor(yDesc);
    if (dnn_handle(handle) == NULL || st == NULL || xt == NULL || yt == NULL || alpha == NULL ||
        beta == NULL || x == NULL || grid == NULL || y == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad arguments", __func__);
    double bytes = dnn_tensor_bytes(xt) + dnn_tensor_bytes(yt) + grid_bytes(st);
    return dnn_launch(dnn_handle(handle), &k_st_sampler, vendor_memory_ns(bytes));
}

API cudnnStatus_t
cudnnSpatialTfSamplerBackward(cudnnHandle_t handle, cudnnSpatialTransformerDescriptor_t stDesc,
                              const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                              const void *beta, const cudnnTensorDescriptor_t dxDesc, void *dx,
                              const void *alphaDgrid, const cudnnTensorDescriptor_t dyDesc,
                              const void *dy, const void *grid, const void *betaDgrid, void *dgrid)
{
    const struct cudnnSpatialTransformerStruct *st = st_of(stDesc);
    const struct cudnnTensorStruct *xt = dnn_tensor(xDesc), *dxt = dnn_tensor(dxDesc),
                                   *dyt = dnn_tensor(dyDesc);
    if (dnn_handle(handle) == NULL || st == NULL || xt == NULL || dxt == NULL || dyt == NULL ||
        alpha == NULL || beta == NULL || alphaDgrid == NULL || betaDgrid == NULL || x == NULL ||
        dx == NULL || dy == NULL || grid == NULL || dgrid == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad arguments", __func__);
    double bytes =
        dnn_tensor_bytes(xt) + dnn_tensor_bytes(dxt) + dnn_tensor_bytes(dyt) + 2.0 * grid_bytes(st);
    return dnn_launch(dnn_handle(handle), &k_st_sampler, vendor_memory_ns(bytes));
}

/* ---- CTC loss -------------------------------------------------------------------------------- */

/* probs T x N x C (3-D), gradients of the same shape; labels of at most 256 ("the label
 * length ... must be no greater than 256"). */
static cudnnStatus_t ctc_check(const char *fn, cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                               cudnnCTCLossDescriptor_t d, const struct cudnnTensorStruct *probs,
                               const struct cudnnTensorStruct *grads)
{
    if (dnn_handle(handle) == NULL || d == NULL || d->magic != DNN_MAGIC || probs == NULL ||
        probs->nb_dims != 3 || (grads != NULL && !same_shape(probs, grads)) ||
        (algo != CUDNN_CTC_LOSS_ALGO_DETERMINISTIC &&
         algo != CUDNN_CTC_LOSS_ALGO_NON_DETERMINISTIC))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad handle, descriptor or shapes", fn);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t ctc_workspace(const char *fn, cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                                   cudnnCTCLossDescriptor_t d, cudnnTensorDescriptor_t probsDesc,
                                   cudnnTensorDescriptor_t gradientsDesc, size_t *sizeInBytes)
{
    const struct cudnnTensorStruct *probs = dnn_tensor(probsDesc);
    cudnnStatus_t st = ctc_check(fn, handle, algo, d, probs, dnn_tensor(gradientsDesc));
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (sizeInBytes == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL size", fn);
    *sizeInBytes = (size_t)dnn_tensor_bytes(probs); /* the alpha/beta lattice, one per prob */
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetCTCLossWorkspaceSize(cudnnHandle_t handle,
                                               const cudnnTensorDescriptor_t probsDesc,
                                               const cudnnTensorDescriptor_t gradientsDesc,
                                               const int *labels, const int *labelLengths,
                                               const int *inputLengths, cudnnCTCLossAlgo_t algo,
                                               cudnnCTCLossDescriptor_t ctcLossDesc,
                                               size_t *sizeInBytes)
{
    (void)labels;
    (void)labelLengths;
    (void)inputLengths;
    return ctc_workspace(__func__, handle, algo, ctcLossDesc, probsDesc, gradientsDesc,
                         sizeInBytes);
}

API cudnnStatus_t cudnnGetCTCLossWorkspaceSize_v8(cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                                                  cudnnCTCLossDescriptor_t ctcLossDesc,
                                                  const cudnnTensorDescriptor_t probsDesc,
                                                  const cudnnTensorDescriptor_t gradientsDesc,
                                                  size_t *sizeInBytes)
{
    return ctc_workspace(__func__, handle, algo, ctcLossDesc, probsDesc, gradientsDesc,
                         sizeInBytes);
}

static cudnnStatus_t ctc_run(const char *fn, cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                             cudnnCTCLossDescriptor_t d, cudnnTensorDescriptor_t probsDesc,
                             cudnnTensorDescriptor_t gradientsDesc, bool data_ok)
{
    const struct cudnnTensorStruct *probs = dnn_tensor(probsDesc),
                                   *grads = dnn_tensor(gradientsDesc);
    cudnnStatus_t st = ctc_check(fn, handle, algo, d, probs, grads);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!data_ok)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: NULL data", fn);
    return dnn_launch(dnn_handle(handle), &k_ctc,
                      vendor_memory_ns(dnn_tensor_bytes(probs) + dnn_tensor_bytes(grads)));
}

/* The host label arrays are read at the call (labels of more than 256 are refused). */
API cudnnStatus_t cudnnCTCLoss(cudnnHandle_t handle, const cudnnTensorDescriptor_t probsDesc,
                               const void *probs, const int hostLabels[],
                               const int hostLabelLengths[], const int hostInputLengths[],
                               void *costs, const cudnnTensorDescriptor_t gradientsDesc,
                               void *gradients, cudnnCTCLossAlgo_t algo,
                               cudnnCTCLossDescriptor_t ctcLossDesc, void *workspace,
                               size_t workSpaceSizeInBytes)
{
    (void)workspace;
    (void)workSpaceSizeInBytes;
    (void)gradients;
    const struct cudnnTensorStruct *p = dnn_tensor(probsDesc);
    if (p != NULL && hostLabelLengths != NULL)
        for (int i = 0; i < p->dims[1]; i++)
            if (hostLabelLengths[i] > 256)
                return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: label %d has %d symbols (at most 256)",
                                __func__, i, hostLabelLengths[i]);
    return ctc_run(__func__, handle, algo, ctcLossDesc, probsDesc, gradientsDesc,
                   probs != NULL && hostLabels != NULL && hostLabelLengths != NULL &&
                       hostInputLengths != NULL && costs != NULL);
}

API cudnnStatus_t cudnnCTCLoss_v8(cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                                  cudnnCTCLossDescriptor_t ctcLossDesc,
                                  const cudnnTensorDescriptor_t probsDesc, const void *probs,
                                  const int labels[], const int labelLengths[],
                                  const int inputLengths[], void *costs,
                                  const cudnnTensorDescriptor_t gradientsDesc, void *gradients,
                                  size_t workSpaceSizeInBytes, void *workspace)
{
    (void)workspace;
    (void)workSpaceSizeInBytes;
    (void)gradients;
    return ctc_run(__func__, handle, algo, ctcLossDesc, probsDesc, gradientsDesc,
                   probs != NULL && labels != NULL && labelLengths != NULL &&
                       inputLengths != NULL && costs != NULL);
}

/* ---- RNNs ------------------------------------------------------------------------------------ */

/* The weight space, per pseudo-layer (layer x direction): the G input matrices (G x H x in),
 * the G recurrent ones (H x out each), then their biases (H each, per the bias mode), then the
 * LSTM projection (out x H). Input width: the input size in layer 0 (none with
 * CUDNN_SKIP_INPUT), out x directions above. Offsets are in elements. */
struct rnn_layout {
    size_t w_elems, r_elems, bw_elems, br_elems, p_elems, layer_elems;
    int in, out, gates, hidden;
};

static struct rnn_layout rnn_layout(const struct cudnnRNNStruct *r, int pseudo_layer)
{
    struct rnn_layout l = {0};
    l.gates = dnn_rnn_gates(r);
    l.hidden = r->hidden_size;
    l.out = dnn_rnn_out(r);
    int layer = pseudo_layer / dnn_rnn_dirs(r);
    l.in = layer == 0 ? (r->input_mode == CUDNN_SKIP_INPUT ? 0 : r->input_size)
                      : l.out * dnn_rnn_dirs(r);
    size_t gh = (size_t)l.gates * (size_t)l.hidden;
    l.w_elems = gh * (size_t)l.in;
    l.r_elems = gh * (size_t)l.out;
    bool inp_bias = r->bias == CUDNN_RNN_DOUBLE_BIAS || r->bias == CUDNN_RNN_SINGLE_INP_BIAS;
    bool rec_bias = r->bias == CUDNN_RNN_DOUBLE_BIAS || r->bias == CUDNN_RNN_SINGLE_REC_BIAS;
    l.bw_elems = inp_bias ? gh : 0;
    l.br_elems = rec_bias ? gh : 0;
    l.p_elems = l.out < l.hidden ? (size_t)l.out * (size_t)l.hidden : 0;
    l.layer_elems = l.w_elems + l.r_elems + l.bw_elems + l.br_elems + l.p_elems;
    return l;
}

static size_t rnn_weight_bytes(const struct cudnnRNNStruct *r)
{
    size_t elems = 0;
    for (int p = 0; p < r->layers * dnn_rnn_dirs(r); p++)
        elems += rnn_layout(r, p).layer_elems;
    return elems * dnn_type_bytes(r->type);
}

API cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                             size_t *weightSpaceSize)
{
    const struct cudnnRNNStruct *r = dnn_rnn(rnnDesc);
    if (dnn_handle(handle) == NULL || r == NULL || weightSpaceSize == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad arguments", __func__);
    *weightSpaceSize = rnn_weight_bytes(r);
    return CUDNN_STATUS_SUCCESS;
}

/* A 3-D tensor descriptor 1 x rows x cols, packed. */
static void set_matrix(cudnnTensorDescriptor_t d, cudnnDataType_t type, int rows, int cols)
{
    if (d == NULL || d->magic != DNN_MAGIC)
        return;
    d->type = type;
    d->nb_dims = 3;
    d->dims[0] = 1;
    d->dims[1] = rows;
    d->dims[2] = cols;
    d->strides[0] = rows * cols;
    d->strides[1] = cols;
    d->strides[2] = 1;
    d->set = true;
}

API cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                          int32_t pseudoLayer, size_t weightSpaceSize,
                                          const void *weightSpace, int32_t linLayerID,
                                          cudnnTensorDescriptor_t mDesc, void **mAddr,
                                          cudnnTensorDescriptor_t bDesc, void **bAddr)
{
    const struct cudnnRNNStruct *r = dnn_rnn(rnnDesc);
    if (dnn_handle(handle) == NULL || r == NULL || weightSpace == NULL || pseudoLayer < 0 ||
        pseudoLayer >= r->layers * dnn_rnn_dirs(r) || weightSpaceSize < rnn_weight_bytes(r))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "%s: bad handle, descriptor, layer %d or weight "
                        "space",
                        __func__, (int)pseudoLayer);
    struct rnn_layout l = rnn_layout(r, pseudoLayer);
    int g = l.gates;
    bool proj = linLayerID == 2 * g && l.p_elems != 0;
    if (linLayerID < 0 || (linLayerID >= 2 * g && !proj))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: linear layer %d of %d", __func__,
                        (int)linLayerID, 2 * g);
    size_t base = 0;
    for (int p = 0; p < pseudoLayer; p++)
        base += rnn_layout(r, p).layer_elems;
    size_t esz = dnn_type_bytes(r->type), hh = (size_t)l.hidden;
    char *ws = (char *)weightSpace;
    size_t m_off, b_off = 0;
    int rows, cols;
    bool has_bias;
    if (proj) {
        m_off = base + l.w_elems + l.r_elems + l.bw_elems + l.br_elems;
        rows = l.out;
        cols = l.hidden;
        has_bias = false;
    } else if (linLayerID < g) {
        m_off = base + (size_t)linLayerID * hh * (size_t)l.in;
        rows = l.hidden;
        cols = l.in;
        has_bias = l.bw_elems != 0;
        b_off = base + l.w_elems + l.r_elems + (size_t)linLayerID * hh;
    } else {
        m_off = base + l.w_elems + (size_t)(linLayerID - g) * hh * (size_t)l.out;
        rows = l.hidden;
        cols = l.out;
        has_bias = l.br_elems != 0;
        b_off = base + l.w_elems + l.r_elems + l.bw_elems + (size_t)(linLayerID - g) * hh;
    }
    if (mAddr != NULL) {
        *mAddr = cols > 0 ? ws + m_off * esz : NULL;
        set_matrix(mDesc, r->type, rows, cols);
    }
    if (bAddr != NULL) {
        *bAddr = has_bias ? ws + b_off * esz : NULL;
        if (has_bias)
            set_matrix(bDesc, r->type, l.hidden, 1);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* Workspace: the gates of one time step of the whole batch, for every step; reserve (training):
 * the gates and hidden states of every layer and step, kept for the backward passes. */
static void rnn_temp(const struct cudnnRNNStruct *r, const struct cudnnRNNDataStruct *x,
                     bool training, size_t *work, size_t *reserve)
{
    size_t esz = dnn_type_bytes(r->type);
    size_t steps = (size_t)x->max_seq * (size_t)x->batch;
    size_t gates = (size_t)dnn_rnn_gates(r) * (size_t)r->hidden_size;
    size_t pseudo = (size_t)r->layers * (size_t)dnn_rnn_dirs(r);
    *work = steps * gates * esz * (size_t)dnn_rnn_dirs(r);
    *reserve = training ? pseudo * steps * (gates + (size_t)r->hidden_size) * esz : 0;
}

static cudnnStatus_t rnn_x_check(const char *fn, cudnnHandle_t handle,
                                 const struct cudnnRNNStruct *r, const struct cudnnRNNDataStruct *x)
{
    if (dnn_handle(handle) == NULL || r == NULL || x == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: bad handle or descriptors", fn);
    if (x->vector != r->input_size)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: x vectors of %d for an input size of %d", fn,
                        x->vector, (int)r->input_size);
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                            cudnnForwardMode_t fwdMode,
                                            cudnnRNNDataDescriptor_t xDesc, size_t *workSpaceSize,
                                            size_t *reserveSpaceSize)
{
    const struct cudnnRNNStruct *r = dnn_rnn(rnnDesc);
    const struct cudnnRNNDataStruct *x = dnn_rnn_data(xDesc);
    cudnnStatus_t st = rnn_x_check(__func__, handle, r, x);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (fwdMode != CUDNN_FWD_MODE_INFERENCE && fwdMode != CUDNN_FWD_MODE_TRAINING)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: forward mode %d", __func__, (int)fwdMode);
    size_t work, reserve;
    rnn_temp(r, x, fwdMode == CUDNN_FWD_MODE_TRAINING, &work, &reserve);
    if (workSpaceSize != NULL)
        *workSpaceSize = work;
    if (reserveSpaceSize != NULL)
        *reserveSpaceSize = reserve;
    return CUDNN_STATUS_SUCCESS;
}

/* Every layer and direction: the input GEMM and the recurrent GEMM over all steps (and the
 * projection): 2 x steps x batch x G H x (in + out) flops (+ 2 x steps x batch x out x H). */
static double rnn_flops(const struct cudnnRNNStruct *r, const struct cudnnRNNDataStruct *x)
{
    double steps = (double)x->max_seq * x->batch, flops = 0.0;
    for (int p = 0; p < r->layers * dnn_rnn_dirs(r); p++) {
        struct rnn_layout l = rnn_layout(r, p);
        flops += 2.0 * steps * (double)l.gates * l.hidden * (double)(l.in + l.out);
        if (l.p_elems != 0)
            flops += 2.0 * steps * (double)l.out * l.hidden;
    }
    return flops;
}

/* One RNN pass: x and y shapes against the descriptor, the spaces large enough, then its
 * kernel for the GEMMs' flops. */
static cudnnStatus_t rnn_run(const char *fn, cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                             cudnnRNNDataDescriptor_t xDesc, cudnnRNNDataDescriptor_t yDesc,
                             bool training, size_t weight_bytes, size_t work_bytes,
                             size_t reserve_bytes, bool data_ok, struct vendor_kernel *k)
{
    const struct cudnnRNNStruct *r = dnn_rnn(rnnDesc);
    const struct cudnnRNNDataStruct *x = dnn_rnn_data(xDesc), *y = dnn_rnn_data(yDesc);
    cudnnStatus_t st = rnn_x_check(fn, handle, r, x);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (y == NULL || y->batch != x->batch || y->max_seq != x->max_seq ||
        y->vector != dnn_rnn_out(r) * dnn_rnn_dirs(r) || !data_ok)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "%s: y does not match x and the RNN, or NULL "
                        "data",
                        fn);
    size_t work, reserve;
    rnn_temp(r, x, training, &work, &reserve);
    if (weight_bytes < rnn_weight_bytes(r) || work_bytes < work || reserve_bytes < reserve)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: weight, work or reserve space too small", fn);
    bool tensor_ops = r->math != CUDNN_FMA_MATH;
    return dnn_launch(dnn_handle(handle), k,
                      vendor_compute_ns(rnn_flops(r, x), dnn_rate(r->type, tensor_ops)));
}

API cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                  cudnnForwardMode_t fwdMode, const int32_t devSeqLengths[],
                                  cudnnRNNDataDescriptor_t xDesc, const void *x,
                                  cudnnRNNDataDescriptor_t yDesc, void *y,
                                  cudnnTensorDescriptor_t hDesc, const void *hx, void *hy,
                                  cudnnTensorDescriptor_t cDesc, const void *cx, void *cy,
                                  size_t weightSpaceSize, const void *weightSpace,
                                  size_t workSpaceSize, void *workSpace, size_t reserveSpaceSize,
                                  void *reserveSpace)
{
    (void)devSeqLengths;
    (void)hDesc;
    (void)hx;
    (void)hy;
    (void)cDesc;
    (void)cx;
    (void)cy;
    (void)workSpace;
    (void)reserveSpace;
    bool training = fwdMode == CUDNN_FWD_MODE_TRAINING;
    if (fwdMode != CUDNN_FWD_MODE_INFERENCE && !training)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: forward mode %d", __func__, (int)fwdMode);
    return rnn_run(__func__, handle, rnnDesc, xDesc, yDesc, training, weightSpaceSize,
                   workSpaceSize, reserveSpaceSize, x != NULL && y != NULL && weightSpace != NULL,
                   &k_rnn_fwd);
}

API cudnnStatus_t cudnnRNNBackwardData_v8(
    cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, const int32_t devSeqLengths[],
    cudnnRNNDataDescriptor_t yDesc, const void *y, const void *dy, cudnnRNNDataDescriptor_t xDesc,
    void *dx, cudnnTensorDescriptor_t hDesc, const void *hx, const void *dhy, void *dhx,
    cudnnTensorDescriptor_t cDesc, const void *cx, const void *dcy, void *dcx,
    size_t weightSpaceSize, const void *weightSpace, size_t workSpaceSize, void *workSpace,
    size_t reserveSpaceSize, void *reserveSpace)
{
    (void)devSeqLengths;
    (void)hDesc;
    (void)hx;
    (void)dhy;
    (void)dhx;
    (void)cDesc;
    (void)cx;
    (void)dcy;
    (void)dcx;
    (void)workSpace;
    return rnn_run(__func__, handle, rnnDesc, xDesc, yDesc, true, weightSpaceSize, workSpaceSize,
                   reserveSpaceSize,
                   y != NULL && dy != NULL && dx != NULL && weightSpace != NULL &&
                       reserveSpace != NULL,
                   &k_rnn_bwd_data);
}

API cudnnStatus_t cudnnRNNBackwardWeights_v8(
    cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc, cudnnWgradMode_t addGrad,
    const int32_t devSeqLengths[], cudnnRNNDataDescriptor_t xDesc, const void *x,
    cudnnTensorDescriptor_t hDesc, const void *hx, cudnnRNNDataDescriptor_t yDesc, const void *y,
    size_t weightSpaceSize, void *dweightSpace, size_t workSpaceSize, void *workSpace,
    size_t reserveSpaceSize, void *reserveSpace)
{
    (void)devSeqLengths;
    (void)hDesc;
    (void)hx;
    (void)workSpace;
    if (addGrad != CUDNN_WGRAD_MODE_ADD && addGrad != CUDNN_WGRAD_MODE_SET)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "%s: wgrad mode %d", __func__, (int)addGrad);
    return rnn_run(__func__, handle, rnnDesc, xDesc, yDesc, true, weightSpaceSize, workSpaceSize,
                   reserveSpaceSize,
                   x != NULL && y != NULL && dweightSpace != NULL && reserveSpace != NULL,
                   &k_rnn_bwd_weights);
}
