/* agent/background/flusher.c: the flusher thread (see flusher.h). Runs on its own thread (and at exit on
 * the exiting one): it may allocate and do I/O, never on an application thread's CUDA call. It
 * drains and hands over; what the records look like is output/trace_writer.c's. One lock
 * (flush_lock) serializes drains; it comes first in the lock order (agent/process/lifecycle.c
 * fork_locks): the functions a drain calls take the others under it. */
#include "agent/background/flusher.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "agent/record/apis.h"
#include "agent/record/autograd.h"
#include "agent/background/control.h"
#include "agent/record/core.h"
#include "agent/background/stack_names.h"
#include "agent/record/sites.h"
#include "agent/step/steps.h"
#include "agent/record/threads.h"
#include "collectors/pyframes.h"
#include "collectors/symbolize.h"
#include "common/clock.h"
#include "common/log.h"
#include "output/backward.h"
#include "output/io.h"
#include "output/trace_writer.h"

#define FLUSH_PERIOD_NS 100000000ull /* at least every 100 ms */
/* Step ends closer than this to the last drain share the next one. Waking the thread at the
 * end of every 2 ms step (the seed-003 loop) was ~1,000 poll + 2,000 read/write calls and a
 * context switch per 1,000 steps, and a drain pass per step on 2 cores (docs/PERFORMANCE.md). */
#define STEP_KICK_GAP_NS 50000000ull
/* A step that made a site never seen before wakes the thread at its end regardless: the new
 * stack is named in that drain, and a backward-pass site's node type reaches the attribution
 * plan by the next step (50 ms of 9 ms steps was the whole of a short run without attribution).
 * New sites come at the start of a run; a program making new ones at every step gets this
 * early wake-up only so many times. */
#define NEW_SITE_KICKS_MAX 100
#define DRAIN_CHUNK 4096
#define OWNERS_MAX 64 /* new threads named per drain pass; the others at the next */

static struct {
    pthread_mutex_t flush_lock;
    int wake[2]; /* non-blocking pipe: a byte wakes the thread (async-signal-safe) */
    int done[2]; /* the thread answers a finish request here */
    _Atomic bool stop;
    _Atomic bool finish_requested;
    void (*on_finish_request)(void);
    pthread_t thread;
    _Atomic bool thread_running; /* read by program threads (flusher_kick, flusher_call) */
    _Atomic bool started;
    _Atomic uint64_t step_kick_after_ns; /* no step-end wake-up before this */
    _Atomic size_t sites_at_kick;        /* sites_count() at the last step-end wake-up */
    _Atomic uint32_t new_site_kicks;     /* early wake-ups so far, at most NEW_SITE_KICKS_MAX */
    int fd;
    struct trace_writer *tw;
    bool error_said;
    int lost_errno; /* the trace's first failed write (kept after the writer is closed) */
    struct symbolizer *sym;
    struct tw_event *scratch;
    size_t nscratch, capscratch;
} fl = {
    .flush_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = {-1, -1},
    .done = {-1, -1},
    .fd = -1,
};

/* ---- what the encoder asks for: names -------------------------------------------------------- */

static const char *name_api(void *ctx, uint32_t api)
{
    (void)ctx;
    return api_name(api);
}

static const char *name_kernel(void *ctx, uint64_t func)
{
    (void)ctx;
    /* The host function a kernel is launched by is an ELF symbol (its device stub); CUDA 13's
     * cudaKernel_t handles are not, and stay unnamed. No CUDA call is made from here. */
    struct sym_info info = {0};
    if (fl.sym && symbolizer_resolve(fl.sym, (uintptr_t)func, &info) == 0)
        return info.function;
    return NULL;
}

static void name_frame(void *ctx, struct tw_frame_key key, struct rep_frame *out)
{
    (void)ctx;
    stack_names_resolve(key, fl.sym, out);
}

static const struct tw_namer namer = {NULL, name_api, name_kernel, name_frame};

/* ---- a program thread's call (flusher_call) ------------------------------------------------ */

enum { CALL_IDLE, CALL_PENDING, CALL_RUNNING, CALL_DONE };

