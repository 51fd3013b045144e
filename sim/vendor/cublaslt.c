/* sim/vendor/cublaslt.c: every symbol the simulated libcublasLt.so.13 exports (prototypes of
 * cublasLt.h): handles (a cuBLAS handle works too, blas.h), the matmul, layout and preference
 * descriptors with their attributes (each one's documented size; a wrong size or unknown
 * attribute is CUBLAS_STATUS_INVALID_VALUE), one algorithm from the heuristic, and
 * cublasLtMatmul, which queues one kernel on the stream it is given lasting the launch cost
 * plus 2 m n k (times the batch) flops at the rate of its types (sim/README.md,
 * "Durations"). Nothing is computed and nothing waits. Never calls an exported name. */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

#include "sim/vendor/blas.h"

#define API VENDOR_API

VENDOR_KERNEL(k_matmul, "simcublasLt::matmul");

#define LT_MAGIC 0x544c4253u /* "SBLT" */

/* The descriptors, inside the opaque storage cublasLt.h gives them (so the *Init_internal
 * forms work on the caller's storage too). */
struct lt_matmul_desc {
    uint32_t magic;
    int32_t compute_type, scale_type, pointer_mode, transa, transb, transc, fill_mode;
    uint32_t epilogue;
    int32_t sm_count_target, aux_data_type, bias_data_type;
    int32_t a_scale_mode, b_scale_mode, c_scale_mode, d_scale_mode, aux_scale_mode,
        d_out_scale_mode;
    int8_t fast_accum;
    const void *bias, *aux, *a_scale, *b_scale, *c_scale, *d_scale, *amax_d, *aux_scale, *aux_amax,
        *d_out_scale, *emulation;
    int64_t bias_batch_stride, aux_ld, aux_batch_stride, alpha_batch_stride;
};

struct lt_layout {
    uint32_t magic;
    uint32_t type;
    int32_t order, batch_count;
    uint32_t batch_mode;
    uint64_t rows, cols;
    int64_t ld, batch_stride, plane_offset;
};

struct lt_preference {
    uint32_t magic;
    uint32_t search_mode, reduction_mask, align_a, align_b, align_c, align_d;
    float max_waves;
    uint64_t max_workspace, impl_mask;
};

_Static_assert(sizeof(struct lt_matmul_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "matmul desc");
_Static_assert(sizeof(struct lt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout");
_Static_assert(sizeof(struct lt_preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "pref");

/* ---- attributes --------------------------------------------------------------------------- */

/* One settable attribute: where it lives in its descriptor and its documented size. */
struct lt_attr {
    int attr;
    size_t offset, size;
};
#define ATTR(name, type, field)                                 \
    {                                                           \
        name, offsetof(type, field), sizeof(((type *)0)->field) \
    }

static const struct lt_attr *find_attr(const struct lt_attr *table, size_t n, int attr)
{
    for (size_t i = 0; i < n; i++)
        if (table[i].attr == attr)
            return &table[i];
    return NULL;
}

/* "CUBLAS_STATUS_INVALID_VALUE if buf is NULL or sizeInBytes doesn't match size of internal
 * storage for selected attribute". */
static cublasStatus_t set_attr(void *obj, const struct lt_attr *table, size_t n, int attr,
                               const void *buf, size_t size)
{
    const struct lt_attr *a = find_attr(table, n, attr);
    if (a == NULL || buf == NULL || size != a->size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy((char *)obj + a->offset, buf, size);
    return CUBLAS_STATUS_SUCCESS;
}

/* sizeInBytes 0 asks for the size (in *sizeWritten); else buf must hold exactly the attribute. */
static cublasStatus_t get_attr(const void *obj, const struct lt_attr *table, size_t n, int attr,
                               void *buf, size_t size, size_t *written)
{
    const struct lt_attr *a = find_attr(table, n, attr);
    if (a == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (size == 0) {
        if (written == NULL)
            return CUBLAS_STATUS_INVALID_VALUE;
        *written = a->size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (buf == NULL || size != a->size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, (const char *)obj + a->offset, size);
    if (written != NULL)
        *written = size;
    return CUBLAS_STATUS_SUCCESS;
}

#define D struct lt_matmul_desc
static const struct lt_attr desc_attrs[] = {
    ATTR(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, D, compute_type),
    ATTR(CUBLASLT_MATMUL_DESC_SCALE_TYPE, D, scale_type),
    ATTR(CUBLASLT_MATMUL_DESC_POINTER_MODE, D, pointer_mode),
    ATTR(CUBLASLT_MATMUL_DESC_TRANSA, D, transa),
    ATTR(CUBLASLT_MATMUL_DESC_TRANSB, D, transb),
    ATTR(CUBLASLT_MATMUL_DESC_TRANSC, D, transc),
    ATTR(CUBLASLT_MATMUL_DESC_FILL_MODE, D, fill_mode),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE, D, epilogue),
    ATTR(CUBLASLT_MATMUL_DESC_BIAS_POINTER, D, bias),
    ATTR(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, D, bias_batch_stride),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, D, aux),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, D, aux_ld),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, D, aux_batch_stride),
    ATTR(CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, D, alpha_batch_stride),
    ATTR(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, D, sm_count_target),
    ATTR(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, D, a_scale),
    ATTR(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, D, b_scale),
    ATTR(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, D, c_scale),
    ATTR(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, D, d_scale),
    ATTR(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, D, amax_d),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, D, aux_data_type),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, D, aux_scale),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, D, aux_amax),
    ATTR(CUBLASLT_MATMUL_DESC_FAST_ACCUM, D, fast_accum),
    ATTR(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, D, bias_data_type),
    ATTR(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, D, a_scale_mode),
    ATTR(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, D, b_scale_mode),
    ATTR(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, D, c_scale_mode),
    ATTR(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, D, d_scale_mode),
    ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, D, aux_scale_mode),
    ATTR(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, D, d_out_scale),
    ATTR(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, D, d_out_scale_mode),
