/* collectors/cupti_rules.c: the pure parts of the CUPTI collector (see cupti.h): where libcupti
 * is looked for, which driver and runtime calls are syncs (from their CUPTI params structs), and
 * the API names. No state, no I/O: unit-tested in tests/unit/test_cupti.c. cupti_classify runs
 * inside a CUDA call on the application's thread: no malloc, no locks, no stdio. */
#include "collectors/cupti.h"

#include <cupti.h> /* the callback ids and the params structs of generated_cuda*_meta.h */
#include <stdio.h>
#include <string.h>

/* ---- where libcupti is looked for ----------------------------------------------------------- */

static const char *const cupti_names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
#define NNAMES (sizeof cupti_names / sizeof cupti_names[0])

struct paths {
    char (*out)[PATH_MAX];
    size_t n, max;
};

static void add_path(struct paths *p, const char *dir, size_t dirlen, const char *tail)
{
    if (p->n >= p->max)
        return;
    char buf[PATH_MAX];
    int k = snprintf(buf, sizeof buf, "%.*s%s", (int)dirlen, dir, tail);
    if (k < 0 || (size_t)k >= sizeof buf)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->out[i], buf))
            return;
    memcpy(p->out[p->n++], buf, (size_t)k + 1);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Each candidate name in dir (dirlen bytes of it, ending with '/'). */
static void add_names(struct paths *p, const char *dir, size_t dirlen)
{
    for (size_t i = 0; i < NNAMES; i++)
        add_path(p, dir, dirlen, cupti_names[i]);
}

/* The site-packages (or dist-packages) folder a path lies in, with its trailing '/': its
 * length, 0 when none. */
static size_t packages_prefix(const char *path)
{
    static const char *const marks[] = {"/site-packages/", "/dist-packages/"};
    for (size_t i = 0; i < 2; i++) {
        const char *m = strstr(path, marks[i]);
        if (m)
            return (size_t)(m - path) + strlen(marks[i]);
    }
    return 0;
}

size_t cupti_search_paths(const struct cupti_search *in, char (*out)[PATH_MAX], size_t max)
{
    struct paths p = {out, 0, max};
    /* (1) already loaded */
    for (size_t i = 0; i < in->nloaded; i++)
        if (in->loaded[i][0] == '/' && !strncmp(base_name(in->loaded[i]), "libcupti.so", 11))
            add_path(&p, in->loaded[i], strlen(in->loaded[i]), "");
    /* (2) beside the runtime in use */
    for (size_t i = 0; i < in->nloaded; i++)
        if (in->loaded[i][0] == '/' && !strncmp(base_name(in->loaded[i]), "libcudart.so", 12))
            add_names(&p, in->loaded[i], (size_t)(base_name(in->loaded[i]) - in->loaded[i]));
    /* (3) the nvidia CUPTI wheel next to any loaded object's package folder */
    for (size_t i = 0; i < in->nloaded; i++) {
        size_t k = in->loaded[i][0] == '/' ? packages_prefix(in->loaded[i]) : 0;
        if (k == 0)
            continue;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%.*snvidia/cuda_cupti/lib/", (int)k, in->loaded[i]) < (int)sizeof dir)
            add_names(&p, dir, strlen(dir));
        if (snprintf(dir, sizeof dir, "%.*snvidia/cu13/lib/", (int)k, in->loaded[i]) < (int)sizeof dir)
            add_path(&p, dir, strlen(dir), "libcupti.so.13");
    }
    /* (4) the toolkit */
    const char *home = in->cuda_home ? in->cuda_home : "/usr/local/cuda";
    if (home[0] == '/') {
        size_t n = strlen(home);
        while (n > 1 && home[n - 1] == '/')
            n--;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%.*s/lib64/", (int)n, home) < (int)sizeof dir)
            add_names(&p, dir, strlen(dir));
        if (snprintf(dir, sizeof dir, "%.*s/extras/CUPTI/lib64/", (int)n, home) < (int)sizeof dir)
            add_names(&p, dir, strlen(dir));
    }
    /* (5) the loader's own search (LD_LIBRARY_PATH, its cache, the system folders) */
    add_path(&p, "", 0, "libcupti.so.13");
    add_path(&p, "", 0, "libcupti.so");
    return p.n;
}

