/* output/trace_writer.h: trace.bin's encoder (the format of output/trace_format.h). The agent's
 * flusher hands it batches (the events its rings held, new threads and stacks, ended steps, site
 * totals, drop counts) and it writes the records, keeping all of the file's bookkeeping: the
 * string, frame and kernel ids, which threads and stacks are written, the last totals of each
 * site. What it has not named yet it asks its namer for, once. Used only by the flusher thread
 * (and at exit): it may allocate, never runs on an application thread's CUDA call. Errors are
 * sticky: the first failed write stops all later output and is reported once by the caller. */
#ifndef SYNCSPY_TRACE_WRITER_H
#define SYNCSPY_TRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"
#include "output/trace_format.h"

/* One sync or launch as the agent's per-thread rings hold it (64 bytes: one cache line). */
enum tw_event_kind { TW_SYNC = 1, TW_LAUNCH = 2 };
struct tw_event {
    uint64_t t0; /* sync: start; launch: time */
    uint64_t t1; /* sync: end */
    uint64_t stream;
    uint64_t arg; /* sync: bytes; launch: the kernel's host function / handle */
    uint64_t step;
    uint32_t stack_id; /* sync */
    uint32_t tid;
    uint16_t api; /* the agent's API id */
    uint8_t kind; /* enum tw_event_kind */
    uint8_t dir;  /* enum copy_dir, the same values as enum trace_dir */
    uint32_t pad[3];
};
_Static_assert(sizeof(struct tw_event) == 64, "tw_event size");

/* A step that ended, active or not. */
struct tw_step {
    uint64_t step, start_ns, end_ns, syncs, blocked_ns, launches;
    bool active, partial;
    uint32_t tid, source; /* the marking thread, enum trace_step_source */
    bool attributed;      /* backward syncs attributed in it (agent/record/autograd.h) */
    uint32_t optimizers;  /* optimizers that stepped in it (0: not an optimizer's mark) */
};

/* One site's totals now (exact, cumulative; phase: count and blocked ns with their parts). */
struct tw_site {
    uint32_t site_id, stack_id, api;
    uint32_t threads;
    uint64_t max_ns;
    struct rep_phase_raw phase;
    uint64_t pinned;
};

/* One thread's totals now (tid 0: the threads that exited). */
struct tw_thread_totals {
    uint32_t tid;
    struct rep_phase_raw phase;
};

/* A frame of a stack, as the agent identifies it: (pc, 0) for a native return address,
 * (code, lasti | 1 << 63) for a Python frame. */
struct tw_frame_key {
    uint64_t a, b;
};

/* The caller's names, asked for once per thing the file does not name yet. */
struct tw_namer {
    void *ctx;
    const char *(*api)(void *ctx, uint32_t api);     /* an API id's name */
    const char *(*kernel)(void *ctx, uint64_t func); /* a kernel's host function; NULL: unnamed */
    void (*frame)(void *ctx, struct tw_frame_key key, struct rep_frame *out);
};

struct trace_writer;

/* Writes the file header at once: header_bytes bytes from header (a header_bytes above
 * sizeof *header says a longer header follows it in memory: struct trace_file_header_v13). NULL on allocation failure (fd untouched). */
struct trace_writer *tw_open(int fd, const struct trace_file_header *header,
                             const struct tw_namer *namer);
/* Flushes, and frees the writer (the fd is the caller's). */
void tw_close(struct trace_writer *w);
/* Frees the writer without writing what it buffered (a forked child drops the parent's). */
void tw_discard(struct trace_writer *w);

/* The batches, in the order a reader needs them: a thread's and a stack's records before the
 * events that refer to them. */
bool tw_thread_written(const struct trace_writer *w, uint32_t tid);
void tw_thread(struct trace_writer *w, uint32_t tid, const char *name);
bool tw_stack_written(const struct trace_writer *w, uint32_t stack_id);
/* A FRAME_NAME record for each frame of torch.compile's generated code written before its user
 * line was known (at most 64 are followed, each for 100 calls) that the namer now names. */
