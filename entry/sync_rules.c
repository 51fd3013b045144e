/* entry/sync_rules.c: is this call a sync (see sync_rules.h)? The copy rule once, the runtime
 * calls by their cudaMemcpyKind, and the driver and runtime calls CUPTI sees by their params
 * structs. Pure: no state, no I/O. Runs inside a CUDA call on the application's thread: no
 * malloc, no locks, no stdio. */
#include "entry/sync_rules.h"

#include <cupti.h> /* the callback ids and the params structs of generated_cuda*_meta.h */

/* ---- the rules ----------------------------------------------------------------------------- */

static bool on_host(enum mem_kind k)
{
    return k == MEM_HOST || k == MEM_PINNED || k == MEM_PAGEABLE;
}

static bool on_device(enum mem_kind k)
{
    return k == MEM_DEVICE || k == MEM_MANAGED;
}

static enum mem_kind ask_kind(mem_oracle ask, const void *p)
{
    return ask && p ? ask(p) : MEM_UNKNOWN;
}

/* A host end: asked about only for an Async form (the synchronous forms are syncs whatever it
 * is); host memory of an unknown kind stays MEM_HOST (not shown to be pageable). */
static enum mem_kind host_end(mem_oracle ask, const void *p, bool async)
{
    if (!async)
        return MEM_HOST;
    enum mem_kind k = ask_kind(ask, p);
    return k == MEM_PINNED || k == MEM_PAGEABLE ? k : MEM_HOST;
}

bool sync_rules_copy(enum mem_kind dst, enum mem_kind src, bool async, enum copy_dir *dir)
{
    if (dst == MEM_UNKNOWN || src == MEM_UNKNOWN)
        *dir = DIR_NONE;
    else
        *dir =
            on_host(dst) ? (on_host(src) ? DIR_H2H : DIR_D2H) : (on_host(src) ? DIR_H2D : DIR_D2D);
    /* "For transfers from device memory to device memory, no host-side synchronization is
     * performed", in either form: the only copy that never is a sync. */
    if (on_device(dst) && on_device(src))
        return false;
    /* Every other synchronous copy is, an end of unknown kind included: it cannot be shown to
     * be device to device (cudaMemcpyDefault infers the direction from the pointer values). */
    if (!async)
        return true;
    /* Async: host to host is fully synchronous; between host and device only pageable memory
     * (staged) is. A pageable end with an unknown other end is one of the two. */
    if (on_host(dst) && on_host(src))
        return true;
    return dst == MEM_PAGEABLE || src == MEM_PAGEABLE;
}

bool sync_rules_runtime_copy(enum cudaMemcpyKind kind, const void *dst, const void *src, bool async,
                             mem_oracle ask, enum copy_dir *dir)
{
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return sync_rules_copy(MEM_DEVICE, host_end(ask, src, async), async, dir);
    case cudaMemcpyDeviceToHost:
        return sync_rules_copy(host_end(ask, dst, async), MEM_DEVICE, async, dir);
    case cudaMemcpyDeviceToDevice: return sync_rules_copy(MEM_DEVICE, MEM_DEVICE, async, dir);
    case cudaMemcpyHostToHost: return sync_rules_copy(MEM_HOST, MEM_HOST, async, dir);
    default: /* cudaMemcpyDefault: the pointers say (unified virtual addressing) */
        return sync_rules_copy(ask_kind(ask, dst), ask_kind(ask, src), async, dir);
    }
}

bool sync_rules_copy_3d(const struct cudaMemcpy3DParms *p, bool async, mem_oracle ask,
                        enum copy_dir *dir, uint64_t *bytes)
{
    if (!p)
        return false;
    /* a zero height or depth counts as one row or slice */
    *bytes = (uint64_t)p->extent.width * (p->extent.height ? p->extent.height : 1) *
             (p->extent.depth ? p->extent.depth : 1);
    if (p->kind == cudaMemcpyDefault && (p->dstArray || p->srcArray)) {
        enum mem_kind dk = p->dstArray ? MEM_DEVICE : ask_kind(ask, p->dstPtr.ptr);
        enum mem_kind sk = p->srcArray ? MEM_DEVICE : ask_kind(ask, p->srcPtr.ptr);
        return sync_rules_copy(dk, sk, async, dir);
    }
    return sync_rules_runtime_copy(p->kind, p->dstArray ? NULL : p->dstPtr.ptr,
                                   p->srcArray ? NULL : p->srcPtr.ptr, async, ask, dir);
}

