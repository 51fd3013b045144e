/* Unit tests: trace.bin's encoder (output/trace_writer.c) keeps the file's bookkeeping: a thread,
 * a stack, a frame and a kernel are written (and named by the namer) once; a site's totals and
 * the drop counts only when they changed; and what it writes reads back through the CLI's
 * reader (cli/trace_read.c) as the same process. The bound (SYNCSPY_TRACE_MB): a loop far past
 * it stays under it with exact counts, and says truly which steps kept their events. */
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
static bool graph_named; /* the user lines of the generated code have come */

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
    if (key.b >> 63 && key.a == 0x9a) /* generated code no user line is ever found for */
        *out = (struct rep_frame){.function = "forward",
                                  .module = "",
                                  .file = "<eval_with_key>.6",
                                  .line = 3,
                                  .python = true};
    else if (key.b >> 63 && key.a == 0x99 && !graph_named)
        *out = (struct rep_frame){.function = "forward",
                                  .module = "",
                                  .file = "<eval_with_key>.5",
                                  .line = 15,
                                  .python = true};
    else if (key.b >> 63 && key.a == 0x99)
        *out = (struct rep_frame){.function = "forward",
                                  .module = "<eval_with_key>.5",
                                  .file = "model.py",
                                  .line = 63,
                                  .python = true};
    else if (key.b >> 63)
        *out =
            (struct rep_frame){.function = "step", .file = "train.py", .line = 7, .python = true};
    else if (key.a == 0xb0)
        *out = (struct rep_frame){
            .function = "IndexBackward0", .module = "", .mark = REP_MARK_BACKWARD};
    else if (key.a == 0xca)
        *out = (struct rep_frame){.function = "", .module = "", .mark = REP_MARK_CALLER};
    else
        *out = (struct rep_frame){.function = key.a == 0x1000 ? "loss_fn" : "main",
                                  .module = "/home/u/train",
                                  .offset = key.a - 1};
}

static const struct tw_namer namer = {NULL, name_api, name_kernel, name_frame};

/* A writer of a trace of process pid into a fresh memfd (*fd). */
static struct trace_writer *open_writer(int32_t pid, int *fd)
{
    *fd = memfd_create("trace", 0);
    assert_true(*fd >= 0);
    struct trace_file_header h = {.magic = TRACE_MAGIC,
                                  .version_major = TRACE_VERSION_MAJOR,
                                  .header_bytes = sizeof h,
                                  .pid = pid,
                                  .rank = -1};
    struct trace_writer *w = tw_open(*fd, &h, &namer);
    assert_non_null(w);
    return w;
}

