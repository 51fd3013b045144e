/* Unit tests: the one set of sync rules (entry/sync_rules.c) as both entry layers use it: the
 * runtime entry points (by cudaMemcpyKind and pointer kinds) and CUPTI's callbacks (by params
 * structs) give the same answer for the same call. Pinned to CUDA's "API synchronization
 * behavior" (CUDA Runtime API, section 2): the synchronous memcpy forms return once the copy is
 * done for every direction but "from device memory to device memory, [where] no host-side
 * synchronization is performed"; the Async forms are synchronous with pageable host memory and
 * host to host; cudaMemcpyDefault infers the direction from the pointer values (Unified
 * Addressing). So a synchronous cudaMemcpyDefault whose pointer kinds cannot be told is a sync
 * (it cannot be shown to be device to device), and its Async form is not. Also which driver and
 * runtime calls CUPTI sees are syncs, from the real params structs, with a fake memory oracle. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cupti.h>
#include <string.h>

#include "entry/sync_rules.h"

/* ---- calls seen through CUPTI, by their params structs ---------------------------------------- */

static char dev_mem[64], pinned_mem[64], pageable_mem[64], managed_mem[64];

static enum mem_kind fake_memory(const void *p)
{
    const char *c = p;
    if (c >= dev_mem && c < dev_mem + 64)
        return MEM_DEVICE;
    if (c >= pinned_mem && c < pinned_mem + 64)
        return MEM_PINNED;
    if (c >= managed_mem && c < managed_mem + 64)
        return MEM_MANAGED;
    if (c >= pageable_mem && c < pageable_mem + 64)
        return MEM_PAGEABLE;
    return MEM_UNKNOWN;
}

#define DEV(p) ((CUdeviceptr)(uintptr_t)(p))
#define DRV CUPTI_CB_DOMAIN_DRIVER_API
#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define D_ID(name) CUPTI_DRIVER_TRACE_CBID_##name
#define R_ID(name) CUPTI_RUNTIME_TRACE_CBID_##name

static bool classify(uint32_t domain, uint32_t cbid, const void *params, struct sync_call *c)
{
    memset(c, 0, sizeof *c);
    return sync_rules_cupti(domain, cbid, params, fake_memory, c);
}

static void test_driver_syncs(void **state)
{
    (void)state;
    struct sync_call c;
    cuStreamSynchronize_params s = {(CUstream)(uintptr_t)0x1234};
    assert_true(classify(DRV, D_ID(cuStreamSynchronize_ptsz), &s, &c));
    assert_int_equal(c.stream, 0x1234);
    assert_true(classify(DRV, D_ID(cuCtxSynchronize), NULL, &c));
    cuEventSynchronize_params e = {NULL};
    assert_true(classify(DRV, D_ID(cuEventSynchronize), &e, &c));
    /* not in the sync family: no rule, never a sync */
    assert_false(classify(DRV, D_ID(cuLaunchKernel), NULL, &c));
    assert_false(classify(DRV, D_ID(cuStreamQuery), &s, &c));
}