bool sync_rules_from_symbol(enum cudaMemcpyKind kind, const void *dst, bool async, mem_oracle ask,
                            enum copy_dir *dir)
{
    if (kind == cudaMemcpyDefault)
        return sync_rules_copy(ask_kind(ask, dst), MEM_DEVICE, async, dir);
    return sync_rules_runtime_copy(kind, dst, NULL, async, ask, dir);
}

bool sync_rules_to_symbol(enum cudaMemcpyKind kind, const void *src, bool async, mem_oracle ask,
                          enum copy_dir *dir)
{
    if (kind == cudaMemcpyDefault)
        return sync_rules_copy(MEM_DEVICE, ask_kind(ask, src), async, dir);
    return sync_rules_runtime_copy(kind, NULL, src, async, ask, dir);
}

bool sync_rules_memset(const void *dst, bool async, mem_oracle ask)
{
    if (async)
        return false;
    enum mem_kind k = ask_kind(ask, dst);
    return k == MEM_PINNED || k == MEM_MANAGED;
}

/* ---- calls seen through CUPTI: which ones, and their params --------------------------------- */

enum rule {
    R_STREAM,     /* first param: the stream; always a sync */
    R_CONTEXT,    /* context/device synchronize */
    R_EVENT,      /* event synchronize */
    R_D_DTOH,     /* cuMemcpyDtoH*: (void *dstHost, CUdeviceptr, size_t[, CUstream]) */
    R_D_HTOD,     /* cuMemcpyHtoD*: (CUdeviceptr, const void *srcHost, size_t[, CUstream]) */
    R_D_ATOH,     /* cuMemcpyAtoH*: (void *dstHost, CUarray, size_t, size_t[, CUstream]) */
    R_D_HTOA,     /* cuMemcpyHtoA*: (CUarray, size_t, const void *srcHost, size_t[, CUstream]) */
    R_D_ANY,      /* cuMemcpy / cuMemcpyAsync: unified addresses, the pointers say */
    R_D_2D,       /* cuMemcpy2D*: a CUDA_MEMCPY2D */
    R_D_3D,       /* cuMemcpy3D*: a CUDA_MEMCPY3D */
    R_D_MEMSET,   /* cuMemsetD8/16/32 */
    R_D_FREE,     /* cuMemFree: a non-zero pointer */
    R_D_FREEHOST, /* cuMemFreeHost: a non-NULL pointer */
    R_R_COPY,     /* cudaMemcpy*: (dst, src, count, kind[, stream]) */
    R_R_2D,       /* cudaMemcpy2D*: (dst, dpitch, src, spitch, width, height, kind[, stream]) */
    R_R_3D,       /* cudaMemcpy3D*: (const cudaMemcpy3DParms *[, stream]) */
    R_R_TOSYM,    /* cudaMemcpyToSymbol*: (symbol, src, count, offset, kind[, stream]) */
    R_R_FROMSYM,  /* cudaMemcpyFromSymbol*: (dst, symbol, count, offset, kind[, stream]) */
    R_R_MEMSET,   /* cudaMemset */
    R_R_FREE,     /* cudaFree, cudaFreeHost, cudaFreeArray: a non-NULL first param */
};

struct sync_rule {
    uint32_t cbid;
    unsigned char rule;
    bool async;
    unsigned char elem; /* memset element bytes */
};

#define D(name, rule, async)                           \
    {                                                  \
        CUPTI_DRIVER_TRACE_CBID_##name, rule, async, 1 \
    }
#define DM(name, elem)                                          \
    {                                                           \
        CUPTI_DRIVER_TRACE_CBID_##name, R_D_MEMSET, false, elem \
    }