/* The bytes the writer left in fd (malloc'd), fd closed. */
static uint8_t *file_bytes(int fd, size_t *len)
{
    off_t end = lseek(fd, 0, SEEK_END);
    assert_true(end >= 0);
    uint8_t *buf = malloc((size_t)end ? (size_t)end : 1);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)end, 0), end);
    close(fd);
    *len = (size_t)end;
    return buf;
}

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
    int fd;
    struct trace_writer *w = open_writer(42, &fd);

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
        tw_site(w, &(struct tw_site){.site_id = 1,
                                     .stack_id = 1,
                                     .api = 1,
                                     .max_ns = 300,
                                     .phase = {.count = 5, .ns = 1000}});
        tw_drops(w, 2, 0);
        assert_int_equal(tw_flush(w), 0);
    }
    tw_site(w, &(struct tw_site){.site_id = 1,
                                 .stack_id = 1,
                                 .api = 1,
                                 .max_ns = 300,
                                 .phase = {.count = 6, .ns = 1200}});
    tw_step(w, &(struct tw_step){.step = 1,
                                 .start_ns = 50,
                                 .end_ns = 900,
                                 .syncs = 6,
                                 .blocked_ns = 1200,
                                 .launches = 4,
                                 .active = true});
    tw_end(w, 1000, 0, 0);
    tw_close(w);

    /* names asked once each: two APIs, one kernel, three frames */
    assert_int_equal(api_asked, 2);
    assert_int_equal(kernel_asked, 1);
    assert_int_equal(frame_asked, 3);
    size_t len;
    uint8_t *buf = file_bytes(fd, &len);
    assert_int_equal(count_records(buf, len, TREC_THREAD), 1);
    assert_int_equal(count_records(buf, len, TREC_STACK), 1);
    assert_int_equal(count_records(buf, len, TREC_FRAME), 3);
    assert_int_equal(count_records(buf, len, TREC_SITE_TOTALS), 2); /* 5, then 6 */
    assert_int_equal(count_records(buf, len, TREC_DROPS), 1);
    assert_int_equal(count_records(buf, len, TREC_SYNC), 2);
    assert_int_equal(count_records(buf, len, TREC_LAUNCH), 4);

    struct rep_process p;
    struct trace_events ev;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, &ev, err, sizeof err), 0);
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
    int fd;
    struct trace_writer *w = open_writer(43, &fd);
    const struct tw_frame_key frames[5] = {
        {0x1000, 0}, {0xb0, 0}, {0x77, 3 | 1ull << 63}, {0xca, 0}, {0x78, 4 | 1ull << 63}};
    tw_stack(w, 1, frames, 5);
    tw_site(
        w,
        &(struct tw_site){
            .site_id = 1, .stack_id = 1, .api = 1, .max_ns = 10, .phase = {.count = 2, .ns = 20}});
    tw_end(w, 1000, 0, 0);
    tw_close(w);
    size_t len;
    uint8_t *buf = file_bytes(fd, &len);
    struct rep_process p;
    struct trace_events ev;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, &ev, err, sizeof err), 0);
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

/* A frame of torch.compile's generated code written before its user line came: a FRAME_NAME
 * record once it has come, and every stack that holds the frame reads back with the user's
 * line; a frame named at once gets none. */
static void test_generated_frame_named_later(void **state)
{
    (void)state;
    int fd;
    graph_named = false;
    struct trace_writer *w = open_writer(44, &fd);
    const struct tw_frame_key a[2] = {{0x1000, 0}, {0x99, 15 | 1ull << 63}};
    const struct tw_frame_key b[3] = {{0x2000, 0}, {0x99, 15 | 1ull << 63}, {0x77, 3 | 1ull << 63}};
    tw_stack(w, 1, a, 2);
    tw_name_frames(w); /* not yet */
    assert_int_equal(tw_flush(w), 0);
    graph_named = true;
    tw_name_frames(w);
    tw_name_frames(w);    /* once only */
    tw_stack(w, 2, b, 3); /* the frame's id is reused */
    tw_site(
        w,
        &(struct tw_site){
            .site_id = 1, .stack_id = 1, .api = 1, .max_ns = 10, .phase = {.count = 2, .ns = 20}});
    tw_site(
        w,
        &(struct tw_site){
            .site_id = 2, .stack_id = 2, .api = 1, .max_ns = 10, .phase = {.count = 1, .ns = 10}});
    tw_end(w, 1000, 0, 0);
    tw_close(w);
    size_t len;
    uint8_t *buf = file_bytes(fd, &len);
    assert_int_equal(count_records(buf, len, TREC_FRAME), 4);
    assert_int_equal(count_records(buf, len, TREC_FRAME_NAME), 1);
    struct rep_process p;
    struct trace_events ev;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, &ev, err, sizeof err), 0);
    assert_int_equal(p.nsites, 2);
    for (size_t i = 0; i < 2; i++) {
        const struct rep_frame *f = &p.sites[i].frames[1];
        assert_true(f->python);
        assert_string_equal(f->file, "model.py");
        assert_int_equal(f->line, 63);
        assert_string_equal(f->module, "<eval_with_key>.5");
    }
    trace_free(&p, &ev);
    /* a FRAME_NAME for a frame the file never defined: refused in one line */
    size_t at = sizeof(struct trace_file_header);
    while (at < len && ((struct trace_record_header *)(buf + at))->type != TREC_FRAME_NAME)
        at += ((struct trace_record_header *)(buf + at))->bytes;
    assert_true(at < len);
    ((struct trace_frame *)(buf + at))->id = 77;
    assert_int_not_equal(trace_read_buf(buf, len, "T", NULL, &p, &ev, err, sizeof err), 0);
    assert_non_null(strstr(err, "a name for frame 77, which is not defined"));
    free(buf);

    /* one never named is asked for at 100 flushes, then left */
    w = open_writer(45, &fd);
    const struct tw_frame_key never[1] = {{0x9a, 3 | 1ull << 63}};
    tw_stack(w, 1, never, 1);
    int asked = frame_asked;
    for (int i = 0; i < 150; i++)
        tw_name_frames(w);
    assert_int_equal(frame_asked - asked, 100);
    tw_close(w);
    close(fd);
}

