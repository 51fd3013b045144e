/* agent/flusher.c: the flusher thread and the trace file (see flusher.h). Runs on its own thread
 * (and at exit on the exiting one): it may allocate and do I/O, never on an application thread's
 * CUDA call. One lock (flush_lock) serializes drains; it is taken before no other agent lock but
 * the registry and step locks inside the agent's visit functions. */
#include "agent/flusher.h"

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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HASH_NONFATAL_OOM 1 /* never exit() inside the host process: a failed add is skipped */
#include <uthash.h>

#include "agent/apis.h"
#include "agent/internal.h"
#include "common/log.h"
#include "agent/pynames.h"
#include "agent/ring.h"
#include "agent/sites.h"
#include "collectors/pyframes.h"
#include "collectors/symbolize.h"
#include "output/io.h"
#include "output/trace_writer.h"

#define FLUSH_PERIOD_NS 100000000ull /* at least every 100 ms */
#define DRAIN_CHUNK 4096
#define API_CACHE 256
#define KCACHE 1024

struct id_map { /* u64 key -> u32 id */
    UT_hash_handle hh;
    uint64_t key[2];
    uint32_t id;
};

static struct {
    pthread_mutex_t flush_lock;
    int wake[2];              /* non-blocking pipe: a byte wakes the thread (async-signal-safe) */
    int done[2];              /* the thread answers a finish request here */
    _Atomic bool stop;
    _Atomic int finish_signal; /* a fatal signal asks for the exit report (its number) */
    pthread_t thread;
    bool thread_running;
    _Atomic bool started;
    int fd;
    struct trace_writer *tw;
    bool error_said;
    struct symbolizer *sym;
    struct id_map *frames;   /* (pc, 0) or (code, lasti | 1<<63) -> frame id */
    struct id_map *kernels;  /* (func, 0) -> string id */
    struct id_map *threads;  /* (tid, 0) -> 1 */
    uint32_t next_frame;
    uint64_t dropped_syncs, dropped_launches; /* last written */
    struct ring_rec *scratch;
    size_t nscratch, capscratch;
    /* Per-record lookups answered without hashing: the string id of each api id (0: not yet),
     * and a direct-mapped cache of kernel host function -> name string id. */
    uint32_t api_ids[API_CACHE];
    struct {
        uint64_t func;
        uint32_t id;
    } kcache[KCACHE];
} fl = {
    .flush_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = {-1, -1},
    .done = {-1, -1},
    .fd = -1,
    .next_frame = 1,
};

static uint32_t *map_find(struct id_map *m, uint64_t a, uint64_t b)
{
    uint64_t key[2] = {a, b};
    struct id_map *e;
    HASH_FIND(hh, m, key, sizeof key, e);
    return e ? &e->id : NULL;
}

static void map_put(struct id_map **m, uint64_t a, uint64_t b, uint32_t id)
{
    struct id_map *e = calloc(1, sizeof *e);
    if (!e)
        return;
    e->key[0] = a;
    e->key[1] = b;
    e->id = id;
    HASH_ADD(hh, *m, key, sizeof e->key, e);
}

static void map_free(struct id_map **m)
{
    struct id_map *e, *tmp;
    HASH_ITER(hh, *m, e, tmp) {
        HASH_DEL(*m, e);
        free(e);
    }
}

/* ---- writing ---------------------------------------------------------------------------- */

static uint32_t frame_id(const struct stack_frame *f)
{
    uint64_t a = f->python ? f->code : f->pc, b = f->python ? (f->lasti | (1ull << 63)) : 0;
    uint32_t *known = map_find(fl.frames, a, b);
    if (known)
        return *known;
    struct trace_frame rec = {.id = fl.next_frame++};
    if (f->python) {
        const struct pyname *n = pynames_find(f->code, f->lasti);
        rec.kind = TRACE_FRAME_PYTHON;
        rec.function = tw_string(fl.tw, n ? n->function : "?");
        rec.file = tw_string(fl.tw, n ? n->file : "?");
        rec.line = n ? n->line : 0;
    } else {
        struct sym_info info = {0};
        if (fl.sym)
            symbolizer_resolve(fl.sym, f->pc - 1, &info); /* the call, not the return address */
        rec.kind = TRACE_FRAME_NATIVE;
        rec.function = tw_string(fl.tw, info.function);
        rec.module = tw_string(fl.tw, info.module);
        rec.file = tw_string(fl.tw, info.file);
        rec.line = info.line;
        rec.offset = fl.sym ? info.offset : f->pc - 1;
    }
    tw_record(fl.tw, TREC_FRAME, &rec, sizeof rec, NULL, 0);
    map_put(&fl.frames, a, b, rec.id);
    return rec.id;
}

