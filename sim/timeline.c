/* sim/timeline.c: the simulated device's timeline. Each stream knows when its queued work ends
 * (ready_ns, CLOCK_MONOTONIC); queuing work moves that forward, never the host. Only the
 * synchronizing calls sleep, and never while holding the lock. Owns streams (legacy default,
 * per-thread default, created), their capture state (a capturing stream appends what is queued
 * on it to its graph, sim/graphs.c, instead of running it), events, and the host-function
 * thread that runs cudaLaunchHostFunc / cudaStreamAddCallback callbacks when the timeline
 * reaches them. */
#include "sim/sim_internal.h"
#include "sim/cupti_core.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

enum stream_role { ROLE_LEGACY, ROLE_PER_THREAD, ROLE_USER };

struct CUstream_st {
    struct CUstream_st *next, *prev; /* the live list; the legacy stream is not in it */
    enum stream_role role;
    unsigned flags; /* cudaStreamNonBlocking or 0 */
    int priority;
    unsigned long long id;
    uint64_t ready_ns; /* when the work queued so far ends */
    struct {           /* stream capture (cudaStreamBeginCapture) */
        enum cudaStreamCaptureStatus status;
        enum cudaStreamCaptureMode mode;
        unsigned long long id;
        pthread_t thread;  /* who began it */
        cudaGraph_t graph; /* what is captured so far */
    } cap;
};

struct CUevent_st {
    struct CUevent_st *next, *prev;
    unsigned flags;
    bool recorded;
    uint64_t at_ns;                   /* when the work before the record ends */
    const struct CUstream_st *stream; /* where it was recorded: compared, never dereferenced */
    uint64_t hostfn_seq;              /* host functions of that stream up to here precede it */
};

/* A host function waiting for its place on the timeline. */
struct hostfn_job {
    struct hostfn_job *next;
    uint64_t run_at_ns;
    uint64_t seq;
    const struct CUstream_st *stream; /* compared, never dereferenced: it may be destroyed */
    cudaStream_t handle;              /* as the program passed it, for stream callbacks */
    cudaHostFn_t fn;
    cudaStreamCallback_t cb;
    void *user;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv; /* CLOCK_MONOTONIC: a job arrived or became due */
static pthread_cond_t done_cv; /* a job finished */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t per_thread_key;

static struct CUstream_st legacy = {.role = ROLE_LEGACY};
static struct CUstream_st *streams;
static struct CUevent_st *events;
static unsigned long long next_stream_id = 1;
static unsigned long long next_capture_id = 1;
static __thread bool last_enqueue_captured;
/* Work queued on streams that are gone still has to finish: device synchronize waits for
 * it and so does the legacy stream (for blocking streams). */
static uint64_t retired_any_ns, retired_blocking_ns;

static struct hostfn_job *jobs;    /* sorted by (run_at_ns, seq) */
static struct hostfn_job *running; /* the job whose callback runs now */
static uint64_t next_seq = 1;
static bool worker_started;

static __thread struct CUstream_st *per_thread_stream;

static void per_thread_exit(void *p);
static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}
static void fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void init_conds(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&work_cv, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&done_cv, NULL);
}

/* The child has no host-function thread and no other threads: it starts with no pending
 * callbacks (the parent's run in the parent) and a fresh worker on demand. */
static void fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    init_conds();
    jobs = NULL;
    running = NULL;
    worker_started = false;
}

