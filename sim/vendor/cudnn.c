/* sim/vendor/cudnn.c: the simulated libcudnn.so.9's handle, versions, errors and legacy
 * descriptors (prototypes of the toolkit's cudnn_*.h): create / set / get / destroy behave as
 * documented, bad parameters get the documented status (CUDNN_STATUS_BAD_PARAM, or
 * CUDNN_STATUS_NOT_SUPPORTED for a shape the library does not take), and the reason is kept for
 * cudnnGetLastErrorString. One library, no sub-libraries: the real libcudnn.so.9 dlopens
 * libcudnn_ops/_cnn/_adv/_graph/engines, which programs never name. Never calls an export. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/vendor/dnn.h"

#define API VENDOR_API

/* ---- shared helpers (dnn.h) ------------------------------------------------------------------ */

static __thread char last_error[256];

cudnnStatus_t dnn_fail(cudnnStatus_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    VENDOR_DBG(1, "cudnn: %s (status %d)", last_error, (int)st);
    return st;
}

#define LIVE(type, d) ((d) != NULL && (d)->magic == DNN_MAGIC ? (type)(d) : NULL)

struct cudnnContext *dnn_handle(cudnnHandle_t h)
{
    return LIVE(struct cudnnContext *, h);
}

const struct cudnnTensorStruct *dnn_tensor(cudnnTensorDescriptor_t d)
{
    return d != NULL && d->magic == DNN_MAGIC && d->set ? d : NULL;
}

const struct cudnnFilterStruct *dnn_filter(cudnnFilterDescriptor_t d)
{
    return d != NULL && d->magic == DNN_MAGIC && d->set ? d : NULL;
}

const struct cudnnConvolutionStruct *dnn_conv(cudnnConvolutionDescriptor_t d)
{
    return d != NULL && d->magic == DNN_MAGIC && d->set ? d : NULL;
}

const struct cudnnRNNStruct *dnn_rnn(cudnnRNNDescriptor_t d)
{
    return d != NULL && d->magic == DNN_MAGIC && d->set ? d : NULL;
}

const struct cudnnRNNDataStruct *dnn_rnn_data(cudnnRNNDataDescriptor_t d)
{
    return d != NULL && d->magic == DNN_MAGIC && d->set ? d : NULL;
}

size_t dnn_type_bytes(cudnnDataType_t type)
{
    switch (type) {
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
    case CUDNN_DATA_FP8_E8M0: return 1;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_UINT8x4:
    case CUDNN_DATA_UINT32:
    case CUDNN_DATA_FAST_FLOAT_FOR_FP8: return 4;
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
    case CUDNN_DATA_COMPLEX_FP32: return 8;
    case CUDNN_DATA_COMPLEX_FP64: return 16;
    case CUDNN_DATA_INT8x32: return 32;
    default: return 0;
    }
}

enum vendor_rate dnn_rate(cudnnDataType_t type, bool tensor_ops)
{
    switch (type) {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_COMPLEX_FP64: return VENDOR_FP64;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return tensor_ops ? VENDOR_FP16 : VENDOR_FP32;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_INT8x32: return tensor_ops ? VENDOR_FP8 : VENDOR_FP32;
    default: return tensor_ops ? VENDOR_TF32 : VENDOR_FP32;
    }
}

double dnn_tensor_bytes(const struct cudnnTensorStruct *t)
{
    if (t == NULL)
        return 0.0;
    double n = 1.0;
    for (int i = 0; i < t->nb_dims; i++)
        n *= t->dims[i];
    return n * (double)dnn_type_bytes(t->type);
}

cudnnStatus_t dnn_launch(const struct cudnnContext *h, struct vendor_kernel *k, uint64_t work_ns)
{
    cudaError_t err = vendor_launch(k, work_ns, h->stream);
    if (err != cudaSuccess)
        return dnn_fail(CUDNN_STATUS_EXECUTION_FAILED,
                        "%s: the handle's stream refused the "
                        "kernel (cudaError %d)",
                        k->name, (int)err);
    return CUDNN_STATUS_SUCCESS;
}

