/* tests/unit/test_summary_json.c: summary.json written and read back: escaping, round trip,
 * and a reader that refuses truncated, foreign, newer, mistyped, deeply nested and random
 * input with one sentence naming the file, never crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/report.h"
#include "output/step_list.h"
#include "output/summary_json.h"
#include "cli/summary_read.h"

static char tmpdir[] = "/tmp/syncspy-test-sj-XXXXXX";
static char path[64];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(path, sizeof path, "%s/summary.json", tmpdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    rmdir(tmpdir);
    return 0;
}

static void put_file(const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* What was written to f (a tmpfile), into a malloc'ed string; f is closed. */
static char *take_text(FILE *f, size_t *len)
{
    off_t n = lseek(fileno(f), 0, SEEK_END);
    assert_true(n > 0);
    char *s = malloc((size_t)n + 1);
    assert_int_equal(pread(fileno(f), s, (size_t)n, 0), n);
    s[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return s;
}

/* summary_write_json of p into a malloc'ed string */
static char *write_json(const struct rep_process *p, size_t *len)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(summary_write_json(p, fileno(f)), 0);
    return take_text(f, len);
}

/* Reads text as summary.json: 0 and *out filled, or -1 and the error in err. */
static int read_text(const char *text, size_t len, struct rep_process *out, char *err,
                     size_t errlen)
{
    put_file(text, len);
    err[0] = '\0';
    int rc = summary_read_json(path, out, err, errlen);
    if (rc != 0) {
        assert_int_equal(rc, -1);
        assert_true(strlen(err) > 0);
        assert_non_null(strstr(err, path)); /* every message names the file */
        assert_null(strchr(err, '\n'));     /* one sentence, one line */
    }
    return rc;
}

static void expect_error(const char *text, const char *fragment)
{
    struct rep_process p;
    char err[512];
    if (read_text(text, strlen(text), &p, err, sizeof err) == 0) {
        summary_free(&p);
        fail_msg("accepted: %s", text);
    }
    if (fragment && !strstr(err, fragment))
        fail_msg("error \"%s\" lacks \"%s\" (input %.200s)", err, fragment, text);
}

/* text holds want (else the test fails naming it). */
static void assert_has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("no \"%s\" in:\n%.2000s", want, text);
}

/* ---- a process to write ------------------------------------------------------------------- */

static const struct rep_frame frames_a[] = {
    {"at::native::nonzero_cuda(at::Tensor const&)", "/x/libtorch_cuda.so", "", 0, 0x1234, false},
    {"MaskedLoss.ignore_background", "", "train.py", 42, 0, true},
    {NULL, "/x/libfoo.so", NULL, 0, 0xfffffffffffULL, false},
};
static const struct rep_frame frames_b[] = {
    {"loss_fn", "/home/u/train", "train.cpp", 4294967295u, 0, false},
};
static const struct rep_site sites[] = {
    {"cudaStreamSynchronize", 3, 300, 200, 3, frames_a},
    {"cudaMemcpy", 18446744073709551615ULL, 0, 0, 1, frames_b},
    {"cudaFree", 1, 5, 5, 0, NULL},
};
static const struct rep_step steps[] = {
    {3, 1000, 2, 200, 10, false},
    {4, 2000, 1, 100, 20, true},
};

static struct rep_process sample(void)
{
    return (struct rep_process){.pid = 4242,
                                .rank = -1,
                                .schedule = "skip_first=1,wait=1,warmup=1,active=2",
                                .steps_seen = 5,
                                .steps = steps,
                                .nsteps = 2,
                                .steps_omitted = 1,
                                .sites = sites,
                                .nsites = 3,
                                .active_steps = 3,
                                .syncs = 3,
                                .blocked_ns = 300,
                                .launches = 30,
                                .wall_ns = 3000,
                                .unattributed_syncs = 7};
}

static const char *s0(const char *s)
{
    return s ? s : "";
}

static void assert_same(const struct rep_process *a, const struct rep_process *b)
{
    assert_int_equal(a->pid, b->pid);
    assert_int_equal(a->rank, b->rank);
    assert_string_equal(s0(a->schedule), s0(b->schedule));
    assert_int_equal(a->steps_seen, b->steps_seen);
    assert_int_equal(a->steps_omitted, b->steps_omitted);
    assert_int_equal(a->active_steps, b->active_steps);
    assert_int_equal(a->syncs, b->syncs);
    assert_int_equal(a->blocked_ns, b->blocked_ns);
    assert_int_equal(a->launches, b->launches);
    assert_int_equal(a->wall_ns, b->wall_ns);
    assert_int_equal(a->unattributed_syncs, b->unattributed_syncs);
    assert_int_equal(a->nsteps, b->nsteps);
    for (size_t i = 0; i < a->nsteps; i++)
        assert_memory_equal(&a->steps[i], &b->steps[i], sizeof a->steps[i]);
    assert_int_equal(a->nsites, b->nsites);
    for (size_t i = 0; i < a->nsites; i++) {
        const struct rep_site *x = &a->sites[i], *y = &b->sites[i];
        assert_string_equal(x->api, y->api);
        assert_int_equal(x->count, y->count);
        assert_int_equal(x->blocked_ns, y->blocked_ns);
        assert_int_equal(x->max_ns, y->max_ns);
        assert_int_equal(x->nframes, y->nframes);
        for (uint32_t k = 0; k < x->nframes; k++) {
            assert_string_equal(s0(x->frames[k].function), s0(y->frames[k].function));
            assert_string_equal(s0(x->frames[k].module), s0(y->frames[k].module));
            assert_string_equal(s0(x->frames[k].file), s0(y->frames[k].file));
            assert_int_equal(x->frames[k].line, y->frames[k].line);
            assert_int_equal(x->frames[k].offset, y->frames[k].offset);
            assert_int_equal(x->frames[k].python, y->frames[k].python);
            assert_int_equal(x->frames[k].mark, y->frames[k].mark);
        }
    }
}

