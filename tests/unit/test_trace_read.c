/* tests/unit/test_trace_read.c: the trace.bin reader on traces built here with the structs of
 * output/trace_format.h: every record type read back, a cut at every byte offset (a clean, flagged
 * read or a clear error), 10k random corruptions (an answer, never a crash), each refusal with
 * its sentence and byte offset, and the limits (ids up to 2^32-1, caps, a file larger than the
 * read window). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/report.h"
#include "output/trace_format.h"
#include "cli/trace_read.h"

/* ---- building traces ---------------------------------------------------------------------- */

struct tb {
    uint8_t *p;
    size_t n, cap;
    size_t offsets[256]; /* where each record starts (the first 256) */
    size_t nrecords;
};

static void tb_put(struct tb *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void tb_record(struct tb *b, const void *rec, size_t n)
{
    if (b->nrecords < 256)
        b->offsets[b->nrecords] = b->n;
    b->nrecords++;
    tb_put(b, rec, n);
}

static void tb_header_with(struct tb *b, uint16_t major, uint32_t header_bytes, uint64_t features)
{
    struct trace_file_header h = {.version_major = major,
                                  .version_minor = TRACE_VERSION_MINOR,
                                  .header_bytes = header_bytes,
                                  .features = features,
                                  .pid = 4242,
                                  .rank = -1,
                                  .start_mono_ns = 1000000000,
                                  .start_real_ns = 77};
    memcpy(h.magic, TRACE_MAGIC, 8);
    snprintf(h.schedule, sizeof h.schedule, "wait=1,active=3");
    memset(b, 0, sizeof *b);
    tb_put(b, &h, sizeof h);
    static const uint8_t zeros[256];
    if (header_bytes > sizeof h && header_bytes - sizeof h <= sizeof zeros)
        tb_put(b, zeros, header_bytes - sizeof h);
}

static void tb_header(struct tb *b)
{
    tb_header_with(b, TRACE_VERSION_MAJOR, sizeof(struct trace_file_header),
                   TRACE_FEATURE_LAUNCHES);
}

static void tb_string_len(struct tb *b, uint32_t id, const char *s, uint32_t claimed)
{
    size_t len = strlen(s), bytes = (sizeof(struct trace_string) + len + 7) & ~(size_t)7;
    uint8_t rec[sizeof(struct trace_string) + 8192] = {0};
    struct trace_string h = {{TREC_STRING, (uint32_t)bytes}, id, claimed};
    memcpy(rec, &h, sizeof h);
    memcpy(rec + sizeof h, s, len);
    tb_record(b, rec, bytes);
}

static void tb_string(struct tb *b, uint32_t id, const char *s)
{
    tb_string_len(b, id, s, (uint32_t)strlen(s));
}

static void tb_frame(struct tb *b, uint32_t id, uint32_t kind, uint32_t fn, uint32_t module,
                     uint32_t file, uint32_t line, uint64_t offset)
{
    struct trace_frame f = {{TREC_FRAME, sizeof f}, id, kind, fn, module, file, line, offset};
    tb_record(b, &f, sizeof f);
}

static void tb_stack_n(struct tb *b, uint32_t id, const uint32_t *ids, uint32_t n, uint32_t claimed)
{
    size_t bytes = (sizeof(struct trace_stack) + 4 * (size_t)n + 7) & ~(size_t)7;
    uint8_t *rec = calloc(1, bytes);
    struct trace_stack h = {{TREC_STACK, (uint32_t)bytes}, id, claimed};
    memcpy(rec, &h, sizeof h);
    memcpy(rec + sizeof h, ids, 4 * (size_t)n);
    tb_record(b, rec, bytes);
    free(rec);
}

static void tb_stack(struct tb *b, uint32_t id, const uint32_t *ids, uint32_t n)
{
    tb_stack_n(b, id, ids, n, n);
}

static void tb_sync(struct tb *b, uint64_t start, uint64_t dur, uint32_t tid, uint32_t stack,
                    uint32_t api, uint64_t step)
{
    struct trace_sync s = {{TREC_SYNC, sizeof s},
                           1000000000 + start,
                           1000000000 + start + dur,
                           7,
                           4096,
                           step,
                           tid,
                           stack,
                           TRACE_DIR_D2H,
                           api};
    tb_record(b, &s, sizeof s);
}

static void tb_launch(struct tb *b, uint64_t t, uint32_t tid, uint32_t api, uint32_t kernel)
{
    struct trace_launch l = {{TREC_LAUNCH, sizeof l}, 1000000000 + t, 3, 1, tid, api, kernel, 0};
    tb_record(b, &l, sizeof l);
}

static void tb_step(struct tb *b, uint64_t step, uint64_t start, uint64_t end, uint64_t syncs,
                    uint64_t blocked, uint32_t active, uint32_t partial)
{
    struct trace_step s = {{TREC_STEP, sizeof s},
                           step,
                           1000000000 + start,
                           1000000000 + end,
                           syncs,
                           blocked,
                           100,
                           active,
                           partial};
    tb_record(b, &s, sizeof s);
}

static void tb_site(struct tb *b, uint32_t site, uint32_t stack, uint32_t api, uint64_t count,
                    uint64_t blocked, uint64_t max)
{
    struct trace_site_totals t = {
        {TREC_SITE_TOTALS, sizeof t}, site, stack, api, 0, count, blocked, max};
    tb_record(b, &t, sizeof t);
}

static void tb_thread(struct tb *b, uint32_t tid, uint32_t name)
{
    struct trace_thread t = {{TREC_THREAD, sizeof t}, tid, name};
    tb_record(b, &t, sizeof t);
}

static void tb_drops(struct tb *b, uint32_t tid, uint64_t syncs, uint64_t launches)
{
    struct trace_drops d = {{TREC_DROPS, sizeof d}, tid, 0, syncs, launches};
    tb_record(b, &d, sizeof d);
}

static void tb_end(struct tb *b, uint64_t end, uint64_t unattributed)
{
    struct trace_end e = {{TREC_END, sizeof e}, 1000000000 + end, unattributed};
    tb_record(b, &e, sizeof e);
}

/* A record header claiming bytes, then zeros up to bytes (at least 8, at most 64 in all). */
static void tb_raw(struct tb *b, uint32_t type, uint32_t bytes)
{
    uint8_t rec[64] = {0};
    struct trace_record_header h = {type, bytes};
    memcpy(rec, &h, sizeof h);
    tb_record(b, rec, bytes < 8 ? 8 : bytes <= sizeof rec ? bytes : sizeof rec);
}

enum {
    S_NZ = 1,
    S_TORCH,
    S_IB,
    S_TRAIN,
    S_FW,
    S_SYNC,
    S_MEMCPY,
    S_KERNEL,
    S_LAUNCH,
    S_MAIN,
    S_AUTOGRAD
};

/* Every record type: two sites (exact counts in SITE_TOTALS, fewer SYNC records than counts),
 * steps 0 (inactive) to 3, the step 2 written twice (the later wins), threads, drops, launches,
 * a record type from the future, END. */
static void build_sample(struct tb *b, bool end)
{
    tb_header(b);
    tb_string(b, S_MAIN, "python");
    tb_thread(b, 100, S_MAIN);
    tb_string(b, S_AUTOGRAD, "pt_autograd_0");
    tb_thread(b, 101, S_AUTOGRAD);
    tb_string(b, S_NZ, "at::native::nonzero_cuda(at::Tensor const&)");
    tb_string(b, S_TORCH, "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so");
    tb_string(b, S_IB, "MaskedLoss.ignore_background");
    tb_string(b, S_TRAIN, "/home/u/proj/train.py");
    tb_string(b, S_FW, "MaskedLoss.forward");
    tb_frame(b, 10, TRACE_FRAME_NATIVE, S_NZ, S_TORCH, 0, 0, 0x1234);
    tb_frame(b, 11, TRACE_FRAME_PYTHON, S_IB, 0, S_TRAIN, 61, 0);
    tb_frame(b, 12, TRACE_FRAME_PYTHON, S_FW, 0, S_TRAIN, 70, 0);
    uint32_t frames[] = {10, 11, 12};
    tb_stack(b, 5, frames, 3);
    tb_string(b, S_SYNC, "cudaStreamSynchronize");
    tb_string(b, S_MEMCPY, "cudaMemcpy");
    tb_string(b, S_KERNEL, "nonzero_kernel");
    tb_string(b, S_LAUNCH, "cudaLaunchKernel");
    tb_step(b, 0, 0, 10000000, 1, 1000000, 0, 0);
    tb_raw(b, 99, 24); /* unknown: skipped */
    for (uint64_t step = 1; step <= 3; step++) {
        uint64_t t0 = step * 40000000;
        tb_launch(b, t0 + 1000, 100, S_LAUNCH, S_KERNEL);
        tb_sync(b, t0 + 2000, 5000000, 100, 5, S_SYNC, step);
        tb_sync(b, t0 + 9000000, 2000000, 101, 0, S_MEMCPY, step);
        tb_launch(b, t0 + 12000000, 101, S_LAUNCH, 0);
        tb_site(b, 1, 5, S_SYNC, 2 * step, 10000000 * step, 6000000);
        tb_site(b, 2, 0, S_MEMCPY, step, 2000000 * step, 3000000);
        tb_step(b, step, t0, t0 + 40000000, 3, 12000000, 1, step == 3 && end);
        if (step == 2)
            tb_step(b, step, t0, t0 + 40000000, 4, 12000000, 1, 0);
    }
    tb_drops(b, 100, 3, 1);
    tb_drops(b, 100, 5, 2); /* cumulative: the last counts */
    tb_drops(b, 101, 1, 0);
    if (end)
        tb_end(b, 200000000, 9);
}

static int read_tb(const struct tb *b, size_t len, struct rep_process *p, struct trace_events *ev,
                   char *err, size_t errlen)
{
    err[0] = '\0';
    int rc = trace_read_buf(b->p, len, "T", NULL, p, ev, err, errlen);
    if (rc != 0) {
        assert_int_equal(rc, -1);
        assert_true(strlen(err) > 0);
        assert_non_null(strstr(err, "T")); /* names the file */
        assert_null(strchr(err, '\n'));
    }
    return rc;
}

/* Reads and expects a refusal containing fragment. */
static void expect_error(struct tb *b, const char *fragment)
{
    struct rep_process p;
    struct trace_events ev;
    char err[512];
    assert_int_equal(read_tb(b, b->n, &p, &ev, err, sizeof err), -1);
    if (!strstr(err, fragment))
        fail_msg("expected \"%s\" in \"%s\"", fragment, err);
    assert_null(p.owned);
    free(b->p);
}

/* ---- round trip --------------------------------------------------------------------------- */

static void test_every_record_type(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b, true);
    struct rep_process p;
    struct trace_events ev;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, &ev, err, sizeof err), 0);
    assert_int_equal(p.pid, 4242);
    assert_int_equal(p.rank, -1);
    assert_string_equal(p.schedule, "wait=1,active=3");
    assert_false(p.trace_unfinished);
    assert_false(p.trace_truncated);
    /* steps: 0 inactive, 1..3 active, step 2's second record wins */
    assert_int_equal(p.steps_seen, 4);
    assert_int_equal(p.active_steps, 3);
    assert_int_equal(p.nsteps, 3);
    assert_int_equal(p.steps[0].step, 1);
    assert_int_equal(p.steps[1].syncs, 4);
    assert_int_equal(p.steps[2].step, 3);
    assert_true(p.steps[2].partial);
    assert_int_equal(p.syncs, 10);
    assert_int_equal(p.blocked_ns, 36000000);
    assert_int_equal(p.launches, 300);
    assert_int_equal(p.wall_ns, 120000000);
    assert_int_equal(p.steps_omitted, 0);
    assert_int_equal(p.unattributed_syncs, 9);
    assert_int_equal(p.syncs_dropped, 6);
    assert_int_equal(p.launches_dropped, 2);
    /* sites: the last SITE_TOTALS of each, heaviest first */
    assert_int_equal(p.nsites, 2);
    assert_string_equal(p.sites[0].api, "cudaStreamSynchronize");
    assert_int_equal(p.sites[0].count, 6);
    assert_int_equal(p.sites[0].blocked_ns, 30000000);
    assert_int_equal(p.sites[0].max_ns, 6000000);
    assert_int_equal(p.sites[0].nframes, 3);
    assert_string_equal(p.sites[0].frames[0].function,
                        "at::native::nonzero_cuda(at::Tensor const&)");
    assert_string_equal(p.sites[0].frames[0].file, "");
    assert_int_equal(p.sites[0].frames[0].offset, 0x1234);
    assert_false(p.sites[0].frames[0].python);
    assert_true(p.sites[0].frames[1].python);
    assert_int_equal(p.sites[0].frames[1].line, 61);
    assert_string_equal(p.sites[0].frames[2].function, "MaskedLoss.forward");
    assert_string_equal(p.sites[1].api, "cudaMemcpy");
    assert_int_equal(p.sites[1].count, 3);
    assert_int_equal(p.sites[1].nframes, 0);
    /* the timeline */
    assert_int_equal(ev.start_mono_ns, 1000000000);
    assert_int_equal(ev.start_real_ns, 77);
    assert_int_equal(ev.end_mono_ns, 1200000000);
    assert_int_equal(ev.nsteps, 4);
    assert_false(ev.steps[0].active);
    assert_int_equal(ev.steps[2].syncs, 4);
    assert_int_equal(ev.nsyncs, 6);
    assert_int_equal(ev.syncs[0].tid, 100);
    assert_int_equal(ev.syncs[0].nframes, 3);
    assert_string_equal(ev.syncs[0].frames[1].function, "MaskedLoss.ignore_background");
    assert_int_equal(ev.syncs[0].end_ns - ev.syncs[0].start_ns, 5000000);
    assert_int_equal(ev.syncs[0].bytes, 4096);
    assert_int_equal(ev.syncs[0].dir, TRACE_DIR_D2H);
    assert_int_equal(ev.syncs[1].nframes, 0);
    assert_null(ev.syncs[1].frames);
    assert_string_equal(ev.syncs[1].api, "cudaMemcpy");
    assert_int_equal(ev.nlaunches, 6);
    assert_string_equal(ev.launches[0].kernel, "nonzero_kernel");
    assert_string_equal(ev.launches[1].kernel, "");
    assert_string_equal(ev.launches[1].api, "cudaLaunchKernel");
    assert_int_equal(ev.nthreads, 2);
    assert_string_equal(ev.threads[1].name, "pt_autograd_0");
    assert_int_equal(ev.events_omitted, 0);
    trace_free(&p, &ev);
    assert_null(p.owned);
    assert_int_equal(ev.nsyncs, 0);

    /* without the timeline: the same report */
    struct rep_process q;
    assert_int_equal(read_tb(&b, b.n, &q, NULL, err, sizeof err), 0);
    assert_int_equal(q.nsites, 2);
    assert_int_equal(q.sites[0].count, 6);
    assert_int_equal(q.syncs, 10);
    trace_free(&q, NULL);
    free(b.p);
}