static const struct sync_rule driver_rules[] = {
    D(cuStreamSynchronize, R_STREAM, false),
    D(cuStreamSynchronize_ptsz, R_STREAM, false),
    D(cuCtxSynchronize, R_CONTEXT, false),
    D(cuCtxSynchronize_v2, R_CONTEXT, false),
    D(cuEventSynchronize, R_EVENT, false),
    D(cuMemcpyDtoH_v2, R_D_DTOH, false),
    D(cuMemcpyDtoH_v2_ptds, R_D_DTOH, false),
    D(cuMemcpyDtoHAsync_v2, R_D_DTOH, true),
    D(cuMemcpyDtoHAsync_v2_ptsz, R_D_DTOH, true),
    D(cuMemcpyHtoD_v2, R_D_HTOD, false),
    D(cuMemcpyHtoD_v2_ptds, R_D_HTOD, false),
    D(cuMemcpyHtoDAsync_v2, R_D_HTOD, true),
    D(cuMemcpyHtoDAsync_v2_ptsz, R_D_HTOD, true),
    D(cuMemcpyAtoH_v2, R_D_ATOH, false),
    D(cuMemcpyAtoH_v2_ptds, R_D_ATOH, false),
    D(cuMemcpyAtoHAsync_v2, R_D_ATOH, true),
    D(cuMemcpyAtoHAsync_v2_ptsz, R_D_ATOH, true),
    D(cuMemcpyHtoA_v2, R_D_HTOA, false),
    D(cuMemcpyHtoA_v2_ptds, R_D_HTOA, false),
    D(cuMemcpyHtoAAsync_v2, R_D_HTOA, true),
    D(cuMemcpyHtoAAsync_v2_ptsz, R_D_HTOA, true),
    D(cuMemcpy, R_D_ANY, false),
    D(cuMemcpy_ptds, R_D_ANY, false),
    D(cuMemcpyAsync, R_D_ANY, true),
    D(cuMemcpyAsync_ptsz, R_D_ANY, true),
    D(cuMemcpy2D_v2, R_D_2D, false),
    D(cuMemcpy2D_v2_ptds, R_D_2D, false),
    D(cuMemcpy2DUnaligned_v2, R_D_2D, false),
    D(cuMemcpy2DUnaligned_v2_ptds, R_D_2D, false),
    D(cuMemcpy2DAsync_v2, R_D_2D, true),
    D(cuMemcpy2DAsync_v2_ptsz, R_D_2D, true),
    D(cuMemcpy3D_v2, R_D_3D, false),
    D(cuMemcpy3D_v2_ptds, R_D_3D, false),
    D(cuMemcpy3DAsync_v2, R_D_3D, true),
    D(cuMemcpy3DAsync_v2_ptsz, R_D_3D, true),
    DM(cuMemsetD8_v2, 1),
    DM(cuMemsetD8_v2_ptds, 1),
    DM(cuMemsetD16_v2, 2),
    DM(cuMemsetD16_v2_ptds, 2),
    DM(cuMemsetD32_v2, 4),
    DM(cuMemsetD32_v2_ptds, 4),
    D(cuMemFree_v2, R_D_FREE, false),
    D(cuMemFreeHost, R_D_FREEHOST, false),
};
#undef D
#undef DM

#define R(name, rule, async)                            \
    {                                                   \
        CUPTI_RUNTIME_TRACE_CBID_##name, rule, async, 1 \
    }
static const struct sync_rule runtime_rules[] = {
    R(cudaStreamSynchronize_v3020, R_STREAM, false),
    R(cudaStreamSynchronize_ptsz_v7000, R_STREAM, false),
    R(cudaDeviceSynchronize_v3020, R_CONTEXT, false),
    R(cudaThreadSynchronize_v3020, R_CONTEXT, false),
    R(cudaDeviceReset_v3020, R_CONTEXT, false),
    R(cudaEventSynchronize_v3020, R_EVENT, false),
    R(cudaMemcpy_v3020, R_R_COPY, false),
    R(cudaMemcpy_ptds_v7000, R_R_COPY, false),
    R(cudaMemcpyAsync_v3020, R_R_COPY, true),
    R(cudaMemcpyAsync_ptsz_v7000, R_R_COPY, true),
    R(cudaMemcpy2D_v3020, R_R_2D, false),
    R(cudaMemcpy2D_ptds_v7000, R_R_2D, false),
    R(cudaMemcpy2DAsync_v3020, R_R_2D, true),
    R(cudaMemcpy2DAsync_ptsz_v7000, R_R_2D, true),
    R(cudaMemcpy3D_v3020, R_R_3D, false),
    R(cudaMemcpy3D_ptds_v7000, R_R_3D, false),
    R(cudaMemcpy3DAsync_v3020, R_R_3D, true),
    R(cudaMemcpy3DAsync_ptsz_v7000, R_R_3D, true),
    R(cudaMemcpyToSymbol_v3020, R_R_TOSYM, false),
    R(cudaMemcpyToSymbol_ptds_v7000, R_R_TOSYM, false),
    R(cudaMemcpyToSymbolAsync_v3020, R_R_TOSYM, true),
    R(cudaMemcpyToSymbolAsync_ptsz_v7000, R_R_TOSYM, true),
    R(cudaMemcpyFromSymbol_v3020, R_R_FROMSYM, false),
    R(cudaMemcpyFromSymbol_ptds_v7000, R_R_FROMSYM, false),
    R(cudaMemcpyFromSymbolAsync_v3020, R_R_FROMSYM, true),
    R(cudaMemcpyFromSymbolAsync_ptsz_v7000, R_R_FROMSYM, true),
    R(cudaMemset_v3020, R_R_MEMSET, false),
    R(cudaMemset_ptds_v7000, R_R_MEMSET, false),
    R(cudaFree_v3020, R_R_FREE, false),
    R(cudaFreeHost_v3020, R_R_FREE, false),
    R(cudaFreeArray_v3020, R_R_FREE, false),
};
#undef R