static void test_driver_copies(void **state)
{
    (void)state;
    struct sync_call c;
    cuMemcpyDtoHAsync_v2_params d2h = {pageable_mem, DEV(dev_mem), 48, (CUstream)(uintptr_t)7};
    assert_true(classify(DRV, D_ID(cuMemcpyDtoH_v2), &d2h, &c)); /* the synchronous form */
    assert_int_equal(c.dir, DIR_D2H);
    assert_int_equal(c.bytes, 48);
    assert_int_equal(c.stream, 0);
    assert_true(classify(DRV, D_ID(cuMemcpyDtoHAsync_v2_ptsz), &d2h, &c)); /* pageable */
    assert_int_equal(c.stream, 7);
    d2h.dstHost = pinned_mem;
    assert_false(classify(DRV, D_ID(cuMemcpyDtoHAsync_v2), &d2h, &c)); /* pinned: queued */
    assert_true(classify(DRV, D_ID(cuMemcpyDtoH_v2_ptds), &d2h, &c));

    cuMemcpyHtoDAsync_v2_params h2d = {DEV(dev_mem), pageable_mem, 16, NULL};
    assert_true(classify(DRV, D_ID(cuMemcpyHtoDAsync_v2), &h2d, &c));
    assert_int_equal(c.dir, DIR_H2D);
    h2d.srcHost = pinned_mem;
    assert_false(classify(DRV, D_ID(cuMemcpyHtoDAsync_v2_ptsz), &h2d, &c));
    assert_true(classify(DRV, D_ID(cuMemcpyHtoD_v2), &h2d, &c));

    /* cuMemcpy: unified addresses, the pointers say */
    cuMemcpyAsync_params any = {DEV(dev_mem), DEV(managed_mem), 8, NULL};
    assert_false(classify(DRV, D_ID(cuMemcpy), &any, &c)); /* device to device */
    assert_int_equal(c.dir, DIR_D2D);
    any.dst = DEV(pageable_mem);
    any.src = DEV(dev_mem);
    assert_true(classify(DRV, D_ID(cuMemcpyAsync), &any, &c)); /* to pageable memory */
    assert_int_equal(c.dir, DIR_D2H);
    any.dst = DEV(pinned_mem);
    assert_false(classify(DRV, D_ID(cuMemcpyAsync_ptsz), &any, &c));
    assert_true(classify(DRV, D_ID(cuMemcpy_ptds), &any, &c));
    any.dst = DEV(0x10); /* unknown: the synchronous form is assumed a sync, the Async one not */
    assert_true(classify(DRV, D_ID(cuMemcpy), &any, &c));
    assert_false(classify(DRV, D_ID(cuMemcpyAsync), &any, &c));

    /* 2D/3D: the CUmemorytype of each end */
    CUDA_MEMCPY2D m2 = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = DEV(dev_mem),
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = pageable_mem,
                        .WidthInBytes = 4,
                        .Height = 3};
    cuMemcpy2DAsync_v2_params p2 = {&m2, NULL};
    assert_true(classify(DRV, D_ID(cuMemcpy2DAsync_v2), &p2, &c));
    assert_int_equal(c.bytes, 12);
    m2.dstHost = pinned_mem;
    assert_false(classify(DRV, D_ID(cuMemcpy2DAsync_v2_ptsz), &p2, &c));
    assert_true(classify(DRV, D_ID(cuMemcpy2D_v2), &p2, &c));
    m2.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    assert_false(classify(DRV, D_ID(cuMemcpy2D_v2), &p2, &c));
    CUDA_MEMCPY3D m3 = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = pageable_mem,
                        .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                        .dstDevice = DEV(dev_mem),
                        .WidthInBytes = 2,
                        .Height = 2,
                        .Depth = 2};
    cuMemcpy3DAsync_v2_params p3 = {&m3, NULL};
    assert_true(classify(DRV, D_ID(cuMemcpy3DAsync_v2), &p3, &c));
    assert_int_equal(c.bytes, 8);
    assert_int_equal(c.dir, DIR_H2D);

    /* device to device copies are not even enabled */
    const uint32_t *ids;
    size_t n = sync_rules_cupti_cbids(DRV, &ids);
    bool has_stream = false;
    for (size_t i = 0; i < n; i++) {
        assert_int_not_equal(ids[i], D_ID(cuMemcpyDtoD_v2));
        assert_int_not_equal(ids[i], D_ID(cuMemcpyDtoDAsync_v2));
        assert_int_not_equal(ids[i], D_ID(cuLaunchKernel));
        has_stream |= ids[i] == D_ID(cuStreamSynchronize);
    }
    assert_true(has_stream);
}