/* text (of write_json) reads back into *q as p: the caller frees q. */
static void read_back(const char *text, size_t len, const struct rep_process *p,
                      struct rep_process *q)
{
    char err[512];
    if (read_text(text, len, q, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_same(p, q);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct rep_process p = sample(), q;
    size_t len;
    char *text = write_json(&p, &len);
    assert_has(text, "{\"version\": 1, ");
    assert_has(text, "\"rank\": null");
    assert_has(text, "\"function\": \"\", \"module\": \"/x/libfoo.so\", \"file\": "
                     "\"\", \"line\": 0");
    assert_has(text, "\"count\": 18446744073709551615");
    assert_has(text, "\"frames\": []");
    read_back(text, len, &p, &q);
    summary_free(&q);
    assert_null(q.owned);
    /* with a rank */
    p.rank = 7;
    free(text);
    text = write_json(&p, &len);
    assert_has(text, "\"rank\": 7");
    read_back(text, len, &p, &q);
    summary_free(&q);
    free(text);
    /* trace.bin lost data (EFBIG): said only then, read back; an errno out of range reads EIO */
    text = write_json(&p, &len);
    assert_null(strstr(text, "trace_lost_errno"));
    free(text);
    p.trace_lost_errno = EFBIG;
    text = write_json(&p, &len);
    assert_has(text, ", \"trace_lost_errno\": 27");
    read_back(text, len, &p, &q);
    assert_int_equal(q.trace_lost_errno, EFBIG);
    summary_free(&q);
    free(text);
    p.trace_lost_errno = 0;
    const char odd[] = "{\"version\": 1, \"pid\": 3, \"steps\": [], \"sites\": [], "
                       "\"trace_lost_errno\": 99999}";
    char err[512];
    assert_int_equal(read_text(odd, sizeof odd - 1, &q, err, sizeof err), 0);
    assert_int_equal(q.trace_lost_errno, EIO);
    summary_free(&q);
    /* empty process */
    struct rep_process e = {.pid = 1, .rank = -1};
    text = write_json(&e, &len);
    read_back(text, len, &e, &q);
    assert_int_equal(q.nsteps, 0);
    assert_int_equal(q.nsites, 0);
    assert_string_equal(q.schedule, "");
    summary_free(&q);
    free(text);
}

/* GOLDEN_DUMP=1 prints the text as it is now: tests/unit/golden.py rewrites the golden below
 * from it after a deliberate change. */
/* GOLDENS: made with GOLDEN_DUMP=1 before summary_write_json was split (issue 37) */
static const char golden_summary[] =
    "{\"version\": 1, \"tool\": \"syncspy\", \"pid\": 4242, \"rank\": 3, \"local_rank\": 0, "
    "\"world_size\": null, \"node\": 0,\n"
    " \"host\": null, \"job_id\": null, \"launcher\": null,\n"
    " \"schedule\": \"skip_first=1,wait=1,warmup=1,active=2\",\n"
    " \"recorded\": [{\"first\": 3, \"last\": 4, \"cause\": \"schedule\"}, {\"first\": 9, "
    "\"last\": 9, \"cause\": \"syncspy start\"}], \"recorded_omitted\": 5,\n"
    " \"steps_seen\": 5, \"active_steps\": 3, \"steps_omitted\": 1,\n"
    " \"wall_ns\": 3000, \"syncs\": 3, \"blocked_ns\": 300, \"launches\": 30, "
    "\"unattributed_syncs\": 7, \"attribution_steps\": 2,\n"
    " \"startup\": {\"step\": 0, \"wall_ns\": 900, \"syncs\": 4, \"blocked_ns\": 40, "
    "\"launches\": 8}, \"step_source\": \"optimizer.step()\", \"no_step_hook\": false, "
    "\"optimizers\": 2, \"optimizers_max\": 3, \"settings_from\": \"pyproject.toml\", "
    "\"trace_lost_errno\": 28,\n"
    " \"threads\": [\n"
    "  {\"tid\": 11, \"name\": \"python\", \"syncs\": 2, \"blocked_ns\": 200, \"startup_count\": "
    "0, \"startup_blocked_ns\": 0, \"partial_count\": 0, \"partial_blocked_ns\": 0, "
    "\"ends_steps\": true},\n"
    "  {\"tid\": 12, \"name\": \"\", \"syncs\": 1, \"blocked_ns\": 100, \"startup_count\": 0, "
    "\"startup_blocked_ns\": 0, \"partial_count\": 0, \"partial_blocked_ns\": 0, \"ends_steps\": "
    "false}],\n"
    " \"recompiles\": [\n"
    "{\"function\": \"Net.forward\", \"file\": \"/home/u/train.py\", \"line\": 54, \"count\": 3, "
    "\"in_steps\": 2, \"reason\": \"tensor 'x' size mismatch\"}],\n"
    " \"steps\": [\n"
    "  {\"step\": 3, \"wall_ns\": 1000, \"syncs\": 2, \"blocked_ns\": 200, \"launches\": 10, "
    "\"partial\": false},\n"
    "  {\"step\": 4, \"wall_ns\": 2000, \"syncs\": 1, \"blocked_ns\": 100, \"launches\": 20, "
    "\"partial\": true}],\n"
    " \"sites\": [\n"
    "  {\"api\": \"cudaStreamSynchronize\", \"count\": 3, \"blocked_ns\": 300, \"max_ns\": 200, "
    "\"startup_count\": 0, \"startup_blocked_ns\": 0, \"partial_count\": 0, "
    "\"partial_blocked_ns\": 0, \"op\": \"cudaStreamSynchronize\", \"frames\": [\n"
    "    {\"function\": \"at::native::nonzero_cuda(at::Tensor const&)\", \"module\": "
    "\"/x/libtorch_cuda.so\", \"file\": \"\", \"line\": 0, \"python\": false, \"offset\": "
    "4660},\n"
    "    {\"function\": \"MaskedLoss.ignore_background\", \"module\": \"\", \"file\": "
    "\"train.py\", \"line\": 42, \"python\": true, \"offset\": 0},\n"
    "    {\"function\": \"\", \"module\": \"/x/libfoo.so\", \"file\": \"\", \"line\": 0, "
    "\"python\": false, \"offset\": 17592186044415}]},\n"
    "  {\"api\": \"cudaMemcpy\", \"count\": 18446744073709551615, \"blocked_ns\": 0, \"max_ns\": "
    "0, \"startup_count\": 0, \"startup_blocked_ns\": 0, \"partial_count\": 0, "
    "\"partial_blocked_ns\": 0, \"op\": \"cudaMemcpy\", \"hint\": \"a synchronous (or "
    "pageable-memory) copy blocks the host: copy into a pinned buffer (pin_memory()) with "
    "non_blocking=True and read the result a step later\", \"frames\": [\n"
    "    {\"function\": \"loss_fn\", \"module\": \"/home/u/train\", \"file\": \"train.cpp\", "
    "\"line\": 4294967295, \"python\": false, \"offset\": 0}]},\n"
    "  {\"api\": \"cudaFree\", \"count\": 1, \"blocked_ns\": 5, \"max_ns\": 5, "
    "\"startup_count\": 0, \"startup_blocked_ns\": 0, \"partial_count\": 0, "
    "\"partial_blocked_ns\": 0, \"op\": \"cudaFree\", \"hint\": \"cudaFree synchronizes the "
    "device: caching allocator churn (empty_cache, changing shapes, memory pressure): keep "
    "shapes stable, do not empty the cache in the loop\", \"frames\": []}]}\n";

/* The whole text of a process with every optional part (recorded ranges, start-up, its step
 * source, settings, a lost trace, threads, recompiles), byte for byte. */
static void test_golden_text(void **state)
{
    (void)state;
    static const struct rep_range ranges[] = {{3, 4, REP_CAUSE_SCHEDULE}, {9, 9, REP_CAUSE_START}};
    static const struct rep_thread threads[] = {
        {.tid = 11, .name = "python", .syncs = 2, .blocked_ns = 200, .ends_steps = true},
        {.tid = 12, .name = NULL, .syncs = 1, .blocked_ns = 100}};
    static const struct rep_recompile rc[] = {
        {"Net.forward", "/home/u/train.py", 54, 3, 2, "tensor 'x' size mismatch"}};
    struct rep_process p = sample();
    p.rank = 3;
    p.ranges = ranges;
    p.nranges = 2;
    p.ranges_omitted = 5;
    p.attribution_steps = 2;
    p.startup_closed = true;
    p.startup =
        (struct rep_step){.step = 0, .wall_ns = 900, .syncs = 4, .blocked_ns = 40, .launches = 8};
    p.step_source = "optimizer.step()";
    p.optimizers = 2;
    p.optimizers_max = 3;
    p.settings_from = "pyproject.toml";
    p.trace_lost_errno = 28;
    p.threads = threads;
    p.nthreads = 2;
    p.recompiles = rc;
    p.nrecompiles = 1;
    size_t len;
    char *text = write_json(&p, &len);
    if (getenv("GOLDEN_DUMP"))
        fprintf(stderr, "=== golden_summary\n%s=== end\n", text);
    if (strcmp(text, golden_summary))
        fail_msg("summary.json differs from its golden text:\n--- got\n%s--- want\n%s", text,
                 golden_summary);
    free(text);
}

/* report_render_text of p into a malloc'ed string */
static char *render_text(const struct rep_process *p)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    struct report_opts opts = {0};
    assert_int_equal(report_render_text(p, 1, &opts, fileno(f)), 0);
    size_t len;
    return take_text(f, &len);
}

/* The agent's packed step list (output/step_list.h) reads back as the steps appended, extreme
 * values included, and gives the same summary.json and report as the array it replaces: the
 * start-up step and a partial last one left out of the rates, steps with gaps, and a list cut
 * short (summary_fit_bound lists fewer than were appended). */
static void test_packed_steps(void **state)
{
    (void)state;
    static const struct rep_step v[] = {
        {0, 5000000000ULL, 2, 700, 40, false, false},
        {1, 2000000, 5, 150000, 47, false, true},
        {2, 2100000, 0, 0, 0, false, false},
        {9, 1900000, 127, 128, 16383, false, true},
        {10, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, false, false},
        {UINT64_MAX - 1, 1, 1, 1, 1, false, true},
        {UINT64_MAX, 300, 1, 20, 3, true, false},
    };
    size_t n = sizeof v / sizeof v[0];
    uint8_t *bytes = malloc(n * STEP_LIST_BYTES_MAX);
    struct step_list list = {.bytes = bytes};
    for (size_t i = 0; i < n; i++)
        step_list_append(&list, &v[i]);
    assert_int_equal(list.n, n);
    assert_true(list.len <= n * STEP_LIST_BYTES_MAX);
    struct rep_process a = sample(), b = sample();
    a.steps = v;
    b.steps = NULL;
    b.step_list = &list;
    a.startup_closed = b.startup_closed = true;
    a.steps_seen = b.steps_seen = UINT64_MAX;
    for (size_t shown = n; shown > 0; shown = shown > 3 ? shown - 3 : 0) {
        a.nsteps = b.nsteps = shown;
        assert_int_equal(rep_steps_listed(&b), shown);
        struct rep_step_cursor c;
        struct rep_step st;
        size_t k = 0;
        for (rep_steps_begin(&c, &b); rep_steps_next(&c, &st); k++) {
            assert_memory_equal(&st, &v[k], sizeof st);
            assert_true(rep_step_at(&b, k, &st));
            assert_memory_equal(&st, &v[k], sizeof st);
        }
        assert_int_equal(k, shown);
        assert_false(rep_step_at(&b, shown, &st));
        size_t la, lb;
        char *ja = write_json(&a, &la), *jb = write_json(&b, &lb);
        assert_string_equal(ja, jb);
        char *ra = render_text(&a), *rb = render_text(&b);
        assert_string_equal(ra, rb);
        free(ja);
        free(jb);
        free(ra);
        free(rb);
    }
    free(bytes);
}

/* torch.compile's recompilations round-trip (function, file, line, counts, Dynamo's reason with
 * its quotes), and a file whose in_steps exceeds its count is refused. */
static void test_recompiles(void **state)
{
    (void)state;
    static const struct rep_recompile rc[] = {
        {"Net.forward", "/home/u/train.py", 54, 3, 2,
         "tensor 'x' size mismatch at index 0. expected 32, actual 33"},
        {"(other functions)", "", 0, 1, 0, ""}};
    struct rep_process p = {.pid = 4, .rank = -1, .recompiles = rc, .nrecompiles = 2}, q;
    size_t len;
    char *text = write_json(&p, &len);
    assert_has(
        text,
        "\"recompiles\": [\n{\"function\": \"Net.forward\", \"file\": \"/home/u/train.py\", "
        "\"line\": 54, \"count\": 3, \"in_steps\": 2, \"reason\": \"tensor 'x' size mismatch");
    char err[512];
    if (read_text(text, len, &q, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(q.nrecompiles, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(q.recompiles[i].function, rc[i].function);
        assert_string_equal(q.recompiles[i].file, rc[i].file);
        assert_string_equal(q.recompiles[i].reason, rc[i].reason);
        assert_int_equal(q.recompiles[i].line, rc[i].line);
        assert_int_equal(q.recompiles[i].count, rc[i].count);
        assert_int_equal(q.recompiles[i].in_steps, rc[i].in_steps);
    }
    summary_free(&q);
    free(text);
    expect_error("{\"version\": 1, \"pid\": 1, \"steps\": [], \"sites\": [], \"recompiles\": "
                 "[{\"function\": \"f\", \"count\": 1, \"in_steps\": 2}]}",
                 "\"in_steps\" 2 above its \"count\" 1");
    expect_error("{\"version\": 1, \"pid\": 1, \"steps\": [], \"sites\": [], \"recompiles\": "
                 "[{\"count\": 1}]}",
                 "a recompile has no \"function\"");
}

/* A backward-pass sync's section markers round-trip, with the node named on the site. */
static void test_backward_markers(void **state)
{
    (void)state;
    static const struct rep_frame f[] = {
        {"torch::autograd::generated::IndexBackward0::apply", "/x/libtorch_cpu.so", "", 0, 0x44,
         false},
        {"IndexBackward0", "", "", 0, 0, false, REP_MARK_BACKWARD},
        {"MaskedLoss.cross_entropy", "", "/u/train.py", 22, 0, true},
        {"", "", "", 0, 0, false, REP_MARK_CALLER},
        {"main", "", "/u/train.py", 93, 0, true},
    };
    static const struct rep_site s[] = {{"cudaStreamSynchronize", 4, 40, 10, 5, f}};
    struct rep_process p = {.pid = 3, .rank = -1, .schedule = "", .sites = s, .nsites = 1}, q;
    size_t len;
    char *text = write_json(&p, &len);
    assert_has(text, "\"backward_node\": \"IndexBackward0\", \"op\": \"backward of x[bool_mask]\", "
                     "\"hint\": \"the backward of a boolean-mask index");
    assert_has(text, "(ignore_index) instead of indexing them out\", \"frames\": [");
    assert_has(text, "\"offset\": 0, \"marker\": \"backward\"}");
    assert_has(text, "\"marker\": \"backward_caller\"}");
    read_back(text, len, &p, &q);
    summary_free(&q);
    free(text);
    /* a marker the reader does not know: refused with a sentence */
    const char bad[] =
        "{\"version\": 1, \"pid\": 1, \"steps\": [], \"sites\": [{\"api\": \"x\", "
        "\"count\": 1, \"blocked_ns\": 1, \"max_ns\": 1, \"frames\": [{\"function\": "
        "\"f\", \"python\": false, \"marker\": \"sideways\"}]}]}";
    expect_error(bad, "marker");
}

/* Why a backward sync has no forward line, and the report's estimate (issue 24): the unseen site
 * names its cause and how its count was split; each forward site its estimated part; the marker
 * round-trips; attribution_steps and a step's "attributed" too. */
static void test_backward_unseen_and_estimate(void **state)
{
    (void)state;
    static const struct rep_frame fa[] = {
        {"torch::autograd::generated::IndexBackward0::apply", "/x/libtorch_cpu.so", "", 0, 0x44,
         false},
        {"IndexBackward0", "", "", 0, 0, false, REP_MARK_BACKWARD},
        {"f", "", "/u/train.py", 22, 0, true},
    };
    static const struct rep_frame fb[] = {
        {"torch::autograd::generated::IndexBackward0::apply", "/x/libtorch_cpu.so", "", 0, 0x44,
         false},
        {"IndexBackward0", "", "", 0, 0, false, REP_MARK_BACKWARD},
        {"f", "", "/u/train.py", 33, 0, true},
    };
    static const struct rep_frame fu[] = {
        {"torch::autograd::generated::IndexBackward0::apply", "/x/libtorch_cpu.so", "", 0, 0x44,
         false},
        {"not_attributed_step", "", "", 0, 0, false, REP_MARK_UNSEEN},
    };
    static const struct rep_site s[] = {{"cudaStreamSynchronize", 1, 10, 10, 3, fa},
                                        {"cudaStreamSynchronize", 3, 30, 10, 3, fb},
                                        {"cudaStreamSynchronize", 8, 80, 10, 2, fu}};
    static const struct rep_step st[] = {{1, 100, 4, 40, 0, false, true},
                                         {2, 100, 8, 80, 0, false, false}};
    struct rep_process p = {.pid = 3,
                            .rank = -1,
                            .schedule = "",
                            .sites = s,
                            .nsites = 3,
                            .steps = st,
                            .nsteps = 2,
                            .active_steps = 2,
                            .syncs = 12,
                            .attribution_steps = 1},
                       q;
    size_t len;
    char *text = write_json(&p, &len);
    assert_has(text, "\"attribution_steps\": 1,");
    assert_has(text, "\"partial\": false, \"attributed\": true}");
    assert_has(
        text,
        "\"unseen_cause\": \"not_attributed_step\", \"unseen_why\": \"made in steps without attribution");
    assert_has(text, "\"estimated_for\": [{\"site\": 0, \"count\": 2, \"blocked_ns\": 20}, "
                     "{\"site\": 1, \"count\": 6, \"blocked_ns\": 60}]");
    assert_has(text, "\"estimate\": {\"count\": 2, \"blocked_ns\": 20, \"attribution_steps\": 1}");
    assert_has(text, "\"estimate\": {\"count\": 6, \"blocked_ns\": 60, \"attribution_steps\": 1}");
    assert_has(text, "\"marker\": \"backward_unseen\"}");
    read_back(text, len, &p, &q);
    assert_int_equal(q.attribution_steps, 1);
    assert_true(q.steps[0].attributed);
    assert_false(q.steps[1].attributed);
    assert_int_equal(q.sites[2].frames[1].mark, REP_MARK_UNSEEN);
    assert_string_equal(q.sites[2].frames[1].function, "not_attributed_step");
    summary_free(&q);
    free(text);
}

static void test_escaping(void **state)
{
    (void)state;
    static const struct rep_frame f[] = {
        {"say \"hi\"\\ now\nnext\ttab\x01\x1f", "caf\xc3\xa9 \xf0\x9f\x98\x80", "bad\xff\xfe.py", 1,
         0, true},
        {"overlong\xc0\xaf surrogate\xed\xa0\x80 cut\xe2\x82", "", "", 0, 0, false},
    };
    struct rep_site s = {"cudaMemcpy", 1, 1, 1, 2, f};
    struct rep_process p = {.pid = 1, .rank = -1, .sites = &s, .nsites = 1, .schedule = "a\"b"};
    size_t len;
    char *text = write_json(&p, &len);
    assert_has(text, "\"say \\\"hi\\\"\\\\ now\\nnext\\ttab\\u0001\\u001f\"");
    assert_has(text, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    assert_has(text, "\"bad\\ufffd\\ufffd.py\"");
    assert_has(text, "\"overlong\\ufffd\\ufffd surrogate\\ufffd\\ufffd\\ufffd "
                     "cut\\ufffd\\ufffd\"");
    assert_has(text, "\"a\\\"b\"");
    for (size_t i = 0; i < len; i++) /* nothing but printable ASCII, newlines and UTF-8 */
        assert_true((unsigned char)text[i] >= 0x20 || text[i] == '\n');
    struct rep_process q;
    char err[512];
    assert_int_equal(read_text(text, len, &q, err, sizeof err), 0);
    assert_string_equal(q.sites[0].frames[0].function, f[0].function);
    assert_string_equal(q.sites[0].frames[0].module, f[0].module);
    assert_string_equal(q.sites[0].frames[0].file, "bad\xef\xbf\xbd\xef\xbf\xbd.py");
    assert_string_equal(q.schedule, "a\"b");
    summary_free(&q);
    free(text);
}

static void test_every_prefix(void **state)
{
    (void)state;
    struct rep_process p = sample(), q;
    size_t len;
    char *text = write_json(&p, &len);
    /* the whole file minus its final newline is still complete */
    size_t complete = len - 1;
    assert_int_equal(text[complete], '\n');
    for (size_t n = 0; n <= len; n++) {
        char err[512];
        int rc = read_text(text, n, &q, err, sizeof err);
        if (n >= complete) {
            assert_int_equal(rc, 0);
            assert_same(&p, &q);
            summary_free(&q);
        } else if (n == 0) {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err, "is empty"));
        } else {
            assert_int_equal(rc, -1);
            if (!strstr(err, "ends early at byte") || !strstr(err, "truncated"))
                fail_msg("prefix %zu: %s", n, err);
        }
    }
    free(text);
}

static void test_version(void **state)
{
    (void)state;
    expect_error("{\"version\": 2, \"pid\": 1, \"steps\": [], \"sites\": []}",
                 "summary.json version 2 is newer than this syncspy understands (1)");
    expect_error("{\"version\": 7}",
                 "summary.json version 7 is newer than this syncspy understands (1)");
    expect_error("{\"version\": 0, \"pid\": 1, \"steps\": [], \"sites\": []}", "version 0");
    expect_error("{\"pid\": 1, \"steps\": [], \"sites\": []}", "no \"version\" field");
    expect_error("{\"version\": 1, \"steps\": [], \"sites\": []}", "has no \"pid\"");
    expect_error("{\"version\": 1, \"pid\": 1, \"sites\": []}", "has no \"steps\"");
    expect_error("[1, 2]", "does not start with '{'");
    expect_error("   \n", "ends early");
    expect_error("{\"traceEvents\": []}", "no \"version\" field");
}

static void test_minimal_and_unknown_fields(void **state)
{
    (void)state;
    /* DESIGN.md's shape, plus fields this version does not know at every level */
    const char *text =
        "{\"version\": 1, \"pid\": 1234, \"rank\": null, \"future\": {\"a\": [1, -2.5e-3, "
        "true, false, null, \"x\", {}], \"b\": 1e999999},\n"
        " \"steps\": [{\"step\": 3, \"wall_ns\": 100, \"syncs\": 2, \"blocked_ns\": 50, "
        "\"gpu\": 0.5},\n  {\"step\": 9, \"wall_ns\": 300, \"syncs\": 4, \"blocked_ns\": 70}],\n"
        " \"sites\": [{\"api\": \"cudaStreamSynchronize\", \"count\": 6, \"blocked_ns\": 120, "
        "\"max_ns\": 40, \"new\": [], \"frames\": [{\"function\": "
        "\"MaskedLoss.ignore_background\", \"module\": \"\", \"file\": \"train.py\", \"line\": "
        "42, \"python\": true, \"col\": 3}]}]}";
    struct rep_process q;
    char err[512];
    assert_int_equal(read_text(text, strlen(text), &q, err, sizeof err), 0);
    assert_int_equal(q.pid, 1234);
    assert_int_equal(q.rank, -1);
    assert_int_equal(q.nsteps, 2);
    assert_int_equal(q.active_steps, 2);
    assert_int_equal(q.steps_seen, 10);
    assert_int_equal(q.wall_ns, 400);
    assert_int_equal(q.syncs, 6);
    assert_int_equal(q.blocked_ns, 120);
    assert_int_equal(q.nsites, 1);
    assert_string_equal(q.sites[0].frames[0].function, "MaskedLoss.ignore_background");
    assert_int_equal(q.sites[0].frames[0].line, 42);
    assert_true(q.sites[0].frames[0].python);
    summary_free(&q);
    /* \u escapes */
    text = "{\"version\": 1, \"pid\": 1, \"steps\": [], \"schedule\": \"\\u00e9\\ud83d\\ude00"
           "\\ud800x\\/\", \"sites\": []}";
    assert_int_equal(read_text(text, strlen(text), &q, err, sizeof err), 0);
    assert_string_equal(q.schedule, "\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx/");
    summary_free(&q);
}

static void test_wrong_types(void **state)
{
    (void)state;
#define HEAD "{\"version\": 1, \"pid\": 1, \"steps\": [], "
#define SITE(x) HEAD "\"sites\": [{\"api\": \"a\", \"count\": 1, \"blocked_ns\": 1" x "}]}"
#define FRAME(x) SITE(", \"frames\": [{\"function\": \"f\", \"python\": false" x "}]")
    expect_error("{\"version\": \"1\"}", "\"version\"");
    expect_error("{\"version\": 1, \"pid\": \"12\", \"steps\": [], \"sites\": []}", "\"pid\"");
    expect_error("{\"version\": 1, \"pid\": -1, \"steps\": [], \"sites\": []}", "\"pid\"");
    expect_error("{\"version\": 1, \"pid\": 2147483648, \"steps\": [], \"sites\": []}",
                 "larger than 2147483647");
    expect_error(HEAD "\"rank\": \"0\", \"sites\": []}", "\"rank\"");
    expect_error(HEAD "\"sites\": {}}", "an array of sites");
    expect_error(HEAD "\"sites\": [], \"schedule\": 3}", "\"schedule\"");
    expect_error("{\"version\": 1, \"pid\": 1, \"steps\": [{\"step\": 1}], \"sites\": []}",
                 "a step has no \"wall_ns\"");
    expect_error("{\"version\": 1, \"pid\": 1, \"steps\": [1], \"sites\": []}", "a step object");
    expect_error(SITE(", \"count\": 2"), "appears twice");
    expect_error(SITE(", \"max_ns\": 1.5"), "\"max_ns\" must be a non-negative integer");
    expect_error(SITE(", \"max_ns\": -3"), "\"max_ns\" must be a non-negative integer");
    expect_error(SITE(", \"max_ns\": 1e3"), "\"max_ns\" must be a non-negative integer");
    expect_error(SITE(", \"max_ns\": 007"), "leading zero");
    expect_error(SITE(", \"max_ns\": true"), "\"max_ns\"");
    expect_error(SITE(", \"frames\": {}"), "an array of frames");
    expect_error(SITE(", \"frames\": [1]"), "a frame object");
    expect_error(HEAD "\"sites\": [{\"api\": 3, \"count\": 1, \"blocked_ns\": 1}]}", "\"api\"");
    expect_error(HEAD "\"sites\": [{\"count\": 1, \"blocked_ns\": 1}]}", "has no \"api\"");
    expect_error(FRAME(", \"line\": 4294967296"), "larger than 4294967295");
    expect_error(SITE(", \"frames\": [{\"function\": \"f\", \"python\": 1}]"), "true or false");
    expect_error(FRAME(", \"file\": null"), "\"file\"");
    expect_error(SITE(", \"frames\": [{\"function\": \"f\"}]"), "a frame has no \"python\"");
    /* not JSON at all, or JSON with junk */
    expect_error(SITE("") " x", "after the end");
    expect_error(SITE(",}"), "a key string");
    expect_error(SITE(", \"x\": [1,]"), "a value");
    expect_error(SITE(", \"x\": tru"), "expected true");
    expect_error(SITE(", \"x\": nul "), "expected null");
    expect_error(SITE(", \"x\": \"a\x01\""), "control character");
    expect_error(SITE(", \"x\": \"a\xff\""), "not UTF-8");
    expect_error(SITE(", \"x\": \"\\q\""), "unknown string escape");
    expect_error(SITE(", \"x\": \"\\u12g4\""), "4 hex digits");
    expect_error(SITE(", \"x\": \"\\u0000\""), "\\u0000");
    expect_error(SITE(", \"x\" 1"), "':' after a key");
    expect_error(SITE(", \"x\": 1 \"y\": 2"), "',' or '}'");
    expect_error(SITE(", \"x\": -"), "a digit");
    expect_error(SITE(", \"x\": 1."), "a digit after '.'");
    expect_error(SITE(", \"x\": 1e+"), "a digit in the exponent");
}

static void test_huge_numbers(void **state)
{
    (void)state;
    struct rep_process q;
    char err[512];
    const char *ok = SITE(", \"max_ns\": 18446744073709551615, \"x\": "
                          "123456789012345678901234567890e400");
    assert_int_equal(read_text(ok, strlen(ok), &q, err, sizeof err), 0);
    assert_int_equal(q.sites[0].max_ns, UINT64_MAX);
    summary_free(&q);
    expect_error(SITE(", \"max_ns\": 18446744073709551616"), "larger than 2^64-1");
    expect_error(SITE(", \"max_ns\": 99999999999999999999999999999999999999999"),
                 "larger than 2^64-1");
}

static void test_deep_nesting(void **state)
{
    (void)state;
    size_t n = 10000;
    char *text = malloc(n + 64);
    memset(text, '[', n);
    text[n] = '\0';
    expect_error(text, "does not start with '{'");
    /* inside a value the reader skips */
    strcpy(text, "{\"version\": 1, \"x\": ");
    size_t h = strlen(text);
    memset(text + h, '[', n - h);
    text[n] = '\0';
    expect_error(text, "nested deeper than 64 levels");
    memset(text + h, '{', n - h);
    expect_error(text, "key string"); /* "{{": the second brace is not a key */
    /* 64 levels are fine */
    char ok[512];
    snprintf(ok, sizeof ok, HEAD "\"sites\": [], \"x\": %.*s%.*s}", 64,
             "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 64,
             "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
    struct rep_process q;
    char err[512];
    assert_int_equal(read_text(ok, strlen(ok), &q, err, sizeof err), 0);
    summary_free(&q);
    free(text);
}

/* xorshift: the same bytes on every run */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_random_bytes(void **state)
{
    (void)state;
    struct rep_process p = sample(), q;
    size_t len;
    char *valid = write_json(&p, &len);
    char *buf = malloc(len + 512);
    static const char alphabet[] = "{}[]\",:0123456789-.eE tfnrul\\\"u\n";
    char err[512];
    for (int iter = 0; iter < 3000; iter++) {
        size_t n;
        int kind = iter % 3;
        if (kind == 0) { /* pure noise */
            n = rnd() % 300;
            for (size_t i = 0; i < n; i++)
                buf[i] = (char)rnd();
        } else if (kind == 1) { /* JSON-ish noise */
            n = rnd() % 300;
            for (size_t i = 0; i < n; i++)
                buf[i] = alphabet[rnd() % (sizeof alphabet - 1)];
        } else { /* a valid file with a few bytes changed */
            n = len;
            memcpy(buf, valid, len);
            for (int k = 0, m = 1 + (int)(rnd() % 4); k < m; k++)
                buf[rnd() % len] =
                    (rnd() & 1) ? alphabet[rnd() % (sizeof alphabet - 1)] : (char)rnd();
        }
        if (read_text(buf, n, &q, err, sizeof err) == 0)
            summary_free(&q);
    }
    free(buf);
    free(valid);
}

static void test_files(void **state)
{
    (void)state;
    struct rep_process q;
    char err[512];
    char missing[128];
    snprintf(missing, sizeof missing, "%s/nope.json", tmpdir);
    assert_int_equal(summary_read_json(missing, &q, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    assert_non_null(strstr(err, missing));
    assert_int_equal(summary_read_json(tmpdir, &q, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    /* a tiny error buffer is still NUL-terminated */
    char small[8];
    assert_int_equal(summary_read_json(missing, &q, small, sizeof small), -1);
    assert_int_equal(strlen(small), 7);
    /* summary_free on a process the reader did not fill */
    struct rep_process mine = sample();
    summary_free(&mine);
    assert_int_equal(mine.rank, -1);
}

static void test_write_error(void **state)
{
    (void)state;
    struct rep_process p = sample();
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(summary_write_json(&p, fds[1]), -1);
    close(fds[1]);
    assert_int_equal(summary_write_json(&p, -1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_golden_text),
        cmocka_unit_test(test_recompiles),
        cmocka_unit_test(test_packed_steps),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_backward_unseen_and_estimate),
        cmocka_unit_test(test_backward_markers),
        cmocka_unit_test(test_every_prefix),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_minimal_and_unknown_fields),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_huge_numbers),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_write_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
