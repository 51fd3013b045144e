/* Unit tests: trace.bin's encoder (output/trace_writer.c) keeps the file's bookkeeping: a thread,
 * a stack, a frame and a kernel are written (and named by the namer) once; a site's totals and
 * the drop counts only when they changed; and what it writes reads back through the CLI's
 * reader (cli/trace_read.c) as the same process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/trace_read.h"
#include "output/trace_writer.h"

static int api_asked, kernel_asked, frame_asked;

static const char *name_api(void *ctx, uint32_t api)
{
    (void)ctx;
    api_asked++;
    return api == 1 ? "cudaStreamSynchronize" : "cudaLaunchKernel";
}

static const char *name_kernel(void *ctx, uint64_t func)
{
    (void)ctx;
    kernel_asked++;
    return func == 0x4000 ? "vector_add" : NULL;
}

static void name_frame(void *ctx, struct tw_frame_key key, struct rep_frame *out)
{
    (void)ctx;
    frame_asked++;
    if (key.b >> 63)
        *out = (struct rep_frame){.function = "step", .file = "train.py", .line = 7, .python = true};
    else if (key.a == 0xb0)
        *out = (struct rep_frame){.function = "IndexBackward0", .module = "", .mark = REP_MARK_BACKWARD};
    else if (key.a == 0xca)
        *out = (struct rep_frame){.function = "", .module = "", .mark = REP_MARK_CALLER};
    else
        *out = (struct rep_frame){.function = key.a == 0x1000 ? "loss_fn" : "main",
                                  .module = "/home/u/train", .offset = key.a - 1};
}

static const struct tw_namer namer = {NULL, name_api, name_kernel, name_frame};

/* The records of one type in the file (headers walked, as a reader would). */
static int count_records(const uint8_t *buf, size_t len, uint32_t type)
{
    size_t at = sizeof(struct trace_file_header);
    int n = 0;
    while (at + sizeof(struct trace_record_header) <= len) {
        const struct trace_record_header *h = (const void *)(buf + at);
        n += h->type == type;
        at += h->bytes;
    }
    return n;
}

static void test_bookkeeping_and_read_back(void **state)
{
    (void)state;
    int fd = memfd_create("trace", 0);
    assert_true(fd >= 0);
    struct trace_file_header h = {.magic = TRACE_MAGIC, .version_major = TRACE_VERSION_MAJOR,
                                  .header_bytes = sizeof h, .pid = 42, .rank = -1};
    struct trace_writer *w = tw_open(fd, &h, &namer);
    assert_non_null(w);

    const struct tw_frame_key frames[3] = {{0x1000, 0}, {0x77, 3 | 1ull << 63}, {0x2000, 0}};
    for (int flush = 0; flush < 2; flush++) { /* two flushes with the same state */
        assert_int_equal(tw_thread_written(w, 9), flush == 1);
        tw_thread(w, 9, "main");
        if (!tw_stack_written(w, 1))
            tw_stack(w, 1, frames, 3);
        struct tw_event ev[3] = {
            {.t0 = 100, .t1 = 300, .step = 1, .stack_id = 1, .tid = 9, .api = 1, .kind = TW_SYNC},
            {.t0 = 400, .arg = 0x4000, .step = 1, .tid = 9, .api = 2, .kind = TW_LAUNCH},
            {.t0 = 500, .arg = 0x4000, .step = 1, .tid = 9, .api = 2, .kind = TW_LAUNCH},
        };
        tw_events(w, ev, 3);
        tw_site(w, &(struct tw_site){.site_id = 1, .stack_id = 1, .api = 1, .max_ns = 300,
                                     .phase = {.count = 5, .ns = 1000}});
        tw_drops(w, 2, 0);
        assert_int_equal(tw_flush(w), 0);
    }
    tw_site(w, &(struct tw_site){.site_id = 1, .stack_id = 1, .api = 1, .max_ns = 300,
                                 .phase = {.count = 6, .ns = 1200}});
    tw_step(w, &(struct tw_step){.step = 1, .start_ns = 50, .end_ns = 900, .syncs = 6,
                                 .blocked_ns = 1200, .launches = 4, .active = true});
    tw_end(w, 1000, 0, 0);
    tw_close(w);

    /* names asked once each: two APIs, one kernel, three frames */
    assert_int_equal(api_asked, 2);
    assert_int_equal(kernel_asked, 1);
    assert_int_equal(frame_asked, 3);
    off_t len = lseek(fd, 0, SEEK_END);
    uint8_t *buf = malloc((size_t)len);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
    close(fd);
    assert_int_equal(count_records(buf, (size_t)len, TREC_THREAD), 1);
    assert_int_equal(count_records(buf, (size_t)len, TREC_STACK), 1);
    assert_int_equal(count_records(buf, (size_t)len, TREC_FRAME), 3);
    assert_int_equal(count_records(buf, (size_t)len, TREC_SITE_TOTALS), 2); /* 5, then 6 */
    assert_int_equal(count_records(buf, (size_t)len, TREC_DROPS), 1);
    assert_int_equal(count_records(buf, (size_t)len, TREC_SYNC), 2);
    assert_int_equal(count_records(buf, (size_t)len, TREC_LAUNCH), 4);

    struct rep_process p;
    struct trace_events ev;
    char err[256];
    assert_int_equal(trace_read_buf(buf, (size_t)len, "T", NULL, &p, &ev, err, sizeof err), 0);
    assert_int_equal(p.pid, 42);
    assert_false(p.trace_unfinished);
    assert_int_equal(p.nsites, 1);
    assert_int_equal(p.sites[0].count, 6);
    assert_string_equal(p.sites[0].api, "cudaStreamSynchronize");
    assert_int_equal(p.sites[0].nframes, 3);
    assert_string_equal(p.sites[0].frames[0].function, "loss_fn");
    assert_true(p.sites[0].frames[1].python);
    assert_int_equal(p.sites[0].frames[1].line, 7);
    assert_int_equal(p.syncs_dropped, 2);
    assert_int_equal(ev.nlaunches, 4);
    assert_string_equal(ev.launches[0].kernel, "vector_add");
    assert_int_equal(ev.nthreads, 1);
    assert_string_equal(ev.threads[0].name, "main");
    trace_free(&p, &ev);
    free(buf);
}

