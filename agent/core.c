/* agent/agent.c: lifecycle (constructor, fork, exit), per-thread state, steps, and the
 * recording entry points the shim calls (core.h). agent_enter/agent_sync/agent_count_launch
 * run on the application's thread inside a CUDA call: no malloc, no stdio, a lock only on
 * first sight of a stack or of a thread.
 * Lock order: step_lock, then registry_lock, then the site table lock (agent/sites.c). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/arena.h"
#include "common/compiler.h"
#include "agent/core.h"
#include "agent/flusher.h"
#include "agent/internal.h"
#include "common/log.h"
#include "agent/signals.h"
#include "agent/sites.h"
#include "agent/syncspy.h"
#include "agent/pyhook.h"
#include "agent/pynames.h"
#include "agent/ring.h"
#include "collectors/cupti.h"
#include "collectors/native_stack.h"
#include "collectors/pyframes.h"

struct config agent_cfg;
_Atomic int agent_state = STATE_STARTING;
static _Atomic bool cuda_seen;

/* ---- per-thread state ---------------------------------------------------------------- */

struct thread_state {
    _Atomic uint64_t launches;   /* written only by the owning thread */
    struct thread_state *next;   /* every thread_state ever made (registry) */
    struct thread_state *next_free;
    bool live;
    uint32_t tid;
    char name[16];               /* the thread's name at its first CUDA call */
    struct ring *ring;           /* NULL when SYNCSPY_BUFFER_MB had no room left */
    struct site_cache cache;
};

struct tls {
    struct thread_state *ts;
    unsigned guard; /* >0 while this thread runs agent code: a CUDA call made from inside the
                     * agent (e.g. cudaPointerGetAttributes while classifying, or a CUDA-using
                     * library reached through the unwinder's dl_iterate_phdr) is forwarded
                     * untouched instead of recursing into the agent. */
    int saved_errno;
    int pending_signal; /* a fatal signal that arrived while this thread held agent locks */
};
static SYNCSPY_TLS struct tls tls;
SYNCSPY_TLS _Atomic uint64_t *agent_tls_launches;

/* Leaving agent code: a signal deferred meanwhile is delivered now, when no agent lock is held
 * by this thread (the exit report, written on the flusher thread, needs those locks). */
static inline void deliver_deferred_signal(void)
{
    if (unlikely(tls.pending_signal) && tls.guard == 0) {
        int sig = tls.pending_signal;
        tls.pending_signal = 0;
        raise(sig);
    }
}

