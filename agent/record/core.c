/* agent/record/core.c: the recording entry points the entry layer calls (core.h): the marks of the
 * interposed call and of agent work (the recursion guard, cancellation, the deferral of a fatal
 * signal), the sync path (stack, site, ring record) and the launch counters. They run on the
 * application's thread inside a CUDA call: no malloc, no stdio, a lock only on first sight of a
 * stack or of a thread, and then with signals held. */
#include "agent/record/core.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "agent/record/autograd.h"
#include "agent/record/autograd_nodes.h"
#include "agent/record/budget_counts.h"
#include "agent/record/gpu.h"
#include "agent/record/python_names.h"
#include "agent/record/sites.h"
#include "agent/record/state.h"
#include "agent/record/step_now.h"
#include "agent/record/threads.h"
#include "agent/record/upcalls.h"
#include "agent/syncspy.h"
#include "collectors/native_stack.h"
#include "collectors/pyframes.h"
#include "common/clock.h"
#include "common/log.h"

_Atomic bool agent_launch_tracing;  /* SYNCSPY_LAUNCHES=trace and the step is recorded */
_Atomic bool agent_launch_slow;     /* tracing, the Python step hook wanted, or launch marking */
static _Atomic bool launch_marking; /* agent_launch_marking_on */
/* The process's counters, all of them: a forked child starts them at zero with one memset
 * (agent_core_atfork_child), so a counter added here is reset at fork by construction. */
static struct core_counters {
    _Atomic uint64_t unattributed_syncs;   /* recorded without a site */
    _Atomic uint64_t records_without_ring; /* recorded by a thread without a ring (not traced) */
    /* Every recorded sync of every thread, for syncspy_counts (SYNCSPY_SCOPE_PROCESS). */
    _Atomic uint64_t process_syncs, process_blocked_ns;
    _Atomic uint64_t memo_hits; /* captures whose site the thread's capture memo knew */
} counters;

uint64_t agent_now_ns(void)
{
    return clock_mono_ns();
}

/* ---- marks: the interposed call and the agent work in progress ------------------------------ */

/* A mark is live while the frame that set it runs: the code asking runs deeper on the same
 * stack (stacks grow down here) and the cookie written into the mark is still there. A mark a
 * longjmp left behind is at or below nothing live: the next entry from the same depth or above
 * finds itself at or above it; one from deeper finds its cookie overwritten by the frames that
 * now use that stack (stale marks from deeper entries whose frames left that word untouched are
 * the one case missed: the call is then forwarded unrecorded, and the next entry from higher up
 * clears it). */
static inline bool mark_live(const struct agent_mark *m, uint64_t cookie, const void *here)
{
    return m && (uintptr_t)here < (uintptr_t)m && m->cookie == cookie;
}

static inline bool call_live(const void *here)
{
    return mark_live(agent_tls.call, agent_tls.call_cookie, here);
}

/* Agent work is live on this thread. A work mark older than a live call mark cannot enclose it
 * (a call made inside agent work is forwarded untouched and sets no mark): it is stale. */
static inline bool work_live(const void *here)
{
    if (agent_tls.agent_thread)
        return true;
    if (!mark_live(agent_tls.work, agent_tls.work_cookie, here))
        return false;
    return !(call_live(here) && agent_tls.call_cookie > agent_tls.work_cookie);
}

/* The work mark a longjmp left: its cancel state back, a signal it deferred raised now. */
static void drop_stale_work(void)
{
    agent_tls.work = NULL;
    pthread_setcancelstate(agent_tls.work_cancel, NULL);
    if (agent_tls.pending_signal) {
        int sig = agent_tls.pending_signal;
        agent_tls.pending_signal = 0;
        raise(sig);
    }
}

void agent_work_begin(struct agent_work *w)
{
    w->outer = false;
    if (work_live(w))
        return; /* nested: the outer work ends it */
    if (agent_tls.work)
        drop_stale_work();
    w->outer = true;
    w->mark.cookie = ++agent_tls.seq;
    agent_tls.work_cookie = w->mark.cookie;
    agent_tls.work = &w->mark;
    /* write() (the flusher's kick) and open() are cancellation points: a thread cancelled inside agent
     * code would leave its state half done */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &agent_tls.work_cancel);
}