/* ---- which calls are syncs ------------------------------------------------------------------ */

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
    R_D_MEMSET,   /* cuMemsetD8/16/32: sync on pinned or managed memory */
    R_D_FREE,     /* cuMemFree: a non-zero pointer */
    R_D_FREEHOST, /* cuMemFreeHost: a non-NULL pointer */
    R_R_COPY,     /* cudaMemcpy*: (dst, src, count, kind[, stream]) */
    R_R_2D,       /* cudaMemcpy2D*: (dst, dpitch, src, spitch, width, height, kind[, stream]) */
    R_R_3D,       /* cudaMemcpy3D*: (const cudaMemcpy3DParms *[, stream]) */
    R_R_TOSYM,    /* cudaMemcpyToSymbol*: (symbol, src, count, offset, kind[, stream]) */
    R_R_FROMSYM,  /* cudaMemcpyFromSymbol*: (dst, symbol, count, offset, kind[, stream]) */
    R_R_MEMSET,   /* cudaMemset: sync on pinned or managed memory */
    R_R_FREE,     /* cudaFree, cudaFreeHost, cudaFreeArray: a non-NULL first param */
};

struct sync_rule {
    uint32_t cbid;
    unsigned char rule;
    bool async;
    unsigned char elem; /* memset element bytes */
};

#define D(name, rule, async) {CUPTI_DRIVER_TRACE_CBID_##name, rule, async, 1}
#define DM(name, elem) {CUPTI_DRIVER_TRACE_CBID_##name, R_D_MEMSET, false, elem}
static const struct sync_rule driver_rules[] = {
    D(cuStreamSynchronize, R_STREAM, false), D(cuStreamSynchronize_ptsz, R_STREAM, false),
    D(cuCtxSynchronize, R_CONTEXT, false), D(cuCtxSynchronize_v2, R_CONTEXT, false),
    D(cuEventSynchronize, R_EVENT, false),
    D(cuMemcpyDtoH_v2, R_D_DTOH, false), D(cuMemcpyDtoH_v2_ptds, R_D_DTOH, false),
    D(cuMemcpyDtoHAsync_v2, R_D_DTOH, true), D(cuMemcpyDtoHAsync_v2_ptsz, R_D_DTOH, true),
    D(cuMemcpyHtoD_v2, R_D_HTOD, false), D(cuMemcpyHtoD_v2_ptds, R_D_HTOD, false),
    D(cuMemcpyHtoDAsync_v2, R_D_HTOD, true), D(cuMemcpyHtoDAsync_v2_ptsz, R_D_HTOD, true),
    D(cuMemcpyAtoH_v2, R_D_ATOH, false), D(cuMemcpyAtoH_v2_ptds, R_D_ATOH, false),
    D(cuMemcpyAtoHAsync_v2, R_D_ATOH, true), D(cuMemcpyAtoHAsync_v2_ptsz, R_D_ATOH, true),
    D(cuMemcpyHtoA_v2, R_D_HTOA, false), D(cuMemcpyHtoA_v2_ptds, R_D_HTOA, false),
    D(cuMemcpyHtoAAsync_v2, R_D_HTOA, true), D(cuMemcpyHtoAAsync_v2_ptsz, R_D_HTOA, true),
    D(cuMemcpy, R_D_ANY, false), D(cuMemcpy_ptds, R_D_ANY, false),
    D(cuMemcpyAsync, R_D_ANY, true), D(cuMemcpyAsync_ptsz, R_D_ANY, true),
    D(cuMemcpy2D_v2, R_D_2D, false), D(cuMemcpy2D_v2_ptds, R_D_2D, false),
    D(cuMemcpy2DUnaligned_v2, R_D_2D, false), D(cuMemcpy2DUnaligned_v2_ptds, R_D_2D, false),
    D(cuMemcpy2DAsync_v2, R_D_2D, true), D(cuMemcpy2DAsync_v2_ptsz, R_D_2D, true),
    D(cuMemcpy3D_v2, R_D_3D, false), D(cuMemcpy3D_v2_ptds, R_D_3D, false),
    D(cuMemcpy3DAsync_v2, R_D_3D, true), D(cuMemcpy3DAsync_v2_ptsz, R_D_3D, true),
    DM(cuMemsetD8_v2, 1), DM(cuMemsetD8_v2_ptds, 1), DM(cuMemsetD16_v2, 2),
    DM(cuMemsetD16_v2_ptds, 2), DM(cuMemsetD32_v2, 4), DM(cuMemsetD32_v2_ptds, 4),
    D(cuMemFree_v2, R_D_FREE, false), D(cuMemFreeHost, R_D_FREEHOST, false),
};
#undef D
#undef DM

