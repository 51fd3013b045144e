/* cli/top_feed.h: what `syncspy top` keeps of each process it watches, read from the trace.bin
 * it follows (cli/trace_read.h's trace_follow: each refresh reads only what was appended): the
 * exact site and thread totals, the step totals since start and the newest training steps (the
 * last 10 s), and per thread the syncs of the trace's sync records (per (thread, api, stack):
 * since start, and the newest ones for the last 10 s). Memory is that of the process's sites
 * and threads plus two capped rings (TOP_FEED_STEPS, TOP_FEED_EVENTS). Reads only. CLI only. */
#ifndef SYNCSPY_CLI_TOP_FEED_H
#define SYNCSPY_CLI_TOP_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

#define TOP_FEED_WINDOW_NS 10000000000ull /* "last 10 s" of the run's own training steps */
#define TOP_FEED_STEPS (1u << 18)         /* newest training steps kept (their figures) */
#define TOP_FEED_EVENTS (1u << 20)        /* newest sync records kept (24 bytes each) */

struct top_feed;

/* Follows the trace at path (NULL, with a sentence in err, when it cannot be opened yet). */
struct top_feed *top_feed_open(const char *path, char *err, size_t errlen);
/* Reads what was appended since. 0, or -1 with a sentence in err (a bad record: the feed keeps
 * what it read before and reads no more). */
int top_feed_poll(struct top_feed *f, char *err, size_t errlen);
void top_feed_free(struct top_feed *f);

/* The newest training steps whose wall times add up to TOP_FEED_WINDOW_NS (all of them when
 * the run is shorter), and what they counted (every thread's). */
struct top_window {
    double steps, wall_ns, syncs, blocked_ns;
    uint64_t first_step, last_step;
    size_t entries;      /* of the ring: steps, and runs of folded steps */
    bool short_of_steps; /* the ring of steps ran out before 10 s of them */
    bool folded;         /* it holds runs of folded steps (SYNCSPY_TRACE_MB): whole runs, so it may
                          * span more than 10 s */
};

/* One view of a process: its figures as the report model, over all its threads (thread NULL)
 * or only those named thread. Storage is the view's, valid while the feed is not polled. */
struct top_view {
    struct rep_process since;  /* since start: steps and totals as the report counts them, the
                                * sites (all threads: the exact SITE_TOTALS; one thread: its
                                * sync records) */
    struct rep_process window; /* the last 10 s: its steps, the sites of its sync records */
    struct top_window w;
    /* the thread(s) viewed: syncs and blocked time since start (exact, THREAD_TOTALS, in the
     * training steps) and in the window (their sync records) */
    uint64_t thread_syncs, thread_blocked_ns, thread_win_syncs, thread_win_blocked_ns;
    bool thread_found;
    /* sync records the agent dropped (rings full) or this view's window could not keep: the
     * window's and one thread's lines count the records there are */
    uint64_t records_missing;
    void *owned;
};

/* 0, or -1 when out of memory (free what was built with top_view_free). */
int top_feed_view(struct top_feed *f, const char *thread, struct top_view *v);
void top_view_free(struct top_view *v);

/* The process as the last poll read it (its identity, sites, threads, drops, state). */
const struct rep_process *top_feed_process(const struct top_feed *f);

/* A thread's name as top shows and picks it ("tid N" when it has none); n >= 32. */
void top_thread_label(const struct rep_thread *t, char *buf, size_t n);

#endif
