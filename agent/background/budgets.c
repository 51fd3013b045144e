/* agent/background/budgets.c: the sync budget calls of agent/syncspy.h (syncspy_tally_*,
 * syncspy_tallies, syncspy_site_describe, syncspy_recording, syncspy_unrecorded_steps), which
 * read the per-thread counts of agent/record/budget_counts.h. They run on any program thread,
 * lock-free; syncspy_site_describe alone hands its work to the flusher thread (the symbolizer is
 * that thread's) and waits for it. */
#include "agent/background/budgets.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/background/flusher.h"
#include "agent/background/stack_names.h"
#include "agent/record/apis.h"
#include "agent/record/budget_counts.h"
#include "agent/record/sites.h"
#include "agent/record/state.h"
#include "agent/record/threads.h"
#include "agent/step/steps.h"
#include "agent/syncspy.h"
#include "common/compiler.h"
#include "output/hints.h"
#include "output/report.h"

/* ---- regions and their counts --------------------------------------------------------------------------------- */

SYNCSPY_EXPORT int syncspy_tally_begin(void)
{
    if (atomic_load_explicit(&agent_state, memory_order_acquire) != STATE_RUNNING)
        return 0;
    /* the first region opened while none is open begins a new epoch, in the same step as the
     * count: no region reads tables before its epoch is the current one */
    uint64_t st = atomic_load_explicit(&budget_counts_state, memory_order_relaxed), next;
    do {
        next = budget_counts_open(st) ? st + 1 : ((budget_counts_epoch(st) + 1) << 32) | 1u;
        if (budget_counts_open(next) == 0)
            return 0; /* 4 billion regions open at once */
    } while (!atomic_compare_exchange_weak_explicit(&budget_counts_state, &st, next,
                                                    memory_order_acq_rel, memory_order_relaxed));
    return SYNCSPY_TALLY_VERSION;
}

SYNCSPY_EXPORT void syncspy_tally_end(void)
{
    uint64_t st = atomic_load_explicit(&budget_counts_state, memory_order_relaxed);
    while (budget_counts_open(st) &&
           !atomic_compare_exchange_weak_explicit(&budget_counts_state, &st, st - 1,
                                                  memory_order_acq_rel, memory_order_relaxed))
        ;
}

SYNCSPY_EXPORT int syncspy_recording(void)
{
    return atomic_load_explicit(&agent_state, memory_order_acquire) == STATE_RUNNING &&
           atomic_load_explicit(&steps_active, memory_order_relaxed);
}

SYNCSPY_EXPORT uint64_t syncspy_unrecorded_steps(void)
{
    return steps_unrecorded();
}

/* The tallies of one table that belongs to the current epoch, appended from out[n]; returns the
 * new n (counting past cap). */
static size_t table_tallies(const struct tally_table *t, uint64_t epoch, struct syncspy_tally *out,
                            size_t cap, size_t n)
{
    if (atomic_load_explicit(&t->epoch, memory_order_acquire) != epoch)
        return n;
    struct syncspy_tally base = {.thread = t->index,
                                 .tid = atomic_load_explicit(&t->tid, memory_order_relaxed)};
    memcpy(base.name, t->name, sizeof base.name);
    base.name[sizeof base.name - 1] = '\0';
    for (size_t i = 0; i < TALLY_SLOTS; i++) {
        uint32_t site = atomic_load_explicit(&t->slot[i].site, memory_order_acquire);
        if (!site)
            continue;
        if (n < cap) {
            out[n] = base;
            out[n].site = site;
            out[n].syncs = atomic_load_explicit(&t->slot[i].syncs, memory_order_relaxed);
            out[n].blocked_ns = atomic_load_explicit(&t->slot[i].ns, memory_order_relaxed);
        }
        n++;
    }
    uint64_t other = atomic_load_explicit(&t->other_syncs, memory_order_relaxed);
    if (other) {
        if (n < cap) {
            out[n] = base;
            out[n].syncs = other;
            out[n].blocked_ns = atomic_load_explicit(&t->other_ns, memory_order_relaxed);
        }
        n++;
    }
    return n;
}

SYNCSPY_EXPORT size_t syncspy_tallies(int scope, struct syncspy_tally *out, size_t cap)
{
    uint64_t st = atomic_load_explicit(&budget_counts_state, memory_order_acquire);
    if (!budget_counts_open(st) || (cap && !out))
        return 0;
    if (scope == SYNCSPY_THIS_THREAD) {
        const struct thread_state *ts = agent_tls.ts;
        return ts && ts->tally ? table_tallies(ts->tally, budget_counts_epoch(st), out, cap, 0) : 0;
    }
    if (scope != SYNCSPY_ALL_THREADS)
        return 0;
    size_t n = 0;
    for (const struct tally_table *t = threads_tally_tables(); t; t = t->next)
        n = table_tallies(t, budget_counts_epoch(st), out, cap, n);
    return n;
}