static void test_driver_frees_and_memsets(void **state)
{
    (void)state;
    struct sync_call c;
    cuMemFree_v2_params f = {0};
    assert_false(classify(DRV, D_ID(cuMemFree_v2), &f, &c));
    f.dptr = DEV(dev_mem);
    assert_true(classify(DRV, D_ID(cuMemFree_v2), &f, &c));
    cuMemFreeHost_params fh = {NULL};
    assert_false(classify(DRV, D_ID(cuMemFreeHost), &fh, &c));
    fh.p = pinned_mem;
    assert_true(classify(DRV, D_ID(cuMemFreeHost), &fh, &c));
    cuMemsetD32_v2_params m = {DEV(pinned_mem), 0, 5};
    assert_true(classify(DRV, D_ID(cuMemsetD32_v2), &m, &c));
    assert_int_equal(c.bytes, 20);
    m.dstDevice = DEV(managed_mem);
    assert_true(classify(DRV, D_ID(cuMemsetD32_v2_ptds), &m, &c));
    m.dstDevice = DEV(dev_mem);
    assert_false(classify(DRV, D_ID(cuMemsetD32_v2), &m, &c));
}

static void test_runtime_calls(void **state)
{
    (void)state;
    struct sync_call c;
    cudaMemcpyAsync_v3020_params cp = {pageable_mem, dev_mem, 32, cudaMemcpyDeviceToHost, NULL};
    assert_true(classify(RT, R_ID(cudaMemcpy_v3020), &cp, &c));
    assert_int_equal(c.dir, DIR_D2H);
    assert_true(classify(RT, R_ID(cudaMemcpyAsync_ptsz_v7000), &cp, &c));
    cp.dst = pinned_mem;
    assert_false(classify(RT, R_ID(cudaMemcpyAsync_v3020), &cp, &c));
    cp.kind = cudaMemcpyDeviceToDevice;
    assert_false(classify(RT, R_ID(cudaMemcpy_ptds_v7000), &cp, &c));
    cp.kind = cudaMemcpyDefault; /* the pointers say: device to pageable host */
    cp.dst = pageable_mem;
    assert_true(classify(RT, R_ID(cudaMemcpyAsync_v3020), &cp, &c));
    assert_int_equal(c.dir, DIR_D2H);
    cp.kind = cudaMemcpyHostToHost;
    assert_true(classify(RT, R_ID(cudaMemcpyAsync_v3020), &cp, &c));
    cudaMemcpyFromSymbol_v3020_params fs = {pageable_mem, dev_mem, 4, 0, cudaMemcpyDeviceToDevice};
    assert_false(classify(RT, R_ID(cudaMemcpyFromSymbol_v3020), &fs, &c));
    fs.kind = cudaMemcpyDeviceToHost;
    assert_true(classify(RT, R_ID(cudaMemcpyFromSymbol_v3020), &fs, &c));
    cudaFree_v3020_params fr = {NULL};
    assert_false(classify(RT, R_ID(cudaFree_v3020), &fr, &c));
    fr.devPtr = dev_mem;
    assert_true(classify(RT, R_ID(cudaFreeHost_v3020), &fr, &c));
    cudaMemset_v3020_params ms = {pinned_mem, 0, 9};
    assert_true(classify(RT, R_ID(cudaMemset_v3020), &ms, &c));
    ms.devPtr = dev_mem;
    assert_false(classify(RT, R_ID(cudaMemset_ptds_v7000), &ms, &c));
    assert_true(classify(RT, R_ID(cudaDeviceSynchronize_v3020), NULL, &c));
    assert_true(classify(RT, R_ID(cudaDeviceReset_v3020), NULL, &c)); /* waits for the work */
    assert_false(classify(RT, R_ID(cudaLaunchKernel_v7000), NULL, &c));
    assert_false(classify(CUPTI_CB_DOMAIN_RESOURCE, 1, NULL, &c));
}

/* ---- one rule for both entry layers ----------------------------------------------------------- */

/* No runtime or driver to ask (cudaPointerGetAttributes missing or failing). */
static enum mem_kind nobody_knows(const void *p)
{
    (void)p;
    return MEM_UNKNOWN;
}