static void timeline_init(void)
{
    init_conds();
    pthread_key_create(&per_thread_key, per_thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void lock_timeline(void)
{
    pthread_once(&once, timeline_init);
    pthread_mutex_lock(&lock);
}

static void unlock_timeline(void)
{
    pthread_mutex_unlock(&lock);
}

static bool is_blocking(const struct CUstream_st *s)
{
    return (s->flags & cudaStreamNonBlocking) == 0;
}

static void list_insert_stream(struct CUstream_st *s)
{
    s->prev = NULL;
    s->next = streams;
    if (streams != NULL)
        streams->prev = s;
    streams = s;
}

static void retire_stream_locked(struct CUstream_st *s)
{
    retired_any_ns = SIM_MAX(retired_any_ns, s->ready_ns);
    if (is_blocking(s))
        retired_blocking_ns = SIM_MAX(retired_blocking_ns, s->ready_ns);
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        streams = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    free(s);
}

/* The calling thread's per-thread default stream: a blocking stream of its own, made on first
 * use and retired when the thread exits. */
static struct CUstream_st *per_thread_locked(void)
{
    if (per_thread_stream != NULL)
        return per_thread_stream;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->role = ROLE_PER_THREAD;
    s->id = next_stream_id++;
    list_insert_stream(s);
    per_thread_stream = s;
    pthread_setspecific(per_thread_key, s);
    return s;
}

static void per_thread_exit(void *p)
{
    pthread_mutex_lock(&lock);
    retire_stream_locked(p);
    per_thread_stream = NULL; /* a later destructor's CUDA call gets a new one */
    unlock_timeline();
}

static cudaError_t resolve_locked(cudaStream_t handle, sim_default_t def, struct CUstream_st **out)
{
    if (handle == NULL)
        handle = def == SIM_DEF_PER_THREAD ? cudaStreamPerThread : cudaStreamLegacy;
    if (handle == cudaStreamLegacy) {
        *out = &legacy;
        return cudaSuccess;
    }
    if (handle == cudaStreamPerThread) {
        *out = per_thread_locked();
        return *out != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
    }
    for (struct CUstream_st *s = streams; s != NULL; s = s->next)
        if (s == handle && s->role == ROLE_USER) {
            *out = s;
            return cudaSuccess;
        }
    return cudaErrorInvalidResourceHandle;
}

static struct CUevent_st *find_event_locked(cudaEvent_t e)
{
    for (struct CUevent_st *ev = events; ev != NULL; ev = ev->next)
        if (ev == e)
            return ev;
    return NULL;
}

static uint64_t device_ready_locked(void)
{
    uint64_t t = SIM_MAX(legacy.ready_ns, retired_any_ns);
    for (struct CUstream_st *s = streams; s != NULL; s = s->next)
        t = SIM_MAX(t, s->ready_ns);
    return t;
}

/* Where new work on s can start. The legacy default stream waits for all work queued before
 * it on blocking streams, and blocking streams wait for work queued before on the legacy
 * stream (CUDA "Stream synchronization behavior"); non-blocking streams wait for neither. */
static uint64_t start_time_locked(const struct CUstream_st *s, uint64_t dep_ns, bool all_streams)
{
    uint64_t start = SIM_MAX(sim_now_ns(), SIM_MAX(s->ready_ns, dep_ns));
    if (s->role == ROLE_LEGACY) {
        start = SIM_MAX(start, retired_blocking_ns);
        for (const struct CUstream_st *o = streams; o != NULL; o = o->next)
            if (is_blocking(o))
                start = SIM_MAX(start, o->ready_ns);
    } else if (is_blocking(s)) {
        start = SIM_MAX(start, legacy.ready_ns);
    }
    if (all_streams)
        start = SIM_MAX(start, device_ready_locked());
    return start;
}

/* --- stream capture ------------------------------------------------------------------------- */

static bool capturing(const struct CUstream_st *s)
{
    return s->cap.status != cudaStreamCaptureStatusNone;
}

/* Synchronizing or querying a capturing stream (or the legacy stream while a blocking stream
 * captures) necessarily conflicts with its capture, whatever the modes: refused with
 * cudaErrorStreamCaptureUnsupported (Implicit for the legacy stream), the capture invalidated. */
static cudaError_t legacy_use_locked(const struct CUstream_st *s);

static cudaError_t conflicts_with_capture_locked(struct CUstream_st *s)
{
    if (s->cap.status == cudaStreamCaptureStatusActive) {
        s->cap.status = cudaStreamCaptureStatusInvalidated;
        return cudaErrorStreamCaptureUnsupported;
    }
    if (s->cap.status == cudaStreamCaptureStatusInvalidated)
        return cudaErrorStreamCaptureUnsupported;
    return legacy_use_locked(s);
}

/* The legacy stream synchronizes with every blocking stream: using it while one of them
 * captures is an implicit dependency on the capture, which CUDA refuses
 * (cudaErrorStreamCaptureImplicit) and which invalidates that capture. */
static cudaError_t legacy_use_locked(const struct CUstream_st *s)
{
    if (s->role != ROLE_LEGACY)
        return cudaSuccess;
    cudaError_t err = cudaSuccess;
    for (struct CUstream_st *o = streams; o != NULL; o = o->next)
        if (is_blocking(o) && o->cap.status == cudaStreamCaptureStatusActive) {
            o->cap.status = cudaStreamCaptureStatusInvalidated;
            err = cudaErrorStreamCaptureImplicit;
        }
    return err;
}

/* Whether a call that may make the host wait (a sync, a blocking copy or memset, an allocation
 * or free: CUDA's "potentially unsafe" calls) is prohibited for the calling thread now: its
 * capture mode (cudaThreadExchangeStreamCaptureMode) is not relaxed and it has a capture of its
 * own not begun relaxed, or its mode is global and another thread has a global capture. The
 * captures it conflicts with are invalidated (cudaStreamEndCapture then fails). */
static cudaError_t unsafe_call_locked(void)
{
    enum cudaStreamCaptureMode mine = sim_thread_capture_mode();
    if (mine == cudaStreamCaptureModeRelaxed)
        return cudaSuccess;
    cudaError_t err = cudaSuccess;
    pthread_t self = pthread_self();
    for (struct CUstream_st *o = streams; o != NULL; o = o->next) { /* legacy never captures */
        if (o->cap.status != cudaStreamCaptureStatusActive ||
            o->cap.mode == cudaStreamCaptureModeRelaxed)
            continue;
        bool own = pthread_equal(o->cap.thread, self);
        if (own ||
            (mine == cudaStreamCaptureModeGlobal && o->cap.mode == cudaStreamCaptureModeGlobal)) {
            o->cap.status = cudaStreamCaptureStatusInvalidated;
            err = cudaErrorStreamCaptureUnsupported;
        }
    }
    return err;
}

cudaError_t sim_capture_unsafe_call(void)
{
    lock_timeline();
    cudaError_t err = unsafe_call_locked();
    unlock_timeline();
    return err;
}

cudaError_t sim_capture_blocking_use(cudaStream_t stream, sim_default_t def)
{
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess)
        err = conflicts_with_capture_locked(s);
    if (err == cudaSuccess)
        err = unsafe_call_locked();
    unlock_timeline();
    return err;
}

cudaError_t sim_capture_begin(cudaStream_t stream, sim_default_t def,
                              enum cudaStreamCaptureMode mode)
{
    if ((unsigned)mode > cudaStreamCaptureModeRelaxed)
        return cudaErrorInvalidValue;
    cudaGraph_t graph = NULL;
    cudaError_t err = sim_graph_create(&graph);
    if (err != cudaSuccess)
        return err;
    lock_timeline();
    struct CUstream_st *s;
    err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess && s->role == ROLE_LEGACY)
        err =
            cudaErrorStreamCaptureUnsupported; /* "may not be initiated if stream is cudaStreamLegacy" */
    else if (err == cudaSuccess && capturing(s))
        err = cudaErrorIllegalState;
    if (err == cudaSuccess) {
        s->cap.status = cudaStreamCaptureStatusActive;
        s->cap.mode = mode;
        s->cap.id = next_capture_id++;
        s->cap.thread = pthread_self();
        s->cap.graph = graph;
        graph = NULL;
    }
    unlock_timeline();
    if (graph != NULL)
        sim_graph_destroy(graph);
    return err;
}