void agent_work_end(struct agent_work *w)
{
    if (!w->outer || agent_tls.work != &w->mark)
        return;
    agent_tls.work = NULL;
    pthread_setcancelstate(agent_tls.work_cancel, NULL);
    /* The agent's handler deferred a fatal signal meanwhile: delivered now, when no agent state
     * of this thread is half done (the exit report, written on the flusher thread, reads it). */
    if (unlikely(agent_tls.pending_signal)) {
        int sig = agent_tls.pending_signal;
        agent_tls.pending_signal = 0;
        raise(sig);
    }
}

void agent_thread_is_agents(void)
{
    agent_tls.agent_thread = true;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
}

bool agent_defer_signal(int sig, const void *sp)
{
    if (!work_live(sp))
        return false;
    agent_tls.pending_signal = sig;
    return true;
}

static sigset_t hold_set;
static pthread_once_t hold_once = PTHREAD_ONCE_INIT;

static void hold_set_init(void)
{
    sigfillset(&hold_set);
    /* A fault in agent code must still reach the program's handler (faulthandler, a JVM) or
     * kill the process; blocked, the kernel would kill it without either. */
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
    for (size_t i = 0; i < ARRAY_SIZE(faults); i++)
        sigdelset(&hold_set, faults[i]);
}

void agent_hold_signals(struct agent_hold *h)
{
    pthread_once(&hold_once, hold_set_init);
    pthread_sigmask(SIG_BLOCK, &hold_set, &h->old);
}

void agent_release_signals(struct agent_hold *h)
{
    pthread_sigmask(SIG_SETMASK, &h->old, NULL);
}

/* ---- entering from an interposed call ------------------------------------------------------------ */

/* Whether agent_enter* may take this call: not from agent code, not inside another interposed
 * call, the agent running. Clears marks a longjmp left. */
static inline bool may_enter(const void *here)
{
    if (unlikely(agent_tls.work != NULL || agent_tls.agent_thread)) {
        if (work_live(here))
            return false;
        if (agent_tls.work)
            drop_stale_work();
    }
    if (unlikely(agent_tls.call != NULL) && call_live(here))
        return false;
    int st = atomic_load_explicit(&agent_state, memory_order_relaxed);
    if (unlikely(st != STATE_RUNNING)) {
        if (st != STATE_STARTING)
            return false;
        up_start();
        if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
            return false;
    }
    return true;
}

static inline void set_call_mark(struct agent_call *k)
{
    k->mark.cookie = ++agent_tls.seq;
    agent_tls.call_cookie = k->mark.cookie;
    agent_tls.call = &k->mark;
}

bool agent_enter(struct agent_call *k)
{
    if (!may_enter(k))
        return false;
    set_call_mark(k);
    k->saved_errno = errno;
    return true;
}

int agent_enter_recording(struct agent_call *k)
{
    if (!may_enter(k))
        return AGENT_UNTOUCHED;
    set_call_mark(k);
    /* A step the schedule does not record, on a thread the agent knows: the call is forwarded
     * with no clock read and no errno save; the mark stays so the CUPTI callbacks
     * (agent_thread_busy) still know the entry layer has this call. A thread's first CUDA call
     * takes the full path (it registers the thread and starts the flusher). */
    if (!atomic_load_explicit(&steps_active, memory_order_relaxed) &&
        likely(agent_tls.ts != NULL)) {
        /* a schedule that waits must not keep the step hook from being registered */
        if (unlikely(atomic_load_explicit(&pyhook_eager, memory_order_relaxed))) {
            struct agent_work w;
            agent_work_begin(&w);
            up_poll_python(agent_now_ns());
            agent_work_end(&w);
        }
        return AGENT_HELD;
    }
    k->saved_errno = errno;
    return AGENT_RECORD;
}

/* The end of an interposed call: the step hook's attempt, where this thread must wait for it
 * (agent/step/pyhook.h; one thread-local load otherwise). */
static inline void hook_wait(void)
{
    if (unlikely(agent_tls.pyhook_wait))
        up_wait_python();
}

void agent_leave_held(struct agent_call *k)
{
    if (agent_tls.call == &k->mark)
        agent_tls.call = NULL;
    hook_wait();
}

void agent_leave(struct agent_call *k)
{
    if (agent_tls.call == &k->mark)
        agent_tls.call = NULL;
    hook_wait();
    errno = k->saved_errno;
}

