/* cli/trace_read.h: reads a process's trace.bin (the format of output/trace_format.h) back into
 * the report model, and on request into the per-event timeline the Chrome export draws. Runs in
 * the CLI only, never in a target process. Bounded on hostile input: the file streams through a
 * fixed window (no size limit for a report), every record is checked before it is used, nothing
 * recurses, and what is kept is capped (TRACE_READ_MAX_MEMORY, _MAX_STEPS, _MAX_EVENTS). */
#ifndef SYNCSPY_TRACE_READ_H
#define SYNCSPY_TRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

#define TRACE_READ_MAX_MEMORY (2ull << 30) /* tables, strings, frames, sites: else an error */
/* What is kept stays within a fixed memory at any length of trace (with the tables, under
 * 64 MiB for a trace of 64 sites: docs/PERFORMANCE.md): the first TRACE_READ_MAX_STEPS steps and
 * the last TRACE_READ_TAIL_STEPS one by one, the others in the totals only (steps_omitted); of the
 * timeline's syncs and launches, max_events: every event of the first steps (half the cap), then
 * those of a sample of steps spread over the rest (trace_events.sample_from, sample_stride), the
 * others counted (events_omitted). */
#define TRACE_READ_MAX_STEPS (1u << 16)   /* the first steps kept one by one */
#define TRACE_READ_TAIL_STEPS (1u << 14)  /* and the last ones */
#define TRACE_READ_MAX_EVENTS (1u << 18)  /* syncs and launches kept; more are counted, not kept */
#define TRACE_READ_MAX_HEADER_BYTES 65536 /* a header_bytes above this is corrupt */
#define TRACE_READ_SPANNED_STEPS 4096     /* timeline steps made of their events, at most */

/* One sync as the timeline shows it. Strings are never NULL ("" when unknown). */
struct trace_sync_event {
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC; end_ns >= start_ns */
    uint64_t stream, bytes, step;
    uint32_t tid;
    uint32_t dir; /* enum trace_dir; unknown values are kept as they are */
    const char *api;
    const struct rep_frame *frames; /* innermost first; NULL when nframes is 0 (no stack) */
    uint32_t nframes;
};

struct trace_launch_event {
    uint64_t time_ns, stream, step;
    uint32_t tid;
    const char *api;
    const char *kernel; /* "" when unknown */
};

/* One step that ended, active or not (a step still open when the process was killed has no
 * record). end_ns >= start_ns. */
struct trace_step_event {
    uint64_t step, start_ns, end_ns, syncs, blocked_ns, launches;
    bool active, partial;
    uint32_t tid, source; /* the marking thread, enum trace_step_source (0 before 1.2) */
    bool attributed;      /* backward syncs attributed to their forward lines (1.4) */
    /* the timeline's only (trace_events.steps): a step with events kept but no STEP record
     * kept (folded past half the bound, or not among the steps kept one by one; at most
     * TRACE_READ_SPANNED_STEPS of them, evenly spaced): its bounds are
     * its events' span, syncs and launches the events kept; not active, not in any count */
    bool spanned;
};

struct trace_thread_name {
    uint32_t tid;
    const char *name;
};

/* The timeline of one process, kept only when trace_read is given somewhere to put it. Its
 * storage belongs to the rep_process read with it (free both with trace_free). */
struct trace_events {
    uint64_t start_mono_ns, start_real_ns; /* from the header: step 0 begins */
    uint64_t end_mono_ns;                  /* from the END record; 0 when there is none */
    bool launches_traced;                  /* a launch record each (SYNCSPY_LAUNCHES=trace) */
    const struct trace_step_event *steps;  /* by step number; a step written twice: the last;
                                            * the first and last ones (TRACE_READ_MAX_STEPS) */
    size_t nsteps;
    const struct trace_sync_event *syncs; /* file order */
    size_t nsyncs;
    const struct trace_launch_event *launches; /* file order */
    size_t nlaunches;
    const struct trace_thread_name *threads; /* by tid; the last THREAD record of each */
    size_t nthreads;
    uint64_t events_omitted; /* events past the cap: counted, not kept */
    /* past half the cap, the events kept from step sample_from on are those of every
     * sample_stride-th step (step % sample_stride == 0; 0: every event was kept, up to the cap) */
    uint64_t sample_from, sample_stride;
};