cudaError_t sim_capture_end(cudaStream_t stream, sim_default_t def, cudaGraph_t *out)
{
    if (out == NULL)
        return cudaErrorInvalidValue;
    cudaGraph_t graph = NULL;
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess && !capturing(s))
        err = cudaErrorIllegalState;
    else if (err == cudaSuccess && s->cap.mode != cudaStreamCaptureModeRelaxed &&
             !pthread_equal(s->cap.thread, pthread_self()))
        err = cudaErrorStreamCaptureWrongThread;
    if (err == cudaSuccess) {
        if (s->cap.status == cudaStreamCaptureStatusInvalidated)
            err = cudaErrorStreamCaptureInvalidated;
        graph = s->cap.graph;
        s->cap.status = cudaStreamCaptureStatusNone;
        s->cap.graph = NULL;
    }
    unlock_timeline();
    if (err == cudaErrorStreamCaptureInvalidated) {
        sim_graph_destroy(graph);
        graph = NULL;
    }
    if (err == cudaSuccess || err == cudaErrorStreamCaptureInvalidated)
        *out = graph;
    return err;
}

cudaError_t sim_capture_info(cudaStream_t stream, sim_default_t def,
                             enum cudaStreamCaptureStatus *status, unsigned long long *id,
                             cudaGraph_t *graph)
{
    if (status == NULL)
        return cudaErrorInvalidValue;
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess && s->role == ROLE_LEGACY &&
        sim_thread_capture_mode() != cudaStreamCaptureModeRelaxed)
        err = legacy_use_locked(s); /* asking the legacy stream is using it */
    if (err == cudaSuccess) {
        *status = s->cap.status;
        if (id != NULL)
            *id = capturing(s) ? s->cap.id : 0;
        if (graph != NULL && capturing(s))
            *graph = s->cap.graph; /* documented valid only while capturing */
    }
    unlock_timeline();
    return err;
}

