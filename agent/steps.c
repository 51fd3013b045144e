/* agent/steps.c: training steps (see steps.h). steps_mark and steps_finish take the step lock
 * (then, inside, the registry lock to read the launches); the recording paths only touch
 * atomics. The step log is mmap'ed and touched as it fills: no malloc. */
#include "agent/steps.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/autograd.h"
#include "agent/core.h"
#include "agent/threads.h"
#include "common/compiler.h"

#define STEPS_LISTED_MAX 65536 /* summary.json lists at most this many active steps */
/* Ended steps queued for the flusher (it drains them every 100 ms, sooner when the queue is
 * deep): chunks of STEP_CHUNK, the first static, the others mmap'ed as the queue grows and
 * unmapped as it drains. A step is lost to the trace only past STEP_CHUNKS_MAX (a flusher
 * behind by 65,536 steps: 13 s of 200 us steps; the queue at most 4.6 MiB), and then counted
 * with its figures (steps_events_lost; summary.json and the report keep it). The cap was 1,024
 * chunks (72 MiB): a loop of 3 us steps, faster than the flusher writes their records, grew the
 * agent's memory by 73 MiB in 10^6 steps (issue 36 item 2). */
#define STEP_CHUNK 1024
#define STEP_CHUNKS_MAX 64
#define STEP_KICK_EVERY (STEP_CHUNK / 2) /* a deep queue asks for a drain every this many */

_Atomic bool steps_active;
_Atomic uint64_t steps_now;

static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct schedule *schedule;
static bool trace_launches;
static uint64_t step_number, step_start_ns, step_launch_base;
static uint64_t attribution_steps; /* active steps attributed (agent/autograd.h), under step_lock */
struct step_chunk {
    struct step_chunk *next;
    uint32_t head, tail; /* written [0, head), read [0, tail) */
    struct tw_step ev[STEP_CHUNK];
};
static struct step_chunk first_chunk;
static struct {
    struct step_chunk *read, *write, *spare; /* read: the oldest chunk; write: the newest */
    bool first_free;                         /* the static chunk is in no list */
    size_t chunks;                           /* mmap'ed ones in use or spare */
    uint64_t queued;                         /* pushed, not yet taken */
    uint64_t cap;                            /* queued at most (0: STEP_CHUNKS_MAX chunks) */
    struct steps_lost lost;
} q = {.read = &first_chunk, .write = &first_chunk};
static _Atomic uint64_t step_syncs, step_blocked_ns;
static bool explicit_marks, auto_marks;
static uint32_t closing_tid;              /* the thread whose mark is closing the step now */
static unsigned closing_optimizers;       /* the optimizers that stepped in it (its mark's count) */
static uint64_t optimizers_seen[REP_OPTIMIZERS_KEPT + 1]; /* training steps (step 0 aside) by
                                                          * the optimizers that stepped in them */
static uint32_t marker_tid;               /* the thread that made the latest step mark */
/* A possible boundary kept by steps_cut_here: the open step's figures at that moment. */
static struct step_cut {
    bool valid;
    uint64_t step, now, syncs, blocked_ns, launches;
} cut;
static bool startup_closed;               /* step 0 (start-up) ended with a mark */
static struct rep_step startup;
static struct rep_step *step_log; /* mmap'ed, STEPS_LISTED_MAX entries, touched as used */
static size_t step_log_n;
static struct {
    uint64_t active, syncs, blocked_ns, launches, wall_ns, omitted;
} step_totals;

static _Atomic uint64_t unrecorded_steps; /* begun, not recorded by the schedule */

/* Recording on request (steps.h), under step_lock: the request waiting for its boundary, the
 * open window of a start, the latest request applied, and the recorded steps as ranges (a fixed
 * table: a schedule of short cycles makes one range per cycle; past it they are counted). */
