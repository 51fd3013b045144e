/* sim/vendor/cudnn_backend.c: the backend (graph) API of the simulated libcudnn.so.9
 * (cudnn_graph.h), which torch 2.15 uses for convolutions through its cudnn frontend:
 * descriptors keep the attributes set on them; finalizing one checks what cuDNN requires of its
 * type (CUDNN_STATUS_BAD_PARAM when something is missing or shapes do not fit) and records, by
 * value, what its execution will cost (flops of its convolutions, matmuls and attention, bytes of
 * its other operations' real tensors, the tensor uids it needs), so a plan outlives the graph it
 * came from, as real plans do. Two engines: 0 on the tensor cores (numerical note TENSOR_CORE;
 * not for FP64 graphs), 1 on the FMA units; the heuristics offer both, the fallback list 1.
 * cudnnBackendExecute queues one kernel on the handle's stream. Never calls an export. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/vendor/dnn.h"

#define API VENDOR_API

#define BK_ENGINES 2   /* engine 0: tensor cores; engine 1: FMA */
#define BK_MAX_UIDS 64 /* real tensors a plan checks the variant pack for */
#define BK_MAX_DIMS 8
#define BK_MAX_TYPES 64 /* descriptor and attribute types taken: the 9.19 headers' and newer */

/* What an operation, graph, engine, configuration or plan will cost and need. */
enum bk_kind {
    BK_GENERIC,
    BK_CONV_FPROP,
    BK_CONV_DGRAD,
    BK_CONV_WGRAD,
    BK_MATMUL,
    BK_POINTWISE,
    BK_REDUCTION,
    BK_NORM,
    BK_SDPA_FPROP,
    BK_SDPA_BPROP,
    BK_KINDS
};

struct bk_work {
    double flops, bytes;
    cudnnDataType_t type; /* input type of the first product (the rate's type) */
    bool has_product;
    enum bk_kind kind; /* of the first product, else of the first operation */
    int64_t engine;    /* engines, configurations, plans: which engine; else -1 */
    int nuids;
    bool uids_overflow; /* more real tensors than BK_MAX_UIDS: not all are checked */
    int64_t uids[BK_MAX_UIDS];
};

struct bk_attr {
    cudnnBackendAttributeName_t name;
    cudnnBackendAttributeType_t type;
    int64_t count;
    void *data;
};

struct bk_tensor {
    int64_t uid;
    cudnnDataType_t type;
    int nd;
    int64_t dims[BK_MAX_DIMS], strides[BK_MAX_DIMS];
    bool is_virtual;
};

struct bk_desc {
    uint32_t magic;
    cudnnBackendDescriptorType_t type;
    bool finalized;
    int nattrs, cap;
    struct bk_attr *attrs;
    struct bk_work work;
    struct bk_tensor tensor; /* tensors */
    int nresults;            /* heuristics: the engines found, best first */
    int64_t results[BK_ENGINES];
};

VENDOR_KERNEL(k_generic, "simcudnn::graph");
VENDOR_KERNEL(k_conv_fprop, "simcudnn::graph_conv_fprop");
VENDOR_KERNEL(k_conv_dgrad, "simcudnn::graph_conv_dgrad");
VENDOR_KERNEL(k_conv_wgrad, "simcudnn::graph_conv_wgrad");
VENDOR_KERNEL(k_matmul, "simcudnn::graph_matmul");
VENDOR_KERNEL(k_pointwise, "simcudnn::graph_pointwise");
VENDOR_KERNEL(k_reduction, "simcudnn::graph_reduction");
VENDOR_KERNEL(k_norm, "simcudnn::graph_norm");
VENDOR_KERNEL(k_sdpa_fprop, "simcudnn::graph_sdpa_fprop");
VENDOR_KERNEL(k_sdpa_bprop, "simcudnn::graph_sdpa_bprop");
static struct vendor_kernel *const kernels[BK_KINDS] = {
    &k_generic,   &k_conv_fprop, &k_conv_dgrad, &k_conv_wgrad, &k_matmul,
    &k_pointwise, &k_reduction,  &k_norm,       &k_sdpa_fprop, &k_sdpa_bprop,
};

static struct bk_desc *live(cudnnBackendDescriptor_t d)
{
    struct bk_desc *b = d;
    return b != NULL && b->magic == DNN_MAGIC ? b : NULL;
}

/* ---- attributes ------------------------------------------------------------------------------ */

/* Bytes of one element of each attribute type (0: not a type cuDNN has). */
static size_t elem_bytes(cudnnBackendAttributeType_t type)
{
    switch (type) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void *);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_CHAR: return 1;
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE: return 8;
    case CUDNN_TYPE_FLOAT:
    case CUDNN_TYPE_INT32: return 4;
    case CUDNN_TYPE_FRACTION: return sizeof(cudnnFraction_t);
    case CUDNN_TYPE_DATA_TYPE:
    case CUDNN_TYPE_CONVOLUTION_MODE:
    case CUDNN_TYPE_HEUR_MODE:
    case CUDNN_TYPE_KNOB_TYPE:
    case CUDNN_TYPE_NAN_PROPOGATION:
    case CUDNN_TYPE_NUMERICAL_NOTE:
    case CUDNN_TYPE_LAYOUT_TYPE:
    case CUDNN_TYPE_ATTRIB_NAME:
    case CUDNN_TYPE_POINTWISE_MODE:
    case CUDNN_TYPE_GENSTATS_MODE:
    case CUDNN_TYPE_BN_FINALIZE_STATS_MODE:
    case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE:
    case CUDNN_TYPE_BEHAVIOR_NOTE:
    case CUDNN_TYPE_TENSOR_REORDERING_MODE:
    case CUDNN_TYPE_RESAMPLE_MODE:
    case CUDNN_TYPE_PADDING_MODE:
    case CUDNN_TYPE_SIGNAL_MODE:
    case CUDNN_TYPE_NORM_MODE:
    case CUDNN_TYPE_NORM_FWD_PHASE:
    case CUDNN_TYPE_RNG_DISTRIBUTION:
    case CUDNN_TYPE_MOE_GROUPED_MATMUL_MODE: return sizeof(int); /* C enums */
    }
    /* Types past the 9.19 headers' last are newer releases' modes (torch 2.15's frontend sets
     * CUDNN_TYPE_RESHAPE_MODE, type 31): C enums too. */
    return (unsigned)type < BK_MAX_TYPES ? sizeof(int) : 0;
}