bool sim_last_enqueue_captured(void)
{
    return last_enqueue_captured;
}

/* --- queuing work ----------------------------------------------------------------------------- */

static cudaError_t enqueue(cudaStream_t stream, sim_default_t def, uint64_t dur_ns, uint64_t dep_ns,
                           bool all_streams, const void *kernel, uint64_t *start_ns,
                           uint64_t *end_ns)
{
    last_enqueue_captured = false;
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess)
        err = legacy_use_locked(s);
    if (err == cudaSuccess && s->cap.status == cudaStreamCaptureStatusInvalidated)
        err = cudaErrorStreamCaptureInvalidated;
    if (err == cudaSuccess && s->cap.status == cudaStreamCaptureStatusActive) {
        /* recorded, not run: a node of the capture's graph; nothing on the timeline */
        err = sim_graph_append(s->cap.graph, dur_ns, kernel);
        if (err != cudaSuccess)
            s->cap.status = cudaStreamCaptureStatusInvalidated;
        unlock_timeline();
        uint64_t now = sim_now_ns();
        if (start_ns != NULL)
            *start_ns = now;
        if (end_ns != NULL)
            *end_ns = now;
        last_enqueue_captured = err == cudaSuccess;
        return err;
    }
    uint64_t start = 0;
    unsigned long long id = 0;
    if (err == cudaSuccess) {
        start = start_time_locked(s, dep_ns, all_streams);
        s->ready_ns = start + dur_ns;
        id = s->id;
        if (start_ns != NULL)
            *start_ns = start;
        if (end_ns != NULL)
            *end_ns = s->ready_ns;
    }
    unlock_timeline();
    if (err == cudaSuccess) /* its CUPTI activity record, outside the lock (sim/cupti_core.c) */
        sim_activity_enqueued(id, start, start + dur_ns);
    return err;
}

cudaError_t sim_enqueue(cudaStream_t stream, sim_default_t def, uint64_t dur_ns, uint64_t dep_ns,
                        bool all_streams, uint64_t *start_ns, uint64_t *end_ns)
{
    return enqueue(stream, def, dur_ns, dep_ns, all_streams, NULL, start_ns, end_ns);
}

cudaError_t sim_enqueue_kernel(cudaStream_t stream, sim_default_t def, uint64_t dur_ns,
                               const void *kernel, uint64_t *start_ns, uint64_t *end_ns)
{
    return enqueue(stream, def, dur_ns, 0, false, kernel, start_ns, end_ns);
}

cudaError_t sim_stream_check(cudaStream_t stream, sim_default_t def)
{
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    unlock_timeline();
    return err;
}

/* --- host functions -------------------------------------------------------------------------- */

