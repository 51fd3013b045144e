/* tests/unit/test_report_header.c: golden texts of the report's header (output/report.c
 * render_header: the title, the rates line in each of its forms, the parts kept apart and every
 * note of what the numbers lack), byte for byte, so that a change of its code that changes a
 * character shows here. The figures' own rules are tested in test_report.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "output/fd_writer.h"
#include "output/report.h"

#include "report_fixtures.h"

/* The report's text up to its table (the header; the whole text when it has no table). */
static char *header(const struct rep_process *p, bool colour)
{
    int fd = memfd_create("report", 0);
    assert_true(fd >= 0);
    struct report_opts opts = {.top = 10, .color = colour};
    assert_int_equal(report_render_text(p, 1, &opts, fd), 0);
    off_t len = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(pread(fd, text, (size_t)len, 0), len);
    close(fd);
    char *table = strstr(text, "   #  blocked/step");
    if (table) {
        while (table > text && table[-1] != '\n')
            table--;
        *table = '\0';
    }
    return text;
}

/* GOLDEN_DUMP=1 prints each text as it is now: tests/unit/golden.py rewrites the goldens below
 * from them after a deliberate change. */
static void assert_golden_at(const struct rep_process *p, bool colour, const char *golden,
                             const char *name)
{
    char *text = header(p, colour);
    if (getenv("GOLDEN_DUMP"))
        fprintf(stderr, "=== %s\n%s=== end\n", name, text);
    if (strcmp(text, golden))
        fail_msg("header differs from its golden text:\n--- got\n%s--- want\n%s", text, golden);
    free(text);
}

/* GOLDENS: made with GOLDEN_DUMP=1 before render_header was split (issue 37) */
static const char golden_marked[] =
    "\x1b[1msyncspy: pid 4242: 24 optimizer steps (schedule: "
    "wait=1,warmup=1,active=3,repeat=4)\x1b[0m\n"
    "  20 steps counted (the schedule records 20 of 25)\n"
    "  step 41.3 ms median (mean 41.3 ms, sd 0 ns) | 3.80 syncs/step | blocked 23.1 ms/step "
    "(\x1b[1;31m55.9%\x1b[0m) | 210 launches/step\n"
    "  before the first step (start-up, not in the rates): 0 ns, 0 syncs, blocked 0 ns\n"
    "\n";
static const char golden_threaded[] =
    "syncspy: pid 4242: 24 optimizer steps (schedule: wait=1,warmup=1,active=3,repeat=4)\n"
    "  20 steps counted (the schedule records 20 of 25)\n"
    "  step 41.3 ms median (mean 41.3 ms, sd 0 ns) | 3.80 syncs/step | blocked 23.1 ms/step (all "
    "threads) | 210 launches/step\n"
    "  the training thread, python (tid 4242), waited 20.0 ms/step, 48.4% of the step (3.00 "
    "syncs/step); pt_autograd_0 (tid 5514) 3.07 ms/step (0.80 syncs) during backward()\n"
    "  before the first step (start-up, not in the rates): 0 ns, 0 syncs, blocked 0 ns\n"
    "\n";
static const char golden_unlisted[] =
    "syncspy: pid 4242: 24 optimizer steps (schedule: wait=1,warmup=1,active=3,repeat=4)\n"
    "  20 steps counted (the schedule records 20 of 25)\n"
    "  step 41.3 ms mean | 3.80 syncs/step | blocked 23.1 ms/step (55.9%) | 210 launches/step\n"
    "  before the first step (start-up, not in the rates): 0 ns, 0 syncs, blocked 0 ns\n"
    "  20 active steps are in the totals but not listed one by one (a memory cap, or "
    "SYNCSPY_TRACE_MB's room for summary.json)\n"
    "\n";
static const char golden_unmarked[] =
    "\x1b[1msyncspy: pid 4242: no step found: whole-run totals\x1b[0m\n"
    "  wall 826 ms | 76 syncs | blocked 461 ms (\x1b[1;31m55.9%\x1b[0m) | 4200 launches\n"
    "  \x1b[33mno step mark came (no optimizer.step(), no syncspy.step()): the whole run is one "
    "step; mark steps with syncspy.step() for per-step rates\x1b[0m\n"
    "\n";