static void test_read_from_a_file(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b, true);
    char path[] = "/tmp/syncspy-test-tr-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.p, b.n), (ssize_t)b.n);
    close(fd);
    struct rep_process p;
    char err[512];
    assert_int_equal(trace_read(path, &p, NULL, err, sizeof err), 0);
    assert_int_equal(p.sites[0].count, 6);
    trace_free(&p, NULL);
    unlink(path);
    assert_int_equal(trace_read(path, &p, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    assert_non_null(strstr(err, path));
    assert_int_equal(trace_read("/tmp", &p, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    free(b.p);
}

/* A file several times the read window, records straddling its edges, with big strings. */
static void test_larger_than_the_window(void **state)
{
    (void)state;
    struct tb b;
    tb_header(&b);
    char big[4097];
    memset(big, 'x', 4096);
    big[4096] = '\0';
    tb_string(&b, 1, "cudaMemcpy");
    uint64_t n = 0;
    for (uint32_t i = 0; b.n < (10u << 20); i++) {
        if (i % 100 == 0) {
            big[0] = (char)('a' + i % 26);
            tb_string(&b, 2 + i, big);
        }
        tb_sync(&b, i * 1000, 10, 1, 0, 1, 0);
        n++;
    }
    tb_site(&b, 1, 0, 1, n, n * 10, 10);
    tb_end(&b, n * 1000, 0);
    char path[] = "/tmp/syncspy-test-tr-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.p, b.n), (ssize_t)b.n);
    close(fd);
    struct rep_process p;
    struct trace_events ev;
    char err[512];
    assert_int_equal(trace_read(path, &p, &ev, err, sizeof err), 0);
    assert_int_equal(ev.nsyncs, n);
    assert_int_equal(ev.syncs[n - 1].start_ns, 1000000000 + (n - 1) * 1000);
    assert_int_equal(p.sites[0].count, n);
    assert_false(p.trace_unfinished);
    trace_free(&p, &ev);
    /* the same file cut in the middle of a record past the first window */
    assert_int_equal(truncate(path, (off_t)(b.n - 100)), 0);
    assert_int_equal(trace_read(path, &p, &ev, err, sizeof err), 0);
    assert_true(p.trace_truncated);
    assert_int_equal(p.nsites, 0); /* SITE_TOTALS came last and was cut */
    trace_free(&p, &ev);
    unlink(path);
    free(b.p);
}

/* ---- truncation --------------------------------------------------------------------------- */

static bool on_boundary(const struct tb *b, size_t len)
{
    if (len == sizeof(struct trace_file_header) || len == b->n)
        return true;
    for (size_t i = 0; i < b->nrecords && i < 256; i++)
        if (b->offsets[i] == len)
            return true;
    return false;
}

static void test_cut_at_every_offset(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b, true);
    assert_true(b.nrecords < 256);
    for (size_t len = 0; len <= b.n; len++) {
        struct rep_process p;
        struct trace_events ev;
        char err[512];
        int rc = read_tb(&b, len, &p, &ev, err, sizeof err);
        if (len < sizeof(struct trace_file_header)) {
            assert_int_equal(rc, -1);
            assert_true(strstr(err, len ? "inside its 112-byte header" : "is empty") != NULL);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(p.trace_unfinished, len < b.n);
        assert_int_equal(p.trace_truncated, !on_boundary(&b, len));
        assert_true(p.nsites <= 2);
        assert_true(p.nsites == 0 || p.sites[0].count <= 6);
        assert_true(ev.nsyncs <= 6);
        trace_free(&p, &ev);
    }
    free(b.p);
}

/* Space the file system gave but the writer never filled: a cut tail, not corruption. */
static void test_zero_tail(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b, false);
    static const uint8_t zeros[4096];
    tb_put(&b, zeros, sizeof zeros);
    struct rep_process p;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, NULL, err, sizeof err), 0);
    assert_true(p.trace_truncated);
    assert_int_equal(p.nsites, 2);
    trace_free(&p, NULL);
    /* zeros, then something: corruption */
    tb_put(&b, "x", 1);
    expect_error(&b, "is corrupt at byte");
}