/* Is a host function of stream s (any stream when s is NULL) numbered <= seq still to run? */
static bool hostfn_pending_locked(const struct CUstream_st *s, uint64_t seq)
{
    if (running != NULL && running->seq <= seq && (s == NULL || running->stream == s))
        return true;
    for (const struct hostfn_job *j = jobs; j != NULL; j = j->next)
        if (j->seq <= seq && (s == NULL || j->stream == s))
            return true;
    return false;
}

static void wait_hostfns(const struct CUstream_st *s, uint64_t seq)
{
    lock_timeline();
    while (hostfn_pending_locked(s, seq))
        pthread_cond_wait(&done_cv, &lock);
    unlock_timeline();
}

static void *hostfn_worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        if (jobs == NULL) {
            pthread_cond_wait(&work_cv, &lock);
            continue;
        }
        struct hostfn_job *job = jobs;
        if (sim_now_ns() < job->run_at_ns) {
            struct timespec ts = {.tv_sec = (time_t)(job->run_at_ns / 1000000000ull),
                                  .tv_nsec = (long)(job->run_at_ns % 1000000000ull)};
            pthread_cond_timedwait(&work_cv, &lock, &ts); /* an earlier job may arrive */
            continue;
        }
        jobs = job->next;
        running = job;
        pthread_mutex_unlock(&lock);
        if (job->fn != NULL)
            job->fn(job->user);
        else
            job->cb(job->handle, cudaSuccess, job->user);
        pthread_mutex_lock(&lock);
        running = NULL;
        free(job);
        pthread_cond_broadcast(&done_cv);
    }
    return NULL;
}

/* The worker blocks every signal (they belong to the program's threads) and has a name. */
static cudaError_t start_worker_locked(void)
{
    if (worker_started)
        return cudaSuccess;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, hostfn_worker, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return cudaErrorMemoryAllocation;
    pthread_setname_np(t, "simcuda-hostfn");
    worker_started = true;
    return cudaSuccess;
}

static cudaError_t queue_hostfn(cudaStream_t stream, sim_default_t def, cudaHostFn_t fn,
                                cudaStreamCallback_t cb, void *user)
{
    struct hostfn_job *job = calloc(1, sizeof *job);
    if (job == NULL)
        return cudaErrorMemoryAllocation;
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess)
        err = start_worker_locked();
    if (err != cudaSuccess) {
        unlock_timeline();
        free(job);
        return err;
    }
    /* The callback takes no time on the timeline (its length is unknown when it is queued);
     * syncs on its stream still wait until it has returned. */
    job->run_at_ns = start_time_locked(s, 0, false);
    s->ready_ns = job->run_at_ns;
    job->seq = next_seq++;
    job->stream = s;
    job->handle = stream;
    job->fn = fn;
    job->cb = cb;
    job->user = user;
    struct hostfn_job **pos = &jobs;
    while (*pos != NULL && (*pos)->run_at_ns <= job->run_at_ns)
        pos = &(*pos)->next;
    job->next = *pos;
    *pos = job;
    pthread_cond_signal(&work_cv);
    unlock_timeline();
    return cudaSuccess;
}

cudaError_t sim_launch_host_func(cudaStream_t stream, sim_default_t def, cudaHostFn_t fn,
                                 void *user)
{
    if (fn == NULL)
        return cudaErrorInvalidValue;
    return queue_hostfn(stream, def, fn, NULL, user);
}

cudaError_t sim_stream_add_callback(cudaStream_t stream, sim_default_t def, cudaStreamCallback_t cb,
                                    void *user, unsigned flags)
{
    if (cb == NULL || flags != 0)
        return cudaErrorInvalidValue;
    return queue_hostfn(stream, def, NULL, cb, user);
}

/* --- streams ------------------------------------------------------------------------------- */

cudaError_t sim_stream_create(cudaStream_t *out, unsigned flags, int priority)
{
    if (out == NULL || (flags & ~(unsigned)cudaStreamNonBlocking) != 0)
        return cudaErrorInvalidValue;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (s == NULL)
        return cudaErrorMemoryAllocation;
    s->role = ROLE_USER;
    s->flags = flags;
    /* cudaDeviceGetStreamPriorityRange says [-5, 0]; CUDA clamps out-of-range values. */
    s->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    lock_timeline();
    s->id = next_stream_id++;
    list_insert_stream(s);
    unlock_timeline();
    *out = s;
    return cudaSuccess;
}

