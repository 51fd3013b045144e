/* agent/step/steps.c: training steps (see steps.h). steps_mark and steps_finish take the step lock
 * (then, inside, the registry lock to read the launches); the recording paths only touch
 * atomics. The step log is packed (output/step_list.h), mmap'ed and touched as it fills: no
 * malloc. */
#include "agent/step/steps.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/record/autograd.h"
#include "agent/record/step_now.h"
#include "agent/record/core.h"
#include "agent/record/threads.h"
#include "common/compiler.h"
#include "output/step_list.h"

#define STEPS_LISTED_MAX 65536 /* summary.json lists at most this many active steps */
#define STEP_LOG_BYTES ((size_t)STEPS_LISTED_MAX * STEP_LIST_BYTES_MAX) /* reserved, not touched */
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
#define RANGES_MAX 256                   /* recorded steps kept as this many ranges at most */

/* The step lock: taken by steps_mark, steps_finish and the readers below; around fork() by the
 * fork handlers (agent/process/fork_locks.h), so the child's one thread (the one that forked) holds it and
 * unlocks it, never re-initializes it. */
static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;

/* Set once at the agent's start (steps_init): a forked child keeps them. */
static struct {
    const struct schedule *schedule;
    bool trace_launches;
    uint64_t queue_cap; /* ended steps queued at most (0: STEP_CHUNKS_MAX chunks; fault_cap) */
} conf;

struct step_chunk {
    struct step_chunk *next;
    uint32_t head, tail; /* written [0, head), read [0, tail) */
    struct tw_step ev[STEP_CHUNK];
};
static struct step_chunk first_chunk; /* the queue's first chunk: 72 KiB, kept apart */

/* A possible boundary kept by steps_cut_here: the open step's figures at that moment. */
struct step_cut {
    bool valid;
    uint64_t step, now, syncs, blocked_ns, launches;
};

/* Everything else is the process's own and a forked child starts it afresh: it all lives in
 * `steps` (under step_lock) and `live` (atomics), each reset with one assignment in
 * steps_atfork_child, so a field added to either is reset at fork by construction. */
static struct steps_state {
    /* the open step */
    uint64_t number, start_ns, launch_base;
    uint8_t cause; /* why it is recorded (enum rep_cause) */
    struct step_cut cut;
    uint32_t closing_tid;        /* the thread whose mark is closing the step now */
    unsigned closing_optimizers; /* the optimizers that stepped in it (its mark's count) */
    /* how steps are marked */
    bool explicit_marks, auto_marks;
    uint32_t marker_tid; /* the thread that made the latest step mark */
    /* training steps (step 0 aside) by the optimizers that stepped in them */
    uint64_t optimizers_seen[REP_OPTIMIZERS_KEPT + 1];
    /* the ended steps */
    bool startup_closed; /* step 0 (start-up) ended with a mark */
    struct rep_step startup;
    uint64_t attribution_steps; /* active steps attributed (agent/record/autograd.h) */
    struct step_list log;       /* its bytes mmap'ed for STEPS_LISTED_MAX steps, touched as used */
    struct {
        uint64_t active, syncs, blocked_ns, launches, wall_ns, omitted;
    } totals;
    /* the queue of ended steps for the trace: chunks, first_chunk first */
    struct {
        struct step_chunk *read, *write, *spare; /* read: the oldest chunk; write: the newest */
        bool first_free;                         /* first_chunk is in no list */
        size_t chunks;                           /* mmap'ed ones in use or spare */
        uint64_t queued;                         /* pushed, not yet taken */
        struct steps_lost lost;
    } q;
    /* Recording on request (steps.h): the request waiting for its boundary, the open window of
     * a start, the latest request applied, and the recorded steps as ranges (a fixed table: a
     * schedule of short cycles makes one range per cycle; past it they are counted). */
    struct steps_request pending;
    struct {
        bool open;
        uint64_t first, last; /* last UINT64_MAX: until a stop */
        uint8_t cause;
    } window;
    struct steps_applied applied;
    struct rep_range ranges[RANGES_MAX];
    size_t nranges;
    uint64_t ranges_omitted;
} steps = {.q = {.read = &first_chunk, .write = &first_chunk}};

/* Written without the lock (the open step's syncs: agent/record/step_now.h step_open). */
static struct {
    _Atomic uint64_t unrecorded_steps; /* begun, not recorded by the schedule */
    _Atomic bool pending_set;          /* steps.pending waits */
} live;