#if CUBLAS_VER_MAJOR >= 13 /* not in the cuBLAS 12.8 headers */
    ATTR(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, D, emulation),
#endif
};
#undef D

#define L struct lt_layout
static const struct lt_attr layout_attrs[] = {
    ATTR(CUBLASLT_MATRIX_LAYOUT_TYPE, L, type),
    ATTR(CUBLASLT_MATRIX_LAYOUT_ORDER, L, order),
    ATTR(CUBLASLT_MATRIX_LAYOUT_ROWS, L, rows),
    ATTR(CUBLASLT_MATRIX_LAYOUT_COLS, L, cols),
    ATTR(CUBLASLT_MATRIX_LAYOUT_LD, L, ld),
    ATTR(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, L, batch_count),
    ATTR(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, L, batch_stride),
    ATTR(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, L, plane_offset),
#if CUBLAS_VER_MAJOR >= 13 /* not in the cuBLAS 12.8 headers */
    ATTR(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, L, batch_mode),
#endif
};
#undef L

#define P struct lt_preference
static const struct lt_attr pref_attrs[] = {
    ATTR(CUBLASLT_MATMUL_PREF_SEARCH_MODE, P, search_mode),
    ATTR(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, P, max_workspace),
    ATTR(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, P, reduction_mask),
    ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, P, align_a),
    ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, P, align_b),
    ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, P, align_c),
    ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, P, align_d),
    ATTR(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, P, max_waves),
    ATTR(CUBLASLT_MATMUL_PREF_IMPL_MASK, P, impl_mask),
};
#undef P

#define N_OF(table) (sizeof(table) / sizeof((table)[0]))

static struct lt_matmul_desc *desc_of(cublasLtMatmulDesc_t d)
{
    struct lt_matmul_desc *m = (struct lt_matmul_desc *)d;
    return m != NULL && m->magic == LT_MAGIC ? m : NULL;
}

static struct lt_layout *layout_of(cublasLtMatrixLayout_t l)
{
    struct lt_layout *m = (struct lt_layout *)l;
    return m != NULL && m->magic == LT_MAGIC ? m : NULL;
}

static struct lt_preference *pref_of(cublasLtMatmulPreference_t p)
{
    struct lt_preference *m = (struct lt_preference *)p;
    return m != NULL && m->magic == LT_MAGIC ? m : NULL;
}

/* ---- handle, versions ---------------------------------------------------------------------- */

API cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)
{
    return blas_handle_create((struct cublasContext **)lightHandle);
}

API cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)
{
    return blas_handle_destroy((struct cublasContext *)lightHandle);
}

API size_t cublasLtGetVersion(void)
{
    return CUBLAS_VERSION;
}

API size_t cublasLtGetCudartVersion(void)
{
    return CUDART_VERSION;
}

API cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value)
{
    return blas_property(type, value);
}

/* ---- descriptors --------------------------------------------------------------------------- */