/* ---- corruption --------------------------------------------------------------------------- */

static void test_random_corruption(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b, true);
    uint8_t *copy = malloc(b.n);
    unsigned seed = 12345;
    size_t ok = 0, refused = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int iter = 0; iter < 10000; iter++) {
        memcpy(copy, b.p, b.n);
        int flips = 1 + rand_r(&seed) % 4;
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)rand_r(&seed) % b.n;
            switch (rand_r(&seed) % 3) {
            case 0: copy[at] ^= (uint8_t)(1u << (rand_r(&seed) % 8)); break;
            case 1: copy[at] = (uint8_t)rand_r(&seed); break;
            default: { /* a whole 32-bit field: ids, lengths, counts */
                uint32_t v = rand_r(&seed) % 2 ? (uint32_t)rand_r(&seed) : 0xFFFFFFFFu;
                at &= ~(size_t)3;
                if (at + 4 <= b.n)
                    memcpy(copy + at, &v, 4);
            }
            }
        }
        size_t len = rand_r(&seed) % 8 == 0 ? (size_t)rand_r(&seed) % b.n : b.n;
        struct rep_process p;
        struct trace_events ev;
        char err[512] = "";
        int rc = trace_read_buf(copy, len, "T", NULL, &p, iter % 2 ? &ev : NULL, err, sizeof err);
        if (rc == 0) {
            ok++;
            for (size_t i = 0; i < p.nsites; i++)
                for (uint32_t f = 0; f < p.sites[i].nframes; f++)
                    assert_non_null(p.sites[i].frames[f].function);
            trace_free(&p, iter % 2 ? &ev : NULL);
        } else {
            refused++;
            assert_int_equal(rc, -1);
            assert_true(err[0] == 'T' || strstr(err, "T") != NULL);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_message("random corruption: %zu read, %zu refused, %.2f s\n", ok, refused, s);
    assert_true(ok > 100 && refused > 100);
    if (!getenv("SYNCSPY_SLOW")) /* valgrind sets it: its own pace */
        assert_true(s < 2.0);
    free(copy);
    free(b.p);
}