/* ---- the bound (SYNCSPY_TRACE_MB) -------------------------------------------------------------- */

#define LOOP_SITE_SYNC 1 /* api ids of the namer: 1 a sync, 2 a launch */

/* A training loop as the flusher hands it over: each step `syncs_of(step)` syncs of one site and
 * two launches, its STEP record, and a flush every `per_flush` steps (totals when due), the
 * clock moving 1 ms a step. Returns the file's bytes (caller frees) and its length; killed: no
 * exit's records. */
static uint8_t *run_loop(uint64_t bound, uint64_t nsteps, uint64_t (*syncs_of)(uint64_t),
                         bool killed, size_t *len_out, uint64_t *syncs_out)
{
    int fd;
    struct trace_writer *w = open_writer(44, &fd);
    tw_set_bound(w, bound);
    const struct tw_frame_key frames[1] = {{0x1000, 0}};
    tw_thread(w, 9, "main");
    tw_stack(w, 1, frames, 1);
    uint64_t count = 0, ns = 0, t = 1000000;
    struct tw_event ev[64];
    for (uint64_t s = 1; s <= nsteps; s++) {
        uint64_t k = syncs_of(s), n = 0, start = t;
        for (uint64_t i = 0; i < k; i++, t += 1000)
            ev[n++] = (struct tw_event){.t0 = t,
                                        .t1 = t + 500,
                                        .step = s,
                                        .stack_id = 1,
                                        .tid = 9,
                                        .api = LOOP_SITE_SYNC,
                                        .kind = TW_SYNC};
        for (int i = 0; i < 2; i++, t += 100)
            ev[n++] = (struct tw_event){
                .t0 = t, .arg = 0x4000, .step = s, .tid = 9, .api = 2, .kind = TW_LAUNCH};
        tw_events(w, ev, n);
        count += k;
        ns += 500 * k;
        t = start + 1000000;
        tw_step(w, &(struct tw_step){.step = s,
                                     .start_ns = start,
                                     .end_ns = t,
                                     .syncs = k,
                                     .blocked_ns = 500 * k,
                                     .launches = 2,
                                     .active = true,
                                     .tid = 9,
                                     .source = TRACE_STEP_SOURCE_EXPLICIT});
        bool last = s == nsteps;
        if (last && !killed)
            tw_finishing(w);
        if (s % 64 == 0 || last) {
            if (tw_totals_due(w, t, 1, 1)) {
                tw_site(w, &(struct tw_site){.site_id = 1,
                                             .stack_id = 1,
                                             .api = 1,
                                             .max_ns = 500,
                                             .phase = {.count = count, .ns = ns}});
                tw_thread_totals(
                    w, &(struct tw_thread_totals){.tid = 9, .phase = {.count = count, .ns = ns}});
                tw_drops(w, 0, 0);
            }
            assert_int_equal(tw_flush(w), 0);
        }
    }
    if (killed) {
        tw_discard(w); /* what was flushed stays: kill -9 after the last flush */
    } else {
        tw_end(w, t, 0, nsteps + 1);
        tw_close(w);
    }
    size_t len;
    uint8_t *buf = file_bytes(fd, &len);
    *len_out = (size_t)len;
    *syncs_out = count;
    return buf;
}