size_t sync_rules_cupti_cbids(uint32_t domain, const uint32_t **cbids)
{
    static uint32_t driver_ids[sizeof driver_rules / sizeof driver_rules[0]];
    static uint32_t runtime_ids[sizeof runtime_rules / sizeof runtime_rules[0]];
    const struct sync_rule *rules =
        domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_rules : runtime_rules;
    size_t n = domain == CUPTI_CB_DOMAIN_DRIVER_API
                   ? sizeof driver_rules / sizeof driver_rules[0]
                   : sizeof runtime_rules / sizeof runtime_rules[0];
    uint32_t *ids = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_ids : runtime_ids;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) {
        *cbids = NULL;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        ids[i] = rules[i].cbid;
    *cbids = ids;
    return n;
}

static const struct sync_rule *find_rule(uint32_t domain, uint32_t cbid)
{
    const struct sync_rule *rules;
    size_t n;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        rules = driver_rules;
        n = sizeof driver_rules / sizeof driver_rules[0];
    } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        rules = runtime_rules;
        n = sizeof runtime_rules / sizeof runtime_rules[0];
    } else {
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (rules[i].cbid == cbid)
            return &rules[i];
    return NULL;
}

/* One end of a driver 2D/3D copy, by its CUmemorytype. */
static enum mem_kind driver_end(mem_oracle ask, bool async, CUmemorytype type, const void *host,
                                CUdeviceptr dev)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: return host_end(ask, host, async);
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: return MEM_DEVICE;
    case CU_MEMORYTYPE_UNIFIED: return ask_kind(ask, (const void *)(uintptr_t)dev);
    default: return MEM_UNKNOWN;
    }
}

static bool classify_driver_copy(const struct sync_rule *r, const void *params, mem_oracle ask,
                                 struct sync_call *c)
{
    switch (r->rule) {
    case R_D_DTOH: {
        const cuMemcpyDtoHAsync_v2_params *p = params;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return sync_rules_copy(host_end(ask, p->dstHost, r->async), MEM_DEVICE, r->async, &c->dir);
    }
    case R_D_HTOD: {
        const cuMemcpyHtoDAsync_v2_params *p = params;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return sync_rules_copy(MEM_DEVICE, host_end(ask, p->srcHost, r->async), r->async, &c->dir);
    }
    case R_D_ATOH: {
        const cuMemcpyAtoHAsync_v2_params *p = params;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return sync_rules_copy(host_end(ask, p->dstHost, r->async), MEM_DEVICE, r->async, &c->dir);
    }
    case R_D_HTOA: {
        const cuMemcpyHtoAAsync_v2_params *p = params;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return sync_rules_copy(MEM_DEVICE, host_end(ask, p->srcHost, r->async), r->async, &c->dir);
    }
    case R_D_ANY: {
        const cuMemcpyAsync_params *p = params;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return sync_rules_copy(ask_kind(ask, (const void *)(uintptr_t)p->dst),
                               ask_kind(ask, (const void *)(uintptr_t)p->src), r->async, &c->dir);
    }
    case R_D_2D: {
        const cuMemcpy2DAsync_v2_params *p = params;
        const CUDA_MEMCPY2D *m = p->pCopy;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        if (!m)
            return false;
        c->bytes = (uint64_t)m->WidthInBytes * m->Height;
        return sync_rules_copy(
            driver_end(ask, r->async, m->dstMemoryType, m->dstHost, m->dstDevice),
            driver_end(ask, r->async, m->srcMemoryType, m->srcHost, m->srcDevice), r->async,
            &c->dir);
    }
    case R_D_3D: {
        const cuMemcpy3DAsync_v2_params *p = params;
        const CUDA_MEMCPY3D *m = p->pCopy;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        if (!m)
            return false;
        c->bytes = (uint64_t)m->WidthInBytes * m->Height * m->Depth;
        return sync_rules_copy(
            driver_end(ask, r->async, m->dstMemoryType, m->dstHost, m->dstDevice),
            driver_end(ask, r->async, m->srcMemoryType, m->srcHost, m->srcDevice), r->async,
            &c->dir);
    }
    default: return false;
    }
}