#define R(name, rule, async) {CUPTI_RUNTIME_TRACE_CBID_##name, rule, async, 1}
static const struct sync_rule runtime_rules[] = {
    R(cudaStreamSynchronize_v3020, R_STREAM, false), R(cudaStreamSynchronize_ptsz_v7000, R_STREAM, false),
    R(cudaDeviceSynchronize_v3020, R_CONTEXT, false), R(cudaThreadSynchronize_v3020, R_CONTEXT, false),
    R(cudaEventSynchronize_v3020, R_EVENT, false),
    R(cudaMemcpy_v3020, R_R_COPY, false), R(cudaMemcpy_ptds_v7000, R_R_COPY, false),
    R(cudaMemcpyAsync_v3020, R_R_COPY, true), R(cudaMemcpyAsync_ptsz_v7000, R_R_COPY, true),
    R(cudaMemcpy2D_v3020, R_R_2D, false), R(cudaMemcpy2D_ptds_v7000, R_R_2D, false),
    R(cudaMemcpy2DAsync_v3020, R_R_2D, true), R(cudaMemcpy2DAsync_ptsz_v7000, R_R_2D, true),
    R(cudaMemcpy3D_v3020, R_R_3D, false), R(cudaMemcpy3D_ptds_v7000, R_R_3D, false),
    R(cudaMemcpy3DAsync_v3020, R_R_3D, true), R(cudaMemcpy3DAsync_ptsz_v7000, R_R_3D, true),
    R(cudaMemcpyToSymbol_v3020, R_R_TOSYM, false), R(cudaMemcpyToSymbol_ptds_v7000, R_R_TOSYM, false),
    R(cudaMemcpyToSymbolAsync_v3020, R_R_TOSYM, true), R(cudaMemcpyToSymbolAsync_ptsz_v7000, R_R_TOSYM, true),
    R(cudaMemcpyFromSymbol_v3020, R_R_FROMSYM, false), R(cudaMemcpyFromSymbol_ptds_v7000, R_R_FROMSYM, false),
    R(cudaMemcpyFromSymbolAsync_v3020, R_R_FROMSYM, true), R(cudaMemcpyFromSymbolAsync_ptsz_v7000, R_R_FROMSYM, true),
    R(cudaMemset_v3020, R_R_MEMSET, false), R(cudaMemset_ptds_v7000, R_R_MEMSET, false),
    R(cudaFree_v3020, R_R_FREE, false), R(cudaFreeHost_v3020, R_R_FREE, false),
    R(cudaFreeArray_v3020, R_R_FREE, false),
};
#undef R

size_t cupti_sync_cbids(uint32_t domain, const uint32_t **cbids)
{
    static uint32_t driver_ids[sizeof driver_rules / sizeof driver_rules[0]];
    static uint32_t runtime_ids[sizeof runtime_rules / sizeof runtime_rules[0]];
    const struct sync_rule *rules = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_rules : runtime_rules;
    size_t n = domain == CUPTI_CB_DOMAIN_DRIVER_API ? sizeof driver_rules / sizeof driver_rules[0]
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

static bool is_host(enum cupti_mem m)
{
    return m == CUPTI_MEM_PINNED || m == CUPTI_MEM_PAGEABLE;
}

static enum cupti_mem ask(cupti_mem_fn mem, const void *p)
{
    return mem && p ? mem(p) : CUPTI_MEM_UNKNOWN;
}

/* A copy between host memory and the device: synchronous in its synchronous form, and in its
 * Async form when the host memory is pageable (staged through a bounce buffer). */
static bool host_copy(bool async, cupti_mem_fn mem, const void *host)
{
    return !async || ask(mem, host) == CUPTI_MEM_PAGEABLE;
}

/* A copy whose ends are known only by their memory (unified addressing, cudaMemcpyDefault, the
 * driver's CU_MEMORYTYPE_UNIFIED). */
static bool any_copy(bool async, enum cupti_mem dk, enum cupti_mem sk, enum copy_dir *dir)
{
    if (dk == CUPTI_MEM_UNKNOWN || sk == CUPTI_MEM_UNKNOWN) {
        *dir = DIR_NONE;
        return !async; /* the synchronous forms are, bar device to device: assume they are */
    }
    *dir = is_host(dk) ? (is_host(sk) ? DIR_H2H : DIR_D2H) : (is_host(sk) ? DIR_H2D : DIR_D2D);
    if (*dir == DIR_D2D)
        return false;
    if (*dir == DIR_H2H || !async)
        return true;
    return (*dir == DIR_H2D ? sk : dk) == CUPTI_MEM_PAGEABLE;
}

/* One end of a driver 2D/3D copy, by its CUmemorytype. */
static enum cupti_mem driver_end(cupti_mem_fn mem, CUmemorytype type, const void *host, CUdeviceptr dev)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: {
        enum cupti_mem m = ask(mem, host);
        return m == CUPTI_MEM_PINNED ? m : CUPTI_MEM_PAGEABLE;
    }
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: return CUPTI_MEM_DEVICE;
    case CU_MEMORYTYPE_UNIFIED: return ask(mem, (const void *)(uintptr_t)dev);
    default: return CUPTI_MEM_UNKNOWN;
    }
}