#define RANGES_MAX 256
static struct steps_request pending;
static _Atomic bool pending_set;
static struct {
    bool open;
    uint64_t first, last; /* last UINT64_MAX: until a stop */
    uint8_t cause;
} window;
static struct steps_applied applied;
static uint8_t step_cause; /* why the current step is recorded (enum rep_cause) */
static struct rep_range ranges[RANGES_MAX];
static size_t nranges;
static uint64_t ranges_omitted;
/* The calling thread's id, for the step mark (a training loop marks thousands of steps a second:
 * no gettid syscall each). 0: not known yet; reset in a fork's child (its one thread is new). */
static SYNCSPY_TLS uint32_t own_tid;
static SYNCSPY_TLS bool marking; /* this thread is in steps_mark (a signal handler's mark: none) */

static void set_active(bool active)
{
    if (!active)
        atomic_fetch_add_explicit(&unrecorded_steps, 1, memory_order_relaxed);
    atomic_store_explicit(&steps_active, active, memory_order_relaxed);
    atomic_store_explicit(&agent_launch_tracing, active && trace_launches, memory_order_relaxed);
    agent_launch_slow_update();
}

/* The fault-injection build (output/faults.c): SYNCSPY_FAULTS=steps=N queues at most N ended
 * steps, so a test loses step records at will. */
static void fault_cap(void)
{
#ifdef SYNCSPY_FAULTS
    const char *spec = getenv("SYNCSPY_FAULTS"), *p = spec ? strstr(spec, "steps=") : NULL;
    if (p)
        q.cap = strtoull(p + 6, NULL, 10);
#endif
}

/* Whether step n is recorded, and why (step_cause). Caller holds step_lock (or is alone). */
static bool step_recorded(uint64_t n)
{
    step_cause = REP_CAUSE_SCHEDULE;
    if (schedule_records(schedule, n))
        return true;
    if (window.open && n > window.last)
        window.open = false; /* its steps are done */
    if (!window.open || n < window.first)
        return false;
    step_cause = window.cause;
    return true;
}

/* A recorded step into the ranges. Caller holds step_lock. */
static void range_add(uint64_t n, uint8_t cause)
{
    struct rep_range *r = nranges ? &ranges[nranges - 1] : NULL;
    if (r && r->cause == cause && r->last + 1 == n)
        r->last = n;
    else if (nranges < RANGES_MAX)
        ranges[nranges++] = (struct rep_range){n, n, cause};
    else
        ranges_omitted++;
}

/* The request waiting, at the boundary where step ended and step + 1 begins. Caller holds
 * step_lock. */
static void request_apply(uint64_t ended)
{
    struct steps_request r = pending;
    atomic_store(&pending_set, false);
    struct steps_applied a = {.seq = applied.seq + 1, .req = r, .step = ended};
    if (r.command == STEPS_START) {
        window.open = true;
        window.first = ended + 1;
        window.last = r.steps ? ended + r.steps : UINT64_MAX;
        window.cause = r.cause;
        a.first = window.first;
        a.last = window.last;
    } else {
        if (window.open && window.first <= ended) {
            a.first = window.first;
            a.last = window.last < ended ? window.last : ended;
        }
        window.open = false;
    }
    applied = a;
}

void steps_request(const struct steps_request *r)
{
    pthread_mutex_lock(&step_lock);
    pending = *r;
    atomic_store(&pending_set, true);
    pthread_mutex_unlock(&step_lock);
}

bool steps_request_pending(void)
{
    return atomic_load(&pending_set);
}

struct steps_applied steps_applied(void)
{
    pthread_mutex_lock(&step_lock);
    struct steps_applied a = applied;
    pthread_mutex_unlock(&step_lock);
    return a;
}

void steps_init(const struct schedule *s, bool launches, uint64_t now)
{
    fault_cap();
    schedule = s;
    trace_launches = launches;
    step_start_ns = now;
    set_active(step_recorded(0));
}