static struct {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int state;
    void (*fn)(struct symbolizer *, void *);
    void *ctx;
} call = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* On the flusher thread: the pending call, if any. */
static void serve_call(void)
{
    pthread_mutex_lock(&call.lock);
    if (call.state != CALL_PENDING) {
        pthread_mutex_unlock(&call.lock);
        return;
    }
    call.state = CALL_RUNNING;
    pthread_mutex_unlock(&call.lock);
    pthread_mutex_lock(&fl.flush_lock);
    if (!fl.sym)
        fl.sym = symbolizer_new();
    call.fn(fl.sym, call.ctx);
    pthread_mutex_unlock(&fl.flush_lock);
    pthread_mutex_lock(&call.lock);
    call.state = CALL_DONE;
    pthread_cond_broadcast(&call.done);
    pthread_mutex_unlock(&call.lock);
}

bool flusher_call(void (*fn)(struct symbolizer *sym, void *ctx), void *ctx, int timeout_ms)
{
    if (!fl.thread_running)
        return false;
    pthread_mutex_lock(&call.lock);
    if (call.state != CALL_IDLE) {
        pthread_mutex_unlock(&call.lock);
        return false;
    }
    call.fn = fn;
    call.ctx = ctx;
    call.state = CALL_PENDING;
    flusher_kick();
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (call.state == CALL_PENDING || call.state == CALL_RUNNING) {
        if (call.state == CALL_RUNNING)
            pthread_cond_wait(&call.done, &call.lock);
        else if (pthread_cond_timedwait(&call.done, &call.lock, &until) == ETIMEDOUT &&
                 call.state == CALL_PENDING)
            break; /* not begun (the thread is stuck in a write, or stopping): never run */
    }
    bool ran = call.state == CALL_DONE;
    call.state = CALL_IDLE;
    pthread_mutex_unlock(&call.lock);
    return ran;
}

/* ---- draining -------------------------------------------------------------------------------- */

struct drain_ctx {
    uint64_t dropped_syncs, dropped_launches;
    struct {
        uint32_t tid;
        char name[16];
    } owners[OWNERS_MAX];
    unsigned nowners;
};

/* Under the registry lock: copy records out, nothing else. */
static void drain_one(struct ring *ring, uint32_t tid, const char *name, void *arg)
{
    struct drain_ctx *ctx = arg;
    ctx->dropped_syncs += atomic_load_explicit(&ring->dropped_syncs, memory_order_relaxed);
    ctx->dropped_launches += atomic_load_explicit(&ring->dropped_launches, memory_order_relaxed);
    if (ctx->nowners < OWNERS_MAX && !tw_thread_written(fl.tw, tid)) {
        ctx->owners[ctx->nowners].tid = tid;
        snprintf(ctx->owners[ctx->nowners].name, sizeof ctx->owners[0].name, "%s", name);
        ctx->nowners++;
    }
    while (!ring_empty(ring)) {
        if (fl.nscratch == fl.capscratch) {
            size_t cap = fl.capscratch ? fl.capscratch * 2 : DRAIN_CHUNK;
            struct tw_event *p = realloc(fl.scratch, cap * sizeof *p);
            if (!p)
                return; /* left in the ring for the next drain */
            fl.scratch = p;
            fl.capscratch = cap;
        }
        fl.nscratch +=
            ring_drain(ring, fl.scratch + fl.nscratch, (uint32_t)(fl.capscratch - fl.nscratch));
    }
}

/* A new stack that runs an autograd node's backward: its node type is one to attribute
 * (agent/record/autograd.h). Only in Python processes, where torch's nodes can run. */
static void look_for_backward(const struct site_info *site)
{
    if (!pyframes_ready(agent_now_ns()))
        return;
    struct rep_frame frames[TRACE_MAX_FRAMES];
    uint32_t n = stack_names_frames(site->words, site->depth, fl.sym, frames, TRACE_MAX_FRAMES);
    char node[96];
    if (backward_node_of(frames, n, node, sizeof node, NULL))
        autograd_seen(node);
}

/* The stacks of every site that exists now and is not in the file yet; true when any. */
static bool hand_new_stacks(const struct site_info *sites, size_t n)
{
    bool wrote = false;
    for (size_t i = 0; i < n; i++) {
        if (tw_stack_written(fl.tw, sites[i].stack_id))
            continue;
        look_for_backward(&sites[i]);
        struct tw_frame_key keys[TRACE_MAX_FRAMES];
        uint32_t nkeys = stack_names_keys(sites[i].words, sites[i].depth, keys, TRACE_MAX_FRAMES);
        tw_stack(fl.tw, sites[i].stack_id, keys, nkeys);
        wrote = true;
    }
    return wrote;
}