static void test_bad_headers(void **state)
{
    (void)state;
    struct tb b;
    tb_header_with(&b, 2, sizeof(struct trace_file_header), 0);
    expect_error(&b, "trace.bin format 2 is newer than this syncspy understands (1)");
    tb_header_with(&b, 0, sizeof(struct trace_file_header), 0);
    expect_error(&b, "trace.bin format 0 is not one this syncspy understands (1)");
    tb_header(&b);
    b.p[0] = 'X';
    expect_error(&b, "is not a syncspy trace");
    tb_header(&b);
    b.p[7] = 2; /* "SYNCSPY\x02" */
    expect_error(&b, "is not a syncspy trace");
    tb_header_with(&b, 1, 104, 0);
    expect_error(&b, "bad header: it says it is 104 bytes long");
    tb_header_with(&b, 1, 116, 0);
    expect_error(&b, "bad header: it says it is 116 bytes long");
    tb_header_with(&b, 1, 1u << 20, 0);
    expect_error(&b, "bad header");
    tb_header_with(&b, 1, 128, 0);
    b.n = 120; /* a longer header, cut */
    expect_error(&b, "inside its 128-byte header");
    tb_header_with(&b, 1, sizeof(struct trace_file_header), 1ull << 40);
    expect_error(&b, "needs features this syncspy does not know (0x0000010000000000)");

    /* what is fine: unknown optional feature bits, a longer header, a schedule with no NUL */
    tb_header_with(&b, 1, 160, 0xffffffffull);
    memset(b.p + offsetof(struct trace_file_header, schedule), 'a', 64);
    tb_string(&b, 1, "x");
    struct rep_process p;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, NULL, err, sizeof err), 0);
    assert_int_equal(strlen(p.schedule), 64);
    assert_true(p.trace_unfinished);
    assert_false(p.trace_truncated);
    trace_free(&p, NULL);
    free(b.p);
}

static void test_bad_lengths(void **state)
{
    (void)state;
    struct tb b;
    tb_header(&b);
    tb_raw(&b, TREC_SYNC, 60);
    expect_error(&b, "corrupt at byte 112: a record of type 4 says it is 60 bytes long (not a "
                     "multiple of 8");
    tb_header(&b);
    tb_raw(&b, 77, 0);
    expect_error(&b, "corrupt at byte 112: a record of type 77 says it is 0 bytes long");
    tb_header(&b);
    tb_string(&b, 1, "a");
    tb_raw(&b, TREC_SYNC, 56);
    expect_error(&b, "corrupt at byte 136: a record of type 4 says it is 56 bytes long (it needs "
                     "64)");
    tb_header(&b);
    tb_raw(&b, 200, (1u << 20) + 8);
    expect_error(&b, "more than 1048576");
    /* a record of the largest size, of a type this reader does not know: skipped */
    tb_header(&b);
    uint8_t *big = calloc(1, 1u << 20);
    struct trace_record_header h = {1234, 1u << 20};
    memcpy(big, &h, sizeof h);
    tb_record(&b, big, 1u << 20);
    free(big);
    tb_string(&b, 1, "cudaFree");
    tb_site(&b, 1, 0, 1, 2, 3, 4);
    struct rep_process p;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, NULL, err, sizeof err), 0);
    assert_int_equal(p.nsites, 1);
    assert_string_equal(p.sites[0].api, "cudaFree");
    trace_free(&p, NULL);
    free(b.p);
}