static uint64_t one_sync(uint64_t step)
{
    (void)step;
    return 1;
}

static uint64_t varying_syncs(uint64_t step)
{
    return (step / 1000) % 3 + (step % 7 == 0); /* runs of equal counts, and steps apart */
}

static uint64_t changing_syncs(uint64_t step)
{
    return step % 3 + (step % 11 == 0); /* a count that changes with every step */
}

/* Per step of the file: its SYNC and LAUNCH records (steps 0 .. n-1). */
static void events_per_step(const uint8_t *buf, size_t len, uint32_t *per_step, uint64_t n)
{
    size_t at = sizeof(struct trace_file_header);
    while (at + sizeof(struct trace_record_header) <= len) {
        const struct trace_record_header *h = (const void *)(buf + at);
        uint64_t step = UINT64_MAX;
        if (h->type == TREC_SYNC)
            step = ((const struct trace_sync *)h)->step;
        if (h->type == TREC_LAUNCH)
            step = ((const struct trace_launch *)h)->step;
        if (step < n)
            per_step[step]++;
        at += h->bytes;
    }
}

/* A loop far past its bound: the file stays under it, every count reads back exact, and the
 * steps said to have their detail are exactly the steps whose every event is in the file. */
static void check_bounded_loop(uint64_t (*syncs_of)(uint64_t), uint64_t nsteps)
{
    const uint64_t bound = 1 << 20;
    size_t len;
    uint64_t syncs;
    uint8_t *buf = run_loop(bound, nsteps, syncs_of, false, &len, &syncs);
    assert_true(len <= bound);
    assert_true(count_records(buf, len, TREC_STEP_RUN) > 0);
    assert_true(count_records(buf, len, TREC_BOUND) > 0);
    /* totals rewritten at doubling intervals past the half: a few dozen, not one per flush */
    assert_true(count_records(buf, len, TREC_THREAD_TOTALS) < (int)(nsteps / 64 / 4));

    struct rep_process p;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, NULL, err, sizeof err), 0);
    assert_false(p.trace_unfinished);
    assert_int_equal(p.active_steps, nsteps);
    assert_int_equal(p.syncs, syncs);
    assert_int_equal(p.launches, 2 * nsteps);
    assert_int_equal(p.wall_ns, nsteps * 1000000);
    assert_int_equal(p.nsites, 1);
    assert_int_equal(p.sites[0].count, syncs);
    assert_int_equal(p.steps_seen, nsteps + 1);
    assert_int_equal(p.trace_bound_bytes, bound);
    assert_true(p.steps_folded > 0);
    assert_true(p.steps_omitted >= p.steps_folded);

    uint32_t *per_step = calloc(nsteps + 1, sizeof *per_step);
    assert_non_null(per_step);
    events_per_step(buf, len, per_step, nsteps + 1);
    uint64_t complete = 1, partial = 0; /* step 0: nothing to keep, kept */
    for (uint64_t s = 1; s <= nsteps; s++) {
        uint64_t want = syncs_of(s) + 2;
        complete += per_step[s] == want;
        partial += per_step[s] && per_step[s] != want;
    }
    assert_int_equal(p.detail_steps, complete);
    assert_true(partial <= 1); /* the step whose detail found its share full */
    assert_true(p.detail_steps < nsteps / 2);
    assert_true(p.sampled_from > 1000);
    /* the sample spreads over the run: steps of its last quarter have their detail */
    uint64_t late = 0;
    for (uint64_t s = nsteps / 4 * 3; s <= nsteps; s++)
        late += per_step[s] != 0;
    assert_true(late > 0);
    free(per_step);
    trace_free(&p, NULL);
    free(buf);
}

static void test_bound_one_sync_per_step(void **state)
{
    (void)state;
    check_bounded_loop(one_sync, 200000);
}