double dnn_conv_flops(double n, double k, double out_elems, double c_per_group, double taps)
{
    return 2.0 * n * k * out_elems * c_per_group * taps;
}

int dnn_rnn_gates(const struct cudnnRNNStruct *r)
{
    switch (r->cell) {
    case CUDNN_LSTM: return 4;
    case CUDNN_GRU: return 3;
    default: return 1;
    }
}

int dnn_rnn_dirs(const struct cudnnRNNStruct *r)
{
    return r->dir == CUDNN_BIDIRECTIONAL ? 2 : 1;
}

int dnn_rnn_out(const struct cudnnRNNStruct *r)
{
    return r->proj_size > 0 && r->proj_size < r->hidden_size ? r->proj_size : r->hidden_size;
}

/* ---- versions and errors --------------------------------------------------------------------- */

API size_t cudnnGetVersion(void)
{
    return DNN_VERSION;
}

/* The newest compute capability the library has kernels for (major * 100 + minor * 10). */
API size_t cudnnGetMaxDeviceVersion(void)
{
    return 1200;
}

API size_t cudnnGetCudartVersion(void)
{
    return CUDART_VERSION;
}

API cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int *value)
{
    if (value == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty: value is NULL");
    switch (type) {
    case MAJOR_VERSION: *value = DNN_VERSION_MAJOR; return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = DNN_VERSION_MINOR; return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = DNN_VERSION_PATCH; return CUDNN_STATUS_SUCCESS;
    default:
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty: unknown property %d", (int)type);
    }
}

/* Every sub-library is inside this one: their version checks pass. */
API cudnnStatus_t cudnnGraphVersionCheck(void)
{
    return CUDNN_STATUS_SUCCESS;
}
API cudnnStatus_t cudnnOpsVersionCheck(void)
{
    return CUDNN_STATUS_SUCCESS;
}
API cudnnStatus_t cudnnCnnVersionCheck(void)
{
    return CUDNN_STATUS_SUCCESS;
}
API cudnnStatus_t cudnnAdvVersionCheck(void)
{
    return CUDNN_STATUS_SUCCESS;
}

API const char *cudnnGetErrorString(cudnnStatus_t status)
{
    switch (status) {
#define NAME(s) \
    case s: return #s;
        NAME(CUDNN_STATUS_SUCCESS)
        NAME(CUDNN_STATUS_NOT_INITIALIZED)
        NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
        NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
        NAME(CUDNN_STATUS_DEPRECATED)
        NAME(CUDNN_STATUS_LICENSE_ERROR)
        NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
        NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
        NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
        NAME(CUDNN_STATUS_BAD_PARAM)
        NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
        NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
        NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
        NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
        NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
        NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
        NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
        NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
        NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
        NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
        NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
        NAME(CUDNN_STATUS_NOT_SUPPORTED)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
        NAME(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
        NAME(CUDNN_STATUS_INTERNAL_ERROR)
        NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
        NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
        NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
        NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
        NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
        NAME(CUDNN_STATUS_EXECUTION_FAILED)
        NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
        NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
        NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
        NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
        NAME(CUDNN_STATUS_INVALID_VALUE)
#undef NAME
    }
    return "CUDNN_UNKNOWN_STATUS";
}

/* The thread's last error message, cleared once read ("" when there was none). */
API void cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (message == NULL || max_size == 0)
        return;
    snprintf(message, max_size, "%s", last_error);
    last_error[0] = '\0';
}

/* ---- the handle ------------------------------------------------------------------------------ */

API cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    if (handle == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreate: handle is NULL");
    struct cudnnContext *h = calloc(1, sizeof *h);
    if (h == NULL)
        return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    simcuda_private_ops()->ctx_activate(); /* cudnnCreate initializes the device's context */
    h->magic = DNN_MAGIC;
    *handle = h;
    return CUDNN_STATUS_SUCCESS;
}

/* "the release of those resources by calling cudnnDestroy() will implicitly call
 * cudaDeviceSynchronize" (cuDNN API reference, cudnnCreate). */
API cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    struct cudnnContext *h = dnn_handle(handle);
    if (h == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy: not a handle");
    vendor_device_synchronize();
    h->magic = 0;
    free(h);
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
{
    struct cudnnContext *h = dnn_handle(handle);
    if (h == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: not a handle");
    h->stream = streamId;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *streamId)
{
    struct cudnnContext *h = dnn_handle(handle);
    if (h == NULL || streamId == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream: not a handle, or streamId NULL");
    *streamId = h->stream;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- create / destroy ------------------------------------------------------------------------ */

#define CREATE_DESTROY(create, destroy, type)                                            \
    API cudnnStatus_t create(type **out)                                                 \
    {                                                                                    \
        if (out == NULL)                                                                 \
            return dnn_fail(CUDNN_STATUS_BAD_PARAM, #create ": the output is NULL");     \
        type *d = calloc(1, sizeof *d);                                                  \
        if (d == NULL)                                                                   \
            return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;                   \
        d->magic = DNN_MAGIC;                                                            \
        *out = d;                                                                        \
        return CUDNN_STATUS_SUCCESS;                                                     \
    }                                                                                    \
    API cudnnStatus_t destroy(type *d)                                                   \
    {                                                                                    \
        if (d == NULL)                                                                   \
            return CUDNN_STATUS_SUCCESS;                                                 \
        if (d->magic != DNN_MAGIC)                                                       \
            return dnn_fail(CUDNN_STATUS_BAD_PARAM, #destroy ": not a live descriptor"); \
        d->magic = 0;                                                                    \
        free(d);                                                                         \
        return CUDNN_STATUS_SUCCESS;                                                     \
    }
CREATE_DESTROY(cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor, struct cudnnTensorStruct)
CREATE_DESTROY(cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor, struct cudnnFilterStruct)
CREATE_DESTROY(cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor,
               struct cudnnActivationStruct)
CREATE_DESTROY(cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor,
               struct cudnnPoolingStruct)
CREATE_DESTROY(cudnnCreateDropoutDescriptor, cudnnDestroyDropoutDescriptor,
               struct cudnnDropoutStruct)
CREATE_DESTROY(cudnnCreateSpatialTransformerDescriptor, cudnnDestroySpatialTransformerDescriptor,
               struct cudnnSpatialTransformerStruct)
CREATE_DESTROY(cudnnCreateCTCLossDescriptor, cudnnDestroyCTCLossDescriptor,
               struct cudnnCTCLossStruct)
CREATE_DESTROY(cudnnCreateRNNDescriptor, cudnnDestroyRNNDescriptor, struct cudnnRNNStruct)
CREATE_DESTROY(cudnnCreateRNNDataDescriptor, cudnnDestroyRNNDataDescriptor,
               struct cudnnRNNDataStruct)

/* A convolution descriptor starts as cuDNN's: one group, default math. */
API cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc)
{
    if (convDesc == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateConvolutionDescriptor: NULL");
    struct cudnnConvolutionStruct *d = calloc(1, sizeof *d);
    if (d == NULL)
        return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    d->magic = DNN_MAGIC;
    d->groups = 1;
    d->math = CUDNN_DEFAULT_MATH;
    *convDesc = d;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc)
{
    if (convDesc == NULL)
        return CUDNN_STATUS_SUCCESS;
    if (convDesc->magic != DNN_MAGIC)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyConvolutionDescriptor: not live");
    convDesc->magic = 0;
    free(convDesc);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- tensors and filters --------------------------------------------------------------------- */

static bool type_ok(cudnnDataType_t t)
{
    return dnn_type_bytes(t) != 0;
}

/* "CUDNN_STATUS_BAD_PARAM: At least one of the elements of the array dimA was negative or
 * zero, or dataType has an invalid enumerant value"; "CUDNN_STATUS_NOT_SUPPORTED: The
 * parameter nbDims is outside the range [.., CUDNN_DIM_MAX], or the total size of the tensor
 * descriptor exceeds the maximum limit of 2 Giga-elements" (3 dimensions are the fewest the
 * library takes: the RNN and CTC functions use them). */
API cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                             cudnnDataType_t dataType, int nbDims, const int dimA[],
                                             const int strideA[])
{
    if (tensorDesc == NULL || tensorDesc->magic != DNN_MAGIC || !type_ok(dataType))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "cudnnSetTensorNdDescriptor: bad descriptor or type");
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSetTensorNdDescriptor: %d dimensions",
                        nbDims);
    if (dimA == NULL || strideA == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensorNdDescriptor: NULL arrays");
    double span = 1.0;
    for (int i = 0; i < nbDims; i++) {
        if (dimA[i] <= 0 || strideA[i] < 0)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "cudnnSetTensorNdDescriptor: dimension %d is "
                            "%d, stride %d",
                            i, dimA[i], strideA[i]);
        span += (double)(dimA[i] - 1) * strideA[i];
    }
    if (span > 2147483647.0)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSetTensorNdDescriptor: more than 2 Gi "
                                                    "elements");
    tensorDesc->type = dataType;
    tensorDesc->nb_dims = nbDims;
    memcpy(tensorDesc->dims, dimA, (size_t)nbDims * sizeof *dimA);
    memcpy(tensorDesc->strides, strideA, (size_t)nbDims * sizeof *strideA);
    tensorDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                             int nbDimsRequested, cudnnDataType_t *dataType,
                                             int *nbDims, int dimA[], int strideA[])
{
    const struct cudnnTensorStruct *t = dnn_tensor(tensorDesc);
    if (t == NULL || nbDimsRequested < 0 || dataType == NULL || nbDims == NULL ||
        (nbDimsRequested > 0 && (dimA == NULL || strideA == NULL)))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensorNdDescriptor: bad arguments");
    *dataType = t->type;
    *nbDims = t->nb_dims;
    for (int i = 0; i < nbDimsRequested && i < t->nb_dims; i++) {
        dimA[i] = t->dims[i];
        strideA[i] = t->strides[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc,
                                             cudnnDataType_t dataType, cudnnTensorFormat_t format,
                                             int nbDims, const int filterDimA[])
{
    if (filterDesc == NULL || filterDesc->magic != DNN_MAGIC || !type_ok(dataType) ||
        (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC &&
         format != CUDNN_TENSOR_NCHW_VECT_C) ||
        filterDimA == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilterNdDescriptor: bad arguments");
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnSetFilterNdDescriptor: %d dimensions",
                        nbDims);
    for (int i = 0; i < nbDims; i++)
        if (filterDimA[i] <= 0)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "cudnnSetFilterNdDescriptor: dimension %d "
                            "is %d",
                            i, filterDimA[i]);
    filterDesc->type = dataType;
    filterDesc->format = format;
    filterDesc->nb_dims = nbDims;
    memcpy(filterDesc->dims, filterDimA, (size_t)nbDims * sizeof *filterDimA);
    filterDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t filterDesc,
                                             int nbDimsRequested, cudnnDataType_t *dataType,
                                             cudnnTensorFormat_t *format, int *nbDims,
                                             int filterDimA[])
{
    const struct cudnnFilterStruct *f = dnn_filter(filterDesc);
    if (f == NULL || nbDimsRequested < 0 || dataType == NULL || format == NULL || nbDims == NULL ||
        (nbDimsRequested > 0 && filterDimA == NULL))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilterNdDescriptor: bad arguments");
    *dataType = f->type;
    *format = f->format;
    *nbDims = f->nb_dims;
    for (int i = 0; i < nbDimsRequested && i < f->nb_dims; i++)
        filterDimA[i] = f->dims[i];
    return CUDNN_STATUS_SUCCESS;
}

/* ---- convolutions ---------------------------------------------------------------------------- */

API cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                                  int arrayLength, const int padA[],
                                                  const int filterStrideA[], const int dilationA[],
                                                  cudnnConvolutionMode_t mode,
                                                  cudnnDataType_t computeType)
{
    if (convDesc == NULL || convDesc->magic != DNN_MAGIC || arrayLength < 0 ||
        (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) || !type_ok(computeType))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: bad arguments");
    if (arrayLength > CUDNN_DIM_MAX - 2)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED,
                        "cudnnSetConvolutionNdDescriptor: %d spatial "
                        "dimensions",
                        arrayLength);
    if (arrayLength > 0 && (padA == NULL || filterStrideA == NULL || dilationA == NULL))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionNdDescriptor: NULL arrays");
    for (int i = 0; i < arrayLength; i++)
        if (padA[i] < 0 || filterStrideA[i] <= 0 || dilationA[i] <= 0)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "cudnnSetConvolutionNdDescriptor: pad %d "
                            "stride %d dilation %d",
                            padA[i], filterStrideA[i], dilationA[i]);
    convDesc->spatial = arrayLength;
    for (int i = 0; i < arrayLength; i++) {
        convDesc->pads[i] = padA[i];
        convDesc->strides[i] = filterStrideA[i];
        convDesc->dilations[i] = dilationA[i];
    }
    convDesc->mode = mode;
    convDesc->compute = computeType;
    convDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                                                int groupCount)
{
    if (convDesc == NULL || convDesc->magic != DNN_MAGIC || groupCount < 1)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount: %d groups",
                        groupCount);
    convDesc->groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                              cudnnMathType_t mathType)
{
    if (convDesc == NULL || convDesc->magic != DNN_MAGIC ||
        (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
         mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType: math %d",
                        (int)mathType);
    convDesc->math = mathType;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- activation, pooling, dropout, spatial transformer, CTC ----------------------------------- */

API cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                               cudnnActivationMode_t mode,
                                               cudnnNanPropagation_t reluNanOpt, double coef)
{
    if (activationDesc == NULL || activationDesc->magic != DNN_MAGIC ||
        (unsigned)mode > CUDNN_ACTIVATION_SWISH ||
        (reluNanOpt != CUDNN_NOT_PROPAGATE_NAN && reluNanOpt != CUDNN_PROPAGATE_NAN))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetActivationDescriptor: mode %d", (int)mode);
    activationDesc->mode = mode;
    activationDesc->nan = reluNanOpt;
    activationDesc->coef = coef;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t poolingDesc,
                                              cudnnPoolingMode_t mode,
                                              cudnnNanPropagation_t maxpoolingNanOpt,
                                              int windowHeight, int windowWidth,
                                              int verticalPadding, int horizontalPadding,
                                              int verticalStride, int horizontalStride)
{
    if (poolingDesc == NULL || poolingDesc->magic != DNN_MAGIC ||
        (unsigned)mode > CUDNN_POOLING_MAX_DETERMINISTIC ||
        (maxpoolingNanOpt != CUDNN_NOT_PROPAGATE_NAN && maxpoolingNanOpt != CUDNN_PROPAGATE_NAN) ||
        windowHeight <= 0 || windowWidth <= 0 || verticalPadding < 0 || horizontalPadding < 0 ||
        verticalStride <= 0 || horizontalStride <= 0)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetPooling2dDescriptor: bad arguments");
    *poolingDesc = (struct cudnnPoolingStruct){DNN_MAGIC,
                                               true,
                                               mode,
                                               {windowHeight, windowWidth},
                                               {verticalPadding, horizontalPadding},
                                               {verticalStride, horizontalStride}};
    return CUDNN_STATUS_SUCCESS;
}

/* The RNG states of the dropout kernels: one curandState (48 bytes) for each of 2048 threads
 * on each of the 132 multiprocessors of the simulated device. */
#define DNN_DROPOUT_STATE_BYTES ((size_t)132 * 2048 * 48)

API cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t *sizeInBytes)
{
    if (dnn_handle(handle) == NULL || sizeInBytes == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnDropoutGetStatesSize: bad arguments");
    *sizeInBytes = DNN_DROPOUT_STATE_BYTES;
    return CUDNN_STATUS_SUCCESS;
}

VENDOR_KERNEL(k_dropout_init, "simcudnn::dropout_init_states");

static cudnnStatus_t dropout_set(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float dropout,
                                 void *states, size_t bytes, unsigned long long seed, bool init)
{
    const struct cudnnContext *h = dnn_handle(handle);
    if (d == NULL || d->magic != DNN_MAGIC || h == NULL || dropout < 0.0f || dropout > 1.0f ||
        (states != NULL && bytes < DNN_DROPOUT_STATE_BYTES))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "dropout descriptor: bad arguments (p %g, %zu "
                        "state bytes)",
                        (double)dropout, bytes);
    d->dropout = dropout;
    d->states = states;
    d->state_bytes = bytes;
    d->seed = seed;
    /* cudnnSetDropoutDescriptor seeds the states with a kernel on the handle's stream;
     * cudnnRestoreDropoutDescriptor reuses states already seeded. */
    if (init && states != NULL)
        return dnn_launch(h, &k_dropout_init, vendor_memory_ns((double)DNN_DROPOUT_STATE_BYTES));
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc,
                                            cudnnHandle_t handle, float dropout, void *states,
                                            size_t stateSizeInBytes, unsigned long long seed)
{
    return dropout_set(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed, true);
}

API cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc,
                                                cudnnHandle_t handle, float dropout, void *states,
                                                size_t stateSizeInBytes, unsigned long long seed)
{
    return dropout_set(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed, false);
}