static void test_bad_strings(void **state)
{
    (void)state;
    struct tb b;
    tb_header(&b);
    tb_string_len(&b, 1, "abc", 9);
    expect_error(&b, "string 1 is 9 bytes long, more than its 24-byte record holds");
    tb_header(&b);
    tb_string_len(&b, 1, "abc", 4097);
    expect_error(&b, "string 1 is 4097 bytes long, more than 4096");
    tb_header(&b);
    tb_string_len(&b, 1, "abc", 0xFFFFFFFFu);
    expect_error(&b, "more than 4096");
    tb_header(&b);
    tb_string(&b, 0, "zero");
    expect_error(&b, "a string with id 0");
    tb_header(&b);
    tb_string(&b, 3, "a");
    tb_string(&b, 3, "b");
    expect_error(&b, "corrupt at byte 136: string 3 is defined twice");
    /* bad UTF-8 and control bytes are kept as they are (the JSON writer replaces them) */
    tb_header(&b);
    tb_string(&b, 1, "\xff\xfe bad \x01");
    tb_string(&b, 2, "");
    tb_frame(&b, 1, TRACE_FRAME_NATIVE, 1, 2, 0, 0, 0);
    uint32_t f = 1;
    tb_stack(&b, 1, &f, 1);
    tb_site(&b, 1, 1, 1, 1, 1, 1);
    struct rep_process p;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, NULL, err, sizeof err), 0);
    assert_string_equal(p.sites[0].frames[0].function, "\xff\xfe bad \x01");
    assert_string_equal(p.sites[0].frames[0].module, "");
    trace_free(&p, NULL);
    free(b.p);
}

static void test_bad_references(void **state)
{
    (void)state;
    struct tb b;
    uint32_t frames[2] = {1, 2};
    tb_header(&b);
    tb_frame(&b, 1, TRACE_FRAME_NATIVE, 5, 0, 0, 0, 0);
    expect_error(&b, "corrupt at byte 112: frame 1 refers to string 5, which no earlier record "
                     "defines");
    tb_header(&b);
    tb_frame(&b, 1, TRACE_FRAME_NATIVE, 0, 0, 0, 0, 0);
    tb_stack(&b, 1, frames, 2);
    expect_error(&b, "corrupt at byte 152: stack 1 lists frame 2, which no earlier record "
                     "defines as a frame");
    tb_header(&b); /* a string id is not a frame id */
    tb_string(&b, 2, "f");
    tb_frame(&b, 1, TRACE_FRAME_NATIVE, 2, 0, 0, 0, 0);
    tb_stack(&b, 1, frames, 2);
    expect_error(&b, "lists frame 2");
    tb_header(&b); /* defined after use */
    tb_sync(&b, 0, 1, 1, 0, 3, 0);
    tb_string(&b, 3, "cudaMemcpy");
    expect_error(&b, "corrupt at byte 112: a sync refers to string 3");
    tb_header(&b);
    tb_sync(&b, 0, 1, 1, 9, 0, 0);
    expect_error(&b, "a sync refers to stack 9, which no earlier record defines");
    tb_header(&b);
    tb_site(&b, 4, 9, 0, 1, 1, 1);
    expect_error(&b, "site 4 refers to stack 9");
    tb_header(&b);
    tb_site(&b, 0, 0, 0, 1, 1, 1);
    expect_error(&b, "site totals with site id 0");
    tb_header(&b);
    tb_launch(&b, 0, 1, 0, 8);
    expect_error(&b, "a launch refers to string 8");
    tb_header(&b);
    tb_thread(&b, 1, 8);
    expect_error(&b, "a thread refers to string 8");
    tb_header(&b);
    tb_frame(&b, 1, TRACE_FRAME_NATIVE, 0, 0, 0, 0, 0);
    tb_frame(&b, 1, TRACE_FRAME_NATIVE, 0, 0, 0, 0, 0);
    expect_error(&b, "frame 1 is defined twice");
    tb_header(&b);
    tb_frame(&b, 0, TRACE_FRAME_NATIVE, 0, 0, 0, 0, 0);
    expect_error(&b, "a frame with id 0");
    tb_header(&b);
    tb_frame(&b, 1, TRACE_FRAME_NATIVE, 0, 0, 0, 0, 0);
    tb_stack(&b, 1, frames, 1);
    tb_stack(&b, 1, frames, 1);
    expect_error(&b, "stack 1 is defined twice");
    tb_header(&b);
    tb_stack(&b, 0, frames, 0);
    expect_error(&b, "a stack with id 0");
}

static void test_stack_limits(void **state)
{
    (void)state;
    struct tb b;
    uint32_t ids[TRACE_MAX_FRAMES + 1];
    for (uint32_t i = 0; i <= TRACE_MAX_FRAMES; i++)
        ids[i] = 0xFFFFFFFFu; /* the largest id, 513 times */
    tb_header(&b);
    tb_frame(&b, 0xFFFFFFFFu, TRACE_FRAME_PYTHON, 0, 0, 0, 1, 0);
    tb_stack(&b, 1, ids, TRACE_MAX_FRAMES + 1);
    expect_error(&b, "stack 1 has 513 frames, more than 512");
    tb_header(&b);
    tb_stack_n(&b, 1, ids, 2, 0xFFFFFFFFu);
    expect_error(&b, "more than 512");
    tb_header(&b);
    tb_stack_n(&b, 1, ids, 2, 100);
    expect_error(&b, "stack 1 has 100 frames, more than its 24-byte record holds");
    /* 512 frames, every id at the top of the range */
    tb_header(&b);
    tb_frame(&b, 0xFFFFFFFFu, TRACE_FRAME_PYTHON, 0, 0, 0, 1, 0);
    tb_stack(&b, 0xFFFFFFFFu, ids, TRACE_MAX_FRAMES);
    tb_string(&b, 0xFFFFFFFFu, "cudaDeviceSynchronize");
    tb_site(&b, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 1, 1, 1);
    tb_site(&b, 0xFFFFFFFEu, 0xFFFFFFFFu, 0xFFFFFFFFu, 2, 1, 1); /* the same stack, built once */
    tb_sync(&b, 0, 1, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, UINT64_MAX);
    tb_step(&b, UINT64_MAX, 0, 1, 1, 1, 1, 0);
    struct rep_process p;
    struct trace_events ev;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, &ev, err, sizeof err), 0);
    assert_int_equal(p.nsites, 2);
    assert_int_equal(p.sites[0].nframes, TRACE_MAX_FRAMES);
    assert_ptr_equal(p.sites[0].frames, p.sites[1].frames);
    assert_ptr_equal(ev.syncs[0].frames, p.sites[0].frames);
    assert_int_equal(p.steps_seen, UINT64_MAX); /* saturates */
    trace_free(&p, &ev);
    free(b.p);
}