bool agent_defer_signal(int sig)
{
    if (tls.guard == 0)
        return false;
    tls.pending_signal = sig;
    return true;
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread_state *registry, *free_states;
static uint64_t retired_launches; /* launches of threads that exited */
static struct arena thread_arena = {.cap_bytes = 64u << 20};
static struct arena ring_arena; /* cap: SYNCSPY_BUFFER_MB */
static pthread_key_t thread_key;
static _Atomic uint64_t records_without_ring;
static uint64_t start_mono_ns, start_real_ns;

#define RING_RECORDS 4096 /* per thread: 256 KiB (32 threads in the default 8 MiB) */

static void first_use(void)
{
    bool was = atomic_exchange_explicit(&cuda_seen, true, memory_order_relaxed);
    if (was)
        return;
    if (agent_cfg.warnings[0])
        write_all(2, agent_cfg.warnings, strlen(agent_cfg.warnings));
    flusher_start();
    signals_install();
    cupti_start(&agent_cfg); /* CUPTI, for the syncs the shim cannot see (collectors/cupti.c) */
    /* `import torch` loads torch.optim: ask for the step hook now, so it is in place before the
     * first optimizer step (it is registered at the interpreter's next safe point). */
    uint64_t now = agent_now_ns();
    if (pyframes_ready(now))
        pyhook_poll(now);
}

static struct thread_state *thread_state_register(void);

/* pthread key destructor: the thread is exiting; keep its launches, recycle its state. */
static void thread_exit(void *p)
{
    struct thread_state *ts = p;
    pthread_mutex_lock(&registry_lock);
    retired_launches += atomic_load_explicit(&ts->launches, memory_order_relaxed);
    atomic_store_explicit(&ts->launches, 0, memory_order_relaxed);
    ts->live = false;
    ts->next_free = free_states;
    free_states = ts;
    pthread_mutex_unlock(&registry_lock);
    tls.ts = NULL;
    agent_tls_launches = NULL;
}

static struct thread_state *thread_state_slow(void)
{
    agent_init_once();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return NULL;
    tls.guard++;
    struct thread_state *ts = thread_state_register();
    tls.guard--;
    deliver_deferred_signal();
    return ts;
}

static struct thread_state *thread_state_register(void)
{
    first_use();
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    pthread_mutex_lock(&registry_lock);
    struct thread_state *ts = free_states;
    if (ts) {
        free_states = ts->next_free;
    } else if ((ts = arena_alloc(&thread_arena, sizeof(*ts)))) {
        ts->ring = arena_alloc(&ring_arena, sizeof(struct ring) + RING_RECORDS * sizeof(struct ring_rec));
        if (ts->ring)
            ts->ring->mask = RING_RECORDS - 1;
        ts->next = registry;
        registry = ts;
    }
    if (ts) {
        ts->live = true;
        ts->tid = tid;
        memcpy(ts->name, name, sizeof name);
        ts->name[15] = 0;
    }
    pthread_mutex_unlock(&registry_lock);
    if (!ts)
        return NULL;
    tls.ts = ts;
    agent_tls_launches = &ts->launches;
    pthread_setspecific(thread_key, ts);
    return ts;
}

static inline struct thread_state *thread_state(void)
{
    struct thread_state *ts = tls.ts;
    return likely(ts != NULL) ? ts : thread_state_slow();
}

void agent_visit_rings(void (*fn)(struct ring *ring, uint32_t tid, const char *name, void *ctx), void *ctx)
{
    pthread_mutex_lock(&registry_lock);
    for (struct thread_state *ts = registry; ts; ts = ts->next)
        if (ts->ring)
            fn(ts->ring, ts->tid, ts->name, ctx);
    pthread_mutex_unlock(&registry_lock);
}

uint64_t agent_records_without_ring(void)
{
    return atomic_load_explicit(&records_without_ring, memory_order_relaxed);
}

uint64_t agent_start_mono_ns(void) { return start_mono_ns; }
uint64_t agent_start_real_ns(void) { return start_real_ns; }

/* Launches of every thread so far. Caller holds step_lock (not registry_lock). */
static uint64_t launches_total(void)
{
    pthread_mutex_lock(&registry_lock);
    uint64_t n = retired_launches;
    for (struct thread_state *ts = registry; ts; ts = ts->next)
        n += atomic_load_explicit(&ts->launches, memory_order_relaxed);
    pthread_mutex_unlock(&registry_lock);
    return n;
}

/* ---- steps ------------------------------------------------------------------------------ */

#define STEPS_LISTED_MAX 65536 /* summary.json lists at most this many active steps */

static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t step_number, step_start_ns, step_launch_base;
static _Atomic uint64_t step_now; /* step_number, for the recording paths */
static _Atomic bool step_active;
_Atomic bool agent_launch_tracing; /* SYNCSPY_LAUNCHES=trace and the step is recorded */

#define STEP_EVENTS 1024 /* queued for the flusher; it drains them every 100 ms */
static struct step_event step_events[STEP_EVENTS];
static uint64_t step_events_head, step_events_tail, step_events_lost;
static _Atomic uint64_t step_syncs, step_blocked_ns;
static _Atomic uint64_t unattributed_syncs;
static bool explicit_marks;
static struct rep_step *step_log; /* mmap'ed, STEPS_LISTED_MAX entries, touched as used */
static size_t step_log_n;
static struct {
    uint64_t active, syncs, blocked_ns, launches, wall_ns, omitted;
} step_totals;

static uint64_t real_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

uint64_t agent_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void step_log_append(const struct rep_step *st)
{
    step_totals.active++;
    step_totals.syncs += st->syncs;
    step_totals.blocked_ns += st->blocked_ns;
    step_totals.launches += st->launches;
    step_totals.wall_ns += st->wall_ns;
    if (!step_log) {
        void *p = mmap(NULL, STEPS_LISTED_MAX * sizeof(struct rep_step), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        step_log = p == MAP_FAILED ? NULL : p;
    }
    if (step_log && step_log_n < STEPS_LISTED_MAX)
        step_log[step_log_n++] = *st;
    else
        step_totals.omitted++;
}

static void step_event_push(const struct step_event *e)
{
    if (step_events_head - step_events_tail == STEP_EVENTS) {
        step_events_lost++;
        return;
    }
    step_events[step_events_head++ % STEP_EVENTS] = *e;
}

size_t agent_take_step_events(struct step_event *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&step_lock);
    while (step_events_tail != step_events_head && n < max)
        out[n++] = step_events[step_events_tail++ % STEP_EVENTS];
    pthread_mutex_unlock(&step_lock);
    return n;
}

uint64_t agent_step_events_lost(void)
{
    pthread_mutex_lock(&step_lock);
    uint64_t n = step_events_lost;
    pthread_mutex_unlock(&step_lock);
    return n;
}

static void set_step_active(bool active)
{
    atomic_store_explicit(&step_active, active, memory_order_relaxed);
    atomic_store_explicit(&agent_launch_tracing, active && agent_cfg.trace_launches, memory_order_relaxed);
}

/* Ends the current step at now and begins the next. Caller holds step_lock. final: the
 * process is exiting (the step is recorded as partial, and only if anything happened in it). */
static void step_close_locked(uint64_t now, bool final)
{
    uint64_t launches = launches_total();
    uint64_t syncs = atomic_exchange_explicit(&step_syncs, 0, memory_order_relaxed);
    uint64_t blocked = atomic_exchange_explicit(&step_blocked_ns, 0, memory_order_relaxed);
    bool was_active = atomic_load_explicit(&step_active, memory_order_relaxed);
    if (!final || syncs || launches - step_launch_base)
        step_event_push(&(struct step_event){.step = step_number, .start_ns = step_start_ns,
                                             .end_ns = now, .syncs = syncs, .blocked_ns = blocked,
                                             .launches = launches - step_launch_base,
                                             .active = was_active, .partial = final});
    if (was_active) {
        struct rep_step st = {
            .step = step_number,
            .wall_ns = now - step_start_ns,
            .syncs = syncs,
            .blocked_ns = blocked,
            .launches = launches - step_launch_base,
            .partial = final,
        };
        if (!final || st.syncs || st.launches)
            step_log_append(&st);
    }
    step_number++;
    atomic_store_explicit(&step_now, step_number, memory_order_relaxed);
    step_start_ns = now;
    step_launch_base = launches;
    set_step_active(!final && schedule_records(&agent_cfg.schedule, step_number));
    if (was_active && !final)
        flusher_kick(); /* an active step ended: its records to disk now */
}

void agent_step(bool explicit_mark)
{
    agent_init_once();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return;
    uint64_t now = agent_now_ns();
    tls.guard++;
    pthread_mutex_lock(&step_lock);
    if (explicit_mark)
        explicit_marks = true;
    if (explicit_mark || !explicit_marks)
        step_close_locked(now, false);
    pthread_mutex_unlock(&step_lock);
    tls.guard--;
    deliver_deferred_signal();
    dbg(2, "step %llu begins (%s)", (unsigned long long)step_number,
        explicit_mark ? "explicit mark" : "automatic");
}

SYNCSPY_EXPORT void syncspy_step(void)
{
    int saved = errno;
    agent_step(true);
    errno = saved;
}

void agent_steps_close_and_fill(struct rep_process *proc)
{
    pthread_mutex_lock(&step_lock);
    step_close_locked(agent_now_ns(), true);
    proc->steps = step_log;
    proc->nsteps = step_log_n;
    proc->steps_omitted = step_totals.omitted;
    proc->steps_seen = step_number; /* the final close advanced past the last step */
    proc->active_steps = step_totals.active;
    proc->syncs = step_totals.syncs;
    proc->blocked_ns = step_totals.blocked_ns;
    proc->launches = step_totals.launches;
    proc->wall_ns = step_totals.wall_ns;
    pthread_mutex_unlock(&step_lock);
}

uint64_t agent_unattributed_syncs(void)
{
    return atomic_load_explicit(&unattributed_syncs, memory_order_relaxed);
}

bool agent_cuda_seen(void)
{
    return atomic_load_explicit(&cuda_seen, memory_order_relaxed);
}

/* ---- recording (core.h) ------------------------------------------------------------------ */

static void python_notice(void)
{
    static _Atomic bool said;
    if (!atomic_exchange(&said, true))
        agent_log("%s", pyframes_status());
}

/* The calling thread's stack (native frames, with the Python frames merged in when the
 * process runs CPython) and its site. */
static struct site *capture_site(struct thread_state *ts, uint32_t api)
{
    uintptr_t native[NATIVE_STACK_MAX];
    int truncated;
    int depth = native_stack_capture(native, agent_cfg.max_depth, &truncated);
    uint64_t now = agent_now_ns();
    if (!pyframes_ready(now)) {
        if (pyframes_unsupported())
            python_notice();
        return sites_lookup(&ts->cache, api, native, (uint32_t)depth, truncated);
    }
    pyhook_poll(now);
    struct py_raw_frame py[PYFRAMES_MAX];
    int n_py = pyframes_capture(py, PYFRAMES_MAX);
    if (n_py == 0)
        return sites_lookup(&ts->cache, api, native, (uint32_t)depth, truncated);
    uintptr_t words[NATIVE_STACK_MAX + 2 * PYFRAMES_MAX];
    int n = pyframes_merge(native, depth, py, n_py, words, (int)ARRAY_SIZE(words));
    struct site *site = sites_lookup(&ts->cache, api, words, (uint32_t)n, truncated);
    if (site && atomic_load_explicit(&site->count, memory_order_relaxed) == 0)
        pynames_intern_stack(words, (uint32_t)n); /* names while the frames still run */
    return site;
}

/* A ring that just reached half full wakes the flusher (a write() to its pipe, once per half
 * ring), so a busy thread's ring is drained long before the 100 ms period ends. */
static inline void push_record(struct ring *r, const struct ring_rec *rec)
{
    if (ring_push(r, rec)) {
        uint64_t used = atomic_load_explicit(&r->head, memory_order_relaxed) -
                        atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (unlikely(used == (r->mask + 1) / 2))
            flusher_kick();
    }
}

bool agent_enter(void)
{
    if (unlikely(tls.guard))
        return false;
    int st = atomic_load_explicit(&agent_state, memory_order_relaxed);
    if (unlikely(st != STATE_RUNNING)) {
        if (st != STATE_STARTING)
            return false;
        agent_init_once();
        if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
            return false;
    }
    tls.guard++;
    tls.saved_errno = errno;
    return true;
}

bool agent_thread_busy(void)
{
    return tls.guard != 0;
}

int agent_enter_recording(void)
{
    /* A step the schedule does not record, on a thread the agent knows: the call is forwarded
     * with no clock read and no errno save; the guard stays raised around it so the CUPTI
     * callbacks (agent_thread_busy) still know the shim has this call. A thread's first CUDA
     * call takes the full path (it registers the thread and starts the flusher). */
    if (!atomic_load_explicit(&step_active, memory_order_relaxed) && likely(tls.ts != NULL) &&
        likely(tls.guard == 0)) {
        tls.guard++;
        return AGENT_HELD;
    }
    return agent_enter() ? AGENT_RECORD : AGENT_UNTOUCHED;
}

void agent_leave_held(void)
{
    tls.guard--;
    deliver_deferred_signal();
}

void agent_leave(void)
{
    tls.guard--;
    deliver_deferred_signal();
    errno = tls.saved_errno;
}

void agent_sync(const struct sync_call *call)
{
    struct thread_state *ts = thread_state();
    if (!atomic_load_explicit(&step_active, memory_order_relaxed))
        return; /* the schedule does not record this step */
    uint64_t blocked = call->end_ns > call->start_ns ? call->end_ns - call->start_ns : 0;
    atomic_fetch_add_explicit(&step_syncs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&step_blocked_ns, blocked, memory_order_relaxed);

    struct site *site = ts ? capture_site(ts, call->api) : NULL;
    if (site)
        site_add(site, blocked);
    else
        atomic_fetch_add_explicit(&unattributed_syncs, 1, memory_order_relaxed);
    if (unlikely(atomic_load_explicit(&cupti_gpu_tracking, memory_order_relaxed)) && site)
        cupti_gpu_note(site->id, call); /* SYNCSPY_GPU=1: the GPU idle time after it, later */
    struct ring_rec rec = {.t0 = call->start_ns, .t1 = call->end_ns, .stream = call->stream,
                           .arg = call->bytes, .step = atomic_load_explicit(&step_now, memory_order_relaxed),
                           .stack_id = site ? site->stack->id : 0, .tid = ts ? ts->tid : 0,
                           .api = (uint16_t)call->api, .kind = RING_SYNC, .dir = (uint8_t)call->dir};
    if (ts && ts->ring)
        push_record(ts->ring, &rec);
    else
        atomic_fetch_add_explicit(&records_without_ring, 1, memory_order_relaxed);
}

void agent_trace_launch(enum api_id api, const void *func, uintptr_t stream)
{
    struct thread_state *ts = tls.ts;
    if (!ts || tls.guard)
        return;
    struct ring_rec rec = {.t0 = agent_now_ns(), .stream = stream, .arg = (uintptr_t)func,
                           .step = atomic_load_explicit(&step_now, memory_order_relaxed),
                           .tid = ts->tid, .api = (uint16_t)api, .kind = RING_LAUNCH};
    if (ts->ring)
        push_record(ts->ring, &rec);
}

void agent_thread_ignore(void)
{
    tls.guard++;
}

/* Every 256th launch of a thread: a loop that launches but rarely syncs still gets its Python
 * step hook registered soon after torch.optim is imported. */
__attribute__((noinline, cold)) static void launch_tick(void)
{
    uint64_t now = agent_now_ns();
    if (pyframes_ready(now))
        pyhook_poll(now);
}

void agent_count_launch(void)
{
    struct thread_state *ts = tls.ts;
    if (unlikely(!ts) && !(ts = thread_state_slow()))
        return;
    /* Only this thread writes its counter: a relaxed load and store, no lock prefix. */
    uint64_t n = atomic_load_explicit(&ts->launches, memory_order_relaxed) + 1;
    atomic_store_explicit(&ts->launches, n, memory_order_relaxed);
    if (unlikely((n & 255) == 0))
        launch_tick();
}

/* ---- lifecycle --------------------------------------------------------------------------- */

void agent_finish_now(void)
{
    int expected = STATE_RUNNING;
    if (!atomic_compare_exchange_strong(&agent_state, &expected, STATE_FINISHING))
        return;
    int saved = errno;
    tls.guard++; /* CUDA calls made while writing the report are not ours to record */
    if (agent_cuda_seen())
        agent_write_outputs();
    tls.guard--;
    atomic_store(&agent_state, STATE_OFF);
    errno = saved;
}

static void agent_atexit(void)
{
    agent_finish_now();
}

/* Fork: locks are taken in the documented order before fork so the child gets them in a
 * consistent state; the child starts clean (its own pid, no steps, no sites, no threads). */
static void fork_prepare(void)
{
    pthread_mutex_lock(&step_lock);
    pthread_mutex_lock(&registry_lock);
    sites_atfork_prepare();
    pynames_atfork_prepare();
}

static void fork_parent(void)
{
    pynames_atfork_parent();
    sites_atfork_parent();
    pthread_mutex_unlock(&registry_lock);
    pthread_mutex_unlock(&step_lock);
}

static void fork_child(void)
{
    flusher_atfork_child();
    pyhook_atfork_child();
    pynames_atfork_child();
    sites_atfork_child();
    arena_release(&thread_arena);
    arena_release(&ring_arena);
    registry = free_states = NULL;
    retired_launches = 0;
    tls.ts = NULL;
    agent_tls_launches = NULL;
    pthread_setspecific(thread_key, NULL);
    if (step_log)
        munmap(step_log, STEPS_LISTED_MAX * sizeof(struct rep_step));
    step_log = NULL;
    step_log_n = 0;
    memset(&step_totals, 0, sizeof step_totals);
    step_number = 0;
    atomic_store(&step_now, 0);
    step_events_head = step_events_tail = step_events_lost = 0;
    step_start_ns = start_mono_ns = agent_now_ns();
    start_real_ns = real_now_ns();
    step_launch_base = 0;
    explicit_marks = false;
    atomic_store(&step_syncs, 0);
    atomic_store(&step_blocked_ns, 0);
    atomic_store(&unattributed_syncs, 0);
    set_step_active(schedule_records(&agent_cfg.schedule, 0));
    atomic_store(&cuda_seen, false);
    pthread_mutex_init(&registry_lock, NULL);
    pthread_mutex_init(&step_lock, NULL);
}

static const char *plain_getenv(const char *name)
{
    return getenv(name);
}

static void agent_init(void)
{
    config_parse(&agent_cfg, plain_getenv);
    agent_debug_level = agent_cfg.debug;
    native_stack_init();
    sites_init(16u << 20);
    ring_arena.cap_bytes = (size_t)agent_cfg.buffer_mb << 20;
    pthread_key_create(&thread_key, thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(agent_atexit);
    step_start_ns = start_mono_ns = agent_now_ns();
    start_real_ns = real_now_ns();
    set_step_active(schedule_records(&agent_cfg.schedule, 0));
    atomic_store(&agent_state, STATE_RUNNING);
    if (agent_cfg.cupti == CUPTI_EAGER)
        cupti_start(&agent_cfg); /* the user said every CUDA call bypasses the shim */
}

void agent_init_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (atomic_load_explicit(&agent_state, memory_order_acquire) == STATE_STARTING)
        pthread_once(&once, agent_init);
}

__attribute__((constructor)) static void agent_ctor(void)
{
    agent_init_once();
}