/* ---- naming a site (on the flusher thread) ----------------------------------------------------- */

#define DESCRIBE_TIMEOUT_MS 10000
#define DESCRIBE_LINE_MAX 4096

struct describe {
    uint32_t site;
    int len; /* -1: no such site */
    char line[DESCRIBE_LINE_MAX];
};

/* Appends s to the line (tabs and newlines as spaces), then sep; false when it has no room. */
static bool put_field(char *buf, size_t cap, size_t *at, const char *s, char sep)
{
    for (const char *p = s ? s : ""; *p; p++) {
        if (*at + 2 >= cap)
            return false;
        buf[(*at)++] = (*p == '\t' || *p == '\n' || *p == '\r') ? ' ' : *p;
    }
    if (sep) {
        if (*at + 2 >= cap)
            return false;
        buf[(*at)++] = sep;
    }
    buf[*at] = '\0';
    return true;
}

static void describe_on_flusher(struct symbolizer *sym, void *arg)
{
    struct describe *d = arg;
    d->len = -1;
    struct site_info info;
    if (!sites_find(d->site, &info))
        return;
    uint32_t room = info.depth ? info.depth : 1;
    struct rep_frame *frames = calloc(room, sizeof *frames);
    if (!frames)
        return;
    struct rep_site site = {.api = api_name(info.api),
                            .count = info.count,
                            .blocked_ns = info.blocked_ns,
                            .max_ns = info.max_ns};
    site.nframes = stack_names_frames(info.words, info.depth, sym, frames, room);
    site.frames = frames;
    /* the line the report groups it by (output/report.c): a backward sync's forward line */
    char node[96] = "";
    bool found = false;
    uint32_t u = hints_forward_user_frame(&site, &found);
    const char *kind = "backward";
    if (found) {
        hints_backward_node(&site, node, sizeof node);
        bool generated;
        uint32_t g = hints_compiled_backward_frame(&site, &generated);
        if (generated)
            u = g; /* a compiled graph's backward: its op's forward line, as the report */
    } else {
        kind = hints_backward_node(&site, node, sizeof node) ? "node" : "line";
        u = hints_user_frame(&site);
    }
    const struct rep_frame *f = site.nframes ? &frames[u] : NULL;
    if (f && hints_frame_is_runtime(f))
        f = NULL; /* no user frame: a backward run by autograd alone, a library's own sync */
    struct site_op op;
    hints_op(&site, &op);
    char line_no[16], function[160];
    snprintf(line_no, sizeof line_no, "%u", f ? f->line : 0);
    report_display_name(f ? f->function : "", function, sizeof function);
    size_t at = 0;
    bool ok = put_field(d->line, sizeof d->line, &at, site.api, '\t') &&
              put_field(d->line, sizeof d->line, &at, kind, '\t') &&
              put_field(d->line, sizeof d->line, &at, f ? f->file : "", '\t') &&
              put_field(d->line, sizeof d->line, &at, line_no, '\t') &&
              put_field(d->line, sizeof d->line, &at, function, '\t') &&
              put_field(d->line, sizeof d->line, &at, f && !f->python ? f->module : "", '\t') &&
              put_field(d->line, sizeof d->line, &at, node, '\t') &&
              put_field(d->line, sizeof d->line, &at, op.hint, 0);
    free(frames);
    if (ok)
        d->len = (int)at;
}

/* One request at a time: the flusher serves one call. Not agent work: the wait may be long, and
 * a signal must reach the program meanwhile (no agent lock is held while it waits). */
static struct describe request;
static pthread_mutex_t request_lock = PTHREAD_MUTEX_INITIALIZER;

SYNCSPY_EXPORT int syncspy_site_describe(uint32_t site, char *buf, size_t cap)
{
    if (!buf || !cap || !site || atomic_load(&agent_state) != STATE_RUNNING)
        return -1;
    int saved = errno, cancel, len = -1;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel); /* the wait is a cancellation point */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += DESCRIBE_TIMEOUT_MS / 1000;
    if (pthread_mutex_timedlock(&request_lock, &until) == 0) {
        request.site = site;
        request.len = -1;
        if (flusher_call(describe_on_flusher, &request, DESCRIBE_TIMEOUT_MS) && request.len >= 0 &&
            (size_t)request.len < cap) {
            memcpy(buf, request.line, (size_t)request.len + 1);
            len = request.len;
        }
        pthread_mutex_unlock(&request_lock);
    }
    pthread_setcancelstate(cancel, NULL);
    errno = saved;
    return len;
}

pthread_mutex_t *budgets_request_lock(void)
{
    return &request_lock;
}