static void say_io_error(void)
{
    if (fl.tw && tw_error(fl.tw) && !fl.error_said) {
        fl.error_said = true;
        fl.lost_errno = tw_error(fl.tw);
        tw_mark_lost(fl.tw); /* the file says it lost data, whatever its cut tail holds */
        agent_output_error(TRACE_FILE_NAME, tw_error(fl.tw));
    }
}

/* One drain of everything queued, handed to the encoder. Caller holds flush_lock. */
static void flush_locked(void)
{
    if (!fl.tw)
        return;
    struct drain_ctx ctx = {0};
    fl.nscratch = 0;
    size_t nsites = 0;
    struct site_info *sites = NULL;
    /* Symbolizing a new stack can take tens of ms (a module's first symbols): the rings are
     * drained again after it, so they never wait for it. The last step of the loop always
     * writes the stacks of every site that exists after the last drain. */
    for (int round = 0;; round++) {
        struct drain_ctx pass = {0};
        threads_visit_rings(drain_one, &pass);
        ctx.dropped_syncs = pass.dropped_syncs; /* cumulative: the latest read */
        ctx.dropped_launches = pass.dropped_launches;
        for (unsigned i = 0; i < pass.nowners; i++)
            tw_thread(fl.tw, pass.owners[i].tid, pass.owners[i].name);
        /* Every site that exists now: its stack first (records refer to it), then its totals. */
        free(sites);
        size_t cap = sites_count() + 64;
        sites = malloc(cap * sizeof *sites);
        nsites = sites ? sites_snapshot(sites, cap) : 0;
        if (!hand_new_stacks(sites, nsites) || round == 3)
            break;
    }
    tw_name_frames(fl.tw); /* generated code whose user line came since */
    tw_events(fl.tw, fl.scratch, fl.nscratch);

    struct tw_step steps[256];
    size_t n;
    while ((n = steps_take_events(steps, 256)) > 0)
        for (size_t i = 0; i < n; i++)
            tw_step(fl.tw, &steps[i]);
    size_t nthreads; /* every thread's (a snapshot of 64 lost the others' without a word) */
    struct thread_info *threads = threads_snapshot(&nthreads);
    /* past half of SYNCSPY_TRACE_MB the totals are rewritten at doubling intervals */
    bool totals = tw_totals_due(fl.tw, clock_mono_ns(), nsites, nthreads);
    if (totals) {
        struct steps_lost lost = steps_events_lost();
        tw_steps_lost(fl.tw, &(struct tw_steps_lost){lost.records, lost.active, lost.syncs,
                                                     lost.blocked_ns, lost.launches, lost.wall_ns});
    } else {
        nsites = nthreads = 0;
    }
    for (size_t i = 0; i < nsites; i++)
        tw_site(fl.tw, &(struct tw_site){.site_id = sites[i].id,
                                         .stack_id = sites[i].stack_id,
                                         .api = sites[i].api,
                                         .threads = sites[i].threads,
                                         .max_ns = sites[i].max_ns,
                                         .phase = sites[i].phase,
                                         .pinned = sites[i].pinned});
    free(sites);
    for (size_t i = 0; i < nthreads; i++)
        tw_thread_totals(
            fl.tw, &(struct tw_thread_totals){.tid = threads[i].tid, .phase = threads[i].phase});
    free(threads);
    if (totals)
        tw_drops(fl.tw, ctx.dropped_syncs + agent_records_without_ring(), ctx.dropped_launches);
    tw_flush(fl.tw);
    say_io_error();
}

static void flush_for_call(struct symbolizer *sym, void *ctx)
{
    (void)sym;
    (void)ctx;
    flush_locked();
}

bool flusher_flush_now(int timeout_ms)
{
    return flusher_call(flush_for_call, NULL, timeout_ms);
}

/* ---- the thread ------------------------------------------------------------------------------ */