struct trace_read_opts {
    uint64_t max_events; /* 0: TRACE_READ_MAX_EVENTS */
    /* Called every progress_every records (0: never) with how far the reading is; file_bytes
     * is the size when the file was opened (0 when unknown). */
    uint64_t progress_every;
    void (*progress)(void *ctx, uint64_t records, uint64_t offset, uint64_t file_bytes);
    void *ctx;
};

/* Reads the trace file at path into *out (and the timeline into *events when it is not NULL).
 * Returns 0 and fills them, with storage owned by *out; a file whose tail was cut (a crash while
 * writing, or a process still running) is read up to its last complete record and flagged in
 * out->trace_truncated / out->trace_unfinished: that is not an error. Returns -1, with one
 * sentence naming the file (and the byte offset of corrupt data) in err, for a file that cannot
 * be read, a bad or cut header, a newer major format, required features it does not know, a
 * record whose length is impossible, an id defined twice or used before it is defined. */
int trace_read(const char *path, struct rep_process *out, struct trace_events *events, char *err,
               size_t errlen);
int trace_read_with(const char *path, const struct trace_read_opts *opts, struct rep_process *out,
                    struct trace_events *events, char *err, size_t errlen);
/* The same on a trace already in memory (name is what messages call it). */
int trace_read_buf(const void *buf, size_t len, const char *name,
                   const struct trace_read_opts *opts, struct rep_process *out,
                   struct trace_events *events, char *err, size_t errlen);
/* Frees what a successful read keeps; events may be NULL. Both are zeroed. */
void trace_free(struct rep_process *out, struct trace_events *events);

/* Following a trace that is still being written (syncspy top): each poll reads only the records
 * appended since the last one (from where it stopped: a record cut by the end waits for its
 * tail), so a long run's file is read once in all. Its STEP and SYNC records go to the sink, in
 * file order, and are not kept (memory stays that of the strings, stacks, sites and threads);
 * each e->api and e->frames lives as long as the trace_follow. */
struct trace_step_run; /* output/trace_format.h */
struct trace_follow_sink {
    void *ctx;
    void (*step)(void *ctx, const struct trace_step_event *e);
    void (*sync)(void *ctx, const struct trace_sync_event *e);
    /* 1.4: steps folded past half the bound (their sums; no step of them is listed) */
    void (*run)(void *ctx, const struct trace_step_run *r);
};
struct trace_follow;
/* NULL, with one sentence in err, when the file cannot be opened or its header is bad or not
 * all written yet (a process starting: try again later). */
struct trace_follow *trace_follow_open(const char *path, const struct trace_follow_sink *sink,
                                       char *err, size_t errlen);
/* Reads what was appended: 0, or -1 with one sentence in err for a bad record (every later poll
 * fails the same way; what was read before stays). */
int trace_follow_poll(struct trace_follow *f, char *err, size_t errlen);
/* The process as read so far, without its steps (the sink had them): identity, sites (heaviest
 * first, their splits against the last step, still open unless the process ended), threads,
 * drops, steps_seen, trace_unfinished; *last_step (when not NULL) the step those splits take
 * as the last (rep_split_of, partial). Its storage lives until the next snapshot or the free.
 * 0, or -1 when out of memory. */
int trace_follow_snapshot(struct trace_follow *f, struct rep_process *out, uint64_t *last_step);
void trace_follow_free(struct trace_follow *f);

/* Whether buf starts like a trace file (its magic, or as much of it as len holds). */
bool trace_looks_like(const void *buf, size_t len);

#endif