static void test_bound_varying_syncs(void **state)
{
    (void)state;
    check_bounded_loop(varying_syncs, 200000);
}

static uint64_t varint(const uint8_t **p)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

/* Every STEP_RUN of a loop's file: its steps' counts, as its record has them, are the loop's
 * (each step's syncs and its 2 launches), or the record keeps only sums and the reader counts its
 * steps in steps_summed. Returns the active steps of runs that keep only sums. */
static uint64_t check_runs(const uint8_t *buf, size_t len, uint64_t (*syncs_of)(uint64_t),
                           int *runs_out, int *counted_out)
{
    size_t at = sizeof(struct trace_file_header);
    int runs = 0, counted = 0;
    uint64_t summed = 0;
    while (at + sizeof(struct trace_record_header) <= len) {
        const struct trace_record_header *h = (const void *)(buf + at);
        if (h->type == TREC_STEP_RUN) {
            const struct trace_step_run *r = (const void *)h;
            runs++;
            assert_true(r->syncs >= r->syncs_min * r->active &&
                        r->syncs <= r->syncs_max * r->active);
            assert_int_equal(r->steps, r->last_step - r->first_step + 1); /* none lost here */
            assert_int_equal(r->active, r->steps);
            if (h->bytes > sizeof *r) { /* the counts, group by group */
                const uint8_t *p = (const uint8_t *)(r + 1);
                uint64_t step = r->first_step;
                while (step <= r->last_step) {
                    uint64_t n = varint(&p), k = varint(&p), l = varint(&p);
                    assert_true(n >= 1 && step + n - 1 <= r->last_step);
                    for (uint64_t i = 0; i < n; i++, step++) {
                        assert_int_equal(syncs_of(step), k);
                        assert_int_equal(l, 2);
                    }
                }
                assert_true((const uint8_t *)h + h->bytes - p < 8);
                counted++;
            } else if (r->syncs_min == r->syncs_max) { /* a run of alike steps: exactly those */
                for (uint64_t s = r->first_step; s <= r->last_step; s++)
                    assert_int_equal(syncs_of(s), r->syncs_min);
                counted++;
            } else {
                summed += r->active;
            }
        }
        at += h->bytes;
    }
    *runs_out = runs;
    *counted_out = counted;
    return summed;
}

/* A run merges steps of different counts only with their counts after it (until the steps' share
 * is full: then sums alone, which the reader says): the per-step counts stay exact. */
static void test_bound_runs_keep_per_step_counts(void **state)
{
    (void)state;
    size_t len;
    uint64_t syncs;
    /* 170,000 steps: their counts fit in the steps' share (of the trace's seven eighths) */
    uint8_t *buf = run_loop(1 << 20, 170000, varying_syncs, false, &len, &syncs);
    int runs, counted;
    uint64_t summed = check_runs(buf, len, varying_syncs, &runs, &counted);
    assert_true(runs > 1);
    assert_int_equal(summed, 0); /* this loop's counts fit in the steps' share */
    assert_int_equal(counted, runs);
    struct rep_process p;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, NULL, err, sizeof err), 0);
    assert_int_equal(p.steps_summed, 0);
    assert_int_equal(p.syncs, syncs);
    trace_free(&p, NULL);
    free(buf);
}

/* A count that changes every step fills the share: the runs after that keep sums, said. */
static void test_bound_runs_past_the_steps_share(void **state)
{
    (void)state;
    size_t len;
    uint64_t syncs;
    uint8_t *buf = run_loop(1 << 20, 400000, changing_syncs, false, &len, &syncs);
    assert_true(len <= 1 << 20);
    int runs, counted;
    uint64_t summed = check_runs(buf, len, changing_syncs, &runs, &counted);
    assert_true(counted > 10);
    assert_true(summed > 0);
    struct rep_process p;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, NULL, err, sizeof err), 0);
    assert_int_equal(p.steps_summed, summed);
    assert_true(p.steps_summed < p.steps_folded);
    assert_int_equal(p.syncs, syncs);
    assert_int_equal(p.active_steps, 400000);
    trace_free(&p, NULL);
    free(buf);
}