/* A runtime copy by its cudaMemcpyKind (the shim's rule, shim/classify.c). */
static bool runtime_copy(enum cudaMemcpyKind kind, const void *dst, const void *src, bool async,
                         cupti_mem_fn mem, enum copy_dir *dir)
{
    switch (kind) {
    case cudaMemcpyHostToDevice: *dir = DIR_H2D; return host_copy(async, mem, src);
    case cudaMemcpyDeviceToHost: *dir = DIR_D2H; return host_copy(async, mem, dst);
    case cudaMemcpyDeviceToDevice: *dir = DIR_D2D; return false;
    case cudaMemcpyHostToHost: *dir = DIR_H2H; return true;
    default: return any_copy(async, ask(mem, dst), ask(mem, src), dir);
    }
}

/* The 3D forms: an array end is device memory, else the pointer's kind says. */
static bool runtime_copy_3d(const struct cudaMemcpy3DParms *p, bool async, cupti_mem_fn mem,
                            enum copy_dir *dir, uint64_t *bytes)
{
    if (!p)
        return false;
    *bytes = (uint64_t)p->extent.width * p->extent.height * p->extent.depth;
    const void *dst = p->dstArray ? NULL : p->dstPtr.ptr, *src = p->srcArray ? NULL : p->srcPtr.ptr;
    if (p->kind == cudaMemcpyDefault && (p->dstArray || p->srcArray)) {
        enum cupti_mem dk = p->dstArray ? CUPTI_MEM_DEVICE : ask(mem, dst);
        enum cupti_mem sk = p->srcArray ? CUPTI_MEM_DEVICE : ask(mem, src);
        return any_copy(async, dk, sk, dir);
    }
    return runtime_copy(p->kind, dst, src, async, mem, dir);
}

static bool pinned_or_managed(cupti_mem_fn mem, const void *p)
{
    enum cupti_mem m = ask(mem, p);
    return m == CUPTI_MEM_PINNED || m == CUPTI_MEM_MANAGED;
}

static bool classify_driver_copy(const struct sync_rule *r, const void *params, cupti_mem_fn mem,
                                 struct sync_call *c)
{
    switch (r->rule) {
    case R_D_DTOH: {
        const cuMemcpyDtoHAsync_v2_params *p = params;
        c->dir = DIR_D2H;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return host_copy(r->async, mem, p->dstHost);
    }
    case R_D_HTOD: {
        const cuMemcpyHtoDAsync_v2_params *p = params;
        c->dir = DIR_H2D;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return host_copy(r->async, mem, p->srcHost);
    }
    case R_D_ATOH: {
        const cuMemcpyAtoHAsync_v2_params *p = params;
        c->dir = DIR_D2H;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return host_copy(r->async, mem, p->dstHost);
    }
    case R_D_HTOA: {
        const cuMemcpyHtoAAsync_v2_params *p = params;
        c->dir = DIR_H2D;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return host_copy(r->async, mem, p->srcHost);
    }
    case R_D_ANY: {
        const cuMemcpyAsync_params *p = params;
        c->bytes = p->ByteCount;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        return any_copy(r->async, ask(mem, (const void *)(uintptr_t)p->dst),
                        ask(mem, (const void *)(uintptr_t)p->src), &c->dir);
    }
    case R_D_2D: {
        const cuMemcpy2DAsync_v2_params *p = params;
        const CUDA_MEMCPY2D *m = p->pCopy;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        if (!m)
            return false;
        c->bytes = (uint64_t)m->WidthInBytes * m->Height;
        return any_copy(r->async, driver_end(mem, m->dstMemoryType, m->dstHost, m->dstDevice),
                        driver_end(mem, m->srcMemoryType, m->srcHost, m->srcDevice), &c->dir);
    }
    case R_D_3D: {
        const cuMemcpy3DAsync_v2_params *p = params;
        const CUDA_MEMCPY3D *m = p->pCopy;
        c->stream = r->async ? (uintptr_t)p->hStream : 0;
        if (!m)
            return false;
        c->bytes = (uint64_t)m->WidthInBytes * m->Height * m->Depth;
        return any_copy(r->async, driver_end(mem, m->dstMemoryType, m->dstHost, m->dstDevice),
                        driver_end(mem, m->srcMemoryType, m->srcHost, m->srcDevice), &c->dir);
    }
    default: return false;
    }
}