static void write_stack(struct stack_rec *st)
{
    struct stack_frame frames[TRACE_MAX_FRAMES];
    uint32_t ids[TRACE_MAX_FRAMES];
    uint32_t n = pyframes_decode(st->pcs, st->depth, frames, TRACE_MAX_FRAMES);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = frame_id(&frames[i]);
    struct trace_stack rec = {.id = st->id, .nframes = n};
    tw_record(fl.tw, TREC_STACK, &rec, sizeof rec, ids, n * sizeof ids[0]);
    st->written = true;
}

static uint32_t api_string(uint32_t api)
{
    if (api >= API_CACHE)
        return tw_string(fl.tw, api_name(api));
    if (!fl.api_ids[api])
        fl.api_ids[api] = tw_string(fl.tw, api_name(api));
    return fl.api_ids[api];
}

static uint32_t kernel_name_slow(uint64_t func);

static uint32_t kernel_name(uint64_t func)
{
    size_t slot = (size_t)((func >> 4) ^ (func >> 14)) & (KCACHE - 1);
    if (fl.kcache[slot].func == func && func)
        return fl.kcache[slot].id;
    uint32_t id = kernel_name_slow(func);
    fl.kcache[slot].func = func;
    fl.kcache[slot].id = id;
    return id;
}

static uint32_t kernel_name_slow(uint64_t func)
{
    uint32_t *known = map_find(fl.kernels, func, 0);
    if (known)
        return *known;
    /* The host function a kernel is launched by is an ELF symbol (its device stub); CUDA 13's
     * cudaKernel_t handles are not, and stay unnamed. No CUDA call is made from here. */
    struct sym_info info = {0};
    uint32_t id = 0;
    if (fl.sym && symbolizer_resolve(fl.sym, (uintptr_t)func, &info) == 0 && info.function)
        id = tw_string(fl.tw, info.function);
    map_put(&fl.kernels, func, 0, id);
    return id;
}

static void write_event(const struct ring_rec *r)
{
    uint32_t api = api_string((uint32_t)r->api);
    if (r->kind == RING_SYNC) {
        struct trace_sync rec = {.start_ns = r->t0, .end_ns = r->t1, .stream = r->stream,
                                 .bytes = r->arg, .step = r->step, .tid = r->tid,
                                 .stack_id = r->stack_id, .dir = r->dir, .api_name = api};
        tw_record(fl.tw, TREC_SYNC, &rec, sizeof rec, NULL, 0);
    } else {
        struct trace_launch rec = {.time_ns = r->t0, .stream = r->stream, .step = r->step,
                                   .tid = r->tid, .api_name = api, .kernel_name = kernel_name(r->arg)};
        tw_record(fl.tw, TREC_LAUNCH, &rec, sizeof rec, NULL, 0);
    }
}

struct drain_ctx {
    uint64_t dropped_syncs, dropped_launches;
    struct {
        uint32_t tid;
        char name[16];
    } owners[64];
    unsigned nowners;
};

/* Under the registry lock: copy records out, nothing else. */
static void drain_one(struct ring *ring, uint32_t tid, const char *name, void *arg)
{
    struct drain_ctx *ctx = arg;
    ctx->dropped_syncs += atomic_load_explicit(&ring->dropped_syncs, memory_order_relaxed);
    ctx->dropped_launches += atomic_load_explicit(&ring->dropped_launches, memory_order_relaxed);
    if (ctx->nowners < 64 && !map_find(fl.threads, tid, 0)) {
        ctx->owners[ctx->nowners].tid = tid;
        snprintf(ctx->owners[ctx->nowners].name, sizeof ctx->owners[0].name, "%s", name);
        ctx->nowners++;
    }
    while (!ring_empty(ring)) {
        if (fl.nscratch == fl.capscratch) {
            size_t cap = fl.capscratch ? fl.capscratch * 2 : DRAIN_CHUNK;
            struct ring_rec *p = realloc(fl.scratch, cap * sizeof *p);
            if (!p)
                return; /* left in the ring for the next drain */
            fl.scratch = p;
            fl.capscratch = cap;
        }
        fl.nscratch += ring_drain(ring, fl.scratch + fl.nscratch, (uint32_t)(fl.capscratch - fl.nscratch));
    }
}