void tw_name_frames(struct trace_writer *w);
/* The stack's frames (innermost first) and the stack; at most TRACE_MAX_FRAMES are kept. */
void tw_stack(struct trace_writer *w, uint32_t stack_id, const struct tw_frame_key *frames,
              uint32_t nframes);
void tw_events(struct trace_writer *w, const struct tw_event *events, size_t n);
void tw_step(struct trace_writer *w, const struct tw_step *step);
/* A SITE_TOTALS record when the site's count changed since the last one written. */
void tw_site(struct trace_writer *w, const struct tw_site *site);
/* A THREAD_TOTALS record (the flusher writes one per thread that synced, every flush). */
void tw_thread_totals(struct trace_writer *w, const struct tw_thread_totals *t);
/* A DROPS record when the counts changed since the last one written. */
void tw_drops(struct trace_writer *w, uint64_t syncs_dropped, uint64_t launches_dropped);
/* Step records the agent had no room for (cumulative); a STEPS_LOST record when they changed. */
struct tw_steps_lost {
    uint64_t records;                                      /* lost, active or not */
    uint64_t active, syncs, blocked_ns, launches, wall_ns; /* the active ones' */
};
void tw_steps_lost(struct trace_writer *w, const struct tw_steps_lost *lost);
/* The END record: the process finished writing. */
void tw_end(struct trace_writer *w, uint64_t end_mono_ns, uint64_t unattributed_syncs,
            uint64_t steps_seen);

/* The bound on the process folder (SYNCSPY_TRACE_MB in bytes; 0: none): an eighth of it is kept
 * for summary.json (TW_SUMMARY_SHARE; the agent lists no more steps there than fit,
 * agent/process/lifecycle.c), the rest is the trace's. Below half of the trace's part every record is
 * written. Past it (output/trace_format.h, "The bound"), the rest is shared out:
 * a quarter for the steps (STEP records, then folded into STEP_RUN records), an eighth for the
 * SYNC and LAUNCH records of a sample of steps (every 2^k-th step, k + 1 each time half of the
 * share's rest is spent, none once it is full), a sixteenth for the rewrites of the totals
 * (tw_totals_due: at intervals of 1 s, doubling in the same way), and a sixteenth kept for the
 * exit's records. What may pass the bound: the exit's records when they need more than their
 * sixteenth, and the records that name what appears after the half (strings, frames, stacks,
 * threads), both bounded by the agent's tables. Call before the first record. */
#define TW_SUMMARY_SHARE 8
void tw_set_bound(struct trace_writer *w, uint64_t bound_bytes);
/* Whether this flush writes the totals (tw_site, tw_thread_totals, tw_drops, tw_steps_lost):
 * always below half the bound, and at exit (tw_finishing); past it at doubling intervals of
 * now_ns while their share has room for nsites sites and nthreads threads. When it says yes, the
 * open STEP_RUN and a BOUND record are written first. */
bool tw_totals_due(struct trace_writer *w, uint64_t now_ns, size_t nsites, size_t nthreads);
/* The exit's flush comes next: everything it writes is due, from the exit's share. */
void tw_finishing(struct trace_writer *w);
/* What the bound kept so far (all 0 and false before the file reached half of it). */
struct tw_bound_state {
    bool sampling;  /* past the half */
    uint64_t bytes; /* written (buffered included) */
    uint64_t sampled_from, detail_steps, steps_seen, steps_folded;
};
void tw_bound_state(const struct trace_writer *w, struct tw_bound_state *out);

/* Writes out what is buffered. 0, or -1 with errno of the first failed write. */
int tw_flush(struct trace_writer *w);
/* errno of the first failed write, 0 if none. */
int tw_error(const struct trace_writer *w);
/* After a failed write (tw_error): its errno put into the file's header in place
 * (trace_identity.write_errno), once, so that a reader knows the file lost data and why
 * rather than taking its cut tail for a kill. A pwrite() inside the file, which a file at
 * RLIMIT_FSIZE or on a full disk still takes; when it cannot be done, summary.json and the
 * exit report still say it. */
void tw_mark_lost(struct trace_writer *w);

#endif