void steps_add_sync(uint64_t blocked_ns)
{
    atomic_fetch_add_explicit(&step_syncs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&step_blocked_ns, blocked_ns, memory_order_relaxed);
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

static struct step_chunk *chunk_new(void)
{
    struct step_chunk *c = NULL;
    if (q.first_free) {
        q.first_free = false;
        c = &first_chunk;
    } else if (q.spare) {
        c = q.spare;
        q.spare = NULL;
    } else if (q.chunks < STEP_CHUNKS_MAX - 1) {
        void *p = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        c = p;
        q.chunks++;
    }
    if (c) {
        c->next = NULL;
        c->head = c->tail = 0;
    }
    return c;
}

/* A chunk read to its end: the static one, or one spare, kept; others given back. */
static void chunk_done(struct step_chunk *c)
{
    if (c == &first_chunk) {
        q.first_free = true;
    } else if (!q.spare) {
        q.spare = c;
    } else {
        munmap(c, sizeof *c);
        q.chunks--;
    }
}

static void step_lost(const struct tw_step *e)
{
    q.lost.records++;
    if (e->active) {
        q.lost.active++;
        q.lost.syncs += e->syncs;
        q.lost.blocked_ns += e->blocked_ns;
        q.lost.launches += e->launches;
        q.lost.wall_ns += e->end_ns - e->start_ns;
    }
}

/* Caller holds step_lock. True when the queue is deep enough to ask for a drain now. */
static bool step_event_push(const struct tw_step *e)
{
    struct step_chunk *w = q.write;
    if (q.cap && q.queued >= q.cap) {
        step_lost(e);
        return true;
    }
    if (w->head == STEP_CHUNK && w->tail == STEP_CHUNK) {
        w->head = w->tail = 0; /* the only chunk, read to its end: reused in place */
    } else if (w->head == STEP_CHUNK) {
        struct step_chunk *c = chunk_new();
        if (!c) {
            step_lost(e);
            return true;
        }
        w->next = c;
        q.write = w = c;
    }
    w->ev[w->head++] = *e;
    return ++q.queued % STEP_KICK_EVERY == 0;
}

size_t steps_take_events(struct tw_step *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&step_lock);
    while (n < max) {
        struct step_chunk *r = q.read;
        if (r->tail < r->head) {
            out[n++] = r->ev[r->tail++];
            q.queued--;
        } else if (r->tail == STEP_CHUNK && r->next) {
            q.read = r->next;
            chunk_done(r);
        } else {
            break;
        }
    }
    pthread_mutex_unlock(&step_lock);
    return n;
}

struct steps_lost steps_events_lost(void)
{
    pthread_mutex_lock(&step_lock);
    struct steps_lost n = q.lost;
    pthread_mutex_unlock(&step_lock);
    return n;
}

/* Ends the current step at now and begins the next. Caller holds step_lock. final: the
 * process is exiting (the step is recorded as partial, and only if anything happened in it).
 * at: end it at that cut instead (its time and figures). Returns whether the step that ended was
 * active. */
