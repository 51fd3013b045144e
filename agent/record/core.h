/* agent/record/core.h: the small C API the entry layer calls to record (agent/record/core.c). Everything here
 * runs on the application's thread inside a CUDA call (or a CUPTI callback): no stdio, no malloc
 * (the agent allocates from its own mmap'ed arena), locks only on first sight of a stack or of
 * a thread, never while the real CUDA call runs. */
#ifndef SYNCSPY_CORE_H
#define SYNCSPY_CORE_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/record/apis.h"
#include "common/compiler.h"

enum copy_dir { DIR_NONE = 0, DIR_H2D, DIR_D2H, DIR_D2D, DIR_H2H };

/* One intercepted call that made the host wait for the device. */
struct sync_call {
    uint32_t api;      /* enum api_id, or an api_intern() id for CUPTI-seen calls */
    uint64_t start_ns; /* CLOCK_MONOTONIC when the real call began */
    uint64_t end_ns;   /* ... and when it returned */
    uintptr_t stream;  /* cudaStream_t, 0 for the legacy default stream */
    uint64_t bytes;    /* copies and memsets */
    enum copy_dir dir;
    bool after_pinned_copy; /* a stream synchronize right after the thread copied from or to
                             * pinned host memory (entry/runtime.c) */
    bool via_cupti; /* delivered by a CUPTI callback: CUPTI's, the driver's and the runtime's
                         * frames lie between the agent and the caller of the CUDA API */
    /* SYNCSPY_GPU=1 (agent_gpu_tracking): the correlation ids of the runtime and driver calls
     * that returned inside this one, 0 when unknown */
    uint32_t runtime_corr, driver_corr;
};

/* A mark on the stack of the frame that set it: live while that frame runs. A longjmp out of
 * the frame (a program's signal handler siglongjmp-ing out of a CUDA call) leaves it behind;
 * it is known stale when a later entry finds itself at or above it on the stack, or its cookie
 * overwritten (agent/record/core.c). */
struct agent_mark {
    uint64_t cookie;
};

/* An interposed call's mark, on the entry point's own stack (entry/runtime.c), from its
 * agent_enter_recording (or agent_enter) to its leave. */
struct agent_call {
    struct agent_mark mark;
    int saved_errno;
};

/* The runtime entry points' way in: AGENT_RECORD (time the real call, then agent_leave),
 * AGENT_HELD (the step is not recorded: forward it untimed, then agent_leave_held), or
 * AGENT_UNTOUCHED (forward it and do nothing more): the call was made by agent code (the
 * unwinder or the symbolizer may reach CUDA-using code) or inside another interposed call on
 * this thread, or the agent is not running (finishing, off). k lives on the caller's stack until
 * the leave; a longjmp out of the real call leaves it behind, and the next call on the thread
 * finds it stale and takes its place. */
enum { AGENT_UNTOUCHED = 0, AGENT_RECORD = 1, AGENT_HELD = 2 };
int agent_enter_recording(struct agent_call *k);
void agent_leave_held(struct agent_call *k);
/* A call recorded whatever the step (CUPTI's callbacks): true (the caller must agent_leave) or
 * false as AGENT_UNTOUCHED. */
bool agent_enter(struct agent_call *k);
/* After AGENT_RECORD or a true agent_enter: errno back to what the real call left. */
void agent_leave(struct agent_call *k);

/* True while the calling thread runs agent code or an interposed call (between agent_enter
 * and agent_leave): a CUPTI callback then belongs to a call the agent already sees, or to the
 * agent's own, and is ignored (entry/cupti.c). */
bool agent_thread_busy(void);

/* Records one sync; call between agent_enter and agent_leave, on the calling thread, after the
 * real call returned (the stack is captured here). */
void agent_sync(const struct sync_call *call);

/* Counts one kernel launch for the current step. The fast path: a thread-local load, a branch
 * and an increment; no stack, no lock, no syscall. */
void agent_count_launch(void);

/* The launch entry points count inline (entry/runtime.c LAUNCH): the calling thread's counter
 * is this thread-local pointer (NULL until its first CUDA call, and after it exits; kept by
 * agent/record/threads.c); only the owning thread writes it. Everything else goes through
 * agent_count_launch. */
extern SYNCSPY_TLS _Atomic uint64_t *agent_tls_launches;

/* SYSCALL-free checks for the launch entry points: agent_launch_slow sends every launch through
 * the slow path (agent_count_launch): while launches are traced (agent_launch_tracing:
 * SYNCSPY_LAUNCHES=trace and the current step is recorded; set by agent/step/steps.c), while the
 * Python step hook is still wanted (agent/step/pyhook.h: it polls from there), and once CUPTI
 * watches the driver's launches (agent_launch_marking_on: the slow path marks its launch for
 * CUPTI's callbacks, entry/cupti.h entry_launch_frame). */
extern _Atomic bool agent_launch_tracing;
extern _Atomic bool agent_launch_slow;
/* Recomputes agent_launch_slow from its three reasons. */
void agent_launch_slow_update(void);
/* From now on every launch takes the slow path (entry/cupti.c, as it enables the driver's launch
 * callbacks). */
void agent_launch_marking_on(void);
/* Records one launch (kernel host function or handle, stream) in the thread's ring. */
void agent_trace_launch(enum api_id api, const void *func, uintptr_t stream);

/* CLOCK_MONOTONIC in ns (vDSO: no syscall). */
uint64_t agent_now_ns(void);

/* From the agent's signal handler (async-signal-safe): when the interrupted code (its stack
 * pointer sp, from the handler's ucontext) is agent work (which may hold the loader's lock
 * the exit report needs), keeps the signal to raise again when the work ends (microseconds;
 * docs/RELIABILITY.md states the bound) and returns true. */
bool agent_defer_signal(int sig, const void *sp);

/* The frames of calls delivered by CUPTI start at the caller of the CUDA API: the loaded
 * objects whose file names start with one of these (libcupti, libcuda, libcudart) are skipped
 * at the top of their stacks. Once, when CUPTI is subscribed (not on a recording path). */
void agent_skip_objects(const char *const *prefixes, int n);

/* ---- for the rest of the agent ----------------------------------------------------------------- */

/* Agent work on a program thread that is no CUDA call (a step mark, the exit path, a note
 * before dlclose): CUDA calls made inside are forwarded untouched, cancellation is off, a fatal
 * signal for the agent's handler waits until agent_work_end. w lives on the caller's stack;
 * nested work does nothing more. */
struct agent_work {
    struct agent_mark mark;
    bool outer;
};
void agent_work_begin(struct agent_work *w);
void agent_work_end(struct agent_work *w);
/* Inside agent work, around code that takes an agent lock on a program thread: every signal
 * but the synchronous faults blocked, so no handler of the program runs while the lock is held
 * (one that calls exit() would wait for it at the exit report forever). About 0.6 us a pair:
 * not on the path of a sync whose stack was seen before. */
struct agent_hold {
    sigset_t old;
};
void agent_hold_signals(struct agent_hold *h);
void agent_release_signals(struct agent_hold *h);
/* The agent's own thread (the flusher), from its start: all of it is agent work, for good. */
void agent_thread_is_agents(void);
/* Syncs counted in totals but not attributed to a site (tables full). */
uint64_t agent_unattributed_syncs(void);
/* Syncs whose site came from the thread's capture memo (agent/record/capture_memo.h). */
uint64_t agent_capture_memo_hits(void);
/* Records no ring could take: threads beyond SYNCSPY_BUFFER_MB got no ring. */
uint64_t agent_records_without_ring(void);
/* A fork's child starts with no count. */
void agent_core_atfork_child(void);

#endif