static int asked;
static enum mem_kind counting_memory(const void *p)
{
    asked++;
    return fake_memory(p);
}

/* The same copy through CUPTI's runtime-domain params: the answer and direction must agree. */
static bool via_cupti(enum cudaMemcpyKind kind, void *dst, const void *src, bool async,
                      mem_oracle ask, enum copy_dir *dir)
{
    cudaMemcpyAsync_v3020_params p = {dst, src, 8, kind, NULL};
    struct sync_call c;
    memset(&c, 0, sizeof c);
    uint32_t cbid = async ? CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020
                          : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020;
    bool sync = sync_rules_cupti(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &p, ask, &c);
    *dir = c.dir;
    return sync;
}

static bool both(enum cudaMemcpyKind kind, void *dst, const void *src, bool async, mem_oracle ask,
                 enum copy_dir *dir)
{
    enum copy_dir d1 = DIR_NONE, d2 = DIR_NONE;
    bool a = sync_rules_runtime_copy(kind, dst, src, async, ask, &d1);
    bool b = via_cupti(kind, dst, src, async, ask, &d2);
    assert_int_equal(a, b);
    assert_int_equal(d1, d2);
    *dir = d1;
    return a;
}

static void test_memcpy_default_with_unknown_pointers(void **state)
{
    (void)state;
    enum copy_dir dir;
    char a[8] = "", b[8] = "";
    /* the synchronous form: a sync, direction unknown */
    assert_true(both(cudaMemcpyDefault, a, b, false, nobody_knows, &dir));
    assert_int_equal(dir, DIR_NONE);
    /* its Async form: not shown to touch pageable memory, so not a sync */
    assert_false(both(cudaMemcpyDefault, a, b, true, nobody_knows, &dir));
    assert_int_equal(dir, DIR_NONE);
    /* one end known to be device memory, the other unknown: still not shown device to device */
    assert_true(both(cudaMemcpyDefault, dev_mem, b, false, fake_memory, &dir));
    assert_int_equal(dir, DIR_NONE);
    assert_false(both(cudaMemcpyDefault, dev_mem, b, true, fake_memory, &dir));
    /* a pageable end and an unknown one: Async is staged (to the device) or host to host: a sync */
    assert_true(both(cudaMemcpyDefault, pageable_mem, b, true, fake_memory, &dir));
    /* a pinned end and an unknown one: maybe a queued device copy, so not */
    assert_false(both(cudaMemcpyDefault, pinned_mem, b, true, fake_memory, &dir));
    /* both ends known to be device (or managed) memory: never a sync */
    assert_false(both(cudaMemcpyDefault, dev_mem, managed_mem, false, fake_memory, &dir));
    assert_int_equal(dir, DIR_D2D);
}

static void test_copies_by_kind(void **state)
{
    (void)state;
    enum copy_dir dir;
    /* device to device: never, in either form, whatever the pointers */
    assert_false(
        both(cudaMemcpyDeviceToDevice, pageable_mem, pageable_mem, false, fake_memory, &dir));
    assert_int_equal(dir, DIR_D2D);
    assert_false(both(cudaMemcpyDeviceToDevice, dev_mem, dev_mem, true, fake_memory, &dir));
    /* host to host: always */
    assert_true(both(cudaMemcpyHostToHost, pinned_mem, pinned_mem, true, fake_memory, &dir));
    assert_int_equal(dir, DIR_H2H);
    /* with the device: the synchronous form always; Async only with pageable host memory */
    assert_true(both(cudaMemcpyHostToDevice, dev_mem, pinned_mem, false, fake_memory, &dir));
    assert_int_equal(dir, DIR_H2D);
    assert_false(both(cudaMemcpyHostToDevice, dev_mem, pinned_mem, true, fake_memory, &dir));
    assert_true(both(cudaMemcpyHostToDevice, dev_mem, pageable_mem, true, fake_memory, &dir));
    assert_true(both(cudaMemcpyDeviceToHost, pageable_mem, dev_mem, true, fake_memory, &dir));
    assert_int_equal(dir, DIR_D2H);
    assert_false(both(cudaMemcpyDeviceToHost, pinned_mem, dev_mem, true, fake_memory, &dir));
    /* an explicit direction whose host end cannot be told: synchronous form yes, Async no */
    assert_true(both(cudaMemcpyDeviceToHost, NULL, dev_mem, false, nobody_knows, &dir));
    assert_int_equal(dir, DIR_D2H);
    assert_false(both(cudaMemcpyDeviceToHost, NULL, dev_mem, true, nobody_knows, &dir));
    /* the synchronous forms need no pointer question at all */
    asked = 0;
    assert_true(sync_rules_runtime_copy(cudaMemcpyHostToDevice, dev_mem, pageable_mem, false,
                                        counting_memory, &dir));
    assert_int_equal(asked, 0);
}

