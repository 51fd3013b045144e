/* agent/core.c: the recording entry points the entry layer calls (core.h): the recursion guard,
 * the sync path (stack, site, ring record) and the launch counters. They run on the
 * application's thread inside a CUDA call: no malloc, no stdio, a lock only on first sight of a
 * stack or of a thread. */
#include "agent/core.h"

#include <errno.h>
#include <string.h>
#include <signal.h>

#include "agent/autograd.h"
#include "agent/gpu.h"
#include "agent/lifecycle.h"
#include "agent/pyhook.h"
#include "agent/pynames.h"
#include "agent/sites.h"
#include "agent/steps.h"
#include "agent/threads.h"
#include "agent/flusher.h"
#include "collectors/native_stack.h"
#include "collectors/pyframes.h"
#include "common/clock.h"
#include "common/log.h"

SYNCSPY_TLS _Atomic uint64_t *agent_tls_launches;
_Atomic bool agent_launch_tracing; /* SYNCSPY_LAUNCHES=trace and the step is recorded */
_Atomic bool agent_launch_slow;    /* tracing, or the Python step hook is wanted */
static _Atomic uint64_t unattributed_syncs;
static _Atomic uint64_t records_without_ring;

uint64_t agent_now_ns(void)
{
    return clock_mono_ns();
}

/* ---- the guard --------------------------------------------------------------------------------- */

/* Leaving agent code: a signal deferred meanwhile is delivered now, when no agent lock is held
 * by this thread (the exit report, written on the flusher thread, needs those locks). */
static inline void deliver_deferred_signal(void)
{
    if (unlikely(agent_tls.pending_signal) && agent_tls.guard == 0) {
        int sig = agent_tls.pending_signal;
        agent_tls.pending_signal = 0;
        raise(sig);
    }
}

bool agent_defer_signal(int sig)
{
    if (agent_tls.guard == 0)
        return false;
    agent_tls.pending_signal = sig;
    return true;
}

bool agent_enter(void)
{
    if (unlikely(agent_tls.guard))
        return false;
    int st = atomic_load_explicit(&agent_state, memory_order_relaxed);
    if (unlikely(st != STATE_RUNNING)) {
        if (st != STATE_STARTING)
            return false;
        agent_init_once();
        if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
            return false;
    }
    agent_tls.guard++;
    agent_tls.saved_errno = errno;
    return true;
}

bool agent_thread_busy(void)
{
    return agent_tls.guard != 0;
}

int agent_enter_recording(void)
{
    /* A step the schedule does not record, on a thread the agent knows: the call is forwarded
     * with no clock read and no errno save; the guard stays raised around it so the CUPTI
     * callbacks (agent_thread_busy) still know the entry layer has this call. A thread's first
     * CUDA call takes the full path (it registers the thread and starts the flusher). */
    if (!atomic_load_explicit(&steps_active, memory_order_relaxed) && likely(agent_tls.ts != NULL) &&
        likely(agent_tls.guard == 0)) {
        agent_tls.guard++;
        /* a schedule that waits must not keep the step hook from being registered */
        if (unlikely(atomic_load_explicit(&pyhook_eager, memory_order_relaxed)))
            pyhook_poll(agent_now_ns());
        return AGENT_HELD;
    }
    return agent_enter() ? AGENT_RECORD : AGENT_UNTOUCHED;
}

void agent_leave_held(void)
{
    agent_tls.guard--;
    deliver_deferred_signal();
}

void agent_leave(void)
{
    agent_tls.guard--;
    deliver_deferred_signal();
    errno = agent_tls.saved_errno;
}

void agent_guard_enter(void)
{
    agent_tls.guard++;
}

void agent_guard_leave(void)
{
    agent_tls.guard--;
    deliver_deferred_signal();
}

/* ---- the calling thread -------------------------------------------------------------------------- */

/* Its first CUDA call: the process's first one starts what the lifecycle starts then. */
static struct thread_state *thread_state_slow(void)
{
    agent_init_once();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return NULL;
    agent_tls.guard++;
    agent_first_use();
    struct thread_state *ts = threads_register();
    agent_tls.guard--;
    deliver_deferred_signal();
    return ts;
}

static inline struct thread_state *thread_state(void)
{
    struct thread_state *ts = agent_tls.ts;
    return likely(ts != NULL) ? ts : thread_state_slow();
}

/* ---- syncs ------------------------------------------------------------------------------------- */

static void python_notice(void)
{
    static _Atomic bool said;
    if (!atomic_exchange(&said, true))
        agent_log("%s", pyframes_status());
}

static int native_capture(const struct sync_call *call, uintptr_t *pcs, int *truncated)
{
    if (likely(!call->via_cupti))
        return native_stack_capture(pcs, agent_cfg.max_depth, truncated);
    native_stack_skip_cuda = true; /* frames start at the caller of the CUDA API */
    int n = native_stack_capture(pcs, agent_cfg.max_depth, truncated);
    native_stack_skip_cuda = false;
    return n;
}

/* The calling thread's stack (native frames, with the Python frames merged in when the
 * process runs CPython) and its site. */
