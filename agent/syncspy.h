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

/* What the agent has counted so far: monotonic totals from the process's start (a forked
 * child's from the fork). Take them twice and subtract to measure a region of code (what the
 * Python module's syncspy.counts() and the Lightning profiler do). */
struct syncspy_counts {
    uint64_t syncs;      /* host-device synchronizations recorded */
    uint64_t blocked_ns; /* host wall time spent inside them */
    uint64_t step;       /* the current step: 0 before the first step mark (start-up), then 1, 2, ... */
    uint32_t recording;  /* 1 when the schedule (SYNCSPY_SCHEDULE) records the current step; a
                          * step it does not record adds no syncs and no blocked time */
    uint32_t reserved;   /* 0 */
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

#ifdef __cplusplus
}
#endif
#endif