/* Returns at once: queued work still finishes (and device synchronize still waits for it). */
cudaError_t sim_stream_destroy(cudaStream_t stream)
{
    if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
        return cudaErrorInvalidResourceHandle;
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, SIM_DEF_LEGACY, &s);
    if (err == cudaSuccess)
        retire_stream_locked(s);
    unlock_timeline();
    return err;
}

cudaError_t sim_stream_query(cudaStream_t stream, sim_default_t def)
{
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess)
        err = conflicts_with_capture_locked(s);
    if (err == cudaSuccess && (sim_now_ns() < s->ready_ns || hostfn_pending_locked(s, next_seq)))
        err = cudaErrorNotReady;
    unlock_timeline();
    return err;
}

cudaError_t sim_stream_synchronize(cudaStream_t stream, sim_default_t def)
{
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess)
        err = conflicts_with_capture_locked(s);
    if (err == cudaSuccess)
        err = unsafe_call_locked();
    uint64_t deadline = err == cudaSuccess ? s->ready_ns : 0;
    uint64_t seq = next_seq - 1;
    unlock_timeline();
    if (err != cudaSuccess)
        return err;
    SIM_DBG(1, "stream %p synchronize: waiting %lld ns", (void *)stream, sim_ns_left(deadline));
    sim_wait_until(deadline);
    wait_hostfns(s, seq);
    return cudaSuccess;
}

cudaError_t sim_stream_wait_event(cudaStream_t stream, sim_default_t def, cudaEvent_t event,
                                  unsigned flags)
{
    (void)flags; /* cudaEventWaitDefault / cudaEventWaitExternal: the same to the timeline */
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    struct CUevent_st *ev = find_event_locked(event);
    if (err == cudaSuccess && ev == NULL)
        err = cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess && ev->recorded)
        s->ready_ns = start_time_locked(s, ev->at_ns, false);
    unlock_timeline();
    return err;
}

/* A copy of the stream's state, taken under the lock, for the getters (its list links are
 * never followed). */
static cudaError_t stream_copy(cudaStream_t stream, sim_default_t def, struct CUstream_st *copy)
{
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    if (err == cudaSuccess)
        *copy = *s;
    unlock_timeline();
    return err;
}

cudaError_t sim_stream_get_flags(cudaStream_t stream, sim_default_t def, unsigned *flags)
{
    struct CUstream_st s;
    cudaError_t err = flags == NULL ? cudaErrorInvalidValue : stream_copy(stream, def, &s);
    if (err == cudaSuccess)
        *flags = s.flags;
    return err;
}

cudaError_t sim_stream_get_priority(cudaStream_t stream, sim_default_t def, int *priority)
{
    struct CUstream_st s;
    cudaError_t err = priority == NULL ? cudaErrorInvalidValue : stream_copy(stream, def, &s);
    if (err == cudaSuccess)
        *priority = s.priority;
    return err;
}

cudaError_t sim_stream_get_id(cudaStream_t stream, sim_default_t def, unsigned long long *id)
{
    struct CUstream_st s;
    cudaError_t err = id == NULL ? cudaErrorInvalidValue : stream_copy(stream, def, &s);
    if (err == cudaSuccess)
        *id = s.id;
    return err;
}

uint64_t sim_stream_ready_ns(cudaStream_t stream)
{
    struct CUstream_st s;
    return stream_copy(stream, SIM_DEF_LEGACY, &s) == cudaSuccess ? s.ready_ns : 0;
}

uint64_t sim_device_ready_ns(void)
{
    lock_timeline();
    uint64_t t = device_ready_locked();
    unlock_timeline();
    return t;
}

cudaError_t sim_device_synchronize(void)
{
    lock_timeline();
    cudaError_t err = unsafe_call_locked();
    uint64_t deadline = device_ready_locked();
    uint64_t seq = next_seq - 1;
    unlock_timeline();
    if (err != cudaSuccess)
        return err;
    SIM_DBG(1, "device synchronize: waiting %lld ns", sim_ns_left(deadline));
    sim_wait_until(deadline);
    wait_hostfns(NULL, seq);
    return cudaSuccess;
}