static struct site *capture_site(struct thread_state *ts, const struct sync_call *call)
{
    uintptr_t native[NATIVE_STACK_MAX];
    int truncated;
    int depth = native_capture(call, native, &truncated);
    uint64_t now = agent_now_ns();
    if (!pyframes_ready(now)) {
        if (pyframes_unsupported())
            python_notice();
        return sites_lookup(&ts->cache, call->api, native, (uint32_t)depth, truncated);
    }
    pyhook_poll(now);
    struct py_raw_frame py[PYFRAMES_MAX];
    int n_py = pyframes_capture(py, PYFRAMES_MAX);
    /* room for the backward sections too: a node's forward stack and its caller's */
    uintptr_t words[NATIVE_STACK_MAX + 6 * PYFRAMES_MAX];
    int n = depth;
    if (n_py > 0)
        n = pyframes_merge(native, depth, py, n_py, words, NATIVE_STACK_MAX + 2 * PYFRAMES_MAX);
    else
        memcpy(words, native, (size_t)depth * sizeof *words);
    n = autograd_append(words, n, (int)ARRAY_SIZE(words));
    struct site *site = sites_lookup(&ts->cache, call->api, words, (uint32_t)n, truncated);
    if (site && site_count(site) == 0)
        pynames_intern_stack(words, (uint32_t)n); /* names while the frames still run */
    return site;
}

/* A ring that just reached half full wakes the flusher (a write() to its pipe, once per half
 * ring), so a busy thread's ring is drained long before the 100 ms period ends. */
static inline void push_record(struct ring *r, const struct tw_event *rec)
{
    if (ring_push(r, rec)) {
        uint64_t used = atomic_load_explicit(&r->head, memory_order_relaxed) -
                        atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (unlikely(used == (r->mask + 1) / 2))
            flusher_kick();
    }
}

void agent_sync(const struct sync_call *call)
{
    struct thread_state *ts = thread_state();
    if (!atomic_load_explicit(&steps_active, memory_order_relaxed))
        return; /* the schedule does not record this step */
    uint64_t blocked = call->end_ns > call->start_ns ? call->end_ns - call->start_ns : 0;
    uint64_t step = atomic_load_explicit(&steps_now, memory_order_relaxed);
    steps_add_sync(blocked);
    if (ts)
        phase_add(&ts->syncs, step, blocked);

    struct site *site = ts ? capture_site(ts, call) : NULL;
    if (site)
        site_add(site, step, blocked, ts->tid);
    else
        atomic_fetch_add_explicit(&unattributed_syncs, 1, memory_order_relaxed);
    if (unlikely(atomic_load_explicit(&agent_gpu_tracking, memory_order_relaxed)) && site)
        agent_gpu_sync(site_id(site), call); /* SYNCSPY_GPU=1: the GPU idle time after it, later */
    struct tw_event rec = {.t0 = call->start_ns, .t1 = call->end_ns, .stream = call->stream,
                           .arg = call->bytes, .step = step,
                           .stack_id = site ? site_stack_id(site) : 0, .tid = ts ? ts->tid : 0,
                           .api = (uint16_t)call->api, .kind = TW_SYNC, .dir = (uint8_t)call->dir};
    if (ts && ts->ring)
        push_record(ts->ring, &rec);
    else
        atomic_fetch_add_explicit(&records_without_ring, 1, memory_order_relaxed);
}

uint64_t agent_unattributed_syncs(void)
{
    return atomic_load_explicit(&unattributed_syncs, memory_order_relaxed);
}

uint64_t agent_records_without_ring(void)
{
    return atomic_load_explicit(&records_without_ring, memory_order_relaxed);
}

void agent_core_atfork_child(void)
{
    atomic_store(&unattributed_syncs, 0);
}

void agent_skip_objects(const char *const *prefixes, int n)
{
    struct native_range r[NATIVE_SKIP_RANGES_MAX];
    int k = native_stack_object_ranges(prefixes, n, r, NATIVE_SKIP_RANGES_MAX);
    native_stack_set_skip_ranges(r, k);
}

/* ---- launches ------------------------------------------------------------------------------------ */

void agent_trace_launch(enum api_id api, const void *func, uintptr_t stream)
{
    struct thread_state *ts = agent_tls.ts;
    if (!ts || agent_tls.guard)
        return;
    struct tw_event rec = {.t0 = agent_now_ns(), .stream = stream, .arg = (uintptr_t)func,
                           .step = atomic_load_explicit(&steps_now, memory_order_relaxed),
                           .tid = ts->tid, .api = (uint16_t)api, .kind = TW_LAUNCH};
    if (ts->ring)
        push_record(ts->ring, &rec);
}

void agent_launch_slow_update(void)
{
    atomic_store_explicit(&agent_launch_slow,
                          atomic_load_explicit(&agent_launch_tracing, memory_order_relaxed) ||
                              atomic_load_explicit(&pyhook_eager, memory_order_relaxed),
                          memory_order_relaxed);
}

/* Every 256th launch of a thread, and every launch while the step hook is wanted eagerly: a loop
 * that launches but rarely syncs gets its Python step hook registered before its first
 * optimizer step. */
__attribute__((noinline, cold)) static void launch_tick(void)
{
    uint64_t now = agent_now_ns();
    if (pyframes_ready(now))
        pyhook_poll(now);
}

void agent_count_launch(void)
{
    struct thread_state *ts = agent_tls.ts;
    if (unlikely(!ts) && !(ts = thread_state_slow()))
        return;
    /* Only this thread writes its counter: a relaxed load and store, no lock prefix. */
    uint64_t n = atomic_load_explicit(&ts->launches, memory_order_relaxed) + 1;
    atomic_store_explicit(&ts->launches, n, memory_order_relaxed);
    if (unlikely((n & 255) == 0) || unlikely(atomic_load_explicit(&pyhook_eager, memory_order_relaxed)))
        launch_tick();
}