static void test_symbols_and_3d(void **state)
{
    (void)state;
    enum copy_dir dir;
    /* the symbol is device memory: with cudaMemcpyDefault the other end decides */
    assert_false(sync_rules_from_symbol(cudaMemcpyDefault, dev_mem, false, fake_memory, &dir));
    assert_int_equal(dir, DIR_D2D);
    assert_true(sync_rules_from_symbol(cudaMemcpyDefault, pinned_mem, false, fake_memory, &dir));
    assert_int_equal(dir, DIR_D2H);
    assert_false(sync_rules_from_symbol(cudaMemcpyDefault, pinned_mem, true, fake_memory, &dir));
    assert_true(sync_rules_from_symbol(cudaMemcpyDefault, NULL, false, nobody_knows, &dir));
    assert_true(sync_rules_to_symbol(cudaMemcpyDefault, pageable_mem, true, fake_memory, &dir));
    assert_int_equal(dir, DIR_H2D);
    assert_false(
        sync_rules_to_symbol(cudaMemcpyDeviceToDevice, pageable_mem, false, fake_memory, &dir));
    /* 3D: an array end is device memory; bytes count a zero height or depth as one */
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.kind = cudaMemcpyDefault;
    p.srcArray = (cudaArray_t)(uintptr_t)0x10;
    p.dstPtr.ptr = pageable_mem;
    p.extent.width = 16;
    uint64_t bytes = 0;
    assert_true(sync_rules_copy_3d(&p, true, fake_memory, &dir, &bytes));
    assert_int_equal(dir, DIR_D2H);
    assert_int_equal(bytes, 16);
    p.dstPtr.ptr = dev_mem;
    assert_false(sync_rules_copy_3d(&p, false, fake_memory, &dir, &bytes));
    assert_false(sync_rules_copy_3d(NULL, false, fake_memory, &dir, &bytes));
}

static void test_memsets(void **state)
{
    (void)state;
    assert_true(sync_rules_memset(pinned_mem, false, fake_memory));
    assert_true(sync_rules_memset(managed_mem, false, fake_memory));
    assert_false(sync_rules_memset(dev_mem, false, fake_memory));
    assert_false(sync_rules_memset(pageable_mem, false, fake_memory));
    assert_false(sync_rules_memset(pinned_mem, false, nobody_knows));
    /* the Async forms are always asynchronous with respect to the host, whatever the memory */
    assert_false(sync_rules_memset(pinned_mem, true, fake_memory));
    assert_false(sync_rules_memset(managed_mem, true, fake_memory));
    assert_false(sync_rules_memset(dev_mem, true, fake_memory));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_syncs),
        cmocka_unit_test(test_driver_copies),
        cmocka_unit_test(test_driver_frees_and_memsets),
        cmocka_unit_test(test_runtime_calls),
        cmocka_unit_test(test_memcpy_default_with_unknown_pointers),
        cmocka_unit_test(test_copies_by_kind),
        cmocka_unit_test(test_symbols_and_3d),
        cmocka_unit_test(test_memsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