static void say_io_error(void)
{
    if (fl.tw && tw_error(fl.tw) && !fl.error_said) {
        fl.error_said = true;
        agent_output_error(TRACE_FILE_NAME, tw_error(fl.tw));
    }
}

/* One drain of everything queued. Caller holds flush_lock. */
static void flush_locked(void)
{
    if (!fl.tw)
        return;
    struct drain_ctx ctx = {0};
    fl.nscratch = 0;
    size_t nsites = 0;
    struct site **sites = NULL;
    /* Symbolizing a new stack can take tens of ms (a module's first symbols): the rings are
     * drained again after it, so they never wait for it. The last step of the loop always
     * writes the stacks of every site that exists after the last drain. */
    for (int round = 0;; round++) {
        struct drain_ctx pass = {0};
        agent_visit_rings(drain_one, &pass);
        ctx.dropped_syncs = pass.dropped_syncs; /* cumulative: the latest read */
        ctx.dropped_launches = pass.dropped_launches;
        for (unsigned i = 0; i < pass.nowners; i++) {
            if (map_find(fl.threads, pass.owners[i].tid, 0))
                continue;
            struct trace_thread rec = {.tid = pass.owners[i].tid, .name = tw_string(fl.tw, pass.owners[i].name)};
            tw_record(fl.tw, TREC_THREAD, &rec, sizeof rec, NULL, 0);
            map_put(&fl.threads, pass.owners[i].tid, 0, 1);
        }
        /* Every site that exists now: its stack first (records refer to it), then its totals. */
        free(sites);
        size_t cap = sites_count() + 64;
        sites = malloc(cap * sizeof *sites);
        nsites = sites ? sites_snapshot(sites, cap) : 0;
        bool wrote = false;
        for (size_t i = 0; i < nsites; i++)
            if (!sites[i]->stack->written) {
                write_stack(sites[i]->stack);
                wrote = true;
            }
        if (!wrote || round == 3)
            break;
    }
    for (size_t i = 0; i < fl.nscratch; i++)
        write_event(&fl.scratch[i]);

    struct step_event steps[256];
    size_t n;
    while ((n = agent_take_step_events(steps, 256)) > 0)
        for (size_t i = 0; i < n; i++) {
            struct trace_step rec = {.step = steps[i].step, .start_ns = steps[i].start_ns,
                                     .end_ns = steps[i].end_ns, .syncs = steps[i].syncs,
                                     .blocked_ns = steps[i].blocked_ns, .launches = steps[i].launches,
                                     .active = steps[i].active, .partial = steps[i].partial};
            tw_record(fl.tw, TREC_STEP, &rec, sizeof rec, NULL, 0);
        }

    for (size_t i = 0; i < nsites; i++) {
        struct site *s = sites[i];
        uint64_t count = atomic_load_explicit(&s->count, memory_order_relaxed);
        if (count == s->flushed_count)
            continue;
        struct trace_site_totals rec = {
            .site_id = s->id, .stack_id = s->stack->id,
            .api_name = tw_string(fl.tw, api_name((uint32_t)s->key.api)),
            .count = count,
            .blocked_ns = atomic_load_explicit(&s->blocked_ns, memory_order_relaxed),
            .max_ns = atomic_load_explicit(&s->max_ns, memory_order_relaxed)};
        tw_record(fl.tw, TREC_SITE_TOTALS, &rec, sizeof rec, NULL, 0);
        s->flushed_count = count;
    }
    free(sites);

    uint64_t lost = agent_records_without_ring();
    if (ctx.dropped_syncs + lost != fl.dropped_syncs || ctx.dropped_launches != fl.dropped_launches) {
        struct trace_drops rec = {.tid = 0, .syncs_dropped = ctx.dropped_syncs + lost,
                                  .launches_dropped = ctx.dropped_launches};
        tw_record(fl.tw, TREC_DROPS, &rec, sizeof rec, NULL, 0);
        fl.dropped_syncs = ctx.dropped_syncs + lost;
        fl.dropped_launches = ctx.dropped_launches;
    }
    tw_flush(fl.tw);
    say_io_error();
}