static cublasStatus_t desc_init(struct lt_matmul_desc *d, cublasComputeType_t compute,
                                cudaDataType_t scale)
{
    if (!blas_compute_type_ok(compute) || vendor_dtype_bytes(scale) == 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(d, 0, sizeof *d);
    d->magic = LT_MAGIC;
    d->compute_type = compute;
    d->scale_type = scale;
    d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    d->transa = d->transb = d->transc = CUBLAS_OP_N;
    d->fill_mode = CUBLAS_FILL_MODE_FULL;
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->aux_data_type = d->bias_data_type = -1;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                            cublasComputeType_t computeType,
                                            cudaDataType_t scaleType)
{
    if (matmulDesc == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtMatmulDescOpaque_t *d = calloc(1, sizeof *d);
    if (d == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    cublasStatus_t st = desc_init((struct lt_matmul_desc *)d, computeType, scaleType);
    if (st != CUBLAS_STATUS_SUCCESS) {
        free(d);
        return st;
    }
    *matmulDesc = d;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                                   cublasComputeType_t computeType,
                                                   cudaDataType_t scaleType)
{
    if (matmulDesc == NULL || size < sizeof(cublasLtMatmulDescOpaque_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    return desc_init((struct lt_matmul_desc *)matmulDesc, computeType, scaleType);
}

API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    struct lt_matmul_desc *d = desc_of(matmulDesc);
    if (matmulDesc != NULL && d == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (d != NULL)
        d->magic = 0;
    free(matmulDesc);
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                  cublasLtMatmulDescAttributes_t attr,
                                                  const void *buf, size_t sizeInBytes)
{
    struct lt_matmul_desc *d = desc_of(matmulDesc);
    if (d == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return set_attr(d, desc_attrs, N_OF(desc_attrs), attr, buf, sizeInBytes);
}

API cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                  cublasLtMatmulDescAttributes_t attr, void *buf,
                                                  size_t sizeInBytes, size_t *sizeWritten)
{
    struct lt_matmul_desc *d = desc_of(matmulDesc);
    if (d == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return get_attr(d, desc_attrs, N_OF(desc_attrs), attr, buf, sizeInBytes, sizeWritten);
}

static cublasStatus_t layout_init(struct lt_layout *l, cudaDataType type, uint64_t rows,
                                  uint64_t cols, int64_t ld)
{
    if (vendor_dtype_bytes(type) == 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(l, 0, sizeof *l);
    l->magic = LT_MAGIC;
    l->type = type;
    l->order = CUBLASLT_ORDER_COL;
    l->batch_count = 1;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type,
                                              uint64_t rows, uint64_t cols, int64_t ld)
{
    if (matLayout == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtMatrixLayoutOpaque_t *l = calloc(1, sizeof *l);
    if (l == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    cublasStatus_t st = layout_init((struct lt_layout *)l, type, rows, cols, ld);
    if (st != CUBLAS_STATUS_SUCCESS) {
        free(l);
        return st;
    }
    *matLayout = l;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                                     cudaDataType type, uint64_t rows,
                                                     uint64_t cols, int64_t ld)
{
    if (matLayout == NULL || size < sizeof(cublasLtMatrixLayoutOpaque_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    return layout_init((struct lt_layout *)matLayout, type, rows, cols, ld);
}

API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    struct lt_layout *l = layout_of(matLayout);
    if (matLayout != NULL && l == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (l != NULL)
        l->magic = 0;
    free(matLayout);
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                    cublasLtMatrixLayoutAttribute_t attr,
                                                    const void *buf, size_t sizeInBytes)
{
    struct lt_layout *l = layout_of(matLayout);
    if (l == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return set_attr(l, layout_attrs, N_OF(layout_attrs), attr, buf, sizeInBytes);
}

API cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                    cublasLtMatrixLayoutAttribute_t attr, void *buf,
                                                    size_t sizeInBytes, size_t *sizeWritten)
{
    struct lt_layout *l = layout_of(matLayout);
    if (l == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return get_attr(l, layout_attrs, N_OF(layout_attrs), attr, buf, sizeInBytes, sizeWritten);
}

static void pref_init(struct lt_preference *p)
{
    memset(p, 0, sizeof *p);
    p->magic = LT_MAGIC;
    p->search_mode = CUBLASLT_SEARCH_BEST_FIT;
    p->reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
    p->align_a = p->align_b = p->align_c = p->align_d = 256;
    p->impl_mask = UINT64_MAX;
}

API cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    if (pref == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtMatmulPreferenceOpaque_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    pref_init((struct lt_preference *)p);
    *pref = p;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                                         size_t size)
{
    if (pref == NULL || size < sizeof(cublasLtMatmulPreferenceOpaque_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    pref_init((struct lt_preference *)pref);
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    struct lt_preference *p = pref_of(pref);
    if (pref != NULL && p == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (p != NULL)
        p->magic = 0;
    free(pref);
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                        cublasLtMatmulPreferenceAttributes_t attr,
                                                        const void *buf, size_t sizeInBytes)
{
    struct lt_preference *p = pref_of(pref);
    if (p == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return set_attr(p, pref_attrs, N_OF(pref_attrs), attr, buf, sizeInBytes);
}

API cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                        cublasLtMatmulPreferenceAttributes_t attr,
                                                        void *buf, size_t sizeInBytes,
                                                        size_t *sizeWritten)
{
    struct lt_preference *p = pref_of(pref);
    if (p == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return get_attr(p, pref_attrs, N_OF(pref_attrs), attr, buf, sizeInBytes, sizeWritten);
}

/* ---- the product ---------------------------------------------------------------------------- */

/* D = alpha op(A) op(B) + beta C as the descriptors describe it: m x n (D's rows and columns),
 * k (op(A)'s columns), the batch (D's batch count). */
struct lt_problem {
    uint64_t m, n, k;
    int batch;
    cudaDataType a_type;
    cublasComputeType_t compute;
};

/* The shape checks cuBLASLt makes (CUBLAS_STATUS_INVALID_VALUE when the layouts do not
 * describe one product) and the simulator's supported set: column or row order, A and B of one
 * known type, a known compute type (CUBLAS_STATUS_NOT_SUPPORTED otherwise, what cuBLASLt
 * answers for a configuration it has no kernel for). */
static cublasStatus_t problem(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                              struct lt_problem *out)
{
    if (!blas_handle_ok(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    struct lt_matmul_desc *o = desc_of(op);
    struct lt_layout *A = layout_of(a), *B = layout_of(b), *C = layout_of(c), *Dl = layout_of(d);
    if (o == NULL || A == NULL || B == NULL || C == NULL || Dl == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    bool ta = o->transa != CUBLAS_OP_N, tb = o->transb != CUBLAS_OP_N;
    uint64_t m = Dl->rows, n = Dl->cols;
    uint64_t am = ta ? A->cols : A->rows, k = ta ? A->rows : A->cols;
    uint64_t bk = tb ? B->cols : B->rows, bn = tb ? B->rows : B->cols;
    if (am != m || bk != k || bn != n || C->rows != m || C->cols != n) {
        VENDOR_DBG(1,
                   "cublasLtMatmul: layouts %llux%llu, %llux%llu, %llux%llu -> %llux%llu do "
                   "not make one product",
                   (unsigned long long)A->rows, (unsigned long long)A->cols,
                   (unsigned long long)B->rows, (unsigned long long)B->cols,
                   (unsigned long long)C->rows, (unsigned long long)C->cols, (unsigned long long)m,
                   (unsigned long long)n);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    bool orders_ok = true;
    const struct lt_layout *all[] = {A, B, C, Dl};
    for (size_t i = 0; i < 4; i++)
        orders_ok = orders_ok &&
                    (all[i]->order == CUBLASLT_ORDER_COL || all[i]->order == CUBLASLT_ORDER_ROW);
    if (A->type != B->type || !orders_ok || !blas_compute_type_ok(o->compute_type))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    *out = (struct lt_problem){
        m, n, k, Dl->batch_count > 0 ? Dl->batch_count : 1, A->type, o->compute_type};
    return CUBLAS_STATUS_SUCCESS;
}

/* The one algorithm: id 0, no workspace. */
static void the_algo(cublasLtMatmulAlgo_t *algo)
{
    memset(algo, 0, sizeof *algo);
    algo->data[0] = LT_MAGIC;
}

API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount)
{
    if (requestedAlgoCount <= 0 || heuristicResultsArray == NULL || returnAlgoCount == NULL ||
        pref_of(preference) == NULL)
        return blas_handle_ok(lightHandle) ? CUBLAS_STATUS_INVALID_VALUE
                                           : CUBLAS_STATUS_NOT_INITIALIZED;
    *returnAlgoCount = 0;
    struct lt_problem p;
    cublasStatus_t st = problem(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    memset(&heuristicResultsArray[0], 0, sizeof heuristicResultsArray[0]);
    the_algo(&heuristicResultsArray[0].algo);
    heuristicResultsArray[0].workspaceSize = 0;
    heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
    heuristicResultsArray[0].wavesCount = 1.0f;
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t lightHandle,
                                          cublasComputeType_t computeType, cudaDataType_t scaleType,
                                          cudaDataType_t Atype, cudaDataType_t Btype,
                                          cudaDataType_t Ctype, cudaDataType_t Dtype, int algoId,
                                          cublasLtMatmulAlgo_t *algo)
{
    if (!blas_handle_ok(lightHandle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (algo == NULL || algoId != 0)
        return CUBLAS_STATUS_INVALID_VALUE; /* "algoId is outside of recognized range" */
    (void)scaleType;
    (void)Ctype;
    (void)Dtype;
    if (Atype != Btype || vendor_dtype_bytes(Atype) == 0 || !blas_compute_type_ok(computeType))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    the_algo(algo);
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulAlgoCheck(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    const cublasLtMatmulAlgo_t *algo, cublasLtMatmulHeuristicResult_t *result)
{
    struct lt_problem p;
    cublasStatus_t st = problem(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (algo == NULL || result == NULL || algo->data[0] != LT_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtMatmulAlgo_t kept = result->algo; /* "algo field is never updated" */
    memset(result, 0, sizeof *result);
    result->algo = kept;
    result->state = CUBLAS_STATUS_SUCCESS;
    result->wavesCount = 1.0f;
    return CUBLAS_STATUS_SUCCESS;
}

/* The algorithm's configuration: the documented attributes and sizes, values all zero (the
 * one algorithm has no tiles, splits or stages to choose). */
static const struct {
    int attr;
    size_t size;
} algo_config_attrs[] = {
    {CUBLASLT_ALGO_CONFIG_ID, sizeof(int32_t)},
    {CUBLASLT_ALGO_CONFIG_TILE_ID, sizeof(uint32_t)},
    {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, sizeof(int32_t)},
    {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, sizeof(uint32_t)},
    {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, sizeof(uint32_t)},
    {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, sizeof(uint32_t)},
    {CUBLASLT_ALGO_CONFIG_STAGES_ID, sizeof(uint32_t)},
    {CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, sizeof(uint16_t)},
    {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, sizeof(uint16_t)},
};

static size_t algo_config_size(int attr)
{
    for (size_t i = 0; i < N_OF(algo_config_attrs); i++)
        if (algo_config_attrs[i].attr == attr)
            return algo_config_attrs[i].size;
    return 0;
}

API cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t *algo,
                                                        cublasLtMatmulAlgoConfigAttributes_t attr,
                                                        const void *buf, size_t sizeInBytes)
{
    size_t size = algo_config_size(attr);
    if (algo == NULL || buf == NULL || size == 0 || sizeInBytes != size ||
        attr == CUBLASLT_ALGO_CONFIG_ID) /* read-only, "set by cublasLtMatmulAlgoInit()" */
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                        cublasLtMatmulAlgoConfigAttributes_t attr,
                                                        void *buf, size_t sizeInBytes,
                                                        size_t *sizeWritten)
{
    size_t size = algo_config_size(attr);
    if (algo == NULL || size == 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (sizeInBytes == 0) {
        if (sizeWritten == NULL)
            return CUBLAS_STATUS_INVALID_VALUE;
        *sizeWritten = size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (buf == NULL || sizeInBytes != size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(buf, 0, size);
    if (sizeWritten != NULL)
        *sizeWritten = size;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                  const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                                  const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                                  const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                                  cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                                  void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream)
{
    (void)A;
    (void)B;
    (void)C;
    (void)D;
    (void)workspace;
    (void)workspaceSizeInBytes;
    struct lt_problem p;
    cublasStatus_t st = problem(lightHandle, computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (alpha == NULL || beta == NULL || (algo != NULL && algo->data[0] != LT_MAGIC))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (p.m == 0 || p.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    double flops = 2.0 * (double)p.m * (double)p.n * (double)p.k * p.batch;
    /* cuBLASLt follows the compute type alone (the cuBLAS math mode is not its setting). */
    enum vendor_rate rate = blas_rate(p.a_type, p.compute, CUBLAS_DEFAULT_MATH);
    return blas_status(vendor_launch(&k_matmul, vendor_compute_ns(flops, rate), stream));
}

API const char *cublasLtGetStatusName(cublasStatus_t status)
{
    return blas_status_name(status);
}

API const char *cublasLtGetStatusString(cublasStatus_t status)
{
    return blas_status_string(status);
}