/* A backward-pass sync's section markers are frames of their own kinds in the file and read back
 * as the same markers. */
static void test_backward_markers_read_back(void **state)
{
    (void)state;
    int fd = memfd_create("trace", 0);
    assert_true(fd >= 0);
    struct trace_file_header h = {.magic = TRACE_MAGIC, .version_major = TRACE_VERSION_MAJOR,
                                  .header_bytes = sizeof h, .pid = 43, .rank = -1};
    struct trace_writer *w = tw_open(fd, &h, &namer);
    assert_non_null(w);
    const struct tw_frame_key frames[5] = {{0x1000, 0}, {0xb0, 0}, {0x77, 3 | 1ull << 63},
                                           {0xca, 0}, {0x78, 4 | 1ull << 63}};
    tw_stack(w, 1, frames, 5);
    tw_site(w, &(struct tw_site){.site_id = 1, .stack_id = 1, .api = 1, .max_ns = 10,
                                 .phase = {.count = 2, .ns = 20}});
    tw_end(w, 1000, 0, 0);
    tw_close(w);
    off_t len = lseek(fd, 0, SEEK_END);
    uint8_t *buf = malloc((size_t)len);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
    close(fd);
    struct rep_process p;
    struct trace_events ev;
    char err[256];
    assert_int_equal(trace_read_buf(buf, (size_t)len, "T", NULL, &p, &ev, err, sizeof err), 0);
    assert_int_equal(p.nsites, 1);
    const struct rep_frame *f = p.sites[0].frames;
    assert_int_equal(p.sites[0].nframes, 5);
    assert_int_equal(f[0].mark, REP_MARK_NONE);
    assert_int_equal(f[1].mark, REP_MARK_BACKWARD);
    assert_string_equal(f[1].function, "IndexBackward0");
    assert_true(f[2].python);
    assert_int_equal(f[3].mark, REP_MARK_CALLER);
    struct rep_sections sec = rep_site_sections(f, 5);
    assert_int_equal(sec.own, 1);
    assert_string_equal(sec.node, "IndexBackward0");
    assert_int_equal(sec.forward, 2);
    assert_int_equal(sec.nforward, 1);
    assert_int_equal(sec.caller, 4);
    assert_int_equal(sec.ncaller, 1);
    trace_free(&p, &ev);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bookkeeping_and_read_back),
        cmocka_unit_test(test_backward_markers_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