/* --- events -------------------------------------------------------------------------------- */

cudaError_t sim_event_create(cudaEvent_t *out, unsigned flags)
{
    const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if (out == NULL || (flags & ~known) != 0)
        return cudaErrorInvalidValue;
    if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
        return cudaErrorInvalidValue;
    struct CUevent_st *ev = calloc(1, sizeof *ev);
    if (ev == NULL)
        return cudaErrorMemoryAllocation;
    ev->flags = flags;
    lock_timeline();
    ev->next = events;
    if (events != NULL)
        events->prev = ev;
    events = ev;
    unlock_timeline();
    *out = ev;
    return cudaSuccess;
}

cudaError_t sim_event_destroy(cudaEvent_t event)
{
    lock_timeline();
    struct CUevent_st *ev = find_event_locked(event);
    if (ev != NULL) {
        if (ev->prev != NULL)
            ev->prev->next = ev->next;
        else
            events = ev->next;
        if (ev->next != NULL)
            ev->next->prev = ev->prev;
    }
    unlock_timeline();
    if (ev == NULL)
        return cudaErrorInvalidResourceHandle;
    free(ev);
    return cudaSuccess;
}

cudaError_t sim_event_record(cudaEvent_t event, cudaStream_t stream, sim_default_t def)
{
    lock_timeline();
    struct CUstream_st *s;
    cudaError_t err = resolve_locked(stream, def, &s);
    struct CUevent_st *ev = find_event_locked(event);
    if (err == cudaSuccess && ev == NULL)
        err = cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess) {
        /* A record is a zero-length operation: it completes when the work before it does. */
        uint64_t at = start_time_locked(s, 0, false);
        s->ready_ns = at;
        ev->at_ns = at;
        ev->recorded = true;
        ev->stream = s;
        ev->hostfn_seq = next_seq - 1;
    }
    unlock_timeline();
    return err;
}

cudaError_t sim_event_query(cudaEvent_t event)
{
    lock_timeline();
    struct CUevent_st *ev = find_event_locked(event);
    cudaError_t err = ev == NULL ? cudaErrorInvalidResourceHandle : cudaSuccess;
    if (ev != NULL && ev->recorded &&
        (sim_now_ns() < ev->at_ns || hostfn_pending_locked(ev->stream, ev->hostfn_seq)))
        err = cudaErrorNotReady;
    unlock_timeline();
    return err;
}

cudaError_t sim_event_synchronize(cudaEvent_t event)
{
    lock_timeline();
    cudaError_t unsafe = unsafe_call_locked();
    struct CUevent_st *ev = find_event_locked(event);
    bool wait = ev != NULL && ev->recorded;
    uint64_t deadline = wait ? ev->at_ns : 0, seq = wait ? ev->hostfn_seq : 0;
    const struct CUstream_st *s = wait ? ev->stream : NULL;
    unlock_timeline();
    if (ev == NULL)
        return cudaErrorInvalidResourceHandle;
    if (unsafe != cudaSuccess)
        return unsafe;
    if (!wait) { /* never recorded: nothing to wait for (CUDA returns cudaSuccess) */
        sim_wait_until(0);
        return cudaSuccess;
    }
    SIM_DBG(1, "event synchronize: waiting %lld ns", sim_ns_left(deadline));
    sim_wait_until(deadline);
    wait_hostfns(s, seq);
    return cudaSuccess;
}

cudaError_t sim_event_elapsed(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (ms == NULL)
        return cudaErrorInvalidValue;
    lock_timeline();
    struct CUevent_st *a = find_event_locked(start), *b = find_event_locked(end);
    cudaError_t err = cudaSuccess;
    if (a == NULL || b == NULL || !a->recorded || !b->recorded ||
        ((a->flags | b->flags) & cudaEventDisableTiming))
        err = cudaErrorInvalidResourceHandle;
    else if (sim_now_ns() < SIM_MAX(a->at_ns, b->at_ns))
        err = cudaErrorNotReady;
    else
        *ms = (float)((double)((int64_t)(b->at_ns - a->at_ns)) / 1e6);
    unlock_timeline();
    return err;
}
