/* agent/internal.h: what agent modules share among themselves (lifecycle state, configuration, the
 * step log). Not for the shim, which sees only core.h. */
#ifndef SYNCSPY_INTERNAL_H
#define SYNCSPY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "agent/config.h"
#include "output/model.h"

/* Lifecycle: STARTING until the constructor (or the first CUDA call) ran the initialization;
 * RUNNING records; FINISHING while the exit report is written (late calls are forwarded
 * untouched); OFF afterwards. */
enum agent_state { STATE_STARTING, STATE_RUNNING, STATE_FINISHING, STATE_OFF };

extern struct config agent_cfg;
extern _Atomic int agent_state;

/* Initializes once (constructor, or the first CUDA call if that comes first). */
void agent_init_once(void);

/* Step boundaries. explicit_mark: syncspy_step(); otherwise an automatic source (the
 * optimizer hook), ignored once an explicit mark was seen. */
void agent_step(bool explicit_mark);

/* The steps recorded so far, closed at exit: fills the step fields of proc (steps array stays
 * owned by the agent). */
void agent_steps_close_and_fill(struct rep_process *proc);

/* Syncs counted in totals but not attributed to a site (tables full). */
uint64_t agent_unattributed_syncs(void);

/* Whether this process made any CUDA call (decides if anything is written at exit). */
bool agent_cuda_seen(void);

/* From a signal handler: when the calling thread is inside agent code (it may hold agent
 * locks), keeps the signal to re-raise when it leaves and returns true. */
bool agent_defer_signal(int sig);

/* Set while the exit report is written for a fatal signal: the program's stdio locks may be
 * held by the interrupted thread, so stdout is not flushed first. */
extern _Atomic bool agent_finishing_from_signal;

/* The exit path (RUNNING -> FINISHING -> OFF, outputs written), from whichever thread asks
 * first: the atexit handler, or the flusher thread for a fatal signal. */
void agent_finish_now(void);

/* Writes summary.json and the report (agent/finish.c). */
void agent_write_outputs(void);

/* The process's output folder (<SYNCSPY_OUT>/pid<P> or rank<R>-pid<P>), created 0700 when
 * missing. Returns 0, or -1 with errno (and buf still holding the name when it fit). */
int agent_process_dir(char *buf, size_t len);

/* ---- for the flusher thread (agent/flusher.c) ---------------------------------------------- */

struct ring;
/* Calls fn for every thread's ring (threads that exited included, until reused) with the tid and
 * name of its thread, under the thread registry lock: fn must be quick and must not call back
 * into the agent. */
void agent_visit_rings(void (*fn)(struct ring *ring, uint32_t tid, const char *name, void *ctx), void *ctx);

/* The calling thread is the agent's own (the flusher): CUDA calls it makes are forwarded
 * untouched, never recorded. */
void agent_thread_ignore(void);

/* A step that ended (active or not), queued for the trace. */
struct step_event {
    uint64_t step, start_ns, end_ns, syncs, blocked_ns, launches;
    bool active, partial;
};
/* Takes at most max queued step events (oldest first). */
size_t agent_take_step_events(struct step_event *out, size_t max);
/* Step events that found the queue full (the trace misses their STEP records; summary.json
 * and the report do not). */
uint64_t agent_step_events_lost(void);
/* Records no ring could take: threads beyond SYNCSPY_BUFFER_MB got no ring. */
uint64_t agent_records_without_ring(void);
/* CLOCK_MONOTONIC / CLOCK_REALTIME when the agent started (step 0 began). */
uint64_t agent_start_mono_ns(void);
uint64_t agent_start_real_ns(void);

#endif