/* Many ids in any order (the hash maps grow), steps out of order, ends before starts. */
static void test_many_ids_any_order(void **state)
{
    (void)state;
    struct tb b;
    tb_header(&b);
    enum { N = 20000 };
    uint32_t *ids = malloc(N * sizeof *ids);
    for (uint32_t i = 0; i < N; i++) {
        ids[i] = (i + 1) * 2654435761u; /* distinct (an odd factor), scattered, never 0 */
        char s[32];
        snprintf(s, sizeof s, "fn%u", i);
        tb_string(&b, ids[i], s);
        tb_frame(&b, ids[i], TRACE_FRAME_NATIVE, ids[i], 0, 0, i, 0);
    }
    for (uint32_t i = 0; i < 100; i++) {
        tb_stack(&b, 1000 - i, &ids[i * 100], 100);
        tb_site(&b, 1 + i, 1000 - i, ids[i], i + 1, 1000 * (i + 1), 10);
    }
    tb_step(&b, 5, 500, 600, 1, 1, 1, 0);
    tb_step(&b, 2, 200, 100, 1, 1, 1, 0); /* ends before it starts: 0 long */
    tb_end(&b, 700, 0); /* finished: the sites' counts beyond the steps' make up no open step */
    struct rep_process p;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, NULL, err, sizeof err), 0);
    assert_int_equal(p.nsites, 100);
    assert_int_equal(p.sites[0].count, 100); /* heaviest first */
    assert_string_equal(p.sites[0].frames[0].function, "fn9900");
    assert_int_equal(p.sites[0].frames[99].line, 9999);
    assert_int_equal(p.nsteps, 2);
    assert_int_equal(p.steps[0].step, 2);
    assert_int_equal(p.steps[0].wall_ns, 0);
    assert_int_equal(p.wall_ns, 100);
    assert_int_equal(p.steps_seen, 6);
    trace_free(&p, NULL);
    free(ids);
    free(b.p);
}

/* One site on stack 5: two syncs in step 0, then `open` in step 1. */
static void tb_two_steps(struct tb *b, int open)
{
    tb_header(b);
    tb_string(b, 1, "cudaStreamSynchronize");
    tb_string(b, 2, "step_sync");
    tb_frame(b, 3, TRACE_FRAME_NATIVE, 2, 0, 0, 0, 0);
    uint32_t frame = 3;
    tb_stack(b, 5, &frame, 1);
    for (int i = 0; i < 2; i++)
        tb_sync(b, 100 + 10 * (uint64_t)i, 4, 1, 5, 1, 0);
    tb_step(b, 0, 0, 1000, 2, 8, 1, 0);
    for (int i = 0; i < open; i++)
        tb_sync(b, 1100 + 10 * (uint64_t)i, 5, 1, 5, 1, 1);
    /* 1.2's site totals: step 0's two syncs are start-up's; the latest step seen (+1) with the
     * counts when it began */
    struct trace_site_totals t = {{TREC_SITE_TOTALS, sizeof t},
                                  1,
                                  5,
                                  1,
                                  1,
                                  2 + (uint64_t)open,
                                  8 + 5 * (uint64_t)open,
                                  5,
                                  2,
                                  8,
                                  open ? 2 : 1,
                                  open ? 2 : 0,
                                  open ? 8 : 0};
    tb_record(b, &t, sizeof t);
}

/* The process was killed, or _exit()ed, in its second step: no record of that step, but the
 * site totals of the last flush have its syncs. The header must count what the table shows. */
static void test_open_step_of_a_trace_that_ends_early(void **state)
{
    (void)state;
    struct tb b;
    tb_two_steps(&b, 5);
    struct rep_process p;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, NULL, err, sizeof err), 0);
    assert_true(p.trace_unfinished);
    assert_int_equal(p.active_steps, 2);
    assert_int_equal(p.syncs, 7);
    assert_int_equal(p.blocked_ns, 8 + 25);
    assert_int_equal(p.nsteps, 2);
    assert_int_equal(p.steps[1].step, 1);
    assert_true(p.steps[1].partial);
    assert_int_equal(p.steps[1].syncs, 5);
    assert_int_equal(p.steps[1].wall_ns, 1145 - 1000); /* to the last sync seen */
    assert_int_equal(p.steps_seen, 2);
    assert_int_equal(p.nsites, 1);
    assert_int_equal(p.sites[0].count, 7);
    assert_int_equal(p.sites[0].split.partial_count, 5); /* out of the per-step rates */
    assert_int_equal(p.sites[0].split.partial_ns, 25);
    assert_int_equal(p.sites[0].split.startup_count, 2);
    trace_free(&p, NULL);
    free(b.p);
}

/* A clean exit in the second step: its record says partial, the site totals (1.2) give each
 * site's share of it. */
static void test_sites_share_of_the_partial_step(void **state)
{
    (void)state;
    struct tb b;
    tb_two_steps(&b, 3);
    tb_step(&b, 1, 1000, 1200, 3, 15, 1, 1);
    tb_end(&b, 1200, 0);
    struct rep_process p;
    char err[512];
    assert_int_equal(read_tb(&b, b.n, &p, NULL, err, sizeof err), 0);
    assert_false(p.trace_unfinished);
    assert_int_equal(p.nsteps, 2);
    assert_int_equal(p.active_steps, 2);
    assert_int_equal(p.sites[0].count, 5);
    assert_int_equal(p.sites[0].split.partial_count, 3);
    assert_int_equal(p.sites[0].split.partial_ns, 15);
    trace_free(&p, NULL);
    free(b.p);
}