/* Only the bilinear sampler on 4-D (N, C, H, W) tensors exists. */
API cudnnStatus_t cudnnSetSpatialTransformerNdDescriptor(cudnnSpatialTransformerDescriptor_t stDesc,
                                                         cudnnSamplerType_t samplerType,
                                                         cudnnDataType_t dataType, const int nbDims,
                                                         const int dimA[])
{
    if (stDesc == NULL || stDesc->magic != DNN_MAGIC || samplerType != CUDNN_SAMPLER_BILINEAR ||
        !type_ok(dataType) || dimA == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "cudnnSetSpatialTransformerNdDescriptor: bad arguments");
    if (nbDims != 4)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED,
                        "cudnnSetSpatialTransformerNdDescriptor: %d "
                        "dimensions (4 only)",
                        nbDims);
    for (int i = 0; i < nbDims; i++)
        if (dimA[i] <= 0)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "cudnnSetSpatialTransformerNdDescriptor: "
                            "dimension %d is %d",
                            i, dimA[i]);
    stDesc->type = dataType;
    stDesc->nb_dims = nbDims;
    memcpy(stDesc->dims, dimA, (size_t)nbDims * sizeof *dimA);
    stDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t ctc_set(cudnnCTCLossDescriptor_t d, cudnnDataType_t compType,
                             cudnnLossNormalizationMode_t normMode, cudnnCTCGradMode_t grad,
                             int max_label)
{
    if (d == NULL || d->magic != DNN_MAGIC || !type_ok(compType) ||
        (normMode != CUDNN_LOSS_NORMALIZATION_NONE &&
         normMode != CUDNN_LOSS_NORMALIZATION_SOFTMAX) ||
        max_label < 0)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "CTC loss descriptor: bad arguments");
    d->compute = compType;
    d->norm = normMode;
    d->grad = grad;
    d->max_label_length = max_label;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetCTCLossDescriptorEx(cudnnCTCLossDescriptor_t ctcLossDesc,
                                              cudnnDataType_t compType,
                                              cudnnLossNormalizationMode_t normMode,
                                              cudnnNanPropagation_t gradMode)
{
    return ctc_set(ctcLossDesc, compType, normMode,
                   gradMode == CUDNN_PROPAGATE_NAN ? CUDNN_CTC_SKIP_OOB_GRADIENTS
                                                   : CUDNN_CTC_ZERO_OOB_GRADIENTS,
                   255);
}