static bool classify_runtime_copy(const struct sync_rule *r, const void *params, mem_oracle ask,
                                  struct sync_call *c)
{
    switch (r->rule) {
    case R_R_COPY: {
        const cudaMemcpyAsync_v3020_params *p = params;
        c->bytes = p->count;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return sync_rules_runtime_copy(p->kind, p->dst, p->src, r->async, ask, &c->dir);
    }
    case R_R_2D: {
        const cudaMemcpy2DAsync_v3020_params *p = params;
        c->bytes = (uint64_t)p->width * p->height;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return sync_rules_runtime_copy(p->kind, p->dst, p->src, r->async, ask, &c->dir);
    }
    case R_R_3D: {
        const cudaMemcpy3DAsync_v3020_params *p = params;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return sync_rules_copy_3d(p->p, r->async, ask, &c->dir, &c->bytes);
    }
    case R_R_TOSYM: {
        const cudaMemcpyToSymbolAsync_v3020_params *p = params;
        c->bytes = p->count;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return sync_rules_to_symbol(p->kind, p->src, r->async, ask, &c->dir);
    }
    case R_R_FROMSYM: {
        const cudaMemcpyFromSymbolAsync_v3020_params *p = params;
        c->bytes = p->count;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return sync_rules_from_symbol(p->kind, p->dst, r->async, ask, &c->dir);
    }
    default: return false;
    }
}

bool sync_rules_cupti(uint32_t domain, uint32_t cbid, const void *params, mem_oracle ask,
                      struct sync_call *c)
{
    const struct sync_rule *r = find_rule(domain, cbid);
    if (!r)
        return false;
    c->dir = DIR_NONE;
    switch (r->rule) {
    case R_STREAM: /* the stream is the first param in every form */
        c->stream = params ? (uintptr_t)((const cuStreamSynchronize_params *)params)->hStream : 0;
        return true;
    case R_CONTEXT:
    case R_EVENT: return true;
    case R_D_MEMSET: {
        const cuMemsetD8_v2_params *p8 = params;
        const cuMemsetD16_v2_params *p16 = params;
        const cuMemsetD32_v2_params *p32 = params;
        if (!params)
            return false;
        c->bytes = (uint64_t)(r->elem == 1 ? p8->N : r->elem == 2 ? p16->N : p32->N) * r->elem;
        return sync_rules_memset((const void *)(uintptr_t)p8->dstDevice, r->async, ask);
    }
    case R_D_FREE: return params && ((const cuMemFree_v2_params *)params)->dptr != 0;
    case R_D_FREEHOST: return params && ((const cuMemFreeHost_params *)params)->p != NULL;
    case R_R_MEMSET: {
        const cudaMemset_v3020_params *p = params;
        if (!p)
            return false;
        c->bytes = p->count;
        return sync_rules_memset(p->devPtr, r->async, ask);
    }
    case R_R_FREE: /* cudaFree(void *), cudaFreeHost(void *), cudaFreeArray(cudaArray_t) */
        return params && ((const cudaFree_v3020_params *)params)->devPtr != NULL;
    default:
        if (!params)
            return false;
        return domain == CUPTI_CB_DOMAIN_DRIVER_API ? classify_driver_copy(r, params, ask, c)
                                                    : classify_runtime_copy(r, params, ask, c);
    }
}
