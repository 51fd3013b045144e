/* agent/syncspy.h: syncspy's public C API. Link nothing: when libsyncspy.so is preloaded these
 * symbols are found at run time; call them through dlsym(RTLD_DEFAULT, ...) if the program must
 * also run without the agent. */
#ifndef SYNCSPY_H
#define SYNCSPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a step boundary: ends the current training step and begins the next. Any thread may
 * call it; an explicit mark takes precedence over automatic step detection. */
void syncspy_step(void);

/* Records steps on request, as `syncspy start PID|DIR [--steps N]` and `syncspy stop PID|DIR` do
 * from outside the process: from the next step boundary on (steps S+1 .. S+steps when step S is
 * the one that ends there; steps 0: until syncspy_stop()), besides the steps SYNCSPY_SCHEDULE
 * records (SYNCSPY_SCHEDULE=off: none but these). syncspy_stop() ends that recording at the next
 * boundary. The latest request before a boundary wins. summary.json's "recorded" and the report
 * name these steps' cause "syncspy.start()". Returns 0, or -1 when the agent is not running (or
 * steps is above 10^9). Any thread; no I/O. */
int syncspy_start(uint64_t steps);
int syncspy_stop(void);

/* What the agent has counted so far: monotonic totals from the process's start (a forked
 * child's from the fork). Take them twice and subtract to measure a region of code (what the
 * Python module's syncspy.counts() and the Lightning profiler do). */
struct syncspy_counts {
    uint64_t syncs;      /* host-device synchronizations recorded, but torch.compile's own
                          * (compiling, autotuning a new kernel), as in the report's rates */
    uint64_t blocked_ns; /* host wall time spent inside them */
    uint64_t step; /* the current step: 0 before the first step mark (start-up), then 1, 2, ... */
    uint32_t recording; /* 1 when the schedule (SYNCSPY_SCHEDULE) records the current step; a
                          * step it does not record adds no syncs and no blocked time */
    uint32_t reserved;  /* 0 */
};

enum syncspy_scope {
    SYNCSPY_SCOPE_THREAD = 0,  /* the calling thread's syncs */
    SYNCSPY_SCOPE_PROCESS = 1, /* every thread's (those that exited included): a backward pass
                                * syncs in autograd's engine thread, not in its caller */
};

/* Copies the counts of scope into *out: the first size bytes of struct syncspy_counts (pass
 * sizeof(struct syncspy_counts): fields added at its end later leave older callers working).
 * Returns 0, or -1 with nothing written for an unknown scope, a NULL out or a size below 16.
 * Lock-free (atomic loads; no syscall, no allocation), so any thread may call it at any time, a
 * signal handler too; before the agent's start everything reads 0. */
int syncspy_counts(int scope, struct syncspy_counts *out, size_t size);

/* ---- sync budgets: the syncs of a region of code, by thread and site ----------------------------
 * For a guard such as python/syncspy's budget() and its pytest plugin. A region opens with
 * syncspy_tally_begin, reads syncspy_tallies at its start and at its end (the difference is
 * what the region made), names the sites with syncspy_site_describe and closes with
 * syncspy_tally_end. While at least one region is open anywhere in the process, every sync the
 * agent records is also counted per (thread, site) in a table of its thread; with none open the
 * agent's recording path pays one load and a branch. Regions may nest and overlap, on any
 * threads. The tally functions are lock-free and never block, but syncspy_site_describe. */

#define SYNCSPY_TALLY_VERSION 1 /* what syncspy_tally_begin returns; grows with this API */

/* torch.compile's own syncs (compiling, autotuning a new kernel) are in no region's tallies.
 * Opens a region: returns SYNCSPY_TALLY_VERSION when the agent counts (then call
 * syncspy_tally_end once when the region ends), 0 when it does not (it is finishing or off:
 * nothing to end). */
int syncspy_tally_begin(void);
void syncspy_tally_end(void);

/* Whether the agent records the syncs of the current step now (0: it is not running, or
 * SYNCSPY_SCHEDULE does not record this step), and how many steps the schedule did not record
 * so far (the current one included). A region is counted whole when syncspy_recording() was 1
 * at its start and syncspy_unrecorded_steps() is the same at its end as at its start. */
int syncspy_recording(void);
uint64_t syncspy_unrecorded_steps(void);

#define SYNCSPY_THIS_THREAD 0
#define SYNCSPY_ALL_THREADS 1

/* The syncs one thread made at one site since counting began (the first region opened while
 * none was open), or (site 0) at sites its table had no room for or that have no site. */
struct syncspy_tally {
    uint32_t thread; /* the thread's table: stable for the process's life (a table passes
                          * to a later thread when its thread exits) */
    uint32_t tid;    /* the thread's id (gettid) */
    uint32_t site;   /* the site (syncspy_site_describe), 0: not itemized */
    uint32_t reserved;
    uint64_t syncs;
    uint64_t blocked_ns; /* host time inside those syncs */
    char name[16];       /* the thread's name at its first CUDA call */
};

/* Copies the tallies of the calling thread (SYNCSPY_THIS_THREAD) or of every thread
 * (SYNCSPY_ALL_THREADS) into out, at most cap of them; returns how many there are (more than
 * cap: call again with more room). Nothing (0) while no region is open. */
size_t syncspy_tallies(int scope, struct syncspy_tally *out, size_t cap);

/* Where a site syncs, as one line of tab-separated fields into buf (NUL-terminated, at most
 * cap bytes with the NUL):
 *     API  KIND  FILE  LINE  FUNCTION  MODULE  NODE  HINT
 * KIND "line": FILE:LINE (FUNCTION; MODULE for a native frame) is the innermost user frame of
 * the sync's stack; "backward": the sync ran in the backward of autograd node NODE, created at
 * FILE:LINE; "node": the backward of NODE whose forward line was not recorded (FILE:LINE is then
 * its own innermost user frame). HINT: what to do about it, or empty. Fields hold no tab or
 * newline. Names native frames on the agent's own thread (the symbolizer is its): it may wait
 * for that thread, at most about 10 s. Returns the line's length, or -1 (no such site, no
 * room, or no names to be had: the agent is not running, or has no flusher thread). */
int syncspy_site_describe(uint32_t site, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