bool agent_thread_busy(void)
{
    const void *here = __builtin_frame_address(0);
    return work_live(here) || call_live(here);
}

/* ---- the calling thread -------------------------------------------------------------------------- */

/* Its first CUDA call: the process's first one starts what the lifecycle starts then. */
static struct thread_state *thread_state_slow(void)
{
    up_start();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return NULL;
    struct agent_work w;
    struct agent_hold h;
    agent_work_begin(&w);
    agent_hold_signals(&h); /* the registry lock, the flusher's start, CUPTI's loading */
    up_first_use();
    struct thread_state *ts = threads_register();
    agent_release_signals(&h);
    agent_work_end(&w);
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

static int native_capture(const struct sync_call *call, struct capture_scratch *b, int *truncated)
{
    if (likely(!call->via_cupti))
        return native_stack_capture(b->native, agent_cfg.max_depth, truncated, b->raw);
    native_stack_skip_cuda = true; /* frames start at the caller of the CUDA API */
    int n = native_stack_capture(b->native, agent_cfg.max_depth, truncated, b->raw);
    native_stack_skip_cuda = false;
    return n;
}

/* The calling thread's stack (native frames, with the Python frames merged in when the
 * process runs CPython) and its site. */
/* The site of a stack: the thread's cache, else the tables (their locks held with signals held,
 * and the Python names interned on first sight, while the frames still run). */
static struct site *site_for(struct thread_state *ts, uint32_t api, const uintptr_t *words, int n,
                             int truncated, bool python, const struct py_raw_frame *py, int n_py)
{
    struct site *site = sites_cached(&ts->cache, api, words, (uint32_t)n);
    if (likely(site != NULL) && (!python || site_count(site) != 0))
        return site;
    struct agent_hold h;
    agent_hold_signals(&h);
    site = sites_lookup(&ts->cache, api, words, (uint32_t)n, truncated);
    if (python && site && site_count(site) == 0) {
        python_names_intern_stack(words, (uint32_t)n, py, n_py);
        if (python_names_compile_work(py, n_py))
            site_mark_compile_work(site);
    }
    agent_release_signals(&h);
    return site;
}

/* The evaluation loop's code where its symbol does not cover it (pyframes.h says when). */
__attribute__((noinline, cold)) static void learn_eval_range(uintptr_t entry_frame)
{
    uintptr_t lo = 0, hi = 0;
    if (native_stack_function_holding(entry_frame, &lo, &hi) != 0)
        lo = hi = 0;
    dbg(1, "evaluation loop's code learnt from a live stack: %#lx-%#lx", (unsigned long)lo,
        (unsigned long)hi);
    pyframes_learn_eval_range(lo, hi);
}

static struct site *capture_into(struct thread_state *ts, const struct sync_call *call,
                                 struct capture_scratch *b)
{
    int truncated;
    int depth = native_capture(call, b, &truncated);
    uint64_t now = agent_now_ns();
    up_poll_python(now); /* steps come from the hook whether or not frames can be read */
    if (!pyframes_ready(now)) {
        if (pyframes_unsupported())
            python_notice();
        return site_for(ts, call->api, b->native, depth, truncated, false, NULL, 0);
    }
    int n_py = pyframes_capture(b->py, PYFRAMES_MAX);
    struct backward_node node = {0};
    bool node_runs = nodes_current(&node.forward, &node.name, &node.cause);
    bool autograd_thread = !strncmp(ts->name, "pt_autograd_", 12);
    /* no backward section to add: the same stacks are the same site (capture_memo.h) */
    bool memo = !autograd_appends(autograd_thread, node_runs ? &node : NULL);
    uint32_t generation = memo ? pyframes_eval_generation() : 0;
    if (memo) {
        struct site *seen =
            capture_memo_find(&b->memo, call->api, generation, b->native, depth, b->py, n_py);
        if (seen) {
            atomic_fetch_add_explicit(&counters.memo_hits, 1, memory_order_relaxed);
            return seen;
        }
    }
    uintptr_t entry = pyframes_eval_range_wanted(b->native, depth, n_py);
    if (unlikely(entry != 0)) /* a few times per process at most */
        learn_eval_range(entry);
    int n = depth;
    if (n_py > 0)
        n = pyframes_merge(b->native, depth, b->py, n_py, b->words,
                           NATIVE_STACK_MAX + 2 * PYFRAMES_MAX);
    else
        memcpy(b->words, b->native, (size_t)depth * sizeof *b->words);
    n = autograd_append(b->words, n, (int)ARRAY_SIZE(b->words), autograd_thread,
                        node_runs ? &node : NULL);
    struct site *site =
        site_for(ts, call->api, b->words, n, truncated, n_py > 0 || n > depth, b->py, n_py);
    /* memoized once the merge placed every Python frame by its loop (no range to learn) */
    if (memo && site && (n_py == 0 || pyframes_stack_shows_eval(b->native, depth)))
        capture_memo_put(&b->memo, call->api, generation, b->native, depth, b->py, n_py, site);
    return site;
}

/* The buffers are the thread's (agent/record/threads.h): a capture that finds them in use (a signal
 * handler's sync inside another capture) or missing records the sync without a site. */
static struct site *capture_site(struct thread_state *ts, const struct sync_call *call)
{
    struct capture_scratch *b = ts->scratch;
    if (unlikely(!b || b->busy))
        return NULL;
    b->busy = true;
    atomic_signal_fence(memory_order_seq_cst);
    struct site *site = capture_into(ts, call, b);
    atomic_signal_fence(memory_order_seq_cst);
    b->busy = false;
    return site;
}

/* A ring that just reached half full wakes the flusher (a write() to its pipe, once per half
 * ring), so a busy thread's ring is drained long before the 100 ms period ends. */
static inline void push_record(struct ring *r, const struct tw_event *rec)
{
    if (ring_push(r, rec)) {
        uint64_t used = atomic_load_explicit(&r->head, memory_order_relaxed) -
                        atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (unlikely(used == (r->mask + 1) / 2)) {
            int cancel; /* write() is a cancellation point */
            pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
            up_kick_flusher();
            pthread_setcancelstate(cancel, NULL);
        }
    }
}

static void record_sync(const struct sync_call *call)
{
    struct thread_state *ts = thread_state();
    if (!atomic_load_explicit(&steps_active, memory_order_relaxed))
        return; /* the schedule does not record this step */
    uint64_t blocked = call->end_ns > call->start_ns ? call->end_ns - call->start_ns : 0;
    uint64_t step = atomic_load_explicit(&steps_now, memory_order_relaxed);

    struct site *site = ts ? capture_site(ts, call) : NULL;
    if (site) {
        site_add(site, step, blocked, ts->tid);
        if (call->after_pinned_copy)
            site_add_pinned(site);
    } else
        atomic_fetch_add_explicit(&counters.unattributed_syncs, 1, memory_order_relaxed);
    /* torch.compile's own work (compiling, a new kernel's autotuning) is not the program's: the
     * step records, the thread's and the process's figures and the budgets leave it out, as the
     * readers' rows do (its site keeps its count) */
    bool own = !site || !site_compile_work(site);
    if (own) {
        steps_add_sync(blocked);
        atomic_fetch_add_explicit(&counters.process_syncs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&counters.process_blocked_ns, blocked, memory_order_relaxed);
        if (ts)
            phase_add(&ts->syncs, step, blocked);
    }
    /* a sync budget region is open somewhere (agent/record/budget_counts.h): one load and a branch if not */
    if (unlikely(
            budget_counts_open(atomic_load_explicit(&budget_counts_state, memory_order_relaxed))) &&
        own && ts && ts->tally)
        budget_counts_add(ts->tally, site ? site_id(site) : 0, blocked);
    if (unlikely(atomic_load_explicit(&agent_gpu_tracking, memory_order_relaxed)) && site) {
        struct agent_hold h; /* the GPU collector's lock */
        agent_hold_signals(&h);
        agent_gpu_sync(site_id(site), call->end_ns, call->runtime_corr,
                       call->driver_corr); /* SYNCSPY_GPU=1: the GPU idle time after it, later */
        agent_release_signals(&h);
    }
    struct tw_event rec = {.t0 = call->start_ns,
                           .t1 = call->end_ns,
                           .stream = call->stream,
                           .arg = call->bytes,
                           .step = step,
                           .stack_id = site ? site_stack_id(site) : 0,
                           .tid = ts ? ts->tid : 0,
                           .api = (uint16_t)call->api,
                           .kind = TW_SYNC,
                           .dir = (uint8_t)call->dir};
    if (ts && ts->ring)
        push_record(ts->ring, &rec);
    else
        atomic_fetch_add_explicit(&counters.records_without_ring, 1, memory_order_relaxed);
}

void agent_sync(const struct sync_call *call)
{
    struct agent_work w;
    agent_work_begin(&w);
    record_sync(call);
    agent_work_end(&w);
}

uint64_t agent_unattributed_syncs(void)
{
    return atomic_load_explicit(&counters.unattributed_syncs, memory_order_relaxed);
}

uint64_t agent_capture_memo_hits(void)
{
    return atomic_load_explicit(&counters.memo_hits, memory_order_relaxed);
}

uint64_t agent_records_without_ring(void)
{
    return atomic_load_explicit(&counters.records_without_ring, memory_order_relaxed);
}

/* The child's one thread is the only one: a plain memset of the counters is safe. */
void agent_core_atfork_child(void)
{
    memset(&counters, 0, sizeof counters);
}

/* The public counters (agent/syncspy.h): atomic loads only, so a signal handler may ask too. The
 * thread's own counter is its thread_state's (none before its first CUDA call: zeros). */
SYNCSPY_EXPORT int syncspy_counts(int scope, struct syncspy_counts *out, size_t size)
{
    if (!out || size < offsetof(struct syncspy_counts, step) ||
        (scope != SYNCSPY_SCOPE_THREAD && scope != SYNCSPY_SCOPE_PROCESS))
        return -1;
    struct syncspy_counts c = {0};
    if (atomic_load_explicit(&agent_state, memory_order_acquire) != STATE_STARTING) {
        if (scope == SYNCSPY_SCOPE_PROCESS) {
            c.syncs = atomic_load_explicit(&counters.process_syncs, memory_order_relaxed);
            c.blocked_ns = atomic_load_explicit(&counters.process_blocked_ns, memory_order_relaxed);
        } else if (agent_tls.ts) {
            c.syncs = atomic_load_explicit(&agent_tls.ts->syncs.count, memory_order_relaxed);
            c.blocked_ns = atomic_load_explicit(&agent_tls.ts->syncs.ns, memory_order_relaxed);
        }
        c.step = atomic_load_explicit(&steps_now, memory_order_relaxed);
        c.recording = atomic_load_explicit(&steps_active, memory_order_relaxed) ? 1 : 0;
    }
    memcpy(out, &c, size < sizeof c ? size : sizeof c);
    return 0;
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
    if (!ts || work_live(__builtin_frame_address(0)))
        return;
    struct tw_event rec = {.t0 = agent_now_ns(),
                           .stream = stream,
                           .arg = (uintptr_t)func,
                           .step = atomic_load_explicit(&steps_now, memory_order_relaxed),
                           .tid = ts->tid,
                           .api = (uint16_t)api,
                           .kind = TW_LAUNCH};
    if (ts->ring)
        push_record(ts->ring, &rec);
}

void agent_launch_slow_update(void)
{
    atomic_store_explicit(&agent_launch_slow,
                          atomic_load_explicit(&agent_launch_tracing, memory_order_relaxed) ||
                              atomic_load_explicit(&pyhook_eager, memory_order_relaxed) ||
                              atomic_load_explicit(&launch_marking, memory_order_relaxed),
                          memory_order_relaxed);
}

void agent_launch_marking_on(void)
{
    atomic_store_explicit(&launch_marking, true, memory_order_relaxed);
    agent_launch_slow_update();
}

/* Every 256th launch of a thread, and every launch while the step hook is wanted eagerly: a loop
 * that launches but rarely syncs gets its Python step hook registered before its first
 * optimizer step. */
__attribute__((noinline, cold)) static void launch_tick(void)
{
    up_poll_python(agent_now_ns());
    hook_wait();
}

void agent_count_launch(void)
{
    struct thread_state *ts = agent_tls.ts;
    if (unlikely(!ts) && !(ts = thread_state_slow()))
        return;
    /* Only this thread writes its counter: a relaxed load and store, no lock prefix. */
    uint64_t n = atomic_load_explicit(&ts->launches, memory_order_relaxed) + 1;
    atomic_store_explicit(&ts->launches, n, memory_order_relaxed);
    if (unlikely((n & 255) == 0) ||
        unlikely(atomic_load_explicit(&pyhook_eager, memory_order_relaxed)))
        launch_tick();
}
