/* agent/core.h: the small C API the entry layer calls to record (agent/core.c). Everything here
 * runs on the application's thread inside a CUDA call (or a CUPTI callback): no stdio, no malloc
 * (the agent allocates from its own mmap'ed arena), locks only on first sight of a stack or of
 * a thread, never while the real CUDA call runs. */
#ifndef SYNCSPY_CORE_H
#define SYNCSPY_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/apis.h"
#include "common/compiler.h"

enum copy_dir { DIR_NONE = 0, DIR_H2D, DIR_D2H, DIR_D2D, DIR_H2H };

/* One intercepted call that made the host wait for the device. */
struct sync_call {
    uint32_t api;      /* enum api_id, or an api_intern() id for CUPTI-seen calls */
    uint64_t start_ns;  /* CLOCK_MONOTONIC when the real call began */
    uint64_t end_ns;    /* ... and when it returned */
    uintptr_t stream;   /* cudaStream_t, 0 for the legacy default stream */
    uint64_t bytes;     /* copies and memsets */
    enum copy_dir dir;
    bool via_cupti;     /* delivered by a CUPTI callback: CUPTI's, the driver's and the runtime's
                         * frames lie between the agent and the caller of the CUDA API */
    /* SYNCSPY_GPU=1 (agent_gpu_tracking): the correlation ids of the runtime and driver calls
     * that returned inside this one, 0 when unknown */
    uint32_t runtime_corr, driver_corr;
};

/* Entering the agent from an interposed entry point. Returns false when the call must be
 * forwarded untouched: the agent is already active on this thread (recursion guard: the
 * unwinder or the symbolizer may call back into CUDA-using code), or the agent is not running
 * (finishing, off, or disabled). When it returns true the caller must call agent_leave(). */
bool agent_enter(void);
void agent_leave(void);

/* The runtime entry points' way in for calls they may record: AGENT_RECORD (time it, then
 * agent_leave), AGENT_HELD (the step is not recorded: forward it untimed, then
 * agent_leave_held), or AGENT_UNTOUCHED (as agent_enter's false). */
enum { AGENT_UNTOUCHED = 0, AGENT_RECORD = 1, AGENT_HELD = 2 };
int agent_enter_recording(void);
void agent_leave_held(void);

/* True while the calling thread runs agent code or an interposed call the agent records
 * (between agent_enter and agent_leave): a CUPTI callback then belongs to a call the agent
 * already sees, or to the agent's own, and is ignored (entry/cupti.c). */
bool agent_thread_busy(void);

/* Records one sync; call between agent_enter and agent_leave, on the calling thread, after the
 * real call returned (the stack is captured here). */
void agent_sync(const struct sync_call *call);

/* Counts one kernel launch for the current step. The fast path: a thread-local load, a branch
 * and an increment; no stack, no lock, no syscall. */
void agent_count_launch(void);

/* The launch entry points count inline (entry/runtime.c LAUNCH): the calling thread's counter
 * is this thread-local pointer (NULL until its first CUDA call, and after it exits; kept by
 * agent/threads.c); only the owning thread writes it. Everything else goes through
 * agent_count_launch. */
extern SYNCSPY_TLS _Atomic uint64_t *agent_tls_launches;

/* SYSCALL-free checks for the launch entry points: agent_launch_slow sends every launch through
 * the slow path (agent_count_launch): while launches are traced (agent_launch_tracing:
 * SYNCSPY_LAUNCHES=trace and the current step is recorded; set by agent/steps.c) or while the
 * Python step hook is still wanted (agent/pyhook.h: it polls from there). */
extern _Atomic bool agent_launch_tracing;
extern _Atomic bool agent_launch_slow;
/* Recomputes agent_launch_slow from its two reasons. */
void agent_launch_slow_update(void);
/* Records one launch (kernel host function or handle, stream) in the thread's ring. */
void agent_trace_launch(enum api_id api, const void *func, uintptr_t stream);

/* CLOCK_MONOTONIC in ns (vDSO: no syscall). */
uint64_t agent_now_ns(void);

/* From a signal handler: when the calling thread is inside agent code (it may hold agent
 * locks), keeps the signal to re-raise when it leaves and returns true. */
bool agent_defer_signal(int sig);

/* The frames of calls delivered by CUPTI start at the caller of the CUDA API: the loaded
 * objects whose file names start with one of these (libcupti, libcuda, libcudart) are skipped
 * at the top of their stacks. Once, when CUPTI is subscribed (not on a recording path). */
void agent_skip_objects(const char *const *prefixes, int n);

/* ---- for the rest of the agent ----------------------------------------------------------------- */

/* Around agent work on a program thread that is no CUDA call (a step mark): the guard raised,
 * then lowered, delivering a fatal signal deferred meanwhile. The agent's own thread (the
 * flusher) enters for good: CUDA calls it makes are forwarded untouched, never recorded. */
void agent_guard_enter(void);
void agent_guard_leave(void);
/* Syncs counted in totals but not attributed to a site (tables full). */
uint64_t agent_unattributed_syncs(void);
/* Records no ring could take: threads beyond SYNCSPY_BUFFER_MB got no ring. */
uint64_t agent_records_without_ring(void);
/* A fork's child starts with no count. */
void agent_core_atfork_child(void);

#endif