static struct bk_attr *find(const struct bk_desc *d, cudnnBackendAttributeName_t name)
{
    for (int i = 0; i < d->nattrs; i++)
        if (d->attrs[i].name == name)
            return &d->attrs[i];
    return NULL;
}

static struct bk_desc *clone(const struct bk_desc *src);
static void destroy(struct bk_desc *d);

/* The stored elements of an attribute: a copy; for descriptors, copies of the descriptors (as
 * cuDNN copies them when they are set: the caller may destroy its own right after). */
static void *copy_elements(cudnnBackendAttributeType_t type, int64_t count, const void *data)
{
    size_t bytes = (size_t)count * elem_bytes(type);
    void *copy = malloc(bytes != 0 ? bytes : 1);
    if (copy == NULL || bytes == 0)
        return copy;
    if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        memcpy(copy, data, bytes);
        return copy;
    }
    void **out = copy;
    for (int64_t i = 0; i < count; i++) {
        out[i] = clone(live(((void *const *)data)[i]));
        if (out[i] == NULL) {
            while (i-- > 0)
                destroy(out[i]);
            free(copy);
            return NULL;
        }
    }
    return copy;
}

static void free_elements(struct bk_attr *a)
{
    if (a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
        for (int64_t i = 0; i < a->count; i++)
            destroy(((void **)a->data)[i]);
    free(a->data);
}

static cudnnStatus_t store(struct bk_desc *d, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t count, const void *data)
{
    void *copy = copy_elements(type, count, data);
    if (copy == NULL)
        return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    struct bk_attr *a = find(d, name);
    if (a == NULL) {
        if (d->nattrs == d->cap) {
            int cap = d->cap ? 2 * d->cap : 8;
            struct bk_attr *n = realloc(d->attrs, (size_t)cap * sizeof *n);
            if (n == NULL) {
                struct bk_attr tmp = {name, type, count, copy};
                free_elements(&tmp);
                return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
            }
            d->attrs = n;
            d->cap = cap;
        }
        a = &d->attrs[d->nattrs++];
    } else {
        free_elements(a);
    }
    *a = (struct bk_attr){name, type, count, copy};
    return CUDNN_STATUS_SUCCESS;
}

static void clear_attrs(struct bk_desc *d)
{
    for (int i = 0; i < d->nattrs; i++)
        free_elements(&d->attrs[i]);
    d->nattrs = 0;
}

static void destroy(struct bk_desc *d)
{
    if (d == NULL)
        return;
    clear_attrs(d);
    free(d->attrs);
    d->magic = 0;
    free(d);
}

/* A deep copy of src (NULL without memory or without src). */
static struct bk_desc *clone(const struct bk_desc *src)
{
    if (src == NULL)
        return NULL;
    struct bk_desc *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    *d = *src;
    d->nattrs = d->cap = 0;
    d->attrs = NULL;
    for (int i = 0; i < src->nattrs; i++) {
        const struct bk_attr *a = &src->attrs[i];
        if (store(d, a->name, a->type, a->count, a->data) != CUDNN_STATUS_SUCCESS) {
            destroy(d);
            return NULL;
        }
    }
    return d;
}

/* The attribute's elements if it was set with that type and at least min elements, else NULL. */
static const void *get(const struct bk_desc *d, cudnnBackendAttributeName_t name,
                       cudnnBackendAttributeType_t type, int64_t min, int64_t *count)
{
    const struct bk_attr *a = find(d, name);
    if (a == NULL || a->type != type || a->count < min)
        return NULL;
    if (count != NULL)
        *count = a->count;
    return a->data;
}

static bool get_i64(const struct bk_desc *d, cudnnBackendAttributeName_t name, int64_t *out)
{
    const int64_t *v = get(d, name, CUDNN_TYPE_INT64, 1, NULL);
    if (v != NULL)
        *out = *v;
    return v != NULL;
}

/* The finalized descriptor of that type an attribute names (element i), else NULL. */
static const struct bk_desc *ref(const struct bk_desc *d, cudnnBackendAttributeName_t name,
                                 int64_t i, cudnnBackendDescriptorType_t type)
{
    int64_t n = 0;
    void *const *v = get(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, i + 1, &n);
    const struct bk_desc *r = v != NULL ? live(v[i]) : NULL;
    return r != NULL && r->finalized && r->type == type ? r : NULL;
}

/* ---- work summaries -------------------------------------------------------------------------- */

static void work_init(struct bk_work *w)
{
    memset(w, 0, sizeof *w);
    w->type = CUDNN_DATA_FLOAT;
    w->engine = -1;
}

static void add_uid(struct bk_work *w, int64_t uid)
{
    for (int i = 0; i < w->nuids; i++)
        if (w->uids[i] == uid)
            return;
    if (w->nuids == BK_MAX_UIDS)
        w->uids_overflow = true;
    else
        w->uids[w->nuids++] = uid;
}

static double elems(const struct bk_tensor *t)
{
    double n = 1.0;
    for (int i = 0; i < t->nd; i++)
        n *= (double)t->dims[i];
    return n;
}

/* A real (non-virtual) tensor the operation reads or writes: its uid, and its bytes when the
 * operation is memory bound. */
static void add_tensor(struct bk_work *w, const struct bk_desc *t, bool count_bytes)
{
    if (t == NULL || t->tensor.is_virtual)
        return;
    add_uid(w, t->tensor.uid);
    if (count_bytes) {
        size_t e = dnn_type_bytes(t->tensor.type);
        w->bytes += elems(&t->tensor) * (double)(e != 0 ? e : 1);
    }
}

static void add_product(struct bk_work *w, double flops, cudnnDataType_t type, enum bk_kind kind)
{
    w->flops += flops;
    if (!w->has_product) {
        w->has_product = true;
        w->type = type;
        w->kind = kind;
    }
}

static void merge(struct bk_work *into, const struct bk_work *w, bool first)
{
    if (w->has_product)
        add_product(into, w->flops, w->type, w->kind);
    else if (first)
        into->kind = w->kind;
    into->bytes += w->bytes;
    for (int i = 0; i < w->nuids; i++)
        add_uid(into, w->uids[i]);
    into->uids_overflow = into->uids_overflow || w->uids_overflow;
}

/* ---- finalize: tensors, convolution descriptors, operations ----------------------------------- */

static cudnnStatus_t fail(const struct bk_desc *d, const char *why)
{
    return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize(descriptor type %d): %s",
                    (int)d->type, why);
}