/* The calling thread's id, for the step mark (a training loop marks thousands of steps a second:
 * no gettid syscall each). 0: not known yet; reset in a fork's child (its one thread is new). */
static SYNCSPY_TLS uint32_t own_tid;
static SYNCSPY_TLS bool marking; /* this thread is in steps_mark (a signal handler's mark: none) */

static void set_active(bool active)
{
    if (!active)
        atomic_fetch_add_explicit(&live.unrecorded_steps, 1, memory_order_relaxed);
    atomic_store_explicit(&steps_active, active, memory_order_relaxed);
    atomic_store_explicit(&agent_launch_tracing, active && conf.trace_launches,
                          memory_order_relaxed);
    agent_launch_slow_update();
}

/* The fault-injection build (output/faults.c): SYNCSPY_FAULTS=steps=N queues at most N ended
 * steps, so a test loses step records at will. */
static void fault_cap(void)
{
#ifdef SYNCSPY_FAULTS
    const char *spec = getenv("SYNCSPY_FAULTS"), *p = spec ? strstr(spec, "steps=") : NULL;
    if (p)
        conf.queue_cap = strtoull(p + 6, NULL, 10);
#endif
}

/* Whether step n is recorded, and why (steps.cause). Caller holds step_lock (or is alone). */
static bool step_recorded(uint64_t n)
{
    steps.cause = REP_CAUSE_SCHEDULE;
    if (schedule_records(conf.schedule, n))
        return true;
    if (steps.window.open && n > steps.window.last)
        steps.window.open = false; /* its steps are done */
    if (!steps.window.open || n < steps.window.first)
        return false;
    steps.cause = steps.window.cause;
    return true;
}

/* A recorded step into the ranges. Caller holds step_lock. */
static void range_add(uint64_t n, uint8_t cause)
{
    struct rep_range *r = steps.nranges ? &steps.ranges[steps.nranges - 1] : NULL;
    if (r && r->cause == cause && r->last + 1 == n)
        r->last = n;
    else if (steps.nranges < RANGES_MAX)
        steps.ranges[steps.nranges++] = (struct rep_range){n, n, cause};
    else
        steps.ranges_omitted++;
}

/* The request waiting, at the boundary where step ended and step + 1 begins. Caller holds
 * step_lock. */
static void request_apply(uint64_t ended)
{
    struct steps_request r = steps.pending;
    atomic_store(&live.pending_set, false);
    struct steps_applied a = {.seq = steps.applied.seq + 1, .req = r, .step = ended};
    if (r.command == STEPS_START) {
        steps.window.open = true;
        steps.window.first = ended + 1;
        steps.window.last = r.steps ? ended + r.steps : UINT64_MAX;
        steps.window.cause = r.cause;
        a.first = steps.window.first;
        a.last = steps.window.last;
    } else {
        if (steps.window.open && steps.window.first <= ended) {
            a.first = steps.window.first;
            a.last = steps.window.last < ended ? steps.window.last : ended;
        }
        steps.window.open = false;
    }
    steps.applied = a;
}

void steps_request(const struct steps_request *r)
{
    pthread_mutex_lock(&step_lock);
    steps.pending = *r;
    atomic_store(&live.pending_set, true);
    pthread_mutex_unlock(&step_lock);
}

bool steps_request_pending(void)
{
    return atomic_load(&live.pending_set);
}

struct steps_applied steps_applied(void)
{
    pthread_mutex_lock(&step_lock);
    struct steps_applied a = steps.applied;
    pthread_mutex_unlock(&step_lock);
    return a;
}

void steps_init(const struct schedule *s, bool launches, uint64_t now)
{
    fault_cap();
    conf.schedule = s;
    conf.trace_launches = launches;
    steps.start_ns = now;
    set_active(step_recorded(0));
}