static bool step_close_locked(uint64_t now, bool final, bool *deep, const struct step_cut *at,
                              bool *applied_now)
{
    uint64_t launches, syncs, blocked;
    if (at) { /* ends at the cut, with its figures: what came after it stays in the next step */
        now = at->now;
        launches = at->launches;
        syncs = at->syncs;
        blocked = at->blocked_ns;
        atomic_fetch_sub_explicit(&step_syncs, syncs, memory_order_relaxed);
        atomic_fetch_sub_explicit(&step_blocked_ns, blocked, memory_order_relaxed);
    } else {
        launches = threads_launches_total();
        syncs = atomic_exchange_explicit(&step_syncs, 0, memory_order_relaxed);
        blocked = atomic_exchange_explicit(&step_blocked_ns, 0, memory_order_relaxed);
    }
    bool was_active = atomic_load_explicit(&steps_active, memory_order_relaxed);
    bool attributed = autograd_step_attributed();
    if (!final || syncs || launches - step_launch_base)
        *deep = step_event_push(&(struct tw_step){.step = step_number, .start_ns = step_start_ns,
                                          .end_ns = now, .syncs = syncs, .blocked_ns = blocked,
                                          .launches = launches - step_launch_base,
                                          .active = was_active, .partial = final,
                                          .tid = final ? 0 : closing_tid,
                                          .attributed = was_active && attributed,
                                          .optimizers = final ? 0 : closing_optimizers,
                                          .source = final ? TRACE_STEP_SOURCE_NONE
                                                  : explicit_marks ? TRACE_STEP_SOURCE_EXPLICIT
                                                                   : TRACE_STEP_SOURCE_AUTO});
    if (step_number == 0 && !final) { /* start-up: kept apart from the training steps */
        startup_closed = true;
        startup = (struct rep_step){.step = 0, .wall_ns = now - step_start_ns,
                                    .syncs = was_active ? syncs : 0,
                                    .blocked_ns = was_active ? blocked : 0,
                                    .launches = launches - step_launch_base};
    }
    if (was_active) {
        struct rep_step st = {
            .step = step_number,
            .wall_ns = now - step_start_ns,
            .syncs = syncs,
            .blocked_ns = blocked,
            .launches = launches - step_launch_base,
            .partial = final,
            .attributed = attributed,
        };
        if (!final || st.syncs || st.launches) {
            step_log_append(&st);
            range_add(step_number, step_cause);
            attribution_steps += attributed; /* as the steps listed (or omitted) count them */
        }
    }
    if (!final && atomic_load(&pending_set)) {
        request_apply(step_number);
        *applied_now = true;
    }
    step_number++;
    atomic_store_explicit(&steps_now, step_number, memory_order_relaxed);
    step_start_ns = now;
    step_launch_base = launches;
    set_active(!final && step_recorded(step_number));
    return was_active;
}

/* One mark, under step_lock: at the cut first when one is given (an automatic mark's two). */
static unsigned mark_locked(uint64_t now, bool explicit_mark, unsigned optimizers,
                            const struct step_cut *at, unsigned optimizers_before, uint32_t tid)
{
    bool active_ended = false, deep = false, request = false;
    if (explicit_mark)
        explicit_marks = true;
    else
        auto_marks = true;
    if (explicit_mark || !explicit_marks) {
        closing_tid = tid;
        for (int part = at ? 0 : 1; part < 2; part++) {
            unsigned n = explicit_mark ? 0 : part == 0 ? optimizers_before : optimizers;
            closing_optimizers = n;
            if (step_number > 0)
                optimizers_seen[n < REP_OPTIMIZERS_KEPT ? n : REP_OPTIMIZERS_KEPT]++;
            bool d = false;
            active_ended |= step_close_locked(now, false, &d, part == 0 ? at : NULL, &request);
            deep |= d;
        }
        marker_tid = tid;
    }
    cut.valid = false;
    return (active_ended ? STEPS_MARK_ACTIVE_ENDED : 0) | (deep ? STEPS_MARK_QUEUE_DEEP : 0) |
           (request ? STEPS_MARK_REQUEST_APPLIED : 0);
}

static unsigned mark(uint64_t now, bool explicit_mark, unsigned optimizers, bool split,
                     unsigned optimizers_before)
{
    if (unlikely(marking))
        return 0; /* a handler interrupted this thread's mark: the step lock is held below */
    uint32_t tid = own_tid;
    if (unlikely(tid == 0))
        own_tid = tid = (uint32_t)syscall(SYS_gettid);
    marking = true;
    pthread_mutex_lock(&step_lock);
    struct step_cut at = cut;
    bool use_cut = split && at.valid && at.step == step_number && at.now <= now;
    unsigned r = mark_locked(now, explicit_mark, optimizers, use_cut ? &at : NULL,
                             optimizers_before, tid);
    pthread_mutex_unlock(&step_lock);
    marking = false;
    return r;
}

unsigned steps_mark(uint64_t now, bool explicit_mark, unsigned optimizers)
{
    return mark(now, explicit_mark, optimizers, false, 0);
}