static cudnnStatus_t finalize_tensor(struct bk_desc *d)
{
    const cudnnDataType_t *type =
        get(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, NULL);
    int64_t nd = 0, ns = 0, uid, align;
    const int64_t *dims = get(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 1, &nd);
    const int64_t *strides = get(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 1, &ns);
    if (type == NULL || dims == NULL || strides == NULL ||
        !get_i64(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, &uid) ||
        !get_i64(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &align))
        return fail(d,
                    "a tensor needs its data type, dimensions, strides, unique id and alignment");
    if (nd != ns || nd > BK_MAX_DIMS || align <= 0)
        return fail(d, "dimensions and strides differ in count, or a bad alignment");
    struct bk_tensor t = {.uid = uid, .type = *type, .nd = (int)nd};
    for (int i = 0; i < nd; i++) {
        if (dims[i] <= 0 || strides[i] < 0)
            return fail(d, "a dimension or stride is out of range");
        t.dims[i] = dims[i];
        t.strides[i] = strides[i];
    }
    const bool *v = get(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, NULL);
    t.is_virtual = v != NULL && *v;
    d->tensor = t;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_convolution(struct bk_desc *d)
{
    int64_t spatial, n;
    static const cudnnBackendAttributeName_t arrays[] = {
        CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
        CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS};
    if (!get_i64(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &spatial) || spatial < 1 ||
        spatial > BK_MAX_DIMS - 2 ||
        get(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, NULL) == NULL ||
        get(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, NULL) == NULL)
        return fail(d, "a convolution needs its spatial dimensions, compute type and mode");
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        if (get(d, arrays[i], CUDNN_TYPE_INT64, spatial, &n) == NULL || n != spatial)
            return fail(d, "dilations, strides and paddings need one value per spatial dimension");
    return CUDNN_STATUS_SUCCESS;
}

/* x (N, C, in...), w (K, C / g, f...), y (N, K, out...) against the convolution descriptor. */
static cudnnStatus_t conv_work(struct bk_desc *d, cudnnBackendAttributeName_t xa,
                               cudnnBackendAttributeName_t wa, cudnnBackendAttributeName_t ya,
                               cudnnBackendAttributeName_t ca, enum bk_kind kind)
{
    const struct bk_desc *xd = ref(d, xa, 0, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         *wd = ref(d, wa, 0, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         *yd = ref(d, ya, 0, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         *cd = ref(d, ca, 0, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    if (xd == NULL || wd == NULL || yd == NULL || cd == NULL)
        return fail(d,
                    "a convolution needs finalized x, w, y tensors and a convolution descriptor");
    const struct bk_tensor *x = &xd->tensor, *w = &wd->tensor, *y = &yd->tensor;
    int64_t spatial = 0;
    get_i64(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &spatial);
    const int64_t *dil = get(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, NULL);
    const int64_t *str =
        get(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, NULL);
    const int64_t *pre =
        get(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, NULL);
    const int64_t *post =
        get(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, NULL);
    if (x->nd != spatial + 2 || w->nd != x->nd || y->nd != x->nd || w->dims[1] <= 0 ||
        x->dims[1] % w->dims[1] != 0 || y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0] ||
        w->dims[0] % (x->dims[1] / w->dims[1]) != 0)
        return fail(d, "the convolution's x, w and y shapes do not fit together");
    double out = 1.0, taps = 1.0;
    for (int64_t i = 0; i < spatial; i++) {
        int64_t span = (w->dims[i + 2] - 1) * dil[i] + 1;
        int64_t o = (x->dims[i + 2] + pre[i] + post[i] - span) / str[i] + 1;
        if (str[i] <= 0 || dil[i] <= 0 || y->dims[i + 2] != o)
            return fail(d, "the convolution's output size does not match x, w and the descriptor");
        out *= (double)o;
        taps *= (double)w->dims[i + 2];
    }
    work_init(&d->work);
    add_product(
        &d->work,
        dnn_conv_flops((double)x->dims[0], (double)w->dims[0], out, (double)w->dims[1], taps),
        x->type, kind);
    add_tensor(&d->work, xd, false);
    add_tensor(&d->work, wd, false);
    add_tensor(&d->work, yd, false);
    return CUDNN_STATUS_SUCCESS;
}

/* C (..., M, N) = A (..., M, K) B (..., K, N). */
static cudnnStatus_t matmul_work(struct bk_desc *d)
{
    const struct bk_desc *ad = ref(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, 0,
                                   CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         *bd = ref(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, 0,
                                   CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         *cd = ref(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, 0,
                                   CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (ad == NULL || bd == NULL || cd == NULL ||
        ref(d, CUDNN_ATTR_OPERATION_MATMUL_DESC, 0, CUDNN_BACKEND_MATMUL_DESCRIPTOR) == NULL)
        return fail(d, "a matmul needs finalized A, B, C tensors and a matmul descriptor");
    const struct bk_tensor *a = &ad->tensor, *b = &bd->tensor, *c = &cd->tensor;
    if (a->nd < 2 || b->nd != a->nd || c->nd != a->nd || a->dims[a->nd - 1] != b->dims[b->nd - 2])
        return fail(d, "the matmul's A, B and C shapes do not fit together");
    double batch_mn = elems(c), k = (double)a->dims[a->nd - 1];
    work_init(&d->work);
    add_product(&d->work, 2.0 * batch_mn * k, a->type, BK_MATMUL);
    add_tensor(&d->work, ad, false);
    add_tensor(&d->work, bd, false);
    add_tensor(&d->work, cd, false);
    return CUDNN_STATUS_SUCCESS;
}

/* Attention: Q (B, H, Sq, D), K (B, H, Skv, D): Q K^T and P V, 4 B H Sq Skv D flops forward,
 * 2.5 times that backward. */
static cudnnStatus_t sdpa_work(struct bk_desc *d, cudnnBackendAttributeName_t qa,
                               cudnnBackendAttributeName_t ka, enum bk_kind kind, double factor)
{
    const struct bk_desc *qd = ref(d, qa, 0, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         *kd = ref(d, ka, 0, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (qd == NULL || kd == NULL || qd->tensor.nd != 4 || kd->tensor.nd != 4)
        return fail(d, "attention needs finalized 4-D Q and K tensors");
    const struct bk_tensor *q = &qd->tensor;
    double flops = 4.0 * elems(q) * (double)kd->tensor.dims[2] * factor;
    struct bk_work tensors;
    work_init(&tensors);
    for (int i = 0; i < d->nattrs; i++)
        if (d->attrs[i].type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
            for (int64_t j = 0; j < d->attrs[i].count; j++)
                add_tensor(&tensors, ref(d, d->attrs[i].name, j, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                           false);
    d->work = tensors;
    add_product(&d->work, flops, q->type, kind);
    return CUDNN_STATUS_SUCCESS;
}

/* Any other operation: memory bound, the bytes of every real tensor it names. */
static void memory_work(struct bk_desc *d, enum bk_kind kind)
{
    work_init(&d->work);
    d->work.kind = kind;
    for (int i = 0; i < d->nattrs; i++)
        if (d->attrs[i].type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
            for (int64_t j = 0; j < d->attrs[i].count; j++)
                add_tensor(&d->work, ref(d, d->attrs[i].name, j, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                           true);
}

/* Every descriptor an operation names must be finalized (and live). */
static cudnnStatus_t refs_finalized(struct bk_desc *d)
{
    for (int i = 0; i < d->nattrs; i++) {
        if (d->attrs[i].type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
            continue;
        void *const *v = d->attrs[i].data;
        for (int64_t j = 0; j < d->attrs[i].count; j++) {
            const struct bk_desc *r = live(v[j]);
            if (r == NULL || !r->finalized)
                return fail(d, "an attribute names a descriptor that was not finalized when set");
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

static bool is_operation(cudnnBackendDescriptorType_t t)
{
    return (t >= CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR &&
            t <= CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR) ||
           t == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR ||
           (t >= CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR &&
            t <= CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR) ||
           t == CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR ||
           (t >= CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR &&
            t <= CUDNN_BACKEND_OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR) ||
           t >= CUDNN_BACKEND_OPERATION_EXPAND_BAND_MATRIX_DESCRIPTOR;
}

static cudnnStatus_t finalize_operation(struct bk_desc *d)
{
    cudnnStatus_t st = refs_finalized(d);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    switch (d->type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
        return conv_work(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, BK_CONV_FPROP);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
        return conv_work(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, BK_CONV_DGRAD);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
        return conv_work(d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, BK_CONV_WGRAD);
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return matmul_work(d);
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
        return sdpa_work(d, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC,
                         CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, BK_SDPA_FPROP, 1.0);
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
        return sdpa_work(d, CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC,
                         CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, BK_SDPA_BPROP, 2.5);
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        if (ref(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, 0,
                CUDNN_BACKEND_POINTWISE_DESCRIPTOR) == NULL ||
            ref(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, 0, CUDNN_BACKEND_TENSOR_DESCRIPTOR) ==
                NULL)
            return fail(d, "a pointwise operation needs its pointwise descriptor and x");
        memory_work(d, BK_POINTWISE);
        return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
        memory_work(d, BK_REDUCTION);
        return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR:
        memory_work(d, BK_NORM);
        return CUDNN_STATUS_SUCCESS;
    default: memory_work(d, BK_GENERIC); return CUDNN_STATUS_SUCCESS;
    }
}

/* ---- finalize: graphs, heuristics, engines, configurations, plans ----------------------------- */

static cudnnStatus_t finalize_graph(struct bk_desc *d)
{
    int64_t n = 0;
    if (get(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n) == NULL)
        return fail(d, "an operation graph needs its operations");
    work_init(&d->work);
    for (int64_t i = 0; i < n; i++) {
        void *const *v =
            get(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, NULL);
        const struct bk_desc *op = live(v[i]);
        if (op == NULL || !op->finalized || !is_operation(op->type))
            return fail(d, "an operation of the graph is not a finalized operation");
        merge(&d->work, &op->work, i == 0);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* Engine 0 runs on the tensor cores, which have no FP64 path. */
static bool engine_supports(int64_t engine, const struct bk_work *w)
{
    return engine == 1 || (engine == 0 && w->type != CUDNN_DATA_DOUBLE);
}

static cudnnStatus_t finalize_heuristics(struct bk_desc *d)
{
    const struct bk_desc *g =
        ref(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 0, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    const cudnnBackendHeurMode_t *mode =
        get(d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, NULL);
    if (g == NULL || mode == NULL || (unsigned)*mode >= CUDNN_HEUR_MODES_COUNT)
        return fail(d, "heuristics need a finalized operation graph and a heuristic mode");
    d->work = g->work;
    d->nresults = 0;
    for (int64_t e = *mode == CUDNN_HEUR_MODE_FALLBACK ? 1 : 0; e < BK_ENGINES; e++)
        if (engine_supports(e, &g->work))
            d->results[d->nresults++] = e;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_engine(struct bk_desc *d)
{
    const struct bk_desc *g =
        ref(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    int64_t index;
    if (g == NULL || !get_i64(d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &index))
        return fail(d, "an engine needs a finalized operation graph and its global index");
    if (index < 0 || index >= BK_ENGINES)
        return fail(d, "no engine has that global index");
    if (!engine_supports(index, &g->work))
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED,
                        "cudnnBackendFinalize: engine %lld does not "
                        "support the graph (FP64 runs on engine 1)",
                        (long long)index);
    d->work = g->work;
    d->work.engine = index;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_engine_config(struct bk_desc *d)
{
    const struct bk_desc *e =
        ref(d, CUDNN_ATTR_ENGINECFG_ENGINE, 0, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    if (e == NULL)
        return fail(d, "an engine configuration needs a finalized engine");
    cudnnStatus_t st = refs_finalized(d); /* its knob choices */
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    d->work = e->work;
    return CUDNN_STATUS_SUCCESS;
}

/* A plan serialized (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION): its cost and uids. */
static int plan_json(const struct bk_work *w, char *buf, size_t size)
{
    int n = snprintf(buf, size,
                     "{\"simcudnn\":1,\"engine\":%lld,\"kind\":%d,\"type\":%d,"
                     "\"product\":%d,\"flops\":%.17g,\"bytes\":%.17g,\"uids\":[",
                     (long long)w->engine, (int)w->kind, (int)w->type, (int)w->has_product,
                     w->flops, w->bytes);
    for (int i = 0; i < w->nuids && n >= 0; i++)
        n += snprintf(buf != NULL ? buf + n : NULL,
                      buf != NULL && (size_t)n < size ? size - (size_t)n : 0, "%s%lld",
                      i ? "," : "", (long long)w->uids[i]);
    if (n >= 0)
        n += snprintf(buf != NULL ? buf + n : NULL,
                      buf != NULL && (size_t)n < size ? size - (size_t)n : 0, "]}");
    return n;
}

static bool parse_plan_json(const char *s, size_t len, struct bk_work *w)
{
    char text[4096];
    if (len == 0 || len >= sizeof text)
        return false;
    memcpy(text, s, len);
    text[len] = '\0';
    long long engine;
    int kind, type, product, used = 0;
    work_init(w);
    if (sscanf(text,
               "{\"simcudnn\":1,\"engine\":%lld,\"kind\":%d,\"type\":%d,\"product\":%d,"
               "\"flops\":%lg,\"bytes\":%lg,\"uids\":[%n",
               &engine, &kind, &type, &product, &w->flops, &w->bytes, &used) != 6 ||
        used == 0 || engine < 0 || engine >= BK_ENGINES || kind < 0 || kind >= BK_KINDS)
        return false;
    w->engine = engine;
    w->kind = (enum bk_kind)kind;
    w->type = (cudnnDataType_t)type;
    w->has_product = product != 0;
    for (const char *p = text + used; *p != ']' && *p != '\0';) {
        char *end;
        long long uid = strtoll(p, &end, 10);
        if (end == p)
            return false;
        add_uid(w, uid);
        p = *end == ',' ? end + 1 : end;
    }
    return true;
}

static cudnnStatus_t finalize_plan(struct bk_desc *d)
{
    int64_t len = 0;
    const char *json =
        get(d, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 1, &len);
    const struct bk_desc *c =
        ref(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (c != NULL) {
        d->work = c->work;
        return CUDNN_STATUS_SUCCESS;
    }
    if (json != NULL) {
        if (!parse_plan_json(json, (size_t)len, &d->work))
            return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: the plan's JSON is not "
                                                    "one this library wrote");
        return CUDNN_STATUS_SUCCESS;
    }
    return fail(d, "an execution plan needs a finalized engine configuration (or its JSON)");
}

static cudnnStatus_t finalize_variant_pack(struct bk_desc *d)
{
    int64_t nu = 0, np = 0;
    bool uids = get(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 0, &nu) != NULL;
    bool ptrs = get(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 0, &np) != NULL;
    if (uids != ptrs || nu != np)
        return fail(d, "a variant pack needs as many data pointers as unique ids");
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_knob_choice(struct bk_desc *d)
{
    int64_t v;
    if (get(d, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, NULL) == NULL ||
        !get_i64(d, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, &v))
        return fail(d, "a knob choice needs its type and value");
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize(struct bk_desc *d)
{
    work_init(&d->work);
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return finalize_tensor(d);
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return finalize_convolution(d);
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
        return get(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, NULL) != NULL
                   ? CUDNN_STATUS_SUCCESS
                   : fail(d, "a pointwise descriptor needs its mode");
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
        return get(d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, NULL) != NULL
                   ? CUDNN_STATUS_SUCCESS
                   : fail(d, "a matmul descriptor needs its compute type");
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return finalize_graph(d);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return finalize_heuristics(d);
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return finalize_engine(d);
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return finalize_engine_config(d);
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return finalize_plan(d);
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return finalize_variant_pack(d);
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR: return finalize_knob_choice(d);
    default: return is_operation(d->type) ? finalize_operation(d) : CUDNN_STATUS_SUCCESS;
    }
}

/* ---- the exported API ------------------------------------------------------------------------ */

API cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                               cudnnBackendDescriptor_t *descriptor)
{
    if (descriptor == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor: NULL");
    /* Types past the toolkit headers' last (cuDNN 9.19) are the newer releases' operations
     * (torch 2.15's frontend, built for 9.26, creates a softmax operation, type 45): kept as
     * generic memory-bound operations. */
    if ((unsigned)descriptorType >= BK_MAX_TYPES)
        return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED,
                        "cudnnBackendCreateDescriptor: descriptor type "
                        "%d is not one of this cuDNN's",
                        (int)descriptorType);
    struct bk_desc *d = calloc(1, sizeof *d);
    if (d == NULL)
        return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    d->magic = DNN_MAGIC;
    d->type = descriptorType;
    work_init(&d->work);
    *descriptor = d;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor)
{
    struct bk_desc *d = live(descriptor);
    if (d == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor: not a descriptor");
    destroy(d);
    return CUDNN_STATUS_SUCCESS;
}

/* Deprecated: puts a descriptor back in its created state. */
API cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor)
{
    struct bk_desc *d = live(descriptor);
    if (d == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendInitialize: not a descriptor");
    clear_attrs(d);
    d->finalized = false;
    work_init(&d->work);
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                           cudnnBackendAttributeName_t attributeName,
                                           cudnnBackendAttributeType_t attributeType,
                                           int64_t elementCount, const void *arrayOfElements)
{
    struct bk_desc *d = live(descriptor);
    if (d == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: not a descriptor");
    if (d->finalized)
        return dnn_fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnBackendSetAttribute: the descriptor "
                                                      "is finalized");
    if (elem_bytes(attributeType) == 0)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                        "cudnnBackendSetAttribute: "
                        "attribute %d has unknown type %d",
                        (int)attributeName, (int)attributeType);
    if (elementCount < 0 || (elementCount > 0 && arrayOfElements == NULL))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: %lld elements at %p",
                        (long long)elementCount, arrayOfElements);
    if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR)
        for (int64_t i = 0; i < elementCount; i++)
            if (live(((void *const *)arrayOfElements)[i]) == NULL)
                return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                                "cudnnBackendSetAttribute: element %lld "
                                "of attribute %d is not a descriptor",
                                (long long)i, (int)attributeName);
    return store(d, attributeName, attributeType, elementCount, arrayOfElements);
}

API cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor)
{
    struct bk_desc *d = live(descriptor);
    if (d == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: not a descriptor");
    if (d->finalized)
        return CUDNN_STATUS_SUCCESS;
    cudnnStatus_t st = finalize(d);
    d->finalized = st == CUDNN_STATUS_SUCCESS;
    return st;
}

/* ---- get: copies into the caller's descriptors, computed attributes ------------------------- */

/* dst becomes a finalized copy of src (the caller made dst with the same type). */
static cudnnStatus_t copy_into(struct bk_desc *dst, const struct bk_desc *src)
{
    if (dst == src)
        return CUDNN_STATUS_SUCCESS;
    clear_attrs(dst);
    for (int i = 0; i < src->nattrs; i++) {
        const struct bk_attr *a = &src->attrs[i];
        cudnnStatus_t st = store(dst, a->name, a->type, a->count, a->data);
        if (st != CUDNN_STATUS_SUCCESS)
            return st;
    }
    dst->work = src->work;
    dst->tensor = src->tensor;
    dst->nresults = src->nresults;
    memcpy(dst->results, src->results, sizeof dst->results);
    dst->finalized = true;
    return CUDNN_STATUS_SUCCESS;
}

/* dst becomes engine `engine` (type ENGINE) or a configuration of it (ENGINECFG) for work. */
static cudnnStatus_t make_engine(struct bk_desc *dst, const struct bk_work *w, int64_t engine)
{
    clear_attrs(dst);
    dst->work = *w;
    dst->work.engine = engine;
    dst->finalized = true;
    if (dst->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR)
        return store(dst, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &engine);
    return CUDNN_STATUS_SUCCESS;
}

/* The caller's output descriptors of an attribute of type BACKEND_DESCRIPTOR. */
static cudnnStatus_t out_descs(void *array, int64_t n, cudnnBackendDescriptorType_t type,
                               struct bk_desc **out)
{
    for (int64_t i = 0; i < n; i++) {
        out[i] = live(((void **)array)[i]);
        if (out[i] == NULL || out[i]->type != type)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                            "cudnnBackendGetAttribute: "
                            "output %lld is not a descriptor of type %d",
                            (long long)i, (int)type);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* A computed list of n scalars of type (elements of esize bytes), as cudnnBackendGetAttribute
 * returns it: the count always, at most requested elements when there is an array. */
static cudnnStatus_t give(cudnnBackendAttributeType_t want, cudnnBackendAttributeType_t type,
                          const void *values, int64_t n, int64_t requested, int64_t *count,
                          void *array)
{
    if (want != type)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                        "cudnnBackendGetAttribute: wrong "
                        "attribute type %d (the attribute's is %d)",
                        (int)want, (int)type);
    if (count != NULL)
        *count = n;
    if (array != NULL && n > 0)
        memcpy(array, values, (size_t)(requested < n ? requested : n) * elem_bytes(type));
    return CUDNN_STATUS_SUCCESS;
}

/* Engine configurations (heuristic results) or engines (a configuration's) made from work. */
static cudnnStatus_t give_engines(cudnnBackendAttributeType_t want, const struct bk_work *w,
                                  const int64_t *engines, int64_t n,
                                  cudnnBackendDescriptorType_t type, int64_t requested,
                                  int64_t *count, void *array)
{
    if (want != CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return give(want, CUDNN_TYPE_BACKEND_DESCRIPTOR, NULL, 0, 0, NULL, NULL);
    int64_t k = array == NULL ? n : (requested < n ? requested : n);
    if (count != NULL)
        *count = k;
    struct bk_desc *out[BK_ENGINES];
    if (array == NULL || k == 0)
        return CUDNN_STATUS_SUCCESS;
    cudnnStatus_t st = out_descs(array, k, type, out);
    for (int64_t i = 0; i < k && st == CUDNN_STATUS_SUCCESS; i++)
        st = make_engine(out[i], w, engines[i]);
    return st;
}

/* The attributes cuDNN computes; *handled false for the others. */
static cudnnStatus_t computed(const struct bk_desc *d, cudnnBackendAttributeName_t name,
                              cudnnBackendAttributeType_t want, int64_t requested, int64_t *count,
                              void *array, bool *handled)
{
    static const int64_t zero = 0, engines = BK_ENGINES;
    *handled = true;
    switch (d->type) {
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS)
            return give_engines(want, &d->work, d->results, d->nresults,
                                CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, requested, count, array);
        break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        if (name == CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT)
            return give(want, CUDNN_TYPE_INT64, &engines, 1, requested, count, array);
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE) {
            static const cudnnBackendNumericalNote_t tensor_core = CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
            return give(want, CUDNN_TYPE_NUMERICAL_NOTE, &tensor_core, d->work.engine == 0,
                        requested, count, array);
        }
        if (name == CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE)
            return give(want, CUDNN_TYPE_BEHAVIOR_NOTE, NULL, 0, requested, count, array);
        if (name == CUDNN_ATTR_ENGINE_KNOB_INFO || name == CUDNN_ATTR_ENGINE_LAYOUT_INFO)
            return give(want, CUDNN_TYPE_BACKEND_DESCRIPTOR, NULL, 0, requested, count, array);
        break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINECFG_ENGINE)
            return give_engines(want, &d->work, &d->work.engine, 1, CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                                requested, count, array);
        if (name == CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE)
            return give(want, CUDNN_TYPE_INT64, &zero, 1, requested, count, array);
        if (name == CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED)
            return give(want, want == CUDNN_TYPE_INT32 ? CUDNN_TYPE_INT32 : CUDNN_TYPE_INT64, &zero,
                        1, requested, count, array);
        if (name == CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO)
            return give(want, CUDNN_TYPE_BACKEND_DESCRIPTOR, NULL, 0, requested, count, array);
        if (name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES && find(d, name) == NULL)
            return give(want, CUDNN_TYPE_BACKEND_DESCRIPTOR, NULL, 0, requested, count, array);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)
            return give(want, CUDNN_TYPE_INT64, &zero, 1, requested, count, array);
        if (name == CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS ||
            name == CUDNN_ATTR_EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS)
            return give(want, CUDNN_TYPE_INT64, NULL, 0, requested, count, array);
        if (name == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)
            return give_engines(want, &d->work, &d->work.engine, 1,
                                CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, requested, count, array);
        if (name == CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION) {
            char buf[4096];
            int n = plan_json(&d->work, buf, sizeof buf);
            if (n < 0 || (size_t)n >= sizeof buf)
                return dnn_fail(CUDNN_STATUS_INTERNAL_ERROR, "plan JSON too long");
            return give(want, CUDNN_TYPE_CHAR, buf, n, requested, count, array);
        }
        break;
    default: break;
    }
    *handled = false;
    return CUDNN_STATUS_SUCCESS;
}

API cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                           cudnnBackendAttributeName_t attributeName,
                                           cudnnBackendAttributeType_t attributeType,
                                           int64_t requestedElementCount, int64_t *elementCount,
                                           void *arrayOfElements)
{
    const struct bk_desc *d = live(descriptor);
    if (d == NULL)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute: not a descriptor");
    if (!d->finalized)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                        "cudnnBackendGetAttribute: the "
                        "descriptor (type %d) is not finalized",
                        (int)d->type);
    if (requestedElementCount < 0 || (elementCount == NULL && arrayOfElements == NULL))
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "cudnnBackendGetAttribute: %lld elements requested, "
                        "nowhere to put them",
                        (long long)requestedElementCount);
    bool handled;
    cudnnStatus_t st = computed(d, attributeName, attributeType, requestedElementCount,
                                elementCount, arrayOfElements, &handled);
    if (handled)
        return st;
    const struct bk_attr *a = find(d, attributeName);
    if (a == NULL) {
        /* Attributes with documented defaults answer them; others were never set. */
        static const bool no = false;
        if (attributeName == CUDNN_ATTR_TENSOR_IS_VIRTUAL ||
            attributeName == CUDNN_ATTR_TENSOR_IS_BY_VALUE)
            return give(attributeType, CUDNN_TYPE_BOOLEAN, &no, 1, requestedElementCount,
                        elementCount, arrayOfElements);
        return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                        "cudnnBackendGetAttribute: attribute %d of a type "
                        "%d descriptor was never set",
                        (int)attributeName, (int)d->type);
    }
    if (a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || arrayOfElements == NULL)
        return give(attributeType, a->type, a->data, a->count, requestedElementCount, elementCount,
                    arrayOfElements);
    if (attributeType != CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return give(attributeType, a->type, NULL, 0, 0, NULL, NULL);
    int64_t k = requestedElementCount < a->count ? requestedElementCount : a->count;
    for (int64_t i = 0; i < k; i++) {
        const struct bk_desc *src = live(((void *const *)a->data)[i]);
        struct bk_desc *dst = live(((void **)arrayOfElements)[i]);
        if (src == NULL || dst == NULL || dst->type != src->type)
            return dnn_fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                            "cudnnBackendGetAttribute: "
                            "output %lld is not a descriptor of the attribute's type",
                            (long long)i);
        st = copy_into(dst, src);
        if (st != CUDNN_STATUS_SUCCESS)
            return st;
    }
    if (elementCount != NULL)
        *elementCount = k;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- execute --------------------------------------------------------------------------------- */

/* Whether the variant pack gives a pointer for uid. */
static bool pack_has(const struct bk_desc *pack, int64_t uid)
{
    int64_t n = 0;
    const int64_t *uids = get(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 0, &n);
    void *const *ptrs =
        get(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, NULL);
    for (int64_t i = 0; uids != NULL && ptrs != NULL && i < n; i++)
        if (uids[i] == uid)
            return ptrs[i] != NULL;
    return false;
}

API cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                      cudnnBackendDescriptor_t variantPack)
{
    const struct cudnnContext *h = dnn_handle(handle);
    const struct bk_desc *plan = live(executionPlan), *pack = live(variantPack);
    if (h == NULL || plan == NULL || pack == NULL ||
        plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
        pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: not a handle, plan and "
                                                "variant pack");
    if (!plan->finalized || !pack->finalized)
        return dnn_fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "cudnnBackendExecute: the plan or "
                                                              "the variant pack is not finalized");
    for (int i = 0; i < plan->work.nuids; i++)
        if (!pack_has(pack, plan->work.uids[i]))
            return dnn_fail(CUDNN_STATUS_BAD_PARAM,
                            "cudnnBackendExecute: the variant pack has no "
                            "pointer for tensor uid %lld",
                            (long long)plan->work.uids[i]);
    const struct bk_work *w = &plan->work;
    uint64_t ns =
        vendor_compute_ns(w->flops, dnn_rate(w->type, w->engine == 0)) + vendor_memory_ns(w->bytes);
    return dnn_launch(h, kernels[w->kind], ns);
}

/* No simulated engine has CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API. */
API cudnnStatus_t cudnnBackendPopulateCudaGraph(cudnnHandle_t handle,
                                                cudnnBackendDescriptor_t executionPlan,
                                                cudnnBackendDescriptor_t variantPack,
                                                cudaGraph_t graph)
{
    (void)handle;
    (void)executionPlan;
    (void)variantPack;
    (void)graph;
    return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API,
                    "cudnnBackendPopulateCudaGraph: "
                    "no engine supports native CUDA graphs");
}

API cudnnStatus_t cudnnBackendUpdateCudaGraph(cudnnHandle_t handle,
                                              cudnnBackendDescriptor_t executionPlan,
                                              cudnnBackendDescriptor_t variantPack,
                                              cudaGraph_t graph)
{
    (void)handle;
    (void)executionPlan;
    (void)variantPack;
    (void)graph;
    return dnn_fail(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API,
                    "cudnnBackendUpdateCudaGraph: "
                    "no engine supports native CUDA graphs");
}