static void *flusher_main(void *arg)
{
    (void)arg;
    agent_thread_ignore(); /* any CUDA call made from this thread is not the program's */
    prctl(PR_SET_NAME, "syncspy-flush", 0, 0, 0);
    for (;;) {
        struct pollfd p = {.fd = fl.wake[0], .events = POLLIN};
        if (poll(&p, 1, (int)(FLUSH_PERIOD_NS / 1000000)) > 0) {
            char buf[64];
            while (read(fl.wake[0], buf, sizeof buf) > 0)
                ;
        }
        int sig = atomic_exchange(&fl.finish_signal, 0);
        if (sig) {
            /* A fatal signal: the exit report now, from this thread (the signalled one may hold
             * any lock); its handler waits for the answer, then the signal takes its course. */
            agent_finish_now();
            char c = 1;
            while (write(fl.done[1], &c, 1) < 0 && errno == EINTR)
                ;
            return NULL;
        }
        bool stop = atomic_load(&fl.stop);
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

/* Creates <process folder>/trace.bin with O_EXCL|O_NOFOLLOW (a planted link is never
 * followed; a file left by an earlier process with our pid is replaced). */
static int open_trace_file(void)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if (agent_process_dir(dir, sizeof dir) != 0) {
        agent_output_error(dir, errno);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, TRACE_FILE_NAME);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = io_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            break;
        unlink(path);
    }
    agent_output_error(path, errno);
    return -1;
}

void flusher_start(void)
{
    bool was = atomic_exchange(&fl.started, true);
    if (was)
        return;
    fl.fd = open_trace_file();
    if (fl.fd < 0)
        return;
    struct trace_file_header h = {.magic = TRACE_MAGIC,
                                  .version_major = TRACE_VERSION_MAJOR,
                                  .version_minor = TRACE_VERSION_MINOR,
                                  .header_bytes = sizeof h,
                                  .features = TRACE_FEATURE_PYTHON |
                                              (agent_cfg.trace_launches ? TRACE_FEATURE_LAUNCHES : 0),
                                  .pid = (int32_t)getpid(),
                                  .rank = agent_cfg.rank,
                                  .start_mono_ns = agent_start_mono_ns(),
                                  .start_real_ns = agent_start_real_ns()};
    schedule_describe(&agent_cfg.schedule, h.schedule, sizeof h.schedule);
    fl.tw = tw_open(fl.fd, &h);
    fl.sym = symbolizer_new();
    if (!fl.tw)
        return;
    say_io_error();

    if (pipe2(fl.wake, O_NONBLOCK | O_CLOEXEC) != 0 || pipe2(fl.done, O_CLOEXEC) != 0) {
        agent_log("cannot create the flusher's pipes: %s; the trace is written at exit only", strerror(errno));
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

bool flusher_finish_from_signal(int sig, int timeout_ms)
{
    if (!fl.thread_running)
        return false;
    atomic_store(&fl.finish_signal, sig);
    flusher_kick();
    struct pollfd p = {.fd = fl.done[0], .events = POLLIN};
    int n;
    do
        n = poll(&p, 1, timeout_ms);
    while (n < 0 && errno == EINTR);
    return n > 0;
}

static void stop_thread(void)
{
    if (!fl.thread_running || pthread_equal(pthread_self(), fl.thread))
        return; /* the thread itself runs the exit report for a fatal signal */
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

void flusher_finish(uint64_t unattributed_syncs)
{
    stop_thread();
    pthread_mutex_lock(&fl.flush_lock);
    if (fl.tw) {
        flush_locked();
        struct trace_end rec = {.end_mono_ns = 0, .unattributed_syncs = unattributed_syncs};
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        rec.end_mono_ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
        tw_record(fl.tw, TREC_END, &rec, sizeof rec, NULL, 0);
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

void flusher_atfork_child(void)
{
    /* The thread is the parent's; so are the file and the ids written into it. */
    if (fl.fd >= 0)
        close(fl.fd);
    fl.fd = -1;
    tw_discard(fl.tw); /* its buffer holds the parent's bytes: never written twice */
    fl.tw = NULL;
    map_free(&fl.frames);
    map_free(&fl.kernels);
    map_free(&fl.threads);
    memset(fl.api_ids, 0, sizeof fl.api_ids);
    memset(fl.kcache, 0, sizeof fl.kcache);
    fl.next_frame = 1;
    fl.dropped_syncs = fl.dropped_launches = 0;
    fl.thread_running = false;
    atomic_store(&fl.stop, false);
    atomic_store(&fl.finish_signal, 0);
    for (int i = 0; i < 2; i++) {
        if (fl.wake[i] >= 0)
            close(fl.wake[i]);
        if (fl.done[i] >= 0)
            close(fl.done[i]);
        fl.wake[i] = fl.done[i] = -1;
    }
    fl.error_said = false;
    atomic_store(&fl.started, false);
    pthread_mutex_init(&fl.flush_lock, NULL);
}
