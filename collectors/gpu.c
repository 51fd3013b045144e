/* collectors/gpu.c: SYNCSPY_GPU=1 (see gpu.h). CUPTI activity records (kernels, copies,
 * memsets, synchronizations) in buffers from the agent's own memory, joined with the syncs the
 * agent recorded, give each sync site the time the GPU then sat idle: from the sync's end (its
 * device-side end when a synchronization or memcpy record has its correlation id, else its host
 * end on CUPTI's clock) until the next kernel, copy or memset began on the device; 0 when other
 * work was running at that moment. A sync whose next work is never seen is not counted.
 * Runs in agent_sync (gpu_note_sync: a lock, an array slot) and in CUPTI's buffer-completion
 * callback (any thread: the lock, no CUDA call, no malloc); those callbacks are the collector's
 * own and never enter the agent. One lock, taken by nothing else and held for bounded work only:
 * a fork waits for it (agent/process/lifecycle.c's list of fork locks). */
#include "collectors/gpu.h"

#include <cupti_activity.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include <stdatomic.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/clock.h"
#include "common/log.h"

#define BUFFERS 8
#define BUFFER_BYTES (1u << 20) /* CUPTI asks for buffers of a few MiB at most */
#define PENDING_MAX 4096        /* syncs whose idle time is not known yet */
#define SITES_MAX 65536         /* site ids beyond this are not measured */
#define NAMES_MAX 512
#define NAME_BYTES 96
#define NO_START UINT64_MAX

struct pending {
    uint32_t site;
    uint32_t runtime_corr, driver_corr;
    uint32_t found_batch; /* the buffer its next work came in */
    uint32_t next_name;   /* index into names, 0: none */
    bool live, busy, joined;
    uint64_t end;  /* on CUPTI's clock */
    uint64_t next; /* start of the first device work at or after end */
};

struct site_gpu {
    uint64_t idle_ns, syncs;
    uint32_t next_name;
};

struct gpu_state {
    uint8_t buffers[BUFFERS][BUFFER_BYTES];
    bool buffer_free[BUFFERS];
    struct pending pending[PENDING_MAX];
    struct site_gpu sites[SITES_MAX];
    char names[NAMES_MAX][NAME_BYTES];
};

/* The CUPTI activity functions used here, from the libcupti the entry layer loaded. */
struct cupti_fns {
    CUptiResult (*version)(uint32_t *version);
    CUptiResult (*enable)(CUpti_ActivityKind kind);
    CUptiResult (*disable)(CUpti_ActivityKind kind);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc request,
                                      CUpti_BuffersCallbackCompleteFunc complete);
    CUptiResult (*flush_all)(uint32_t flag);
    CUptiResult (*next_record)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
    CUptiResult (*timestamp)(uint64_t *ts);
    CUptiResult (*dropped)(CUcontext context, uint32_t stream_id, size_t *dropped);
};

static _Atomic bool tracking; /* collecting: syncs are noted */
static struct gpu_state *g;   /* mmap'ed (MAP_NORESERVE: pages are touched as used) */
static struct cupti_fns fns;
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t pending_head, pending_tail; /* live entries lie in [tail, head) */
static uint32_t n_names = 1;              /* names[0] is "" */
static uint32_t batch;
static int64_t clock_offset; /* CUPTI's clock minus CLOCK_MONOTONIC */
static bool collecting;
static uint64_t unresolved, dropped_syncs;

pthread_mutex_t *gpu_records_lock(void)
{
    return &gpu_lock;
}

void gpu_atfork_child(void)
{
    atomic_store(&tracking, false); /* the child's device work is not the parent's */
}

/* ---- buffers --------------------------------------------------------------------------------- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    pthread_mutex_lock(&gpu_lock);
    for (int i = 0; i < BUFFERS; i++)
        if (g->buffer_free[i]) {
            g->buffer_free[i] = false;
            *buffer = g->buffers[i];
            *size = BUFFER_BYTES;
            break;
        }
    pthread_mutex_unlock(&gpu_lock); /* none free: CUPTI drops records, and counts them */
}

static void release_buffer_locked(const uint8_t *buffer)
{
    for (int i = 0; i < BUFFERS; i++)
        if (buffer == g->buffers[i])
            g->buffer_free[i] = true;
}

/* ---- the join -------------------------------------------------------------------------------- */

static uint32_t intern_name_locked(const char *name)
{
    if (!name || !*name)
        return 0;
    for (uint32_t i = 1; i < n_names; i++)
        if (!strncmp(g->names[i], name, NAME_BYTES - 1))
            return i;
    if (n_names == NAMES_MAX)
        return 0;
    snprintf(g->names[n_names], NAME_BYTES, "%s", name);
    return n_names++;
}