static void *flusher_main(void *arg)
{
    (void)arg;
    agent_thread_is_agents(); /* any CUDA call made from this thread is not the program's */
    prctl(PR_SET_NAME, "syncspy-flush", 0, 0, 0);
    for (;;) {
        struct pollfd p = {.fd = fl.wake[0], .events = POLLIN};
        if (poll(&p, 1, (int)(FLUSH_PERIOD_NS / 1000000)) > 0) {
            char buf[64];
            while (read(fl.wake[0], buf, sizeof buf) > 0)
                ;
        }
        if (atomic_exchange(&fl.finish_requested, false)) {
            /* A fatal signal: the exit path now, from this thread (the signalled one may hold
             * any lock); its handler waits for the answer, then the signal takes its course. */
            fl.on_finish_request();
            char c = 1;
            while (write(fl.done[1], &c, 1) < 0 && errno == EINTR)
                ;
            return NULL;
        }
        serve_call();
        control_poll(agent_now_ns()); /* `syncspy start/stop` (agent/background/control.h) */
        bool stop = atomic_load(&fl.stop);
        atomic_store_explicit(&fl.step_kick_after_ns, agent_now_ns() + STEP_KICK_GAP_NS,
                              memory_order_relaxed);
        pthread_mutex_lock(&fl.flush_lock);
        flush_locked();
        pthread_mutex_unlock(&fl.flush_lock);
        if (stop)
            return NULL;
        /* No pyhook_poll from here: this thread may run while the interpreter is being
         * finalized, when Py_AddPendingCall would touch freed state. The program's own threads,
         * inside a CUDA call, keep their interpreter alive. */
    }
}

/* Creates trace.bin in the folder open as dirfd (named dir) with O_EXCL|O_NOFOLLOW, relative to
 * dirfd (a planted link, of the file or of the folder, is never followed; a file left by an
 * earlier process with our pid is replaced). */
static int open_trace_file(int dirfd, const char *dir)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, TRACE_FILE_NAME);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = io_openat(dirfd, TRACE_FILE_NAME,
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND,
                           OUTPUT_FILE_MODE);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            break;
        unlinkat(dirfd, TRACE_FILE_NAME, 0);
    }
    agent_output_error(path, errno);
    return -1;
}

void flusher_start(int dirfd, const char *dir, const struct trace_file_header *header,
                   uint64_t bound_bytes, void (*on_finish_request)(void))
{
    bool was = atomic_exchange(&fl.started, true);
    if (was)
        return;
    fl.on_finish_request = on_finish_request;
    /* Without a trace file (no folder, a full disk) the thread still runs: it writes the exit
     * report for a fatal signal, whose handler cannot. */
    fl.fd = dir ? open_trace_file(dirfd, dir) : -1;
    if (fl.fd >= 0) {
        fl.tw = tw_open(fl.fd, header, &namer);
        if (fl.tw)
            tw_set_bound(fl.tw, bound_bytes);
        fl.sym = symbolizer_new();
        say_io_error();
    }

    if (pipe2(fl.wake, O_NONBLOCK | O_CLOEXEC) != 0 || pipe2(fl.done, O_CLOEXEC) != 0) {
        agent_log("cannot create the flusher's pipes: %s; the trace is written at exit only",
                  strerror(errno));
        return;
    }
    /* The thread starts with every signal blocked: the program's handlers never run on it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    fl.thread_running = pthread_create(&fl.thread, NULL, flusher_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!fl.thread_running)
        agent_log("cannot start the flusher thread; the trace is written at exit only");
}

void flusher_kick(void)
{
    if (!fl.thread_running)
        return;
    /* Never blocks: a full pipe already holds a wakeup. */
    char c = 1;
    ssize_t n = write(fl.wake[1], &c, 1);
    (void)n;
}

/* Whether sites appeared since the last step-end wake-up and an early one is still allowed. */
static bool new_sites_since_kick(void)
{
    size_t n = sites_count();
    if (n == atomic_load_explicit(&fl.sites_at_kick, memory_order_relaxed) ||
        atomic_load_explicit(&fl.new_site_kicks, memory_order_relaxed) >= NEW_SITE_KICKS_MAX)
        return false;
    atomic_fetch_add_explicit(&fl.new_site_kicks, 1, memory_order_relaxed);
    return true;
}