/* ---- golden: the step figures ----------------------------------------------------------- */

/* One line of what the reader makes of a trace's steps: the process's step figures, each listed
 * step (wall/syncs/blocked/launches, p: partial, a: attributed) and the timeline's steps. */
static void dump_steps(FILE *f, const char *label, struct tb *b, size_t len)
{
    typedef unsigned long long ull;
    struct rep_process p;
    struct trace_events ev;
    char err[512];
    if (read_tb(b, len, &p, &ev, err, sizeof err) != 0) {
        fprintf(f, "%s: refused\n", label);
        return;
    }
    fprintf(f,
            "%s: seen %llu, active %llu, listed %zu, missing %llu (%llu active), lost %llu, "
            "omitted %llu, after %llu, attributed %llu | %llu syncs, %llu ns, %llu launches, "
            "%llu ns wall |",
            label, (ull)p.steps_seen, (ull)p.active_steps, p.nsteps, (ull)p.step_records_missing,
            (ull)p.steps_missing_active, (ull)p.steps_lost, (ull)p.steps_omitted,
            (ull)p.steps_after_totals, (ull)p.attribution_steps, (ull)p.syncs, (ull)p.blocked_ns,
            (ull)p.launches, (ull)p.wall_ns);
    for (size_t i = 0; i < p.nsteps; i++)
        fprintf(f, " %llu:%llu/%llu/%llu/%llu%s%s", (ull)p.steps[i].step, (ull)p.steps[i].wall_ns,
                (ull)p.steps[i].syncs, (ull)p.steps[i].blocked_ns, (ull)p.steps[i].launches,
                p.steps[i].partial ? "p" : "", p.steps[i].attributed ? "a" : "");
    fprintf(f, " | timeline");
    for (size_t i = 0; i < ev.nsteps; i++)
        fprintf(f, " %llu%s", (ull)ev.steps[i].step, ev.steps[i].active ? "" : "-");
    fputc('\n', f);
    trace_free(&p, &ev);
}

/* Steps 1, 2 and 5 recorded; the agent counted one lost (3) and 4 is missing without a count. */
static void tb_lost_steps(struct tb *b)
{
    tb_header(b);
    tb_step(b, 1, 0, 100, 2, 20, 1, 0);
    tb_step(b, 2, 100, 250, 1, 10, 1, 0);
    struct trace_steps_lost l = {{TREC_STEPS_LOST, sizeof l}, 1, 1, 4, 40, 7, 90};
    tb_record(b, &l, sizeof l);
    tb_step(b, 5, 400, 480, 3, 30, 1, 0);
    tb_step(b, 6, 480, 500, 0, 0, 0, 0);
    tb_end(b, 500, 0);
}

/* GOLDEN_DUMP=1 prints the text as it is now: tests/unit/golden.py rewrites the golden below
 * from it after a deliberate change. */
/* GOLDENS: made with GOLDEN_DUMP=1 before build_steps was split (issue 37) */
static const char golden_steps[] =
    "sample cut at 1: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 2: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 3: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 4: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 5: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 6: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 7: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 8: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 9: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 10: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 11: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 12: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 13: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 14: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 15: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 16: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 17: seen 0, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline\n"
    "sample cut at 18: seen 1, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline 0-\n"
    "sample cut at 19: seen 1, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline 0-\n"
    "sample cut at 20: seen 1, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline 0- 1-\n"
    "sample cut at 21: seen 1, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline 0- 1-\n"
    "sample cut at 22: seen 1, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline 0- 1-\n"
    "sample cut at 23: seen 1, active 0, listed 0, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 0 syncs, 0 ns, 0 launches, 0 ns wall | | timeline 0- 1-\n"
    "sample cut at 24: seen 2, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 2 syncs, 10000000 ns, 0 launches, 41000000 ns wall | "
    "1:41000000/2/10000000/0p | timeline 0- 1-\n"
    "sample cut at 25: seen 2, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 3 syncs, 12000000 ns, 0 launches, 41000000 ns wall | "
    "1:41000000/3/12000000/0p | timeline 0- 1-\n"
    "sample cut at 26: seen 2, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 3 syncs, 12000000 ns, 100 launches, 40000000 ns wall | "
    "1:40000000/3/12000000/100 | timeline 0- 1\n"
    "sample cut at 27: seen 2, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 3 syncs, 12000000 ns, 100 launches, 40000000 ns wall | "
    "1:40000000/3/12000000/100 | timeline 0- 1\n"
    "sample cut at 28: seen 2, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 3 syncs, 12000000 ns, 100 launches, 40000000 ns wall | "
    "1:40000000/3/12000000/100 | timeline 0- 1 2-\n"
    "sample cut at 29: seen 2, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 3 syncs, 12000000 ns, 100 launches, 40000000 ns wall | "
    "1:40000000/3/12000000/100 | timeline 0- 1 2-\n"
    "sample cut at 30: seen 2, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 3 syncs, 12000000 ns, 100 launches, 40000000 ns wall | "
    "1:40000000/3/12000000/100 | timeline 0- 1 2-\n"
    "sample cut at 31: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 5 syncs, 22000000 ns, 100 launches, 51000000 ns wall | "
    "1:40000000/3/12000000/100 2:11000000/2/10000000/0p | timeline 0- 1 2-\n"
    "sample cut at 32: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 6 syncs, 24000000 ns, 100 launches, 51000000 ns wall | "
    "1:40000000/3/12000000/100 2:11000000/3/12000000/0p | timeline 0- 1 2-\n"
    "sample cut at 33: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 6 syncs, 24000000 ns, 200 launches, 80000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/3/12000000/100 | timeline 0- 1 2\n"
    "sample cut at 34: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 7 syncs, 24000000 ns, 200 launches, 80000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 | timeline 0- 1 2\n"
    "sample cut at 35: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 7 syncs, 24000000 ns, 200 launches, 80000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 | timeline 0- 1 2\n"
    "sample cut at 36: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 7 syncs, 24000000 ns, 200 launches, 80000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 | timeline 0- 1 2 3-\n"
    "sample cut at 37: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 7 syncs, 24000000 ns, 200 launches, 80000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 | timeline 0- 1 2 3-\n"
    "sample cut at 38: seen 3, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 7 syncs, 24000000 ns, 200 launches, 80000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 | timeline 0- 1 2 3-\n"
    "sample cut at 39: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 8 syncs, 34000000 ns, 200 launches, 91000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:11000000/1/10000000/0p | timeline 0- "
    "1 2 3-\n"
    "sample cut at 40: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 9 syncs, 36000000 ns, 200 launches, 91000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:11000000/2/12000000/0p | timeline 0- "
    "1 2 3-\n"
    "sample cut at 41: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 10 syncs, 36000000 ns, 300 launches, 120000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:40000000/3/12000000/100p | timeline "
    "0- 1 2 3\n"
    "sample cut at 42: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 10 syncs, 36000000 ns, 300 launches, 120000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:40000000/3/12000000/100p | timeline "
    "0- 1 2 3\n"
    "sample cut at 43: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 10 syncs, 36000000 ns, 300 launches, 120000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:40000000/3/12000000/100p | timeline "
    "0- 1 2 3\n"
    "sample cut at 44: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 10 syncs, 36000000 ns, 300 launches, 120000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:40000000/3/12000000/100p | timeline "
    "0- 1 2 3\n"
    "sample cut at 45: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 10 syncs, 36000000 ns, 300 launches, 120000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:40000000/3/12000000/100p | timeline "
    "0- 1 2 3\n"
    "sample killed: seen 4, active 3, listed 3, missing 0 (0 active), lost 0, omitted 0, after "
    "0, attributed 0 | 10 syncs, 36000000 ns, 300 launches, 120000000 ns wall | "
    "1:40000000/3/12000000/100 2:40000000/4/12000000/100 3:40000000/3/12000000/100 | timeline 0- "
    "1 2 3\n"
    "two steps, 0 open: seen 1, active 1, listed 1, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 2 syncs, 8 ns, 100 launches, 1000 ns wall | 0:1000/2/8/100 | "
    "timeline 0\n"
    "two steps, 5 open: seen 2, active 2, listed 2, missing 0 (0 active), lost 0, omitted 0, "
    "after 0, attributed 0 | 7 syncs, 33 ns, 100 launches, 1145 ns wall | 0:1000/2/8/100 "
    "1:145/5/25/0p | timeline 0 1-\n"
    "lost steps: seen 7, active 4, listed 3, missing 2 (2 active), lost 1, omitted 0, after 0, "
    "attributed 0 | 10 syncs, 100 ns, 307 launches, 420 ns wall | 1:100/2/20/100 2:150/1/10/100 "
    "5:80/3/30/100 | timeline 1 2 5 6-\n";

