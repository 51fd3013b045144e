/* sim/vendor/dnn.h: what the files of the simulated libcudnn.so.9 share (hidden): the handle,
 * the legacy descriptors' structs, the thread's last error message, the data type sizes and
 * the one kernel-queuing path with its formula inputs (sim/README.md, "cuDNN"). The export
 * files are cudnn.c (handle, versions, descriptors), cudnn_ops.c (the legacy compute
 * functions) and cudnn_backend.c (the backend graph API). */
#ifndef SIM_VENDOR_DNN_H
#define SIM_VENDOR_DNN_H

#include <cudnn.h>

#include "sim/vendor/vendor.h"

#pragma GCC visibility push(hidden)

/* The version the simulated library reports: the one torch 2.15 was built against (torch
 * refuses a runtime whose minor version is older than its build's), not the toolkit headers'
 * (9.19), whose prototypes it otherwise follows. */
#define DNN_VERSION_MAJOR 9
#define DNN_VERSION_MINOR 26
#define DNN_VERSION_PATCH 0
#define DNN_VERSION (DNN_VERSION_MAJOR * 10000 + DNN_VERSION_MINOR * 100 + DNN_VERSION_PATCH)

#define DNN_MAGIC 0x4e4e4453u /* "SDNN" */

struct cudnnContext {
    uint32_t magic;
    cudaStream_t stream; /* cudnnSetStream; NULL (the legacy default stream) until then */
};

struct cudnnTensorStruct {
    uint32_t magic;
    bool set;
    cudnnDataType_t type;
    int nb_dims;
    int dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
};

struct cudnnFilterStruct {
    uint32_t magic;
    bool set;
    cudnnDataType_t type;
    cudnnTensorFormat_t format;
    int nb_dims;
    int dims[CUDNN_DIM_MAX];
};

struct cudnnConvolutionStruct {
    uint32_t magic;
    bool set;
    int spatial; /* arrayLength */
    int pads[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX], dilations[CUDNN_DIM_MAX];
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    int groups;
    cudnnMathType_t math;
};

struct cudnnActivationStruct {
    uint32_t magic;
    cudnnActivationMode_t mode;
    cudnnNanPropagation_t nan;
    double coef;
};

struct cudnnPoolingStruct {
    uint32_t magic;
    bool set;
    cudnnPoolingMode_t mode;
    int window[2], pads[2], strides[2];
};

struct cudnnDropoutStruct {
    uint32_t magic;
    float dropout;
    void *states;
    size_t state_bytes;
    unsigned long long seed;
};

struct cudnnSpatialTransformerStruct {
    uint32_t magic;
    bool set;
    cudnnDataType_t type;
    int nb_dims;
    int dims[CUDNN_DIM_MAX];
};

struct cudnnCTCLossStruct {
    uint32_t magic;
    cudnnDataType_t compute;
    cudnnLossNormalizationMode_t norm;
    cudnnCTCGradMode_t grad;
    int max_label_length;
};

struct cudnnRNNStruct {
    uint32_t magic;
    bool set;
    cudnnRNNAlgo_t algo;
    cudnnRNNMode_t cell;
    cudnnRNNBiasMode_t bias;
    cudnnDirectionMode_t dir;
    cudnnRNNInputMode_t input_mode;
    cudnnDataType_t type, math_prec;
    cudnnMathType_t math;
    int32_t input_size, hidden_size, proj_size, layers;
};

struct cudnnRNNDataStruct {
    uint32_t magic;
    bool set;
    cudnnDataType_t type;
    cudnnRNNDataLayout_t layout;
    int max_seq, batch, vector;
};

/* A live handle / descriptor of that kind (cudnnCreate*), else NULL. */
struct cudnnContext *dnn_handle(cudnnHandle_t h);
const struct cudnnTensorStruct *dnn_tensor(cudnnTensorDescriptor_t d);
const struct cudnnFilterStruct *dnn_filter(cudnnFilterDescriptor_t d);
const struct cudnnConvolutionStruct *dnn_conv(cudnnConvolutionDescriptor_t d);
const struct cudnnRNNStruct *dnn_rnn(cudnnRNNDescriptor_t d);
const struct cudnnRNNDataStruct *dnn_rnn_data(cudnnRNNDataDescriptor_t d);

/* An RNN's shape: gates per cell (linear layers per input or recurrent GEMM), directions,
 * the hidden state's width after the optional projection. */
int dnn_rnn_gates(const struct cudnnRNNStruct *r);
int dnn_rnn_dirs(const struct cudnnRNNStruct *r);
int dnn_rnn_out(const struct cudnnRNNStruct *r);

/* Bytes of one element (0 for an unknown type), and the throughput class of a product on that
 * type: tensor cores (TF32 for FP32, FP16 rate for FP16/BF16, 8-bit for 8-bit types) when
 * tensor_ops, else the FMA units (FP64 for FP64, FP32 otherwise). */
size_t dnn_type_bytes(cudnnDataType_t type);
enum vendor_rate dnn_rate(cudnnDataType_t type, bool tensor_ops);

/* Elements a tensor descriptor covers (the product of its dimensions) and its bytes. */
double dnn_tensor_bytes(const struct cudnnTensorStruct *t);

/* Records why a call fails (cudnnGetLastErrorString, and a SIMCUDA_DEBUG=1 line), returns st. */
cudnnStatus_t dnn_fail(cudnnStatus_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Queues kernel k on the handle's stream for the launch cost plus work_ns (or on stream when
 * the caller gives one); CUDNN_STATUS_EXECUTION_FAILED when the stream is dead. */
cudnnStatus_t dnn_launch(const struct cudnnContext *h, struct vendor_kernel *k, uint64_t work_ns);

/* A convolution's flops: 2 multiply-adds' worth per output element and filter tap, i.e. the
 * implied GEMM 2 * N * K * prod(out) * (C / groups) * prod(filter), the same for the forward
 * pass and both backward passes. */
double dnn_conv_flops(double n, double k, double out_elems, double c_per_group, double taps);

#pragma GCC visibility pop
#endif