unsigned steps_mark_split(uint64_t now, unsigned optimizers_before, unsigned optimizers)
{
    return mark(now, false, optimizers, true, optimizers_before);
}

void steps_cut_here(uint64_t now)
{
    if (unlikely(marking))
        return;
    marking = true;
    pthread_mutex_lock(&step_lock);
    cut = (struct step_cut){
        .valid = true,
        .step = step_number,
        .now = now,
        .syncs = atomic_load_explicit(&step_syncs, memory_order_relaxed),
        .blocked_ns = atomic_load_explicit(&step_blocked_ns, memory_order_relaxed),
        .launches = threads_launches_total(),
    };
    pthread_mutex_unlock(&step_lock);
    marking = false;
}

void steps_finish(struct rep_process *proc, uint64_t now)
{
    bool deep, request = false;
    pthread_mutex_lock(&step_lock);
    step_close_locked(now, true, &deep, NULL, &request);
    proc->steps = step_log;
    proc->nsteps = step_log_n;
    proc->steps_omitted = step_totals.omitted;
    proc->ranges = ranges;
    proc->nranges = nranges;
    proc->ranges_omitted = ranges_omitted;
    proc->attribution_steps = attribution_steps;
    proc->steps_seen = step_number; /* the final close advanced past the last step */
    proc->active_steps = step_totals.active;
    proc->syncs = step_totals.syncs;
    proc->blocked_ns = step_totals.blocked_ns;
    proc->launches = step_totals.launches;
    proc->wall_ns = step_totals.wall_ns;
    proc->startup_closed = startup_closed;
    proc->startup = startup;
    proc->step_source = explicit_marks ? "syncspy.step()" : auto_marks ? "optimizer.step()" : NULL;
    proc->optimizers = explicit_marks ? 0 : rep_optimizers_usual(optimizers_seen);
    proc->optimizers_max = explicit_marks ? 0 : rep_optimizers_most(optimizers_seen);
    pthread_mutex_unlock(&step_lock);
}

uint64_t steps_unrecorded(void)
{
    return atomic_load_explicit(&unrecorded_steps, memory_order_relaxed);
}

uint32_t steps_marker_tid(void)
{
    pthread_mutex_lock(&step_lock);
    uint32_t tid = marker_tid;
    pthread_mutex_unlock(&step_lock);
    return tid;
}

void steps_atfork_prepare(void) { pthread_mutex_lock(&step_lock); }
void steps_atfork_parent(void) { pthread_mutex_unlock(&step_lock); }

void steps_atfork_child(uint64_t now)
{
    own_tid = 0; /* the thread that forked: a new id in the child */
    if (step_log)
        munmap(step_log, STEPS_LISTED_MAX * sizeof(struct rep_step));
    step_log = NULL;
    step_log_n = 0;
    memset(&step_totals, 0, sizeof step_totals);
    step_number = 0;
    atomic_store(&steps_now, 0);
    /* the parent's queued steps are its own: the chunks stay mapped (the parent's memory) */
    first_chunk.head = first_chunk.tail = 0;
    first_chunk.next = NULL;
    uint64_t cap = q.cap;
    memset(&q, 0, sizeof q);
    q.read = q.write = &first_chunk;
    q.cap = cap;
    step_start_ns = now;
    step_launch_base = 0;
    explicit_marks = auto_marks = false;
    marker_tid = 0;
    cut.valid = false;
    startup_closed = false;
    memset(&startup, 0, sizeof startup);
    atomic_store(&step_syncs, 0);
    atomic_store(&step_blocked_ns, 0);
    atomic_store(&unrecorded_steps, 0);
    /* the parent's requests and ranges are its own; a window it opened is too */
    atomic_store(&pending_set, false);
    memset(&window, 0, sizeof window);
    memset(&applied, 0, sizeof applied);
    nranges = 0;
    ranges_omitted = 0;
    set_active(step_recorded(0));
    pthread_mutex_init(&step_lock, NULL);
}
