// examples/minitorch/minitorch.h: the flat C API of libminitorch.so, the native half of the
// demo's torch-shaped package (examples/site-packages/torch, which calls it through ctypes).
// Tensors are opaque handles (mt_tensor *) owned by the caller: every handle returned must be
// released with mt_free. Functions returning a handle return NULL on error and functions
// returning int return -1; mt_last_error() then says why (per thread). Every float tensor is
// stored as float32 on the simulated device; integer and bool tensors too (exact below 2^24).
#ifndef MINITORCH_H
#define MINITORCH_H

#include <stdint.h>

#ifdef __cplusplus
namespace at {
struct TensorImpl;
}
typedef at::TensorImpl mt_tensor;
extern "C" {
#else
typedef struct mt_tensor mt_tensor;
#endif

enum mt_binary_op { MT_ADD, MT_SUB, MT_MUL, MT_DIV };
enum mt_compare_op { MT_EQ, MT_NE, MT_LT, MT_LE, MT_GT, MT_GE };
enum mt_node_kind { MT_NODE_POINTWISE, MT_NODE_MM, MT_NODE_GATHER, MT_NODE_ACCUMULATE_GRAD, MT_NODE_INDEX_MASK };

/* One node of a backward graph, in the order the engine runs them. POINTWISE and MM launch
 * their backward kernel over `work` elements; GATHER is torch.gather's backward (a sync under
 * deterministic algorithms); ACCUMULATE_GRAD adds into grad (b) of the leaf a. */
struct mt_node {
    int32_t kind;
    int64_t work;
    mt_tensor *a, *b;
};

const char *mt_last_error(void);
int mt_set_kernel_ns(const char *kernel, uint64_t fixed_ns, double ns_per_element);
int mt_device_count(void);

void mt_free(mt_tensor *t);
int64_t mt_numel(const mt_tensor *t);

mt_tensor *mt_full(int64_t n, double value);
mt_tensor *mt_randn(int64_t n, uint64_t seed);
mt_tensor *mt_randint(int64_t n, int64_t low, int64_t high, uint64_t seed);
mt_tensor *mt_randperm(int64_t n, uint64_t seed);
mt_tensor *mt_clone(const mt_tensor *t);

/* out[r][c] = a[r*a_rs + c*a_cs] op b[r*b_rs + c*b_cs] over rows x cols (broadcast by 0 strides). */
mt_tensor *mt_binary(int op, const mt_tensor *a, const mt_tensor *b, int64_t rows, int64_t cols,
                     int64_t a_rs, int64_t a_cs, int64_t b_rs, int64_t b_cs);
/* t op s, or s op t when reverse. */
mt_tensor *mt_scalar_op(int op, const mt_tensor *t, double s, int reverse);
mt_tensor *mt_compare(int op, const mt_tensor *t, double s);
/* Operands of numel 1 broadcast to n. */
mt_tensor *mt_where(const mt_tensor *cond, const mt_tensor *a, const mt_tensor *b, int64_t n);
mt_tensor *mt_relu(const mt_tensor *t);
/* x (n, in) @ w(out, in)^T + bias (out) */
mt_tensor *mt_linear(const mt_tensor *x, const mt_tensor *w, const mt_tensor *bias, int64_t n,
                     int64_t in, int64_t out);

/* Data-dependent sizes: each ends in a device-to-host copy and a stream synchronize. */
mt_tensor *mt_nonzero(const mt_tensor *t);
mt_tensor *mt_unique(const mt_tensor *t);
/* self[mask]: rows of `row` elements where mask is true (calls nonzero internally). */
mt_tensor *mt_index_mask(const mt_tensor *self, const mt_tensor *mask, int64_t row);
/* self[index]: rows of `row` elements picked by an integer index tensor (no sync). */
mt_tensor *mt_index(const mt_tensor *self, const mt_tensor *index, int64_t row);
int mt_index_put(mt_tensor *self, const mt_tensor *index, double value);
int mt_masked_fill(mt_tensor *self, const mt_tensor *mask, double value);
/* 1-D torch.gather(self, 0, index). */
mt_tensor *mt_gather(const mt_tensor *self, const mt_tensor *index);
mt_tensor *mt_slice(const mt_tensor *self, int64_t start, int64_t stop, int64_t row);
mt_tensor *mt_sum(const mt_tensor *t);
mt_tensor *mt_mean(const mt_tensor *t);
mt_tensor *mt_count_nonzero(const mt_tensor *t);
int mt_sort(const mt_tensor *t, mt_tensor **values, mt_tensor **indices);
/* Mean cross-entropy of pred (n, classes) against target (n), ignoring ignore_index. */
mt_tensor *mt_cross_entropy(const mt_tensor *pred, const mt_tensor *target, int64_t classes,
                            int64_t ignore_index);

/* .item(): a scalar to the host (pinned copy + stream synchronize). */
int mt_item(const mt_tensor *t, double *out);
/* The same, for callers holding the GIL (ctypes.PyDLL): *gil_held says whether they did. */
int mt_item_holding_gil(const mt_tensor *t, double *out, int *gil_held);
/* 1 if the calling thread holds the GIL, 0 if not, -1 outside Python. */
int mt_gil_held(void);
/* .cpu(): into pageable host memory dst (numel floats): a sync. */
int mt_copy_to_host(const mt_tensor *t, void *dst);
/* A host buffer to the device (pageable source: a sync, as in torch.tensor(..., device="cuda")). */
mt_tensor *mt_copy_from_host(const void *src, int64_t n);

int mt_sgd_step(mt_tensor *param, const mt_tensor *grad, mt_tensor *momentum_buffer, double lr,
                double momentum);
/* Runs the nodes on the autograd engine's device thread and waits for them. */
int mt_backward(const struct mt_node *nodes, int32_t n, int deterministic);
int mt_device_synchronize(void);

#ifdef __cplusplus
}
#endif
#endif