API cudnnStatus_t cudnnSetCTCLossDescriptor_v9(cudnnCTCLossDescriptor_t ctcLossDesc,
                                               cudnnDataType_t compType,
                                               cudnnLossNormalizationMode_t normMode,
                                               cudnnCTCGradMode_t ctcGradMode, int maxLabelLength)
{
    if (ctcGradMode != CUDNN_CTC_ZERO_OOB_GRADIENTS && ctcGradMode != CUDNN_CTC_SKIP_OOB_GRADIENTS)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetCTCLossDescriptor_v9: grad mode %d",
                        (int)ctcGradMode);
    return ctc_set(ctcLossDesc, compType, normMode, ctcGradMode, maxLabelLength);
}

/* ---- RNNs ------------------------------------------------------------------------------------ */

API cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t rnnDesc, cudnnRNNAlgo_t algo,
                                           cudnnRNNMode_t cellMode, cudnnRNNBiasMode_t biasMode,
                                           cudnnDirectionMode_t dirMode,
                                           cudnnRNNInputMode_t inputMode, cudnnDataType_t dataType,
                                           cudnnDataType_t mathPrec, cudnnMathType_t mathType,
                                           int32_t inputSize, int32_t hiddenSize, int32_t projSize,
                                           int32_t numLayers, cudnnDropoutDescriptor_t dropoutDesc,
                                           uint32_t auxFlags)
{
    (void)auxFlags;
    if (rnnDesc == NULL || rnnDesc->magic != DNN_MAGIC || (unsigned)algo >= CUDNN_RNN_ALGO_COUNT ||
        (unsigned)cellMode > CUDNN_GRU || (unsigned)biasMode > CUDNN_RNN_SINGLE_REC_BIAS ||
        (unsigned)dirMode > CUDNN_BIDIRECTIONAL || (unsigned)inputMode > CUDNN_SKIP_INPUT ||
        !type_ok(dataType) || !type_ok(mathPrec) || (unsigned)mathType > CUDNN_FMA_MATH ||
        inputSize <= 0 || hiddenSize <= 0 || numLayers <= 0 || projSize <= 0 ||
        projSize > hiddenSize || (projSize < hiddenSize && cellMode != CUDNN_LSTM) ||
        (dropoutDesc != NULL && dropoutDesc->magic != DNN_MAGIC))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetRNNDescriptor_v8: bad arguments");
    *rnnDesc = (struct cudnnRNNStruct){DNN_MAGIC, true,       algo,     cellMode, biasMode,
                                       dirMode,   inputMode,  dataType, mathPrec, mathType,
                                       inputSize, hiddenSize, projSize, numLayers};
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc,
                                            cudnnDataType_t dataType, cudnnRNNDataLayout_t layout,
                                            int maxSeqLength, int batchSize, int vectorSize,
                                            const int seqLengthArray[], void *paddingFill)
{
    (void)paddingFill;
    if (rnnDataDesc == NULL || rnnDataDesc->magic != DNN_MAGIC || !type_ok(dataType) ||
        (unsigned)layout > CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED || maxSeqLength <= 0 ||
        batchSize <= 0 || vectorSize <= 0 || seqLengthArray == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetRNNDataDescriptor: bad arguments");
    for (int i = 0; i < batchSize; i++)
        if (seqLengthArray[i] < 0 || seqLengthArray[i] > maxSeqLength)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "cudnnSetRNNDataDescriptor: sequence %d has "
                            "length %d of at most %d",
                            i, seqLengthArray[i], maxSeqLength);
    *rnnDataDesc = (struct cudnnRNNDataStruct){DNN_MAGIC,    true,      dataType,  layout,
                                               maxSeqLength, batchSize, vectorSize};
    return CUDNN_STATUS_SUCCESS;
}
