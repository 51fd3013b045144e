/* Unit tests: the pure parts of CUPTI's entry layer: where libcupti is looked for and in which
 * order (entry/cupti_load.c), the API names (entry/cupti.c); the skip ranges of
 * collectors/native_stack.c; and the GPU idle-time join of collectors/gpu.c fed with hand-made
 * activity records through fake CUPTI functions. Which CUPTI-seen calls are syncs:
 * test_sync_rules.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <cupti.h>

#include "collectors/gpu.h"
#include "collectors/native_stack.h"
#include "common/clock.h"
#include "entry/cuda_driver.h"
#include "entry/cupti.h"
#include "entry/cupti_load.h"
#include "output/report.h"
#include "output/summary_json.h"
#include "cli/summary_read.h"

/* ---- search order ------------------------------------------------------------------------------ */

static size_t search(const char *const *loaded, size_t n, const char *home, char (*out)[PATH_MAX])
{
    struct cupti_search in = {loaded, n, home};
    return cupti_search_paths(&in, out, CUPTI_CANDIDATES_MAX);
}

static size_t index_of(char (*paths)[PATH_MAX], size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(paths[i], path))
            return i;
    fail_msg("%s is not a candidate", path);
    return n;
}

static void test_search_order(void **state)
{
    (void)state;
    static char out[CUPTI_CANDIDATES_MAX][PATH_MAX];
    const char *loaded[] = {
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
        "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
        "relative/libcudart.so.13",
        "/opt/prof/libcupti.so.12",
    };
    size_t n = search(loaded, 5, "/opt/cuda/", out);
    /* (1) the one already loaded, (2) beside libcudart, (3) the wheel, (4) CUDA_HOME, (5) loader */
    size_t loaded_at = index_of(out, n, "/opt/prof/libcupti.so.12");
    size_t beside = index_of(
        out, n, "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcupti.so.13");
    size_t wheel =
        index_of(out, n, "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
    size_t wheel13 =
        index_of(out, n, "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
    size_t home = index_of(out, n, "/opt/cuda/lib64/libcupti.so.13");
    size_t extras = index_of(out, n, "/opt/cuda/extras/CUPTI/lib64/libcupti.so");
    size_t bare13 = index_of(out, n, "libcupti.so.13");
    size_t bare = index_of(out, n, "libcupti.so");
    assert_int_equal(loaded_at, 0);
    assert_true(loaded_at < beside && beside < wheel && wheel < wheel13 && wheel13 < home);
    assert_true(home < extras && extras < bare13 && bare13 < bare);
    assert_int_equal(bare, n - 1);
    for (size_t i = 0; i < n; i++) {
        /* only the loader's step uses bare names; no relative folder is ever used */
        if (i < bare13)
            assert_true(out[i][0] == '/');
        assert_null(strstr(out[i], "relative/"));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(out[i], out[j]);
    }
}

static void test_search_cuda_home(void **state)
{
    (void)state;
    static char out[CUPTI_CANDIDATES_MAX][PATH_MAX];
    size_t n = search(NULL, 0, NULL, out); /* CUDA_HOME unset: the default toolkit */
    assert_string_equal(out[0], "/usr/local/cuda/lib64/libcupti.so.13");
    index_of(out, n, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
    n = search(NULL, 0, "cuda", out); /* relative: not used */
    assert_int_equal(n, 2);
    assert_string_equal(out[0], "libcupti.so.13");
    assert_string_equal(out[1], "libcupti.so");
    struct cupti_search in = {NULL, 0, "/opt/cuda"};
    assert_int_equal(cupti_search_paths(&in, out, 3), 3); /* the room given is respected */
}

#define DRV CUPTI_CB_DOMAIN_DRIVER_API
#define RT CUPTI_CB_DOMAIN_RUNTIME_API

static void test_api_names(void **state)
{
    (void)state;
    char b[64];
    cupti_api_name(RT, "cudaMemcpy_v3020", b, sizeof b);
    assert_string_equal(b, "cudaMemcpy");
    cupti_api_name(RT, "cudaStreamSynchronize_ptsz_v7000", b, sizeof b);
    assert_string_equal(b, "cudaStreamSynchronize_ptsz");
    cupti_api_name(RT, "cudaMemcpy", b, sizeof b);
    assert_string_equal(b, "cudaMemcpy");
    cupti_api_name(RT, "cudaFoo_v2", b, sizeof b); /* not a CUPTI version suffix */
    assert_string_equal(b, "cudaFoo_v2");
    cupti_api_name(DRV, "cuMemcpyDtoH_v2", b, sizeof b);
    assert_string_equal(b, "cuMemcpyDtoH_v2");
    cupti_api_name(DRV, NULL, b, sizeof b);
    assert_string_equal(b, "?");
    cupti_api_name(DRV, "cuStreamSynchronize", b, 5);
    assert_string_equal(b, "cuSt");
}

/* ---- native stack skip ranges ---------------------------------------------------------------------- */

/* The CUDA major version a libcupti is for, from its file name only. */
static void test_cupti_min_driver(void **state)
{
    (void)state;
    assert_int_equal(cuda_cupti_min_driver("/x/nvidia/cu13/lib/libcupti.so.13"), 13000);
    assert_int_equal(cuda_cupti_min_driver("libcupti.so.12"), 12000);
    assert_int_equal(cuda_cupti_min_driver("/usr/local/cuda/lib64/libcupti.so.13.2.86"), 13000);
    assert_int_equal(cuda_cupti_min_driver("/usr/local/cuda/lib64/libcupti.so"), 0);
    assert_int_equal(cuda_cupti_min_driver("/x/libcupti.so.x"), 0);
    assert_int_equal(cuda_cupti_min_driver("/x/libcupti.so.13x"), 0);
    assert_int_equal(cuda_cupti_min_driver("/x/libcupti.so.0"), 0);
    assert_int_equal(cuda_cupti_min_driver("/x/libcuptix.so.13"), 0);
    assert_int_equal(cuda_cupti_min_driver("/x/libcupti.so.13/other.so"), 0);
}

static void make_dir(const char *root, const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    assert_int_equal(mkdir(path, 0700), 0);
}

/* NVIDIA's kernel driver reports its GPUs as folders of /proc/driver/nvidia/gpus; WSL has
 * /dev/dxg instead. A driver folder without a GPU, or nothing at all, is no GPU. */
static void test_kernel_driver_gpus(void **state)
{
    (void)state;
    char root[] = "/tmp/syncspy-gpus-XXXXXX";
    assert_non_null(mkdtemp(root));
    assert_false(cuda_kernel_driver_has_gpu(root));
    make_dir(root, "proc");
    make_dir(root, "proc/driver");
    make_dir(root, "proc/driver/nvidia");
    assert_false(cuda_kernel_driver_has_gpu(root));
    make_dir(root, "proc/driver/nvidia/gpus");
    assert_false(cuda_kernel_driver_has_gpu(root)); /* the module, no GPU */
    make_dir(root, "proc/driver/nvidia/gpus/0000:01:00.0");
    assert_true(cuda_kernel_driver_has_gpu(root));

    char wsl[] = "/tmp/syncspy-wsl-XXXXXX";
    assert_non_null(mkdtemp(wsl));
    make_dir(wsl, "dev");
    assert_false(cuda_kernel_driver_has_gpu(wsl));
    char dxg[600];
    snprintf(dxg, sizeof dxg, "%s/dev/dxg", wsl);
    FILE *f = fopen(dxg, "w");
    assert_non_null(f);
    fclose(f);
    assert_true(cuda_kernel_driver_has_gpu(wsl));
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", root, wsl);
    assert_int_equal(system(cmd), 0);
}

static void test_object_ranges(void **state)
{
    (void)state;
    const char *const prefixes[] = {
        "libcmocka.so"}; /* not libc: sanitizers intercept its functions */
    struct native_range r[4];
    int n = native_stack_object_ranges(prefixes, 1, r, 4);
    assert_int_equal(n, 1);
    uintptr_t f = (uintptr_t)&_cmocka_run_group_tests;
    assert_true(f >= r[0].lo && f < r[0].hi);
    const char *const none[] = {"libnothing-here.so"};
    assert_int_equal(native_stack_object_ranges(none, 1, r, 4), 0);
}

/* ---- the GPU idle-time join --------------------------------------------------------------------------- */

static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static _Alignas(8) uint8_t records[1 << 14];
static size_t records_used;

static CUptiResult fake_enable(CUpti_ActivityKind k)
{
    (void)k;
    return CUPTI_SUCCESS;
}
static CUptiResult fake_register(CUpti_BuffersCallbackRequestFunc r,
                                 CUpti_BuffersCallbackCompleteFunc c)
{
    requested = r;
    completed = c;
    return CUPTI_SUCCESS;
}
static CUptiResult fake_flush(uint32_t flag)
{
    (void)flag;
    return CUPTI_SUCCESS;
}
static CUptiResult fake_timestamp(uint64_t *ts)
{
    *ts = clock_mono_ns(); /* the same clock as the host ends */
    return CUPTI_SUCCESS;
}
static CUptiResult fake_version(uint32_t *v)
{
    *v = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

static size_t kind_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    default: return 0;
    }
}

static CUptiResult fake_next(uint8_t *buf, size_t valid, CUpti_Activity **r)
{
    size_t at = *r ? (size_t)((uint8_t *)*r - buf) + ((kind_size((*r)->kind) + 7) & ~(size_t)7) : 0;
    if (at >= valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *r = (CUpti_Activity *)(void *)(buf + at);
    return CUPTI_SUCCESS;
}

/* The activity functions by name, as the entry layer's table gives them (entry/real.h). */
static void *fake_symbol(const char *name)
{
    static const struct {
        const char *name;
        void *fn;
    } fns[] = {{"cuptiGetVersion", (void *)fake_version},
               {"cuptiActivityEnable", (void *)fake_enable},
               {"cuptiActivityDisable", (void *)fake_enable},
               {"cuptiActivityRegisterCallbacks", (void *)fake_register},
               {"cuptiActivityFlushAll", (void *)fake_flush},
               {"cuptiActivityGetNextRecord", (void *)fake_next},
               {"cuptiGetTimestamp", (void *)fake_timestamp}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (!strcmp(fns[i].name, name))
            return fns[i].fn;
    return NULL;
}

static void put(const void *rec, CUpti_ActivityKind kind)
{
    memcpy(records + records_used, rec, kind_size(kind));
    records_used += (kind_size(kind) + 7) & ~(size_t)7;
}

static void kernel(uint64_t start, uint64_t end, const char *name)
{
    CUpti_ActivityKernel10 k = {
        .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, .start = start, .end = end, .name = name};
    put(&k, k.kind);
}

static void deliver(void)
{
    uint8_t *buf;
    size_t size, max;
    requested(&buf, &size, &max);
    assert_non_null(buf);
    assert_true(size >= records_used);
    memcpy(buf, records, records_used);
    completed(NULL, 0, buf, size, records_used);
    records_used = 0;
}

static void test_gpu_idle_join(void **state)
{
    (void)state;
    assert_null(gpu_start(fake_symbol));
    uint64_t t = clock_mono_ns();
    /* site 3: two syncs, the GPU idle 5 ms then 7 ms after them */
    gpu_note_sync(3, t + 1000000, 0, 0);
    gpu_note_sync(3, t + 20000000, 0, 0);
    /* site 4: a kernel on another stream still runs when it returns: no idle time */
    gpu_note_sync(4, t + 40000000, 0, 0);
    /* site 5: its host end is late; its synchronization record (correlation 77) says when it
     * really ended on the device */
    gpu_note_sync(5, t + 60000000, 0, 77);
    /* site 6: nothing ever runs after it: not measured */
    gpu_note_sync(6, t + 90000000, 0, 0);
    kernel(t + 6000000, t + 8000000, "next_a");
    kernel(t + 27000000, t + 28000000, "next_b");
    kernel(t + 30000000, t + 45000000, "long_other_stream");
    CUpti_ActivitySynchronization2 s = {.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                        .start = t + 50000000,
                                        .end = t + 55000000,
                                        .correlationId = 77};
    put(&s, s.kind);
    kernel(t + 58000000, t + 59000000, "after_join");
    deliver();
    gpu_finish();
    struct gpu_site_idle g;
    assert_true(gpu_site(3, &g));
    assert_int_equal(g.syncs, 2);
    /* host ends go through the measured clock offset (a few ns at most here) */
    assert_in_range(g.idle_ns, 12000000 - 20000, 12000000 + 20000);
    assert_string_equal(g.next_work, "next_b");
    assert_true(gpu_site(4, &g));
    assert_int_equal(g.syncs, 1);
    assert_int_equal(g.idle_ns, 0);
    assert_true(gpu_site(5, &g));
    assert_int_equal(g.idle_ns, 3000000); /* from the device-side end, not the host's */
    assert_string_equal(g.next_work, "after_join");
    assert_false(gpu_site(6, &g));
    assert_false(gpu_site(1 << 30, &g));
}

/* summary.json carries the measured sites' GPU fields, and only theirs, and reads them back. */
static void test_summary_gpu_fields(void **state)
{
    (void)state;
    struct rep_frame fr = {.function = "idle_after_sync", .module = "/bin/x"};
    struct rep_site sites[2] = {
        {.api = "cudaStreamSynchronize",
         .count = 4,
         .blocked_ns = 8,
         .max_ns = 2,
         .nframes = 1,
         .frames = &fr,
         .gpu_idle_ns = 20000000,
         .gpu_idle_syncs = 4,
         .gpu_next_work = "k\"1"},
        {.api = "cuMemFree_v2",
         .count = 1,
         .blocked_ns = 1,
         .max_ns = 1,
         .nframes = 1,
         .frames = &fr},
    };
    struct rep_process p = {.pid = 7, .rank = -1, .schedule = "", .sites = sites, .nsites = 2};
    char path[] = "/tmp/test_cupti_summary_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(summary_write_json(&p, fd), 0);
    close(fd);
    struct rep_process q;
    char err[256];
    assert_int_equal(summary_read_json(path, &q, err, sizeof err), 0);
    unlink(path);
    assert_int_equal(q.nsites, 2);
    assert_int_equal(q.sites[0].gpu_idle_ns, 20000000);
    assert_int_equal(q.sites[0].gpu_idle_syncs, 4);
    assert_string_equal(q.sites[0].gpu_next_work, "k\"1");
    assert_int_equal(q.sites[1].gpu_idle_syncs, 0);
    assert_null(q.sites[1].gpu_next_work);
    summary_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_search_order),       cmocka_unit_test(test_search_cuda_home),
        cmocka_unit_test(test_api_names),          cmocka_unit_test(test_cupti_min_driver),
        cmocka_unit_test(test_kernel_driver_gpus), cmocka_unit_test(test_object_ranges),
        cmocka_unit_test(test_gpu_idle_join),      cmocka_unit_test(test_summary_gpu_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