static const char golden_every_note[] =
    "syncspy: rank 0 pid 4242: 24 step marks (schedule: off)\n"
    "  no step was recorded (SYNCSPY_SCHEDULE=off, and no `syncspy start` or syncspy.start() "
    "came); totals: 76 syncs, blocked 461 ms\n"
    "  3 syncs had no room in the site table: counted in the totals, not in the table below\n"
    "  5 active steps are in the totals but not listed one by one (SYNCSPY_TRACE_MB folded their "
    "records, or a memory cap)\n"
    "  per-event detail kept for 9 of 25 steps: SYNCSPY_TRACE_MB=64 (every event before step 4, "
    "then a sample; counts stay exact)\n"
    "  per-step counts of 11 folded steps are known only as their sums (SYNCSPY_TRACE_MB's room "
    "for steps was full); the totals stay exact\n"
    "  trace.bin misses 2 step records and there is no summary.json: active steps and per-step "
    "rates are estimates (1 of them counted as active steps, their syncs and time unknown)\n"
    "  trace ends early (the process was killed?): up to the last rewrite of the totals; its "
    "last record was cut; the records of 2 later steps are left out (SYNCSPY_TRACE_MB rewrites "
    "the totals at growing intervals and the last rewrite does not count them)\n"
    "  13 sync and 0 launch events found the trace buffers full: counts stay exact, the timeline "
    "misses them (SYNCSPY_BUFFER_MB gives more room)\n"
    "\n";
static const char golden_other_notes[] =
    "syncspy: rank 1 pid 4242: 24 step marks (schedule: wait=1,warmup=1,active=3,repeat=4)\n"
    "  20 steps counted (the schedule records 20 of 25)\n"
    "  step 41.3 ms median (mean 41.3 ms, sd 0 ns) | 3.80 syncs/step | blocked 23.1 ms/step "
    "(55.9%) | 210 launches/step\n"
    "  no step mark: torch.optim's optimizer step hook could not be registered (torch.optim was "
    "never imported): mark steps with syncspy.step()\n"
    "  5 active steps are in the totals but not listed one by one (a memory cap, or "
    "SYNCSPY_TRACE_MB's room for summary.json)\n"
    "  trace.bin misses 3 step records (the agent's step queue was full): the step figures are "
    "summary.json's\n"
    "  the figures are a lower bound: trace.bin lost data (a write failed: No space left on "
    "device), so it holds the run only up to then; the process was not killed. summary.json has "
    "the exact counts when it could be written\n"
    "  0 sync and 17 launch events found the trace buffers full: counts stay exact, the timeline "
    "misses them (SYNCSPY_BUFFER_MB gives more room)\n"
    "\n";
static const char golden_lost_steps[] =
    "syncspy: pid 4242: no step found: whole-run totals\n"
    "  wall 826 ms | 76 syncs | blocked 461 ms (55.9%) | 4200 launches\n"
    "  no step mark came (no optimizer.step(), no syncspy.step()): the whole run is one step; "
    "mark steps with syncspy.step() for per-step rates\n"
    "  4 active steps lost their step records (the agent's step queue was full): in the totals, "
    "not in the step list\n"
    "  trace.bin lost data (a write failed: Input/output error): its events stop there; these "
    "counts are exact\n"
    "\n";
static const char golden_parts_apart[] =
    "syncspy: pid 4242: 3 optimizer steps (schedule: wait=1,warmup=1,active=3,repeat=4)\n"
    "  start-up runs to the first, 2 steps counted (the schedule records 4 of 4), the time after "
    "the last is shown apart\n"
    "  step 41.3 ms median (mean 41.3 ms, sd 0 ns) | 32.0 syncs/step | blocked 214 ms/step "
    "(517.4%) | 210 launches/step\n"
    "  before the first step (start-up, not in the rates): 900 ms, 9 syncs, blocked 29.0 ms\n"
    "    4 x cudaStreamSynchronize, 20.0 ms, at loss_fn  train.cpp:42\n"
    "    2 x cudaStreamSynchronize, 9.00 ms, at MaskedLoss.ignore_background  "
    "/home/u/proj/train.py:61\n"
    "    3 x cudaMemcpy, 1.00 us, at loss_fn  train.cpp:42\n"
    "  after the last step (not in the rates): 20.0 ms, 3 syncs, blocked 5.00 ms\n"
    "    2 x cudaStreamSynchronize, 3.00 ms, at loss_fn  train.cpp:42\n"
    "    1 x cudaStreamSynchronize, 2.00 ms, at MaskedLoss.ignore_background  "
    "/home/u/proj/train.py:61\n"
    "\n";

/* Marked steps, start-up closed, coloured: the median line, the share painted, start-up apart. */
static struct rep_process marked(void)
{
    struct rep_process p = make_proc(4242, -1);
    p.startup_closed = true;
    p.step_source = "optimizer.step()";
    return p;
}

/* Several threads synced: the share is "all threads", each thread's wait under it. */
static const struct rep_thread two_threads[] = {
    {.tid = 4242, .name = "python", .syncs = 60, .blocked_ns = 400000000, .ends_steps = true},
    {.tid = 5514, .name = "pt_autograd_0", .syncs = 16, .blocked_ns = 61404812},
};
static struct rep_process threaded(void)
{
    struct rep_process p = marked();
    p.threads = two_threads;
    p.nthreads = 2;
    return p;
}

/* Marked steps none of which is listed one by one: the mean alone. */
static struct rep_process unlisted(void)
{
    struct rep_process p = marked();
    p.steps = NULL;
    p.nsteps = 0;
    p.steps_omitted = 20;
    return p;
}