void flusher_step_ended(uint64_t now_ns)
{
    if (now_ns < atomic_load_explicit(&fl.step_kick_after_ns, memory_order_relaxed) &&
        !new_sites_since_kick())
        return;
    atomic_store_explicit(&fl.sites_at_kick, sites_count(), memory_order_relaxed);
    atomic_store_explicit(&fl.step_kick_after_ns, now_ns + STEP_KICK_GAP_NS, memory_order_relaxed);
    flusher_kick();
}

static bool flusher_wait_finished(int timeout_ms);

bool flusher_request_finish(int timeout_ms)
{
    if (!fl.thread_running)
        return false;
    atomic_store(&fl.finish_requested, true);
    flusher_kick();
    return flusher_wait_finished(timeout_ms);
}

/* True once the thread has answered a finish request, at most timeout_ms. Async-signal-safe. */
static bool flusher_wait_finished(int timeout_ms)
{
    if (!fl.thread_running)
        return false;
    /* the answer's byte stays in the pipe: every waiter, and any later, sees it readable */
    struct pollfd p = {.fd = fl.done[0], .events = POLLIN};
    int n;
    do
        n = poll(&p, 1, timeout_ms);
    while (n < 0 && errno == EINTR);
    return n > 0;
}

bool flusher_running(void)
{
    return fl.thread_running;
}

void flusher_stop(void)
{
    if (!fl.thread_running)
        return;
    atomic_store(&fl.stop, true);
    flusher_kick();
    /* A flusher stuck in write() (a hung file system) must not hang the program's exit. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    if (pthread_timedjoin_np(fl.thread, NULL, &until) != 0)
        agent_log("the flusher thread did not stop within 5 s; the trace may miss its tail");
    fl.thread_running = false;
}

int flusher_trace_lost(void)
{
    return fl.lost_errno;
}

void flusher_close(uint64_t unattributed_syncs, uint64_t steps_seen)
{
    pthread_mutex_lock(&fl.flush_lock);
    if (fl.tw) {
        tw_finishing(fl.tw);
        flush_locked();
        tw_end(fl.tw, clock_mono_ns(), unattributed_syncs, steps_seen);
        tw_flush(fl.tw);
        say_io_error();
        tw_close(fl.tw);
        fl.tw = NULL;
    }
    if (fl.fd >= 0)
        close(fl.fd);
    fl.fd = -1;
    pthread_mutex_unlock(&fl.flush_lock);
}

void flusher_note_modules(void)
{
    pthread_mutex_lock(&fl.flush_lock);
    if (fl.sym)
        symbolizer_refresh(fl.sym);
    pthread_mutex_unlock(&fl.flush_lock);
}

struct symbolizer *flusher_symbolizer(void)
{
    return fl.sym;
}

pthread_mutex_t *flusher_lock(void)
{
    return &fl.flush_lock;
}

pthread_mutex_t *flusher_call_lock(void)
{
    return &call.lock;
}

/* The flusher's state (trace writer, symbolizer, scratch) is changed under flush_lock by a
 * thread that fork does not copy. Where the fork handlers took that lock (whole), the child gets
 * it whole: the trace writer is then discarded and the symbolizer, with the modules it has read,
 * kept. Otherwise the child leaves all three as they are, possibly half changed, and starts its
 * own (the pages stay shared with the parent's until written). */
void flusher_atfork_child(bool whole)
{
    /* The thread is the parent's; so are the file and the ids written into it. */
    if (fl.fd >= 0)
        close(fl.fd);
    fl.fd = -1;
    if (whole) {
        tw_discard(fl.tw); /* its buffer holds the parent's bytes: never written twice */
    } else {
        fl.sym = NULL; /* left as the parent's thread had them: not touched again */
        fl.scratch = NULL;
        fl.nscratch = fl.capscratch = 0;
    }
    fl.tw = NULL;
    fl.thread_running = false;
    atomic_store(&fl.stop, false);
    atomic_store(&fl.finish_requested, false);
    for (int i = 0; i < 2; i++) {
        if (fl.wake[i] >= 0)
            close(fl.wake[i]);
        if (fl.done[i] >= 0)
            close(fl.done[i]);
        fl.wake[i] = fl.done[i] = -1;
    }
    fl.error_said = false;
    fl.lost_errno = 0;
    atomic_store(&fl.started, false);
    /* call.lock was held across fork() and released; its waiters were other threads, gone */
    pthread_cond_init(&call.done, NULL);
    call.state = CALL_IDLE;
}