static void settle_locked(struct pending *p)
{
    if (!p->live)
        return;
    p->live = false;
    if (!p->busy && p->next == NO_START) {
        unresolved++;
        return;
    }
    struct site_gpu *s = &g->sites[p->site];
    s->idle_ns += p->busy ? 0 : p->next - p->end;
    s->syncs++;
    if (!p->busy)
        s->next_name = p->next_name;
}

static void advance_tail_locked(void)
{
    while (pending_tail != pending_head && !g->pending[pending_tail % PENDING_MAX].live)
        pending_tail++;
}

void gpu_note_sync(uint32_t site_id, uint64_t end_ns, uint32_t runtime_corr, uint32_t driver_corr)
{
    if (site_id >= SITES_MAX) {
        pthread_mutex_lock(&gpu_lock);
        dropped_syncs++;
        pthread_mutex_unlock(&gpu_lock);
        return;
    }
    pthread_mutex_lock(&gpu_lock);
    if (collecting) {
        if (pending_head - pending_tail == PENDING_MAX) { /* the oldest with what is known */
            settle_locked(&g->pending[pending_tail % PENDING_MAX]);
            advance_tail_locked();
        }
        g->pending[pending_head++ % PENDING_MAX] =
            (struct pending){.site = site_id,
                             .runtime_corr = runtime_corr,
                             .driver_corr = driver_corr,
                             .live = true,
                             .end = (uint64_t)((int64_t)end_ns + clock_offset),
                             .next = NO_START};
    }
    pthread_mutex_unlock(&gpu_lock);
}

/* A synchronization or the sync's own copy: its device-side end is the sync's end. */
static void join_locked(uint32_t corr, uint32_t runtime_corr, uint64_t end)
{
    for (size_t i = pending_tail; i != pending_head; i++) {
        struct pending *p = &g->pending[i % PENDING_MAX];
        if (!p->live || p->joined)
            continue;
        if ((corr && (corr == p->driver_corr || corr == p->runtime_corr)) ||
            (runtime_corr && runtime_corr == p->runtime_corr)) {
            p->end = end;
            p->joined = true;
        }
    }
}

/* One piece of device work, [start, end): either it covers a sync's end (the GPU was not idle)
 * or it may be the first work after it. */
static void work_locked(uint64_t start, uint64_t end, const char *name)
{
    if (start == 0 || end < start)
        return; /* no timing information */
    for (size_t i = pending_tail; i != pending_head; i++) {
        struct pending *p = &g->pending[i % PENDING_MAX];
        if (!p->live || p->busy)
            continue;
        if (start <= p->end && p->end < end) {
            p->busy = true;
        } else if (start >= p->end && start < p->next) {
            p->next = start;
            p->next_name = intern_name_locked(name);
            p->found_batch = batch;
        }
    }
}

static void records_locked(uint8_t *buffer, size_t valid, bool joins)
{
    CUpti_Activity *r = NULL;
    while (fns.next_record(buffer, valid, &r) == CUPTI_SUCCESS) {
        switch (r->kind) {
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
            const CUpti_ActivitySynchronization2 *s = (const void *)r;
            if (joins)
                join_locked(s->correlationId, 0, s->end);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *m = (const void *)r;
            if (joins)
                join_locked(m->correlationId, m->runtimeCorrelationId, m->end);
            else
                work_locked(m->start, m->end, "[CUDA memcpy]");
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const CUpti_ActivityMemset4 *m = (const void *)r;
            if (!joins)
                work_locked(m->start, m->end, "[CUDA memset]");
            break;
        }
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const CUpti_ActivityKernel10 *k = (const void *)r;
            if (!joins)
                work_locked(k->start, k->end, k->name);
            break;
        }
        default: break;
        }
    }
}

/* A sync whose next work came in an earlier buffer is settled: work delivered later (other
 * streams' records arrive as they complete) rarely starts before it. One covered by running
 * work is settled at once. */
static void settle_ready_locked(void)
{
    for (size_t i = pending_tail; i != pending_head; i++) {
        struct pending *p = &g->pending[i % PENDING_MAX];
        if (p->live && (p->busy || (p->next != NO_START && p->found_batch < batch)))
            settle_locked(p);
    }
    advance_tail_locked();
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)ctx;
    (void)stream_id;
    (void)size;
    pthread_mutex_lock(&gpu_lock);
    batch++;
    if (valid > 0 && g) {
        records_locked(buffer, valid, true);  /* first the syncs' own ends */
        records_locked(buffer, valid, false); /* then the work around them */
        settle_ready_locked();
    }
    if (g)
        release_buffer_locked(buffer);
    pthread_mutex_unlock(&gpu_lock);
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                           CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                           CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};