static bool classify_runtime_copy(const struct sync_rule *r, const void *params, cupti_mem_fn mem,
                                  struct sync_call *c)
{
    switch (r->rule) {
    case R_R_COPY: {
        const cudaMemcpyAsync_v3020_params *p = params;
        c->bytes = p->count;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return runtime_copy(p->kind, p->dst, p->src, r->async, mem, &c->dir);
    }
    case R_R_2D: {
        const cudaMemcpy2DAsync_v3020_params *p = params;
        c->bytes = (uint64_t)p->width * p->height;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return runtime_copy(p->kind, p->dst, p->src, r->async, mem, &c->dir);
    }
    case R_R_3D: {
        const cudaMemcpy3DAsync_v3020_params *p = params;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        return runtime_copy_3d(p->p, r->async, mem, &c->dir, &c->bytes);
    }
    case R_R_TOSYM: { /* the symbol is device memory */
        const cudaMemcpyToSymbolAsync_v3020_params *p = params;
        c->bytes = p->count;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        if (p->kind == cudaMemcpyDeviceToDevice ||
            (p->kind == cudaMemcpyDefault && !is_host(ask(mem, p->src)))) {
            c->dir = DIR_D2D;
            return false;
        }
        c->dir = DIR_H2D;
        return host_copy(r->async, mem, p->src);
    }
    case R_R_FROMSYM: {
        const cudaMemcpyFromSymbolAsync_v3020_params *p = params;
        c->bytes = p->count;
        c->stream = r->async ? (uintptr_t)p->stream : 0;
        if (p->kind == cudaMemcpyDeviceToDevice ||
            (p->kind == cudaMemcpyDefault && !is_host(ask(mem, p->dst)))) {
            c->dir = DIR_D2D;
            return false;
        }
        c->dir = DIR_D2H;
        return host_copy(r->async, mem, p->dst);
    }
    default: return false;
    }
}

bool cupti_classify(uint32_t domain, uint32_t cbid, const void *params, cupti_mem_fn mem,
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
        return pinned_or_managed(mem, (const void *)(uintptr_t)p8->dstDevice);
    }
    case R_D_FREE:
        return params && ((const cuMemFree_v2_params *)params)->dptr != 0;
    case R_D_FREEHOST:
        return params && ((const cuMemFreeHost_params *)params)->p != NULL;
    case R_R_MEMSET: {
        const cudaMemset_v3020_params *p = params;
        if (!p)
            return false;
        c->bytes = p->count;
        return pinned_or_managed(mem, p->devPtr);
    }
    case R_R_FREE: /* cudaFree(void *), cudaFreeHost(void *), cudaFreeArray(cudaArray_t) */
        return params && ((const cudaFree_v3020_params *)params)->devPtr != NULL;
    default:
        if (!params)
            return false;
        return domain == CUPTI_CB_DOMAIN_DRIVER_API ? classify_driver_copy(r, params, mem, c)
                                                    : classify_runtime_copy(r, params, mem, c);
    }
}

/* ---- names ----------------------------------------------------------------------------------- */

void cupti_api_name(uint32_t domain, const char *function_name, char *out, size_t len)
{
    if (len == 0)
        return;
    const char *name = function_name && *function_name ? function_name : "?";
    size_t n = strlen(name);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        /* "_v" and four or more digits at the end: CUPTI's version suffix, not the name */
        size_t d = n;
        while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
            d--;
        if (n - d >= 4 && d >= 3 && name[d - 1] == 'v' && name[d - 2] == '_')
            n = d - 2;
    }
    if (n >= len)
        n = len - 1;
    memcpy(out, name, n);
    out[n] = 0;
}