/* Without a bound (0) every record is written, as before 1.4: no run, no BOUND record. */
static void test_no_bound_writes_everything(void **state)
{
    (void)state;
    size_t len;
    uint64_t syncs;
    uint8_t *buf = run_loop(0, 20000, one_sync, false, &len, &syncs);
    assert_int_equal(count_records(buf, len, TREC_STEP), 20000);
    assert_int_equal(count_records(buf, len, TREC_SYNC), 20000);
    assert_int_equal(count_records(buf, len, TREC_LAUNCH), 40000);
    assert_int_equal(count_records(buf, len, TREC_STEP_RUN), 0);
    assert_int_equal(count_records(buf, len, TREC_BOUND), 0);
    struct rep_process p;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, NULL, err, sizeof err), 0);
    assert_int_equal(p.trace_bound_bytes, 0);
    assert_int_equal(p.syncs, 20000);
    trace_free(&p, NULL);
    free(buf);
}

/* Killed past the half: the file reads back as unfinished, under the bound, and its counts are
 * those of a flush (never more than the run made, the rows and the header alike). */
static void test_bound_killed(void **state)
{
    (void)state;
    size_t len;
    uint64_t syncs;
    uint8_t *buf = run_loop(1 << 20, 150000, one_sync, true, &len, &syncs);
    assert_true(len <= 1 << 20);
    struct rep_process p;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, NULL, err, sizeof err), 0);
    assert_true(p.trace_unfinished);
    assert_int_equal(p.nsites, 1);
    assert_true(p.sites[0].count > syncs / 2 && p.sites[0].count <= syncs);
    assert_true(p.syncs <= syncs);
    assert_true(p.trace_bound_bytes == 1 << 20);
    trace_free(&p, NULL);
    free(buf);
}

/* Killed past the half while runs of steps are written between the totals' rewrites (counts
 * that vary close runs often): the figures are those of the last rewrite, the header's and the
 * rows' alike, and the steps recorded after it are said to be left out. */
static void test_bound_killed_header_matches_rows(void **state)
{
    (void)state;
    size_t len;
    uint64_t syncs;
    uint8_t *buf = run_loop(1 << 20, 60000, changing_syncs, true, &len, &syncs);
    struct rep_process p;
    char err[256];
    assert_int_equal(trace_read_buf(buf, len, "T", NULL, &p, NULL, err, sizeof err), 0);
    assert_true(p.trace_unfinished);
    assert_int_equal(p.nsites, 1);
    /* the loop's totals are the exact sums through a step: no step open at the kill */
    assert_int_equal(p.syncs, p.sites[0].count);
    uint64_t through = 0, n = 0;
    while (through < p.sites[0].count)
        through += changing_syncs(++n);
    assert_int_equal(through, p.sites[0].count);
    assert_true(p.active_steps <= n + 1 && p.active_steps + 1 >= n);
    assert_true(p.steps_seen <= n + 2);
    assert_int_equal(p.trace_bound_bytes, 1 << 20);
    assert_true(p.steps_after_totals > 0);
    assert_true(p.steps_after_totals <= 60000 - n);
    trace_free(&p, NULL);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bookkeeping_and_read_back),
        cmocka_unit_test(test_backward_markers_read_back),
        cmocka_unit_test(test_generated_frame_named_later),
        cmocka_unit_test(test_bound_one_sync_per_step),
        cmocka_unit_test(test_bound_varying_syncs),
        cmocka_unit_test(test_bound_runs_keep_per_step_counts),
        cmocka_unit_test(test_bound_runs_past_the_steps_share),
        cmocka_unit_test(test_no_bound_writes_everything),
        cmocka_unit_test(test_bound_killed),
        cmocka_unit_test(test_bound_killed_header_matches_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