/* The functions, by name; false when one that is needed is missing. */
static bool resolve(void *(*sym)(const char *), struct cupti_fns *f)
{
#define FN(field, name)                    \
    do {                                   \
        void *p_ = sym(name);              \
        memcpy(&f->field, &p_, sizeof p_); \
    } while (0)
    FN(version, "cuptiGetVersion");
    FN(enable, "cuptiActivityEnable");
    FN(disable, "cuptiActivityDisable");
    FN(register_callbacks, "cuptiActivityRegisterCallbacks");
    FN(flush_all, "cuptiActivityFlushAll");
    FN(next_record, "cuptiActivityGetNextRecord");
    FN(timestamp, "cuptiGetTimestamp");
    FN(dropped, "cuptiActivityGetNumDroppedRecords"); /* may be NULL */
#undef FN
    return f->enable && f->disable && f->register_callbacks && f->flush_all && f->next_record &&
           f->timestamp;
}

const char *gpu_start(void *(*cupti_symbol)(const char *name))
{
    struct cupti_fns f;
    uint32_t v = 0;
    bool complete = resolve(cupti_symbol, &f);
    if (!f.version || f.version(&v) != CUPTI_SUCCESS || v / 10000 != CUPTI_API_VERSION / 10000)
        return "its activity records are read as CUDA 13's, and this libcupti is another release";
    if (!complete)
        return "this libcupti lacks the activity API";
    void *mem = mmap(NULL, sizeof *g, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        return "no memory for activity buffers";
    g = mem;
    for (int i = 0; i < BUFFERS; i++)
        g->buffer_free[i] = true;
    fns = f;
    uint64_t cupti_now = 0;
    uint64_t before = clock_mono_ns();
    fns.timestamp(&cupti_now);
    uint64_t after = clock_mono_ns();
    clock_offset = (int64_t)cupti_now - (int64_t)(before + (after - before) / 2);
    if (fns.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
        return "cuptiActivityRegisterCallbacks failed";
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (fns.enable(kinds[i]) != CUPTI_SUCCESS &&
            !(kinds[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
              fns.enable(CUPTI_ACTIVITY_KIND_KERNEL) == CUPTI_SUCCESS))
            dbg(1, "CUPTI: activity kind %d not available", (int)kinds[i]);
    pthread_mutex_lock(&gpu_lock);
    collecting = true;
    pthread_mutex_unlock(&gpu_lock);
    atomic_store(&tracking, true);
    return NULL;
}

/* Delivers what CUPTI holds and stops adding syncs. */
static void drain(void)
{
    atomic_store(&tracking, false);
    fns.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* buffer_completed runs meanwhile */
    pthread_mutex_lock(&gpu_lock);
    collecting = false;
    pthread_mutex_unlock(&gpu_lock);
}

bool gpu_stop(void)
{
    if (!g || !atomic_load(&tracking))
        return false;
    drain();
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        fns.disable(kinds[i]);
    fns.disable(CUPTI_ACTIVITY_KIND_KERNEL);
    return true;
}

void gpu_finish(void)
{
    if (!g)
        return;
    if (atomic_load(&tracking))
        drain();
    pthread_mutex_lock(&gpu_lock);
    for (size_t i = pending_tail; i != pending_head; i++)
        settle_locked(&g->pending[i % PENDING_MAX]);
    pending_tail = pending_head;
    uint64_t unknown = unresolved, beyond = dropped_syncs;
    pthread_mutex_unlock(&gpu_lock);
    size_t lost = 0;
    if (fns.dropped)
        fns.dropped(NULL, 0, &lost);
    if (unknown || beyond || lost)
        dbg(1,
            "CUPTI: %llu syncs had no device work after them, %llu beyond the site limit; "
            "%zu activity records dropped",
            (unsigned long long)unknown, (unsigned long long)beyond, lost);
}

bool gpu_site(uint32_t site_id, struct gpu_site_idle *out)
{
    if (!g || site_id >= SITES_MAX)
        return false;
    pthread_mutex_lock(&gpu_lock);
    const struct site_gpu *s = &g->sites[site_id];
    bool any = s->syncs > 0;
    if (any)
        *out = (struct gpu_site_idle){s->idle_ns, s->syncs,
                                      s->next_name ? g->names[s->next_name] : NULL};
    pthread_mutex_unlock(&gpu_lock);
    return any;
}