/* Every cut of the sample at a record boundary, the open step of a killed trace, lost and
 * missing steps: what build_steps makes of them, byte for byte as before its split. */
static void test_step_figures_golden(void **state)
{
    (void)state;
    char *text = NULL;
    size_t textlen = 0;
    FILE *f = open_memstream(&text, &textlen);
    assert_non_null(f);
    struct tb b;
    char label[32];
    build_sample(&b, true);
    for (size_t i = 1; i <= b.nrecords && i <= 256; i++) {
        snprintf(label, sizeof label, "sample cut at %zu", i);
        dump_steps(f, label, &b, i < b.nrecords ? b.offsets[i] : b.n);
    }
    free(b.p);
    build_sample(&b, false);
    dump_steps(f, "sample killed", &b, b.n);
    free(b.p);
    for (int open = 0; open <= 5; open += 5) {
        tb_two_steps(&b, open);
        snprintf(label, sizeof label, "two steps, %d open", open);
        dump_steps(f, label, &b, b.n);
        free(b.p);
    }
    tb_lost_steps(&b);
    dump_steps(f, "lost steps", &b, b.n);
    free(b.p);
    fclose(f);
    if (getenv("GOLDEN_DUMP"))
        fprintf(stderr, "=== golden_steps\n%s=== end\n", text);
    if (strcmp(text, golden_steps))
        fail_msg("step figures differ from their golden text:\n--- got\n%s--- want\n%s", text,
                 golden_steps);
    free(text);
}

static uint64_t progress_calls;

static void on_progress(void *ctx, uint64_t records, uint64_t offset, uint64_t file_bytes)
{
    (void)ctx;
    assert_true(offset <= file_bytes);
    assert_int_equal(records % 10, 0);
    progress_calls++;
}

static void test_event_cap_and_progress(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b, true);
    struct trace_read_opts opts = {.max_events = 5, .progress_every = 10, .progress = on_progress};
    struct rep_process p;
    struct trace_events ev;
    char err[512];
    assert_int_equal(trace_read_buf(b.p, b.n, "T", &opts, &p, &ev, err, sizeof err), 0);
    assert_int_equal(ev.nsyncs + ev.nlaunches, 5);
    assert_int_equal(ev.events_omitted, 7);
    assert_int_equal(ev.nsteps, 4);        /* steps are not events of the cap */
    assert_int_equal(p.sites[0].count, 6); /* counts do not depend on it */
    assert_int_equal(progress_calls, b.nrecords / 10);
    trace_free(&p, &ev);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_record_type),
        cmocka_unit_test(test_read_from_a_file),
        cmocka_unit_test(test_larger_than_the_window),
        cmocka_unit_test(test_cut_at_every_offset),
        cmocka_unit_test(test_zero_tail),
        cmocka_unit_test(test_random_corruption),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_bad_lengths),
        cmocka_unit_test(test_bad_strings),
        cmocka_unit_test(test_bad_references),
        cmocka_unit_test(test_stack_limits),
        cmocka_unit_test(test_many_ids_any_order),
        cmocka_unit_test(test_open_step_of_a_trace_that_ends_early),
        cmocka_unit_test(test_sites_share_of_the_partial_step),
        cmocka_unit_test(test_event_cap_and_progress),
        cmocka_unit_test(test_step_figures_golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