/* No step mark came: the run is one step (totals, and a note saying how to mark steps). */
static struct rep_process unmarked(void)
{
    struct rep_process p = make_proc(4242, -1);
    p.schedule = NULL;
    p.steps_seen = 1;
    p.steps = NULL;
    p.nsteps = 0;
    p.active_steps = 1;
    return p;
}

/* Nothing recorded (the schedule is off) and every note the trace's accidents make. */
static struct rep_process every_note(void)
{
    struct rep_process p = make_proc(4242, 0);
    p.schedule = "off";
    p.active_steps = 0;
    p.wall_ns = 0;
    p.unattributed_syncs = 3;
    p.steps_omitted = 5;
    p.steps_folded = 7;
    p.trace_bound_bytes = 64ull << 20;
    p.detail_steps = 9;
    p.sampled_from = 4;
    p.steps_summed = 11;
    p.steps_basis = REP_STEPS_ESTIMATED;
    p.step_records_missing = 2;
    p.steps_lost = 1;
    p.trace_unfinished = true;
    p.trace_truncated = true;
    p.steps_after_totals = 2;
    p.syncs_dropped = 13;
    return p;
}

/* The other forms of the notes: no step hook, the steps from summary.json, a failed write. */
static struct rep_process other_notes(void)
{
    struct rep_process p = make_proc(4242, 1);
    p.no_step_hook = true;
    p.steps_omitted = 5;
    p.steps_basis = REP_STEPS_FROM_SUMMARY;
    p.step_records_missing = 3;
    p.trace_unfinished = true;
    p.trace_lost_errno = ENOSPC;
    p.launches_dropped = 17;
    return p;
}

/* Steps lost from the queue, a trace that lost data but ended, one later step cut. */
static struct rep_process lost_steps(void)
{
    struct rep_process p = unmarked();
    p.steps_lost = 4;
    p.trace_lost_errno = EIO;
    p.steps_after_totals = 1;
    return p;
}

/* Start-up listed as step 0 and the step still open at exit, each apart with its heaviest
 * lines (the sites' splits: two sites of loss_fn grouped, ignore_background's). */
static const struct rep_step apart_steps[] = {
    {0, 900000000, 9, 30000000, 50, false},
    {1, 41300000, 6, 12100000, 210, false},
    {2, 41300000, 6, 12100000, 210, false},
    {3, 20000000, 3, 5000000, 100, true},
};
static struct rep_site apart_sites[sizeof sites / sizeof sites[0]];
static struct rep_process parts_apart(void)
{
    struct rep_process p = marked();
    memcpy(apart_sites, sites, sizeof sites);
    apart_sites[0].split = (struct rep_split){
        .startup_count = 4, .startup_ns = 20000000, .partial_count = 2, .partial_ns = 3000000};
    apart_sites[1].split = (struct rep_split){.startup_count = 3, .startup_ns = 1000};
    apart_sites[2].split = (struct rep_split){
        .startup_count = 2, .startup_ns = 9000000, .partial_count = 1, .partial_ns = 2000000};
    p.sites = apart_sites;
    p.steps = apart_steps;
    p.nsteps = 4;
    p.active_steps = 4;
    p.steps_seen = 4;
    p.startup = apart_steps[0];
    p.wall_ns = 1002600000;
    p.blocked_ns = 59200000;
    p.syncs = 24;
    p.launches = 570;
    return p;
}

/* One header: its process, whether it is coloured, its golden text. */
struct golden_case {
    struct rep_process (*make)(void);
    bool colour;
    const char *golden, *golden_name;
};

#define GOLDEN_CASE(make, colour, golden) \
    {                                     \
        make, colour, golden, #golden     \
    }
static const struct golden_case cases[] = {
    GOLDEN_CASE(marked, true, golden_marked),
    GOLDEN_CASE(threaded, false, golden_threaded),
    GOLDEN_CASE(unlisted, false, golden_unlisted),
    GOLDEN_CASE(unmarked, true, golden_unmarked),
    GOLDEN_CASE(every_note, false, golden_every_note),
    GOLDEN_CASE(other_notes, false, golden_other_notes),
    GOLDEN_CASE(lost_steps, false, golden_lost_steps),
    GOLDEN_CASE(parts_apart, false, golden_parts_apart),
};
#define NCASES (sizeof cases / sizeof cases[0])

static void test_golden(void **state)
{
    const struct golden_case *c = *state;
    struct rep_process p = c->make();
    assert_golden_at(&p, c->colour, c->golden, c->golden_name);
}

int main(void)
{
    struct CMUnitTest tests[NCASES];
    for (size_t i = 0; i < NCASES; i++)
        tests[i] = (struct CMUnitTest){.name = cases[i].golden_name,
                                       .test_func = test_golden,
                                       .initial_state = (void *)&cases[i]};
    return _cmocka_run_group_tests("test_report_header", tests, NCASES, NULL, NULL);
}