static void step_log_append(const struct rep_step *st)
{
    steps.totals.active++;
    steps.totals.syncs += st->syncs;
    steps.totals.blocked_ns += st->blocked_ns;
    steps.totals.launches += st->launches;
    steps.totals.wall_ns += st->wall_ns;
    if (!steps.log.bytes) {
        void *p = mmap(NULL, STEP_LOG_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        steps.log.bytes = p == MAP_FAILED ? NULL : p;
    }
    if (steps.log.bytes && steps.log.n < STEPS_LISTED_MAX)
        step_list_append(&steps.log, st);
    else
        steps.totals.omitted++;
}

static struct step_chunk *chunk_new(void)
{
    struct step_chunk *c = NULL;
    if (steps.q.first_free) {
        steps.q.first_free = false;
        c = &first_chunk;
    } else if (steps.q.spare) {
        c = steps.q.spare;
        steps.q.spare = NULL;
    } else if (steps.q.chunks < STEP_CHUNKS_MAX - 1) {
        void *p = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        c = p;
        steps.q.chunks++;
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
        steps.q.first_free = true;
    } else if (!steps.q.spare) {
        steps.q.spare = c;
    } else {
        munmap(c, sizeof *c);
        steps.q.chunks--;
    }
}

static void step_lost(const struct tw_step *e)
{
    steps.q.lost.records++;
    if (e->active) {
        steps.q.lost.active++;
        steps.q.lost.syncs += e->syncs;
        steps.q.lost.blocked_ns += e->blocked_ns;
        steps.q.lost.launches += e->launches;
        steps.q.lost.wall_ns += e->end_ns - e->start_ns;
    }
}

/* Caller holds step_lock. True when the queue is deep enough to ask for a drain now. */
static bool step_event_push(const struct tw_step *e)
{
    struct step_chunk *w = steps.q.write;
    if (conf.queue_cap && steps.q.queued >= conf.queue_cap) {
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
        steps.q.write = w = c;
    }
    w->ev[w->head++] = *e;
    return ++steps.q.queued % STEP_KICK_EVERY == 0;
}

size_t steps_take_events(struct tw_step *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&step_lock);
    while (n < max) {
        struct step_chunk *r = steps.q.read;
        if (r->tail < r->head) {
            out[n++] = r->ev[r->tail++];
            steps.q.queued--;
        } else if (r->tail == STEP_CHUNK && r->next) {
            steps.q.read = r->next;
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
    struct steps_lost n = steps.q.lost;
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
        atomic_fetch_sub_explicit(&step_open.syncs, syncs, memory_order_relaxed);
        atomic_fetch_sub_explicit(&step_open.blocked_ns, blocked, memory_order_relaxed);
    } else {
        launches = threads_launches_total();
        syncs = atomic_exchange_explicit(&step_open.syncs, 0, memory_order_relaxed);
        blocked = atomic_exchange_explicit(&step_open.blocked_ns, 0, memory_order_relaxed);
    }
    bool was_active = atomic_load_explicit(&steps_active, memory_order_relaxed);
    bool attributed = autograd_step_attributed();
    if (!final || syncs || launches - steps.launch_base)
        *deep = step_event_push(
            &(struct tw_step){.step = steps.number,
                              .start_ns = steps.start_ns,
                              .end_ns = now,
                              .syncs = syncs,
                              .blocked_ns = blocked,
                              .launches = launches - steps.launch_base,
                              .active = was_active,
                              .partial = final,
                              .tid = final ? 0 : steps.closing_tid,
                              .attributed = was_active && attributed,
                              .optimizers = final ? 0 : steps.closing_optimizers,
                              .source = final                  ? TRACE_STEP_SOURCE_NONE
                                        : steps.explicit_marks ? TRACE_STEP_SOURCE_EXPLICIT
                                                               : TRACE_STEP_SOURCE_AUTO});
    if (steps.number == 0 && !final) { /* start-up: kept apart from the training steps */
        steps.startup_closed = true;
        steps.startup = (struct rep_step){.step = 0,
                                          .wall_ns = now - steps.start_ns,
                                          .syncs = was_active ? syncs : 0,
                                          .blocked_ns = was_active ? blocked : 0,
                                          .launches = launches - steps.launch_base};
    }
    if (was_active) {
        struct rep_step st = {
            .step = steps.number,
            .wall_ns = now - steps.start_ns,
            .syncs = syncs,
            .blocked_ns = blocked,
            .launches = launches - steps.launch_base,
            .partial = final,
            .attributed = attributed,
        };
        if (!final || st.syncs || st.launches) {
            step_log_append(&st);
            range_add(steps.number, steps.cause);
            steps.attribution_steps += attributed; /* as the steps listed (or omitted) count them */
        }
    }
    if (!final && atomic_load(&live.pending_set)) {
        request_apply(steps.number);
        *applied_now = true;
    }
    steps.number++;
    atomic_store_explicit(&steps_now, steps.number, memory_order_relaxed);
    steps.start_ns = now;
    steps.launch_base = launches;
    set_active(!final && step_recorded(steps.number));
    return was_active;
}

/* One mark, under step_lock: at the cut first when one is given (an automatic mark's two). */
static unsigned mark_locked(uint64_t now, bool explicit_mark, unsigned optimizers,
                            const struct step_cut *at, unsigned optimizers_before, uint32_t tid)
{
    bool active_ended = false, deep = false, request = false;
    if (explicit_mark)
        steps.explicit_marks = true;
    else
        steps.auto_marks = true;
    if (explicit_mark || !steps.explicit_marks) {
        steps.closing_tid = tid;
        for (int part = at ? 0 : 1; part < 2; part++) {
            unsigned n = explicit_mark ? 0 : part == 0 ? optimizers_before : optimizers;
            steps.closing_optimizers = n;
            if (steps.number > 0)
                steps.optimizers_seen[n < REP_OPTIMIZERS_KEPT ? n : REP_OPTIMIZERS_KEPT]++;
            bool d = false;
            active_ended |= step_close_locked(now, false, &d, part == 0 ? at : NULL, &request);
            deep |= d;
        }
        steps.marker_tid = tid;
    }
    steps.cut.valid = false;
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
    struct step_cut at = steps.cut;
    bool use_cut = split && at.valid && at.step == steps.number && at.now <= now;
    unsigned r =
        mark_locked(now, explicit_mark, optimizers, use_cut ? &at : NULL, optimizers_before, tid);
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
    steps.cut = (struct step_cut){
        .valid = true,
        .step = steps.number,
        .now = now,
        .syncs = atomic_load_explicit(&step_open.syncs, memory_order_relaxed),
        .blocked_ns = atomic_load_explicit(&step_open.blocked_ns, memory_order_relaxed),
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
    proc->steps = NULL;
    proc->step_list = &steps.log;
    proc->nsteps = steps.log.n;
    proc->steps_omitted = steps.totals.omitted;
    proc->ranges = steps.ranges;
    proc->nranges = steps.nranges;
    proc->ranges_omitted = steps.ranges_omitted;
    proc->attribution_steps = steps.attribution_steps;
    proc->steps_seen = steps.number; /* the final close advanced past the last step */
    proc->active_steps = steps.totals.active;
    proc->syncs = steps.totals.syncs;
    proc->blocked_ns = steps.totals.blocked_ns;
    proc->launches = steps.totals.launches;
    proc->wall_ns = steps.totals.wall_ns;
    proc->startup_closed = steps.startup_closed;
    proc->startup = steps.startup;
    proc->step_source = steps.explicit_marks ? "syncspy.step()"
                        : steps.auto_marks   ? "optimizer.step()"
                                             : NULL;
    proc->optimizers = steps.explicit_marks ? 0 : rep_optimizers_usual(steps.optimizers_seen);
    proc->optimizers_max = steps.explicit_marks ? 0 : rep_optimizers_most(steps.optimizers_seen);
    pthread_mutex_unlock(&step_lock);
}

uint64_t steps_unrecorded(void)
{
    return atomic_load_explicit(&live.unrecorded_steps, memory_order_relaxed);
}

uint32_t steps_marker_tid(void)
{
    pthread_mutex_lock(&step_lock);
    uint32_t tid = steps.marker_tid;
    pthread_mutex_unlock(&step_lock);
    return tid;
}

pthread_mutex_t *steps_lock(void)
{
    return &step_lock;
}

/* The child: its one thread is the one that forked, which held step_lock across fork() and has
 * unlocked it. The parent's queued steps and step log are its own: the chunks stay mapped (the
 * parent's pages, copied on write), the log is unmapped. */
void steps_atfork_child(uint64_t now)
{
    own_tid = 0; /* the thread that forked: a new id in the child */
    if (steps.log.bytes)
        munmap(steps.log.bytes, STEP_LOG_BYTES);
    first_chunk.head = first_chunk.tail = 0;
    first_chunk.next = NULL;
    steps =
        (struct steps_state){.q = {.read = &first_chunk, .write = &first_chunk}, .start_ns = now};
    memset(&live, 0, sizeof live); /* the child's one thread: no other writer */
    memset(&step_open, 0, sizeof step_open);
    atomic_store(&steps_now, 0);
    set_active(step_recorded(0));
}
