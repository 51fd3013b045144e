/* cli/trace_read.c: trace.bin (output/trace_format.h) back into the report model and the
 * timeline. CLI only. Owns the checks a hostile file meets: the header, each record's length
 * before its body is touched, ids defined once and before use (hash maps, never arrays indexed
 * by id), and caps on everything kept. Never recurses; never reads past what it was given. */
#include "cli/trace_read.h"
#include "cli/chunks.h"
#include "cli/input.h"
#include "output/trace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "trace.bin is little-endian: this reader copies records as they are");

#define WINDOW_BYTES (4u << 20) /* >= TRACE_MAX_RECORD_BYTES + TRACE_READ_MAX_HEADER_BYTES */
#define NO_INDEX UINT32_MAX
#define ARENA_CHUNK_BYTES 65536 /* strings, frames: a new chunk holds at least this */

_Static_assert(WINDOW_BYTES >= TRACE_MAX_RECORD_BYTES + TRACE_READ_MAX_HEADER_BYTES, "window");

/* ---- the input: a memory buffer, or a file read forward through a window -------------------- */

struct src {
    const uint8_t *mem; /* the memory source, else NULL */
    size_t memlen;
    int fd;
    uint8_t *buf;  /* WINDOW_BYTES */
    uint64_t base; /* file offset of buf[0] */
    size_t have;   /* valid bytes in buf */
    bool eof;
    int rerr; /* errno of a failed read */
    uint64_t file_bytes;
};

/* Bytes [off, off + n) (n <= WINDOW_BYTES); *got < n only at the end of the input or after a
 * read error. off only moves forward, and never past what an earlier call returned. */
static const uint8_t *src_get(struct src *s, uint64_t off, size_t n, size_t *got)
{
    if (s->mem) {
        size_t left = off < s->memlen ? s->memlen - (size_t)off : 0;
        *got = left < n ? left : n;
        return s->mem + (off < s->memlen ? off : s->memlen);
    }
    if (off + n > s->base + s->have && !s->eof && !s->rerr) {
        size_t keep = off < s->base + s->have ? (size_t)(s->base + s->have - off) : 0;
        if (keep)
            memmove(s->buf, s->buf + (off - s->base), keep);
        s->base = off;
        s->have = keep;
        while (s->have < n && !s->eof) {
            ssize_t k = read(s->fd, s->buf + s->have, WINDOW_BYTES - s->have);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                s->rerr = errno ? errno : EIO;
                break;
            }
            if (k == 0)
                s->eof = true;
            s->have += (size_t)k;
        }
    }
    size_t at = off >= s->base && off - s->base <= s->have ? (size_t)(off - s->base) : s->have;
    size_t left = s->have - at;
    *got = left < n ? left : n;
    return s->buf + at;
}

/* ---- the reader's state ------------------------------------------------------------------- */

/* id -> index, open addressing with linear probing; vals[i] == 0 marks an empty slot, so any
 * 32-bit key (tid 0 included) can be stored. */
struct idmap {
    uint32_t *keys;
    uint32_t *vals; /* index + 1 */
    size_t cap;     /* a power of two, or 0 */
    size_t n;
};

/* What a successful read leaves behind, hung on rep_process.owned. */
struct trace_store {
    struct chunks chunks;
    struct rep_site *sites;
    struct rep_step *steps;
    struct trace_step_event *step_events;
    struct trace_sync_event *syncs;
    struct trace_launch_event *launches;
    struct trace_thread_name *threads;
    struct rep_thread *totals; /* the report model's threads */
};

struct tstack {
    uint32_t first, n;            /* frame indices in stack_pool[first .. first + n) */
    const struct rep_frame *made; /* the frames, built on first use */
};

struct tsite {
    uint32_t site_id;
    uint32_t stack; /* index into stacks, or NO_INDEX */
    uint32_t stack_id;
    const char *api;
    uint64_t count, blocked_ns, max_ns;
    uint32_t threads;           /* 0: not known */
    struct rep_phase_raw phase; /* 0 but count and ns before 1.2 */
    uint64_t pinned;            /* 0 before 1.7 */
};

struct tthread { /* THREAD_TOTALS: the last one of a tid counts */
    uint32_t tid;
    struct rep_phase_raw phase;
};

struct tstep {
    struct trace_step_event ev;
    uint64_t seq; /* file order: the later of two records of one step wins */
};

struct tdrops {
    uint64_t syncs, launches;
};

/* Steps counted in the totals, not listed: records (active or not), and the active ones' sums;
 * folded: those of STEP_RUN records. */
struct step_sums {
    uint64_t records, active, attributed, syncs, blocked, launches, wall, folded;
    uint64_t summed; /* active steps of runs that keep only their sums (no per-step counts) */
};

static uint64_t sat_add(uint64_t a, uint64_t b);

static void sums_add(struct step_sums *to, const struct step_sums *a)
{
    to->records = sat_add(to->records, a->records);
    to->active = sat_add(to->active, a->active);
    to->attributed = sat_add(to->attributed, a->attributed);
    to->syncs = sat_add(to->syncs, a->syncs);
    to->blocked = sat_add(to->blocked, a->blocked);
    to->launches = sat_add(to->launches, a->launches);
    to->wall = sat_add(to->wall, a->wall);
    to->folded = sat_add(to->folded, a->folded);
    to->summed = sat_add(to->summed, a->summed);
}

/* A growable array: the element count in use and the capacity. */
struct vec {
    void *p;
    size_t n, cap;
};

struct reader {
    bool identity; /* the header has 1.3's identity part (and so write_errno) */
    const char *name;
    char *err;
    size_t errlen;
    const struct trace_read_opts *opts;
    uint64_t max_events;
    struct trace_store *st;
    struct rep_process *out;
    struct trace_events *ev;
    uint64_t mem_used;
    uint64_t at; /* offset of the record being read, for messages */
    bool failed;

    struct idmap string_ids, frame_ids, stack_ids, site_ids, thread_ids, drop_ids, totals_ids;
    struct vec strings;    /* const char * */
    struct vec frames;     /* struct rep_frame */
    struct vec stacks;     /* struct tstack */
    struct vec stack_pool; /* uint32_t frame indices */
    struct vec sites;      /* struct tsite */
    struct vec steps;      /* struct tstep */
    struct vec syncs;      /* struct trace_sync_event */
    struct vec launches;   /* struct trace_launch_event */
    struct vec threads;    /* struct trace_thread_name */
    struct vec drops;      /* struct tdrops, parallel to drop_ids */
    struct vec totals;     /* struct tthread, parallel to totals_ids */

    struct tstep *tail;     /* the latest steps past TRACE_READ_MAX_STEPS: a ring */
    size_t tail_n, tail_at; /* how many it holds; the slot of the oldest */
    uint64_t steps_seen, step_seq;
    struct trace_bound bound;  /* the last BOUND record (bound_bytes 0: none) */
    uint64_t bound_seq;        /* step_seq at the last BOUND record */
    uint64_t bound_steps_seen; /* steps_seen then */
    uint64_t end_steps_seen;   /* the END record's (0: none, or an older writer's) */
    /* steps in the totals only (past TRACE_READ_MAX_STEPS, or folded): those read before the
     * last BOUND record, and those after it (past the half, the totals are rewritten with a
     * BOUND record: a killed process's steps after its last one are not in its site totals) */
    struct step_sums extra, pending;
    struct trace_steps_lost lost; /* the last STEPS_LOST: step records the agent had no room for */
    uint64_t first_steps_end;     /* the timeline's first steps: those before this one */
    uint64_t end_mono_ns, unattributed;
    uint64_t start_mono_ns, last_ns; /* the header's start; the latest time any record has */
    bool ended;
    uint32_t marker_tid;                          /* the thread whose mark ended the last step */
    uint64_t optimizers[REP_OPTIMIZERS_KEPT + 1]; /* training steps by their optimizers (STEP's) */
    /* trace_follow (syncspy top): steps and syncs go to the sink, not kept */
    const struct trace_follow_sink *sink;
    uint64_t next_off;        /* where the walk stopped: the first record not read */
    uint64_t exit_step_plus1; /* the step of the last partial STEP record, + 1 (0: none) */
};

static bool fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct reader *r, const char *fmt, ...)
{
    if (r->failed)
        return false;
    r->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return false;
}

/* "NAME is corrupt at byte N: WHAT" */
static bool corrupt(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool corrupt(struct reader *r, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fail(r, "%s is corrupt at byte %llu: %s", r->name, (unsigned long long)r->at, what);
}

static bool nomem(struct reader *r)
{
    if (r->mem_used > TRACE_READ_MAX_MEMORY)
        return fail(r,
                    "%s needs more than %llu MiB to hold its strings, frames, stacks and "
                    "sites (at byte %llu): is it corrupt?",
                    r->name, (unsigned long long)(TRACE_READ_MAX_MEMORY >> 20),
                    (unsigned long long)r->at);
    return fail(r, "out of memory reading %s (at byte %llu)", r->name, (unsigned long long)r->at);
}

/* Counts bytes about to be allocated against TRACE_READ_MAX_MEMORY. */
static bool charge(struct reader *r, size_t bytes)
{
    r->mem_used += bytes;
    return r->mem_used <= TRACE_READ_MAX_MEMORY;
}

/* Room for one more element in v (doubling: never more than twice what the records asked). */
static void *vec_push(struct reader *r, struct vec *v, size_t elem)
{
    if (v->n == v->cap) {
        size_t ncap = array_doubled(v->cap, elem);
        if (!ncap || !charge(r, (ncap - v->cap) * elem) ||
            !array_realloc(&v->p, &v->cap, ncap, elem)) {
            nomem(r);
            return NULL;
        }
    }
    return (char *)v->p + v->n++ * elem;
}

static void *arena_alloc(struct reader *r, size_t n)
{
    struct chunks *cs = &r->st->chunks;
    size_t cost = chunks_cost(cs, n, ARENA_CHUNK_BYTES);
    void *p = cost && !charge(r, cost) ? NULL : chunks_alloc(cs, n, ARENA_CHUNK_BYTES);
    if (!p)
        nomem(r);
    return p;
}

static uint32_t hash32(uint32_t k)
{
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32);
}

static uint32_t idmap_get(const struct idmap *m, uint32_t key)
{
    if (!m->cap)
        return NO_INDEX;
    size_t mask = m->cap - 1;
    for (size_t i = hash32(key) & mask;; i = (i + 1) & mask) {
        if (!m->vals[i])
            return NO_INDEX;
        if (m->keys[i] == key)
            return m->vals[i] - 1;
    }
}

static void idmap_place(uint32_t *keys, uint32_t *vals, size_t cap, uint32_t key, uint32_t val)
{
    size_t mask = cap - 1, i = hash32(key) & mask;
    while (vals[i])
        i = (i + 1) & mask;
    keys[i] = key;
    vals[i] = val;
}

/* Adds key -> index (the key must be new); false when out of memory. */
static bool idmap_add(struct reader *r, struct idmap *m, uint32_t key, uint32_t index)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        if (!charge(r, ncap * 2 * sizeof(uint32_t)))
            return nomem(r);
        uint32_t *keys = malloc(ncap * sizeof *keys), *vals = calloc(ncap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return nomem(r);
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->vals[i])
                idmap_place(keys, vals, ncap, m->keys[i], m->vals[i]);
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = ncap;
    }
    idmap_place(m->keys, m->vals, m->cap, key, index + 1);
    m->n++;
    return true;
}

static void idmap_free(struct idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- lookups that records make ------------------------------------------------------------ */

/* String id -> the string ("" for id 0); NULL after an error naming what referred to it. */
static const char *string_ref(struct reader *r, uint32_t id, const char *what)
{
    if (id == 0)
        return "";
    uint32_t i = idmap_get(&r->string_ids, id);
    if (i == NO_INDEX) {
        corrupt(r, "%s refers to string %u, which no earlier record defines", what, id);
        return NULL;
    }
    return ((const char **)r->strings.p)[i];
}

/* Stack id -> index (NO_INDEX for id 0); false after an error. */
static bool stack_ref(struct reader *r, uint32_t id, const char *what, uint32_t *index)
{
    *index = NO_INDEX;
    if (id == 0)
        return true;
    *index = idmap_get(&r->stack_ids, id);
    if (*index == NO_INDEX)
        return corrupt(r, "%s refers to stack %u, which no earlier record defines", what, id);
    return true;
}

/* A stack's frames as rep_frames, built once (a stack's frames are all defined before it). */
static const struct rep_frame *stack_frames(struct reader *r, uint32_t index, uint32_t *n)
{
    struct tstack *s = &((struct tstack *)r->stacks.p)[index];
    *n = s->n;
    if (s->made || s->n == 0)
        return s->made;
    struct rep_frame *f = arena_alloc(r, (size_t)s->n * sizeof *f);
    if (!f)
        return NULL;
    const uint32_t *pool = r->stack_pool.p;
    const struct rep_frame *frames = r->frames.p;
    for (uint32_t i = 0; i < s->n; i++)
        f[i] = frames[pool[s->first + i]];
    s->made = f;
    return f;
}

/* ---- records ------------------------------------------------------------------------------ */

static bool rec_string(struct reader *r, const uint8_t *p, uint32_t bytes)
{
    struct trace_string s;
    memcpy(&s, p, sizeof s);
    if (s.id == 0)
        return corrupt(r, "a string with id 0");
    if (s.length > TRACE_MAX_STRING_BYTES)
        return corrupt(r, "string %u is %u bytes long, more than %u", s.id, s.length,
                       TRACE_MAX_STRING_BYTES);
    if (s.length > bytes - sizeof s)
        return corrupt(r, "string %u is %u bytes long, more than its %u-byte record holds", s.id,
                       s.length, bytes);
    if (idmap_get(&r->string_ids, s.id) != NO_INDEX)
        return corrupt(r, "string %u is defined twice", s.id);
    char *text = arena_alloc(r, (size_t)s.length + 1);
    const char **slot = text ? vec_push(r, &r->strings, sizeof *slot) : NULL;
    if (!slot)
        return false;
    memcpy(text, p + sizeof s, s.length);
    text[s.length] = '\0';
    *slot = text;
    return idmap_add(r, &r->string_ids, s.id, (uint32_t)(r->strings.n - 1));
}

static bool rec_frame(struct reader *r, const uint8_t *p)
{
    struct trace_frame f;
    memcpy(&f, p, sizeof f);
    if (f.id == 0)
        return corrupt(r, "a frame with id 0");
    if (idmap_get(&r->frame_ids, f.id) != NO_INDEX)
        return corrupt(r, "frame %u is defined twice", f.id);
    char what[32];
    snprintf(what, sizeof what, "frame %u", f.id);
    struct rep_frame rf = {.line = f.line,
                           .offset = f.offset,
                           .python = f.kind == TRACE_FRAME_PYTHON,
                           .mark = f.kind == TRACE_FRAME_BACKWARD ? REP_MARK_BACKWARD
                                   : f.kind == TRACE_FRAME_CALLER ? REP_MARK_CALLER
                                   : f.kind == TRACE_FRAME_UNSEEN ? REP_MARK_UNSEEN
                                                                  : REP_MARK_NONE};
    if (!(rf.function = string_ref(r, f.function, what)) ||
        !(rf.module = string_ref(r, f.module, what)) || !(rf.file = string_ref(r, f.file, what)))
        return false;
    if (r->frames.n >= NO_INDEX - 1)
        return corrupt(r, "more than 2^32 frames");
    struct rep_frame *slot = vec_push(r, &r->frames, sizeof *slot);
    if (!slot)
        return false;
    *slot = rf;
    return idmap_add(r, &r->frame_ids, f.id, (uint32_t)(r->frames.n - 1));
}

/* 1.6: a generated-code frame named after it was written: its names replace the frame's. */
static bool rec_frame_name(struct reader *r, const uint8_t *p)
{
    struct trace_frame f;
    memcpy(&f, p, sizeof f);
    uint32_t at = idmap_get(&r->frame_ids, f.id);
    if (at == NO_INDEX)
        return corrupt(r, "a name for frame %u, which is not defined", f.id);
    struct rep_frame *slot = (struct rep_frame *)r->frames.p + at;
    if (!slot->python || f.kind != TRACE_FRAME_PYTHON)
        return corrupt(r, "a name for frame %u, which is not a Python frame", f.id);
    char what[32];
    snprintf(what, sizeof what, "frame %u", f.id);
    const char *function, *module, *file;
    if (!(function = string_ref(r, f.function, what)) ||
        !(module = string_ref(r, f.module, what)) || !(file = string_ref(r, f.file, what)))
        return false;
    slot->function = function;
    slot->module = module;
    slot->file = file;
    slot->line = f.line;
    /* stacks already made (a timeline's events take theirs as they are read, before a name
     * that comes later in the file) get the name too: their copies share one array each */
    const uint32_t *pool = r->stack_pool.p;
    struct tstack *stacks = r->stacks.p;
    for (size_t i = 0; i < r->stacks.n; i++) {
        if (!stacks[i].made)
            continue;
        struct rep_frame *made = (struct rep_frame *)stacks[i].made;
        for (uint32_t k = 0; k < stacks[i].n; k++)
            if (pool[stacks[i].first + k] == at)
                made[k] = *slot;
    }
    return true;
}

static bool rec_stack(struct reader *r, const uint8_t *p, uint32_t bytes)
{
    struct trace_stack s;
    memcpy(&s, p, sizeof s);
    if (s.id == 0)
        return corrupt(r, "a stack with id 0");
    if (s.nframes > TRACE_MAX_FRAMES)
        return corrupt(r, "stack %u has %u frames, more than %u", s.id, s.nframes,
                       TRACE_MAX_FRAMES);
    if ((uint64_t)s.nframes * 4 > bytes - sizeof s)
        return corrupt(r, "stack %u has %u frames, more than its %u-byte record holds", s.id,
                       s.nframes, bytes);
    if (idmap_get(&r->stack_ids, s.id) != NO_INDEX)
        return corrupt(r, "stack %u is defined twice", s.id);
    if (r->stack_pool.n > (size_t)UINT32_MAX - TRACE_MAX_FRAMES || r->stacks.n >= NO_INDEX - 1)
        return corrupt(r, "more frames in stacks than this syncspy can hold");
    size_t first = r->stack_pool.n;
    for (uint32_t i = 0; i < s.nframes; i++) {
        uint32_t id;
        memcpy(&id, p + sizeof s + 4 * (size_t)i, sizeof id);
        uint32_t index = idmap_get(&r->frame_ids, id);
        if (index == NO_INDEX) {
            r->stack_pool.n = first;
            return corrupt(r,
                           "stack %u lists frame %u, which no earlier record defines as a "
                           "frame",
                           s.id, id);
        }
        uint32_t *slot = vec_push(r, &r->stack_pool, sizeof *slot);
        if (!slot)
            return false;
        *slot = index;
    }
    struct tstack *t = vec_push(r, &r->stacks, sizeof *t);
    if (!t)
        return false;
    *t = (struct tstack){.first = (uint32_t)first, .n = s.nframes};
    return idmap_add(r, &r->stack_ids, s.id, (uint32_t)(r->stacks.n - 1));
}

/* Drops the kept events of the steps from sample_from on that the stride now leaves out. */
static void thin_events(struct reader *r)
{
    struct trace_events *ev = r->ev;
    uint64_t stride = ev->sample_stride;
    struct trace_sync_event *s = r->syncs.p;
    struct trace_launch_event *l = r->launches.p;
    size_t k = 0;
    for (size_t i = 0; i < r->syncs.n; i++)
        if (s[i].step < ev->sample_from || s[i].step % stride == 0)
            s[k++] = s[i];
    ev->events_omitted += r->syncs.n - k;
    r->syncs.n = k;
    k = 0;
    for (size_t i = 0; i < r->launches.n; i++)
        if (l[i].step < ev->sample_from || l[i].step % stride == 0)
            l[k++] = l[i];
    ev->events_omitted += r->launches.n - k;
    r->launches.n = k;
}

/* Whether the timeline keeps an event of step `step` (else it is counted as omitted): every
 * event until half the cap is used (the first steps), then from the step after those on the
 * events of every stride-th step (step % stride == 0), the stride doubling whenever the cap is
 * full (the kept events of the steps it then leaves out dropped), so what is kept spreads over
 * the whole trace in fixed memory. */
static bool timeline_keeps(struct reader *r, uint64_t step)
{
    struct trace_events *ev = r->ev;
    size_t n = r->syncs.n + r->launches.n;
    if (!ev->sample_stride) {
        if (n < r->max_events / 2) {
            if (step >= r->first_steps_end)
                r->first_steps_end = sat_add(step, 1);
            return true;
        }
        ev->sample_stride = 1;
        ev->sample_from = r->first_steps_end;
    }
    if (step < ev->sample_from) /* a late event of one of the first steps */
        return n < r->max_events;
    while (n >= r->max_events && step % ev->sample_stride == 0 &&
           ev->sample_stride < (1ull << 62)) {
        ev->sample_stride *= 2;
        thin_events(r);
        n = r->syncs.n + r->launches.n;
    }
    return step % ev->sample_stride == 0 && n < r->max_events;
}

/* Room for one more timeline event of step `step`, or NULL (counted as omitted). */
static void *event_slot(struct reader *r, struct vec *v, size_t elem, uint64_t step)
{
    if (!timeline_keeps(r, step)) {
        r->ev->events_omitted++;
        return NULL;
    }
    return vec_push(r, v, elem);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static void saw_time(struct reader *r, uint64_t ns)
{
    if (ns > r->last_ns)
        r->last_ns = ns;
}

static bool rec_sync(struct reader *r, const uint8_t *p)
{
    struct trace_sync s;
    memcpy(&s, p, sizeof s);
    uint32_t stack;
    const char *api = string_ref(r, s.api_name, "a sync");
    if (!api || !stack_ref(r, s.stack_id, "a sync", &stack))
        return false;
    saw_time(r, s.end_ns);
    if (!r->ev && !r->sink)
        return true;
    if (!r->sink && !timeline_keeps(r, s.step)) {
        r->ev->events_omitted++;
        return true;
    }
    struct trace_sync_event e = {.start_ns = s.start_ns,
                                 .end_ns = s.end_ns < s.start_ns ? s.start_ns : s.end_ns,
                                 .stream = s.stream,
                                 .bytes = s.bytes,
                                 .step = s.step,
                                 .tid = s.tid,
                                 .dir = s.dir,
                                 .api = api};
    if (stack != NO_INDEX && !(e.frames = stack_frames(r, stack, &e.nframes)) && e.nframes)
        return false;
    if (r->sink) { /* followed: to the sink, not kept */
        if (r->sink->sync)
            r->sink->sync(r->sink->ctx, &e);
        return true;
    }
    struct trace_sync_event *slot = vec_push(r, &r->syncs, sizeof *slot);
    if (slot)
        *slot = e;
    return !r->failed;
}

static bool rec_launch(struct reader *r, const uint8_t *p)
{
    struct trace_launch l;
    memcpy(&l, p, sizeof l);
    const char *api = string_ref(r, l.api_name, "a launch"), *kernel;
    if (!api || !(kernel = string_ref(r, l.kernel_name, "a launch")))
        return false;
    if (!r->ev)
        return true;
    struct trace_launch_event *slot = event_slot(r, &r->launches, sizeof *slot, l.step);
    if (slot)
        *slot = (struct trace_launch_event){.time_ns = l.time_ns,
                                            .stream = l.stream,
                                            .step = l.step,
                                            .tid = l.tid,
                                            .api = api,
                                            .kernel = kernel};
    return !r->failed;
}

/* A record of a type that grew in a minor version: as much as the file has, the rest zero. */
static void copy_record(void *dst, size_t size, const uint8_t *p, uint32_t bytes)
{
    memset(dst, 0, size);
    memcpy(dst, p, bytes < size ? bytes : size);
}

/* A step in the totals only, not listed (rep_process.steps_omitted). */
static void omit_step(struct reader *r, const struct tstep *t)
{
    const struct trace_step_event *e = &t->ev;
    struct step_sums a = {.records = 1};
    if (r->ev)
        r->ev->events_omitted++;
    if (e->active)
        a = (struct step_sums){.records = 1,
                               .active = 1,
                               .attributed = e->attributed,
                               .syncs = e->syncs,
                               .blocked = e->blocked_ns,
                               .launches = e->launches,
                               .wall = e->end_ns - e->start_ns};
    sums_add(t->seq < r->bound_seq ? &r->extra : &r->pending, &a);
}

/* Past the first TRACE_READ_MAX_STEPS steps: into the ring of the latest ones, the oldest of a
 * full ring going to the totals only. */
static bool tail_step(struct reader *r, const struct tstep *t)
{
    if (!r->tail) {
        if (!charge(r, TRACE_READ_TAIL_STEPS * sizeof *r->tail) ||
            !(r->tail = malloc(TRACE_READ_TAIL_STEPS * sizeof *r->tail)))
            return nomem(r);
    }
    if (r->tail_n < TRACE_READ_TAIL_STEPS) {
        r->tail[(r->tail_at + r->tail_n++) % TRACE_READ_TAIL_STEPS] = *t;
        return true;
    }
    omit_step(r, &r->tail[r->tail_at]);
    r->tail[r->tail_at] = *t;
    r->tail_at = (r->tail_at + 1) % TRACE_READ_TAIL_STEPS;
    return true;
}

static bool rec_step(struct reader *r, const uint8_t *p, uint32_t bytes)
{
    struct trace_step s;
    copy_record(&s, sizeof s, p, bytes);
    struct trace_step_event e = {.step = s.step,
                                 .start_ns = s.start_ns,
                                 .end_ns = s.end_ns < s.start_ns ? s.start_ns : s.end_ns,
                                 .syncs = s.syncs,
                                 .blocked_ns = s.blocked_ns,
                                 .launches = s.launches,
                                 .active = s.active != 0,
                                 .partial = s.partial != 0,
                                 .tid = s.tid,
                                 .source = s.source,
                                 .attributed = s.attributed != 0};
    if (sat_add(s.step, 1) > r->steps_seen)
        r->steps_seen = sat_add(s.step, 1);
    if (s.step > 0 && !s.partial)
        r->optimizers[s.optimizers < REP_OPTIMIZERS_KEPT ? s.optimizers : REP_OPTIMIZERS_KEPT]++;
    saw_time(r, e.end_ns);
    if (r->sink) { /* followed: the sink keeps what it needs of them */
        if (e.partial)
            r->exit_step_plus1 = sat_add(e.step, 1);
        else if (e.source) /* as build_startup: the thread whose mark ended the last step */
            r->marker_tid = e.tid;
        if (r->sink->step)
            r->sink->step(r->sink->ctx, &e);
        return true;
    }
    struct tstep t = {.ev = e, .seq = r->step_seq++};
    if (r->steps.n >= TRACE_READ_MAX_STEPS)
        return tail_step(r, &t);
    struct tstep *slot = vec_push(r, &r->steps, sizeof *slot);
    if (!slot)
        return false;
    *slot = t;
    return true;
}

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* A run's per-step counts (trace_format.h) against its sums; false after an error. */
static bool run_counts(struct reader *r, const struct trace_step_run *t, const uint8_t *p,
                       const uint8_t *end)
{
    uint64_t steps = 0, syncs = 0, launches = 0, lo = UINT64_MAX, hi = 0;
    while (steps < t->active) {
        uint64_t n, s, l;
        if (!get_varint(&p, end, &n) || !get_varint(&p, end, &s) || !get_varint(&p, end, &l) ||
            n == 0 || n > t->active - steps)
            return corrupt(r,
                           "a run's per-step counts are cut or do not add up to its %llu active "
                           "steps",
                           (unsigned long long)t->active);
        steps += n;
        syncs = sat_add(syncs, s > UINT64_MAX / n ? UINT64_MAX : s * n);
        launches = sat_add(launches, l > UINT64_MAX / n ? UINT64_MAX : l * n);
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
    }
    for (; p < end; p++)
        if (*p)
            return corrupt(r, "a run's per-step counts go on past its %llu active steps",
                           (unsigned long long)t->active);
    if (syncs != t->syncs || launches != t->launches ||
        (t->active && (lo != t->syncs_min || hi != t->syncs_max)))
        return corrupt(
            r,
            "a run's per-step counts add up to %llu syncs and %llu launches (%llu to %llu a "
            "step), its sums say %llu and %llu (%llu to %llu)",
            (unsigned long long)syncs, (unsigned long long)launches, (unsigned long long)lo,
            (unsigned long long)hi, (unsigned long long)t->syncs, (unsigned long long)t->launches,
            (unsigned long long)t->syncs_min, (unsigned long long)t->syncs_max);
    return true;
}

/* 1.4: steps folded past half the bound: in the totals, not listed. */
static bool rec_step_run(struct reader *r, const uint8_t *p, uint32_t bytes)
{
    struct trace_step_run t;
    memcpy(&t, p, sizeof t);
    if (t.steps == 0 || t.last_step < t.first_step || t.steps - 1 > t.last_step - t.first_step ||
        t.active > t.steps || (t.active && t.syncs_min > t.syncs_max))
        return corrupt(r,
                       "a run of %llu steps (%llu active) numbered %llu to %llu with %llu to %llu "
                       "syncs a step",
                       (unsigned long long)t.steps, (unsigned long long)t.active,
                       (unsigned long long)t.first_step, (unsigned long long)t.last_step,
                       (unsigned long long)t.syncs_min, (unsigned long long)t.syncs_max);
    if (bytes > sizeof t && !run_counts(r, &t, p + sizeof t, p + bytes))
        return false;
    /* per-step counts known: listed after the record, or one count for every active step */
    bool counted = bytes > sizeof t || t.active == 0 || t.syncs_min == t.syncs_max;
    if (sat_add(t.last_step, 1) > r->steps_seen)
        r->steps_seen = sat_add(t.last_step, 1);
    if (r->sink) {
        if (r->sink->run)
            r->sink->run(r->sink->ctx, &t);
        return true;
    }
    sums_add(&r->pending, &(struct step_sums){.records = t.steps,
                                              .active = t.active,
                                              .syncs = t.syncs,
                                              .blocked = t.blocked_ns,
                                              .launches = t.launches,
                                              .wall = t.wall_ns,
                                              .folded = t.steps,
                                              .summed = counted ? 0 : t.active});
    return true;
}

static bool rec_bound(struct reader *r, const uint8_t *p)
{
    struct trace_bound b;
    memcpy(&b, p, sizeof b); /* cumulative: the last one counts */
    if (b.detail_steps > b.steps_seen || b.sampled_from > b.steps_seen)
        return corrupt(r,
                       "the bound's record says %llu steps (from step %llu on, a sample) of %llu "
                       "have their events",
                       (unsigned long long)b.detail_steps, (unsigned long long)b.sampled_from,
                       (unsigned long long)b.steps_seen);
    r->bound = b;
    sums_add(&r->extra, &r->pending); /* the totals that follow count the steps before it */
    r->pending = (struct step_sums){0};
    r->bound_seq = r->step_seq;
    r->bound_steps_seen = r->steps_seen;
    return true;
}

static bool rec_site_totals(struct reader *r, const uint8_t *p, uint32_t bytes)
{
    struct trace_site_totals t;
    copy_record(&t, sizeof t, p, bytes);
    if (t.site_id == 0)
        return corrupt(r, "site totals with site id 0");
    char what[40];
    snprintf(what, sizeof what, "site %u", t.site_id);
    uint32_t stack;
    const char *api = string_ref(r, t.api_name, what);
    if (!api || !stack_ref(r, t.stack_id, what, &stack))
        return false;
    struct tsite s = {.site_id = t.site_id,
                      .stack = stack,
                      .api = api,
                      .count = t.count,
                      .blocked_ns = t.blocked_ns,
                      .max_ns = t.max_ns,
                      .threads = t.threads,
                      .phase = {t.count, t.blocked_ns, t.startup_count, t.startup_ns, t.seen_step,
                                t.base_count, t.base_ns},
                      .pinned = t.pinned};
    uint32_t index = idmap_get(&r->site_ids, t.site_id);
    if (index != NO_INDEX) { /* the last record of a site is its count at the last flush */
        ((struct tsite *)r->sites.p)[index] = s;
        return true;
    }
    struct tsite *slot = vec_push(r, &r->sites, sizeof *slot);
    if (!slot)
        return false;
    *slot = s;
    return idmap_add(r, &r->site_ids, t.site_id, (uint32_t)(r->sites.n - 1));
}

static bool rec_thread(struct reader *r, const uint8_t *p)
{
    struct trace_thread t;
    memcpy(&t, p, sizeof t);
    const char *name = string_ref(r, t.name, "a thread");
    if (!name)
        return false;
    uint32_t index = idmap_get(&r->thread_ids, t.tid);
    if (index != NO_INDEX) {
        ((struct trace_thread_name *)r->threads.p)[index].name = name;
        return true;
    }
    struct trace_thread_name *slot = vec_push(r, &r->threads, sizeof *slot);
    if (!slot)
        return false;
    *slot = (struct trace_thread_name){.tid = t.tid, .name = name};
    return idmap_add(r, &r->thread_ids, t.tid, (uint32_t)(r->threads.n - 1));
}

static bool rec_thread_totals(struct reader *r, const uint8_t *p)
{
    struct trace_thread_totals t;
    memcpy(&t, p, sizeof t);
    struct tthread v = {.tid = t.tid,
                        .phase = {t.count, t.blocked_ns, t.startup_count, t.startup_ns, t.seen_step,
                                  t.base_count, t.base_ns}};
    uint32_t index = idmap_get(&r->totals_ids, t.tid);
    if (index != NO_INDEX) { /* cumulative: the last one counts */
        ((struct tthread *)r->totals.p)[index] = v;
        return true;
    }
    struct tthread *slot = vec_push(r, &r->totals, sizeof *slot);
    if (!slot)
        return false;
    *slot = v;
    return idmap_add(r, &r->totals_ids, t.tid, (uint32_t)(r->totals.n - 1));
}

static bool rec_drops(struct reader *r, const uint8_t *p)
{
    struct trace_drops d;
    memcpy(&d, p, sizeof d);
    uint32_t index = idmap_get(&r->drop_ids, d.tid);
    struct tdrops v = {.syncs = d.syncs_dropped, .launches = d.launches_dropped};
    if (index != NO_INDEX) { /* cumulative per thread: the last one counts */
        ((struct tdrops *)r->drops.p)[index] = v;
        return true;
    }
    struct tdrops *slot = vec_push(r, &r->drops, sizeof *slot);
    if (!slot)
        return false;
    *slot = v;
    return idmap_add(r, &r->drop_ids, d.tid, (uint32_t)(r->drops.n - 1));
}

static bool rec_steps_lost(struct reader *r, const uint8_t *p)
{
    memcpy(&r->lost, p, sizeof r->lost); /* cumulative: the last one counts */
    if (r->lost.active > r->lost.records)
        return corrupt(r, "%llu active step records lost of %llu lost in all",
                       (unsigned long long)r->lost.active, (unsigned long long)r->lost.records);
    return true;
}

static bool rec_end(struct reader *r, const uint8_t *p, uint32_t bytes)
{
    struct trace_end e = {0};
    memcpy(&e, p, bytes < sizeof e ? bytes : sizeof e);
    r->ended = true;
    r->end_mono_ns = e.end_mono_ns;
    r->unattributed = e.unattributed_syncs;
    r->end_steps_seen = e.steps_seen;
    return true;
}

/* The smallest record of each known type; 0 for a type this reader does not know. */
static size_t record_min_bytes(uint32_t type)
{
    switch (type) {
    case TREC_STRING: return sizeof(struct trace_string);
    case TREC_FRAME: return sizeof(struct trace_frame);
    case TREC_FRAME_NAME: return sizeof(struct trace_frame);
    case TREC_STACK: return sizeof(struct trace_stack);
    case TREC_SYNC: return sizeof(struct trace_sync);
    case TREC_LAUNCH: return sizeof(struct trace_launch);
    case TREC_STEP: return TRACE_STEP_V10_BYTES;
    case TREC_SITE_TOTALS: return TRACE_SITE_TOTALS_V10_BYTES;
    case TREC_THREAD_TOTALS: return sizeof(struct trace_thread_totals);
    case TREC_THREAD: return sizeof(struct trace_thread);
    case TREC_DROPS: return sizeof(struct trace_drops);
    case TREC_END:
        return offsetof(struct trace_end, steps_seen); /* 24: a writer before steps_seen */
    case TREC_STEPS_LOST: return sizeof(struct trace_steps_lost);
    case TREC_STEP_RUN: return sizeof(struct trace_step_run);
    case TREC_BOUND: return sizeof(struct trace_bound);
    default: return 0;
    }
}

static bool record(struct reader *r, uint32_t type, const uint8_t *p, uint32_t bytes)
{
    switch (type) {
    case TREC_STRING: return rec_string(r, p, bytes);
    case TREC_FRAME: return rec_frame(r, p);
    case TREC_FRAME_NAME: return rec_frame_name(r, p);
    case TREC_STACK: return rec_stack(r, p, bytes);
    case TREC_SYNC: return rec_sync(r, p);
    case TREC_LAUNCH: return rec_launch(r, p);
    case TREC_STEP: return rec_step(r, p, bytes);
    case TREC_SITE_TOTALS: return rec_site_totals(r, p, bytes);
    case TREC_THREAD_TOTALS: return rec_thread_totals(r, p);
    case TREC_THREAD: return rec_thread(r, p);
    case TREC_DROPS: return rec_drops(r, p);
    case TREC_END: return rec_end(r, p, bytes);
    case TREC_STEPS_LOST: return rec_steps_lost(r, p);
    case TREC_STEP_RUN: return rec_step_run(r, p, bytes);
    case TREC_BOUND: return rec_bound(r, p);
    default: return true; /* a later minor version's record: skipped */
    }
}

/* ---- the file: header, then records ------------------------------------------------------- */

bool trace_looks_like(const void *buf, size_t len)
{
    size_t n = len < 8 ? len : 8;
    return n > 0 && memcmp(buf, TRACE_MAGIC, n) == 0;
}

static bool cut_header(struct reader *r, uint64_t len, uint64_t need)
{
    return fail(r,
                "%s ends at byte %llu, inside its %llu-byte header (was the process killed "
                "before its first flush?)",
                r->name, (unsigned long long)len, (unsigned long long)need);
}

/* A string of the identity part: NUL-terminated within its field, printable (else NULL). */
static const char *identity_string(struct reader *r, const char *field, size_t cap, bool *ok)
{
    size_t n = strnlen(field, cap);
    if (n == 0 || n == cap)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)field[i] < 0x20 || field[i] == 0x7f)
            return NULL;
    char *s = arena_alloc(r, n + 1);
    if (s) {
        memcpy(s, field, n);
        s[n] = '\0';
    }
    *ok &= s != NULL;
    return s;
}

/* 1.3's struct trace_identity (trace_format.h), at at; values out of range read as unknown. */
static bool read_identity(struct reader *r, const unsigned char *at, struct rep_process *out)
{
    struct trace_identity id;
    memcpy(&id, at, sizeof id);
    out->local_rank = id.local_rank >= 0 ? id.local_rank : -1;
    out->world_size = id.world_size > 0 ? id.world_size : 0;
    out->node = id.node >= 0 ? id.node : -1;
    /* the agent's mark of a failed write (trace_format.h): an errno, else an unknown error */
    out->trace_lost_errno = id.write_errno > 0 && id.write_errno < 4096 ? id.write_errno
                            : id.write_errno                            ? EIO
                                                                        : 0;
    bool ok = true;
    out->host = identity_string(r, id.host, sizeof id.host, &ok);
    out->job_id = identity_string(r, id.job_id, sizeof id.job_id, &ok);
    out->launcher = identity_string(r, id.launcher, sizeof id.launcher, &ok);
    return ok;
}

/* Checks the header; *records_at is where the records begin. */
static bool read_header(struct reader *r, struct src *s, uint64_t *records_at)
{
    size_t got;
    const uint8_t *p = src_get(s, 0, sizeof(struct trace_file_header), &got);
    if (s->rerr)
        return fail(r, "cannot read %s: %s", r->name, strerror(s->rerr));
    if (got == 0)
        return fail(r, "%s is empty (was the process killed before its first flush?)", r->name);
    if (!trace_looks_like(p, got))
        return fail(r, "%s is not a syncspy trace (it does not start with the trace.bin magic)",
                    r->name);
    if (got < 10)
        return cut_header(r, got, sizeof(struct trace_file_header));
    uint16_t major;
    memcpy(&major, p + 8, sizeof major);
    if (major > TRACE_VERSION_MAJOR)
        return fail(r,
                    "%s: trace.bin format %u is newer than this syncspy understands (%d); read "
                    "it with a newer syncspy",
                    r->name, major, TRACE_VERSION_MAJOR);
    if (major != TRACE_VERSION_MAJOR)
        return fail(r, "%s: trace.bin format %u is not one this syncspy understands (%d)", r->name,
                    major, TRACE_VERSION_MAJOR);
    if (got < sizeof(struct trace_file_header))
        return cut_header(r, got, sizeof(struct trace_file_header));
    struct trace_file_header h;
    memcpy(&h, p, sizeof h);
    if (h.header_bytes < sizeof h || h.header_bytes % 8 ||
        h.header_bytes > TRACE_READ_MAX_HEADER_BYTES)
        return fail(r,
                    "%s has a bad header: it says it is %u bytes long (format %d needs a "
                    "multiple of 8 from %zu to %d)",
                    r->name, h.header_bytes, TRACE_VERSION_MAJOR, sizeof h,
                    TRACE_READ_MAX_HEADER_BYTES);
    uint64_t unknown = h.features & TRACE_FEATURES_REQUIRED_MASK; /* none is known yet */
    if (unknown)
        return fail(r,
                    "%s needs features this syncspy does not know (0x%016llx); read it with a "
                    "newer syncspy",
                    r->name, (unsigned long long)unknown);
    const uint8_t *whole = src_get(s, 0, h.header_bytes, &got);
    if (s->rerr)
        return fail(r, "cannot read %s: %s", r->name, strerror(s->rerr));
    if (got < h.header_bytes)
        return cut_header(r, got, h.header_bytes);

    struct rep_process *out = r->out;
    out->pid = h.pid;
    out->rank = h.rank >= 0 ? h.rank : -1;
    size_t n = strnlen(h.schedule, sizeof h.schedule);
    char *sched = arena_alloc(r, n + 1);
    if (!sched)
        return false;
    memcpy(sched, h.schedule, n);
    sched[n] = '\0';
    out->schedule = sched;
    r->identity = (h.features & TRACE_FEATURE_IDENTITY) &&
                  h.header_bytes >= sizeof(struct trace_file_header_v13);
    if (r->identity && !read_identity(r, whole + sizeof h, out))
        return false;
    r->start_mono_ns = h.start_mono_ns;
    if (r->ev) {
        r->ev->start_mono_ns = h.start_mono_ns;
        r->ev->start_real_ns = h.start_real_ns;
        r->ev->launches_traced = (h.features & TRACE_FEATURE_LAUNCHES) != 0;
    }
    *records_at = h.header_bytes;
    return true;
}

/* Past what the window holds, in a file: the holes of a sparse file read as zeros, so the next
 * data (SEEK_DATA) is where reading goes on; true when there is none before the end (a 1 TiB
 * file of holes is not read a byte at a time). A file system without SEEK_DATA is read. */
static bool only_holes_after(struct src *s, uint64_t *off)
{
    if (s->mem || *off < s->base + s->have || s->eof || s->rerr)
        return false;
    off_t data = lseek(s->fd, (off_t)*off, SEEK_DATA);
    if (data < 0)
        return errno == ENXIO; /* ENXIO: holes to the end; EINVAL: not supported, read on */
    *off = (uint64_t)data;     /* the file offset is there now: the window starts there */
    s->base = *off;
    s->have = 0;
    return false;
}

/* After a record header of zeros: a tail of zeros (space the file system gave but the writer
 * never filled) is a cut tail; anything else is corruption. */
static bool zero_tail(struct src *s, uint64_t off)
{
    for (;;) {
        if (only_holes_after(s, &off))
            return true;
        size_t got;
        const uint8_t *p = src_get(s, off, 65536, &got);
        for (size_t i = 0; i < got; i++)
            if (p[i])
                return false;
        if (got < 65536)
            return !s->rerr;
        off += got;
    }
}

static void progress(struct reader *r, uint64_t records, uint64_t off, const struct src *s)
{
    const struct trace_read_opts *o = r->opts;
    if (o && o->progress && o->progress_every && records % o->progress_every == 0)
        o->progress(o->ctx, records, off, s->mem ? s->memlen : s->file_bytes);
}

/* Walks the records; a record cut by the end of the file ends the walk (truncated). */
static bool read_records(struct reader *r, struct src *s, uint64_t off)
{
    uint64_t records = 0;
    for (;;) {
        size_t got;
        const uint8_t *p = src_get(s, off, sizeof(struct trace_record_header), &got);
        r->at = off;
        if (s->rerr)
            return fail(r, "cannot read %s: %s", r->name, strerror(s->rerr));
        r->next_off = off;
        if (got == 0)
            return true;
        if (got < sizeof(struct trace_record_header)) {
            r->out->trace_truncated = true;
            return true;
        }
        struct trace_record_header h;
        memcpy(&h, p, sizeof h);
        if (h.type == 0 && h.bytes == 0 && zero_tail(s, off)) {
            r->out->trace_truncated = true;
            return true;
        }
        size_t min = record_min_bytes(h.type);
        if (h.bytes < sizeof h || h.bytes % 8)
            return corrupt(r,
                           "a record of type %u says it is %u bytes long (not a multiple of 8 "
                           "of at least 8)",
                           h.type, h.bytes);
        if (h.bytes > TRACE_MAX_RECORD_BYTES)
            return corrupt(r, "a record of type %u says it is %u bytes long (more than %u)", h.type,
                           h.bytes, TRACE_MAX_RECORD_BYTES);
        if (h.bytes < min)
            return corrupt(r, "a record of type %u says it is %u bytes long (it needs %zu)", h.type,
                           h.bytes, min);
        p = src_get(s, off, h.bytes, &got);
        if (s->rerr)
            return fail(r, "cannot read %s: %s", r->name, strerror(s->rerr));
        if (got < h.bytes) {
            r->out->trace_truncated = true;
            return true;
        }
        if (!record(r, h.type, p, h.bytes))
            return false;
        off += h.bytes;
        progress(r, ++records, off, s);
    }
}

/* ---- the report model from what was read -------------------------------------------------- */

static int site_cmp(const void *a, const void *b)
{
    const struct tsite *x = a, *y = b; /* as the agent orders summary.json: heaviest first */
    if (x->blocked_ns != y->blocked_ns)
        return x->blocked_ns > y->blocked_ns ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->site_id > y->site_id) - (x->site_id < y->site_id);
}

/* The run's last step and whether it was still open: the exit's partial STEP, else (killed, or
 * nothing happened after the last mark) the step after the last one that ended. */
static void last_step(const struct reader *r, uint64_t *last, bool *partial)
{
    const struct tstep *t = r->steps.p;
    *last = r->steps_seen;
    *partial = true;
    /* build_steps listed it: the exit's partial STEP, or the one made up for a trace that ends
     * early (killed in that step) */
    const struct rep_process *out = r->out;
    if (out && out->nsteps && out->steps[out->nsteps - 1].partial) {
        *last = out->steps[out->nsteps - 1].step;
        return;
    }
    for (size_t i = 0; i < r->steps.n; i++)
        if (t[i].ev.partial && t[i].ev.step + 1 == r->steps_seen)
            *last = t[i].ev.step;
}

/* The sites of t[0..n) that synced, in that order, as the report model's (into *out, allocated
 * here; *k how many), their splits against the run's last step. */
static bool model_the_sites(struct reader *r, const struct tsite *t, size_t n, uint64_t last,
                            bool partial, struct rep_site **out, size_t *k)
{
    size_t synced = 0;
    *k = 0;
    for (size_t i = 0; i < n; i++)
        synced += t[i].count != 0;
    if (!synced)
        return true;
    if (!charge(r, synced * sizeof(struct rep_site)) || !(*out = calloc(synced, sizeof **out)))
        return nomem(r);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].count) /* as summary.json: a site that never synced is not listed */
            continue;
        struct rep_site *s = &(*out)[(*k)++];
        /* a live snapshot may read the longest sync before the total it is in: clamped */
        *s = (struct rep_site){.api = t[i].api,
                               .count = t[i].count,
                               .blocked_ns = t[i].blocked_ns,
                               .max_ns =
                                   t[i].max_ns < t[i].blocked_ns ? t[i].max_ns : t[i].blocked_ns,
                               .threads = t[i].threads,
                               .split = rep_split_of(&t[i].phase, last, partial),
                               .pinned = t[i].pinned < t[i].count ? t[i].pinned : t[i].count};
        if (t[i].stack != NO_INDEX && !(s->frames = stack_frames(r, t[i].stack, &s->nframes)) &&
            s->nframes)
            return false;
    }
    return true;
}

static bool build_sites(struct reader *r)
{
    struct tsite *t = r->sites.p;
    if (r->sites.n)
        qsort(t, r->sites.n, sizeof *t, site_cmp);
    uint64_t last;
    bool partial;
    last_step(r, &last, &partial);
    size_t k = 0;
    if (!model_the_sites(r, t, r->sites.n, last, partial, &r->st->sites, &k))
        return false;
    r->out->sites = r->st->sites;
    r->out->nsites = k;
    return true;
}

static int step_cmp(const void *a, const void *b)
{
    const struct tstep *x = a, *y = b;
    if (x->ev.step != y->ev.step)
        return x->ev.step < y->ev.step ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* A trace that ends without its END record, past half its bound: the site totals are those of
 * the last BOUND record's rewrite, so the steps recorded after it (their records reached the file,
 * their syncs not the totals) are left out, counted in steps_after_totals: the header counts what
 * the rows count. Else the steps after it count as the others. */
static void cut_after_totals(struct reader *r)
{
    if (r->ended || !r->bound.bound_bytes) {
        sums_add(&r->extra, &r->pending);
        r->pending = (struct step_sums){0};
        return;
    }
    uint64_t cut = r->pending.records;
    r->pending = (struct step_sums){0};
    struct tstep *t = r->steps.p;
    size_t k = 0;
    for (size_t i = 0; i < r->steps.n; i++)
        if (t[i].seq < r->bound_seq)
            t[k++] = t[i];
    cut += r->steps.n - k;
    r->steps.n = k;
    size_t kept = 0;
    for (size_t i = 0; i < r->tail_n; i++) {
        struct tstep *e = &r->tail[(r->tail_at + i) % TRACE_READ_TAIL_STEPS];
        if (e->seq < r->bound_seq)
            r->tail[(r->tail_at + kept++) % TRACE_READ_TAIL_STEPS] = *e;
    }
    cut += r->tail_n - kept;
    r->tail_n = kept;
    r->steps_seen = r->bound_steps_seen;
    r->out->steps_after_totals = cut;
}

/* The STEP records as one list by step number: the latest steps (kept apart in the tail) after
 * the first ones, each step's last record; *active counts the active ones. */
static bool collect_step_records(struct reader *r, size_t *active)
{
    size_t n = 0;
    for (size_t i = 0; i < r->tail_n; i++) { /* the latest steps after the first ones */
        struct tstep *slot = vec_push(r, &r->steps, sizeof *slot);
        if (!slot)
            return false;
        *slot = r->tail[(r->tail_at + i) % TRACE_READ_TAIL_STEPS];
    }
    r->tail_n = 0;
    struct tstep *t = r->steps.p;
    if (r->steps.n)
        qsort(t, r->steps.n, sizeof *t, step_cmp);
    for (size_t i = 0; i < r->steps.n; i++) { /* one per step number: the last written */
        if (i + 1 < r->steps.n && t[i + 1].ev.step == t[i].ev.step)
            continue;
        t[n++] = t[i];
        *active += t[i].ev.active;
    }
    r->steps.n = n;
    return true;
}

/* Step numbers with no record: the agent's STEPS_LOST counts those it lost (their active
 * ones' figures go into the totals below); any beyond are missing without a count (a file
 * of an older agent, whose step queue dropped them, or one cut by hand). */
static void count_missing_steps(struct reader *r, size_t n, size_t active)
{
    uint64_t accounted = sat_add(sat_add(n, r->extra.records), r->lost.records);
    if (accounted > r->steps_seen)
        r->steps_seen = accounted; /* the lost steps were the last ones */
    r->out->step_records_missing = r->steps_seen - accounted;
    if (n) /* as many of them active as of the records there are */
        r->out->steps_missing_active =
            (uint64_t)(((unsigned __int128)r->out->step_records_missing * active + n / 2) /
                       n); /* <= missing: active <= n */
    r->out->steps_lost = r->lost.active;
}

/* A trace that ends early (killed, _exit) has no record of the step still open then; its
 * syncs are in the site totals of the last flush: that step is made up from what they have
 * beyond the steps that ended, so the header counts what the table shows. Not active: none. */
static struct trace_step_event open_step_at_end(const struct reader *r, const struct tstep *t,
                                                size_t n)
{
    struct trace_step_event opened = {0};
    if (r->ended)
        return opened;
    uint64_t sites_syncs = 0, sites_blocked = 0;
    uint64_t steps_syncs = sat_add(r->extra.syncs, r->lost.syncs);
    uint64_t steps_blocked = sat_add(r->extra.blocked, r->lost.blocked_ns);
    uint64_t begins = r->start_mono_ns;
    for (size_t i = 0; i < r->sites.n; i++) {
        sites_syncs = sat_add(sites_syncs, ((struct tsite *)r->sites.p)[i].count);
        sites_blocked = sat_add(sites_blocked, ((struct tsite *)r->sites.p)[i].blocked_ns);
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i].ev.active) {
            steps_syncs = sat_add(steps_syncs, t[i].ev.syncs);
            steps_blocked = sat_add(steps_blocked, t[i].ev.blocked_ns);
        }
        if (t[i].ev.end_ns > begins)
            begins = t[i].ev.end_ns;
    }
    if (sites_syncs > steps_syncs)
        opened = (struct trace_step_event){
            .step = r->steps_seen,
            .start_ns = begins,
            .end_ns = r->last_ns > begins ? r->last_ns : begins,
            .syncs = sites_syncs - steps_syncs,
            .blocked_ns = sites_blocked > steps_blocked ? sites_blocked - steps_blocked : 0,
            .active = true,
            .partial = true};
    return opened;
}

/* The totals start from the steps that are not listed: folded into runs (extra) or lost. */
static void count_unlisted_steps(struct reader *r)
{
    struct rep_process *out = r->out;
    out->active_steps = sat_add(r->extra.active, r->lost.active);
    out->syncs = sat_add(r->extra.syncs, r->lost.syncs);
    out->blocked_ns = sat_add(r->extra.blocked, r->lost.blocked_ns);
    out->launches = sat_add(r->extra.launches, r->lost.launches);
    out->wall_ns = sat_add(r->extra.wall, r->lost.wall_ns);
    out->steps_omitted = r->extra.active;
    out->attribution_steps = r->extra.attributed;
}

/* The active steps as the report's list (the made-up open one last), added to the totals. */
static bool list_active_steps(struct reader *r, const struct tstep *t, size_t n,
                              const struct trace_step_event *opened, size_t active)
{
    struct rep_process *out = r->out;
    if (active) {
        if (!charge(r, active * sizeof(struct rep_step)) ||
            !(r->st->steps = calloc(active, sizeof *r->st->steps)))
            return nomem(r);
    }
    size_t k = 0;
    for (size_t i = 0; i < n + opened->active; i++) {
        const struct trace_step_event *e = i < n ? &t[i].ev : opened;
        if (!e->active)
            continue;
        r->st->steps[k++] = (struct rep_step){.step = e->step,
                                              .wall_ns = e->end_ns - e->start_ns,
                                              .syncs = e->syncs,
                                              .blocked_ns = e->blocked_ns,
                                              .launches = e->launches,
                                              .partial = e->partial,
                                              .attributed = e->attributed};
        out->active_steps++;
        out->attribution_steps += e->attributed;
        out->syncs = sat_add(out->syncs, e->syncs);
        out->blocked_ns = sat_add(out->blocked_ns, e->blocked_ns);
        out->launches = sat_add(out->launches, e->launches);
        out->wall_ns = sat_add(out->wall_ns, e->end_ns - e->start_ns);
    }
    out->steps = r->st->steps;
    out->nsteps = k;
    return true;
}

/* Every step's record, active or not, for the timeline. */
static bool timeline_step_events(struct reader *r, const struct tstep *t, size_t n)
{
    if (!r->ev || !n)
        return true;
    if (!charge(r, n * sizeof(struct trace_step_event)) ||
        !(r->st->step_events = malloc(n * sizeof *r->st->step_events)))
        return nomem(r);
    for (size_t i = 0; i < n; i++)
        r->st->step_events[i] = t[i].ev;
    r->ev->steps = r->st->step_events;
    r->ev->nsteps = n;
    return true;
}

static bool build_steps(struct reader *r)
{
    size_t active = 0;
    cut_after_totals(r);
    if (!collect_step_records(r, &active))
        return false;
    const struct tstep *t = r->steps.p;
    size_t n = r->steps.n;
    count_missing_steps(r, n, active);
    struct trace_step_event opened = open_step_at_end(r, t, n);
    if (opened.active) {
        active++;
        r->steps_seen = sat_add(r->steps_seen, 1);
    }
    count_unlisted_steps(r);
    /* the step still open at exit with nothing recorded has no STEP record: END counts it */
    if (r->end_steps_seen > r->steps_seen)
        r->steps_seen = r->end_steps_seen;
    r->out->steps_seen = r->steps_seen;
    return list_active_steps(r, t, n, &opened, active) && timeline_step_events(r, t, n);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The index of step in the sorted steps[0..n), or -1. */
static long step_at(const struct trace_step_event *steps, size_t n, uint64_t step)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (steps[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && steps[lo].step == step ? (long)lo : -1;
}

static void span(struct trace_step_event *e, uint64_t t0, uint64_t t1)
{
    if (t0 < e->start_ns)
        e->start_ns = t0;
    if (t1 > e->end_ns)
        e->end_ns = t1;
}

/* The step numbers of events that no STEP record has (folded into runs), into u: sorted, each
 * once, at most TRACE_READ_SPANNED_STEPS of them (evenly spaced). Returns how many. */
static size_t unrecorded_steps(const struct reader *r, uint64_t *u)
{
    const struct trace_events *ev = r->ev;
    const struct trace_sync_event *sy = r->syncs.p;
    const struct trace_launch_event *la = r->launches.p;
    size_t k = 0;
    for (size_t i = 0; i < r->syncs.n; i++)
        if (step_at(ev->steps, ev->nsteps, sy[i].step) < 0)
            u[k++] = sy[i].step;
    for (size_t i = 0; i < r->launches.n; i++)
        if (step_at(ev->steps, ev->nsteps, la[i].step) < 0)
            u[k++] = la[i].step;
    qsort(u, k, sizeof *u, u64_cmp);
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (!m || u[i] != u[m - 1])
            u[m++] = u[i];
    if (m > TRACE_READ_SPANNED_STEPS) { /* evenly spaced ones */
        size_t every = (m + TRACE_READ_SPANNED_STEPS - 1) / TRACE_READ_SPANNED_STEPS, j = 0;
        for (size_t i = 0; i < m; i += every)
            u[j++] = u[i];
        m = j;
    }
    return m;
}

/* The steps u[0..m) among the timeline's, in order, each spanning its events (its syncs and
 * launches counted). False: no memory. */
static bool add_spanned_steps(struct reader *r, const uint64_t *u, size_t m)
{
    struct trace_events *ev = r->ev;
    const struct trace_sync_event *sy = r->syncs.p;
    const struct trace_launch_event *la = r->launches.p;
    size_t total = ev->nsteps + m;
    struct trace_step_event *all =
        charge(r, total * sizeof *all) ? malloc(total * sizeof *all) : NULL;
    if (!all)
        return false;
    size_t a = 0, b = 0, o = 0;
    while (a < ev->nsteps || b < m) {
        if (b == m || (a < ev->nsteps && ev->steps[a].step < u[b]))
            all[o++] = ev->steps[a++];
        else
            all[o++] =
                (struct trace_step_event){.step = u[b++], .start_ns = UINT64_MAX, .spanned = true};
    }
    for (size_t i = 0; i < r->syncs.n; i++) {
        long at = step_at(all, total, sy[i].step);
        struct trace_step_event *e = at >= 0 ? &all[at] : NULL;
        if (e && e->spanned) {
            span(e, sy[i].start_ns, sy[i].end_ns);
            e->syncs++;
        }
    }
    for (size_t i = 0; i < r->launches.n; i++) {
        long at = step_at(all, total, la[i].step);
        struct trace_step_event *e = at >= 0 ? &all[at] : NULL;
        if (e && e->spanned) {
            span(e, la[i].time_ns, la[i].time_ns);
            e->launches++;
        }
    }
    free(r->st->step_events);
    r->st->step_events = all;
    ev->steps = all;
    ev->nsteps = total;
    return true;
}

/* The timeline's steps: the steps listed, and a spanned one (trace_read.h) for the steps whose
 * events are kept but whose STEP record is not (TRACE_READ_SPANNED_STEPS of them at most, evenly
 * spaced), so the html timeline can show steps from the whole run. */
static bool timeline_steps(struct reader *r)
{
    size_t nev = r->syncs.n + r->launches.n;
    if (!nev)
        return true;
    uint64_t *u = malloc(nev * sizeof *u);
    if (!u || !charge(r, nev * sizeof *u)) {
        free(u);
        return nomem(r);
    }
    size_t m = unrecorded_steps(r, u);
    bool ok = !m || add_spanned_steps(r, u, m);
    free(u);
    return ok || nomem(r);
}

static int thread_cmp(const void *a, const void *b)
{
    const struct trace_thread_name *x = a, *y = b;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Start-up (step 0, when a mark ended it) and how the steps were marked, from the STEP records. */
static void build_startup(struct reader *r)
{
    struct rep_process *out = r->out;
    const struct tstep *t = r->steps.p;
    uint32_t source = 0;
    for (size_t i = 0; i < r->steps.n; i++) {
        const struct trace_step_event *e = &t[i].ev;
        if (e->step == 0 && !e->partial) {
            out->startup_closed = true;
            out->startup = (struct rep_step){.step = 0,
                                             .wall_ns = e->end_ns - e->start_ns,
                                             .syncs = e->active ? e->syncs : 0,
                                             .blocked_ns = e->active ? e->blocked_ns : 0,
                                             .launches = e->launches};
        }
        if (!e->partial && e->source) {
            source = e->source;
            r->marker_tid = e->tid;
        }
    }
    out->step_source = source == TRACE_STEP_SOURCE_EXPLICIT ? "syncspy.step()"
                       : source == TRACE_STEP_SOURCE_AUTO   ? "optimizer.step()"
                                                            : NULL;
    out->optimizers = source == TRACE_STEP_SOURCE_AUTO ? rep_optimizers_usual(r->optimizers) : 0;
    out->optimizers_max = source == TRACE_STEP_SOURCE_AUTO ? rep_optimizers_most(r->optimizers) : 0;
}

/* The threads' totals (THREAD_TOTALS) with their names (THREAD), into *out (allocated here). */
static bool threads_model(struct reader *r, uint64_t last, bool partial, struct rep_thread **out)
{
    const struct tthread *t = r->totals.p;
    if (!r->totals.n)
        return true;
    if (!charge(r, r->totals.n * sizeof(struct rep_thread)) ||
        !(*out = calloc(r->totals.n, sizeof **out)))
        return nomem(r);
    const struct trace_thread_name *names = r->threads.p;
    for (size_t i = 0; i < r->totals.n; i++) {
        uint32_t ni = idmap_get(&r->thread_ids, t[i].tid);
        (*out)[i] = (struct rep_thread){.tid = t[i].tid,
                                        .name = t[i].tid == 0    ? "(others)"
                                                : ni != NO_INDEX ? names[ni].name
                                                                 : "",
                                        .syncs = t[i].phase.count,
                                        .blocked_ns = t[i].phase.ns,
                                        .split = rep_split_of(&t[i].phase, last, partial),
                                        .ends_steps = t[i].tid && t[i].tid == r->marker_tid};
    }
    return true;
}

static bool build_threads(struct reader *r)
{
    uint64_t last;
    bool partial;
    last_step(r, &last, &partial);
    if (!threads_model(r, last, partial, &r->st->totals))
        return false;
    r->out->threads = r->st->totals;
    r->out->nthreads = r->st->totals ? r->totals.n : 0;
    return true;
}

static bool finish(struct reader *r)
{
    struct rep_process *out = r->out;
    if (!build_steps(r) || !build_sites(r)) /* the open step first: the sites' share of it */
        return false;
    build_startup(r);
    if (!build_threads(r))
        return false;
    out->unattributed_syncs = r->unattributed;
    out->trace_bound_bytes = r->bound.bound_bytes;
    out->sampled_from = r->bound.sampled_from;
    /* steps after the BOUND record (a killed process's last ones) have none of their events */
    out->detail_steps = r->bound.detail_steps;
    out->steps_folded = r->extra.folded;
    out->steps_summed = r->extra.summed;
    out->trace_unfinished = !r->ended || out->trace_truncated;
    const struct tdrops *d = r->drops.p;
    for (size_t i = 0; i < r->drops.n; i++) {
        out->syncs_dropped = sat_add(out->syncs_dropped, d[i].syncs);
        out->launches_dropped = sat_add(out->launches_dropped, d[i].launches);
    }
    if (!r->ev)
        return true;
    if (!timeline_steps(r))
        return false;
    struct trace_events *ev = r->ev;
    ev->end_mono_ns = r->ended ? r->end_mono_ns : 0;
    /* the arrays pass to the store as they are: vec_push charged them already */
    r->st->syncs = r->syncs.p;
    r->st->launches = r->launches.p;
    r->st->threads = r->threads.p;
    ev->syncs = r->st->syncs;
    ev->nsyncs = r->syncs.n;
    ev->launches = r->st->launches;
    ev->nlaunches = r->launches.n;
    if (r->threads.n)
        qsort(r->threads.p, r->threads.n, sizeof(struct trace_thread_name), thread_cmp);
    ev->threads = r->st->threads;
    ev->nthreads = r->threads.n;
    r->syncs = r->launches = r->threads = (struct vec){0};
    return true;
}

static void store_free(struct trace_store *st)
{
    if (!st)
        return;
    chunks_free(&st->chunks);
    free(st->sites);
    free(st->steps);
    free(st->step_events);
    free(st->syncs);
    free(st->launches);
    free(st->threads);
    free(st->totals);
    free(st);
}

static void reader_free(struct reader *r)
{
    struct idmap *maps[] = {&r->string_ids, &r->frame_ids, &r->stack_ids, &r->site_ids,
                            &r->thread_ids, &r->drop_ids,  &r->totals_ids};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        idmap_free(maps[i]);
    struct vec *vecs[] = {&r->strings, &r->frames, &r->stacks, &r->stack_pool,
                          &r->sites,   &r->steps,  &r->syncs,  &r->launches,
                          &r->threads, &r->drops,  &r->totals};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        free(vecs[i]->p);
    free(r->tail);
}

static void clear(struct rep_process *out, struct trace_events *ev)
{
    memset(out, 0, sizeof *out);
    rep_identity_unknown(out);
    out->schedule = "";
    if (ev)
        memset(ev, 0, sizeof *ev);
}

static int read_src(struct src *s, const char *name, const struct trace_read_opts *opts,
                    struct rep_process *out, struct trace_events *ev, char *err, size_t errlen)
{
    static char spare[1];
    clear(out, ev);
    struct reader r = {.name = name,
                       .err = errlen ? err : spare,
                       .errlen = errlen ? errlen : 1,
                       .opts = opts,
                       .out = out,
                       .ev = ev};
    r.max_events = opts && opts->max_events ? opts->max_events : TRACE_READ_MAX_EVENTS;
    r.err[0] = '\0';
    r.st = calloc(1, sizeof *r.st);
    uint64_t records_at = 0;
    bool ok = r.st
                  ? read_header(&r, s, &records_at) && read_records(&r, s, records_at) && finish(&r)
                  : fail(&r, "out of memory reading %s", name);
    reader_free(&r);
    if (!ok) {
        store_free(r.st);
        clear(out, ev);
        return -1;
    }
    out->owned = r.st;
    return 0;
}

int trace_read_buf(const void *buf, size_t len, const char *name,
                   const struct trace_read_opts *opts, struct rep_process *out,
                   struct trace_events *events, char *err, size_t errlen)
{
    static const uint8_t none[1];
    struct src s = {.mem = len ? buf : none, .memlen = len, .fd = -1};
    return read_src(&s, name, opts, out, events, err, errlen);
}

int trace_read_with(const char *path, const struct trace_read_opts *opts, struct rep_process *out,
                    struct trace_events *events, char *err, size_t errlen)
{
    clear(out, events);
    struct stat sb;
    int fd = cli_open_input(path, &sb, err, errlen);
    if (fd < 0)
        return -1;
    struct src s = {.fd = fd, .buf = malloc(WINDOW_BYTES), .file_bytes = (uint64_t)sb.st_size};
    int rc;
    if (!s.buf) {
        snprintf(err, errlen, "out of memory reading %s", path);
        rc = -1;
    } else {
        rc = read_src(&s, path, opts, out, events, err, errlen);
    }
    free(s.buf);
    close(fd);
    return rc;
}

int trace_read(const char *path, struct rep_process *out, struct trace_events *events, char *err,
               size_t errlen)
{
    return trace_read_with(path, NULL, out, events, err, errlen);
}

void trace_free(struct rep_process *out, struct trace_events *events)
{
    store_free(out->owned);
    clear(out, events);
}

/* ---- following a trace that grows (syncspy top) ------------------------------------------- */

struct trace_follow {
    struct reader r;
    struct src s;
    struct rep_process head; /* what the header said, and the flags of the records read */
    struct trace_follow_sink sink;
    struct rep_site *sites; /* the last snapshot's */
    struct rep_thread *threads;
    char *err;
    size_t errlen;
};

struct trace_follow *trace_follow_open(const char *path, const struct trace_follow_sink *sink,
                                       char *err, size_t errlen)
{
    struct trace_follow *f = calloc(1, sizeof *f);
    struct stat sb;
    int fd = f ? cli_open_input(path, &sb, err, errlen) : -1;
    if (!f || fd < 0) {
        if (!f)
            snprintf(err, errlen, "out of memory reading %s", path);
        free(f);
        return NULL;
    }
    f->sink = *sink;
    f->s = (struct src){.fd = fd, .buf = malloc(WINDOW_BYTES), .file_bytes = (uint64_t)sb.st_size};
    clear(&f->head, NULL);
    f->r = (struct reader){.name = path,
                           .err = err,
                           .errlen = errlen,
                           .out = &f->head,
                           .sink = &f->sink,
                           .max_events = TRACE_READ_MAX_EVENTS};
    f->r.st = calloc(1, sizeof *f->r.st);
    err[0] = '\0';
    if (!f->s.buf || !f->r.st) {
        fail(&f->r, "out of memory reading %s", path);
        trace_follow_free(f);
        return NULL;
    }
    if (!read_header(&f->r, &f->s, &f->r.next_off)) {
        trace_follow_free(f);
        return NULL;
    }
    f->head.owned = f->r.st;
    return f;
}

int trace_follow_poll(struct trace_follow *f, char *err, size_t errlen)
{
    struct reader *r = &f->r;
    if (r->failed)
        return -1;
    r->err = err;
    r->errlen = errlen;
    err[0] = '\0';
    f->s.eof = false; /* what was the end may have grown since */
    f->head.trace_truncated = false;
    int32_t lost = 0; /* the agent marks a failed write in the header in place, later */
    off_t at = (off_t)offsetof(struct trace_file_header_v13, id.write_errno);
    if (r->identity && !f->s.mem && f->s.fd >= 0 &&
        pread(f->s.fd, &lost, sizeof lost, at) == (ssize_t)sizeof lost && lost)
        f->head.trace_lost_errno = lost > 0 && lost < 4096 ? lost : EIO;
    return read_records(r, &f->s, r->next_off) ? 0 : -1;
}

int trace_follow_snapshot(struct trace_follow *f, struct rep_process *out, uint64_t *last_step)
{
    struct reader *r = &f->r;
    free(f->sites);
    free(f->threads);
    f->sites = NULL;
    f->threads = NULL;
    /* the run's last step: the exit's partial one, else the one still open */
    uint64_t last = r->exit_step_plus1 && r->exit_step_plus1 >= r->steps_seen
                        ? r->exit_step_plus1 - 1
                        : r->steps_seen;
    if (last_step)
        *last_step = last;
    /* the arrays are freed at the next snapshot: not charged for good (the frames a stack's
     * first use builds stay charged to within a snapshot's worth) */
    uint64_t used = r->mem_used;
    struct tsite *copy = r->sites.n ? malloc(r->sites.n * sizeof *copy) : NULL;
    size_t nsites = 0;
    bool ok = !r->sites.n || copy;
    if (copy) {
        memcpy(copy, r->sites.p, r->sites.n * sizeof *copy);
        qsort(copy, r->sites.n, sizeof *copy, site_cmp);
        ok = model_the_sites(r, copy, r->sites.n, last, true, &f->sites, &nsites);
    }
    free(copy);
    ok = ok && threads_model(r, last, true, &f->threads);
    r->mem_used = used;
    r->failed = false; /* out of memory now is not a bad file: the next snapshot tries again */
    *out = f->head;
    out->owned = NULL;
    if (!ok)
        return -1;
    out->sites = f->sites;
    out->nsites = f->sites ? nsites : 0;
    out->threads = f->threads;
    out->nthreads = f->threads ? r->totals.n : 0;
    out->steps_seen = r->end_steps_seen > r->steps_seen ? r->end_steps_seen : r->steps_seen;
    out->unattributed_syncs = r->unattributed;
    out->trace_bound_bytes = r->bound.bound_bytes; /* the sync records are a sample's past it */
    out->sampled_from = r->bound.sampled_from;
    out->detail_steps = r->bound.detail_steps;
    out->trace_unfinished = !r->ended || f->head.trace_truncated;
    const struct tdrops *d = r->drops.p;
    for (size_t i = 0; i < r->drops.n; i++) {
        out->syncs_dropped = sat_add(out->syncs_dropped, d[i].syncs);
        out->launches_dropped = sat_add(out->launches_dropped, d[i].launches);
    }
    return 0;
}

void trace_follow_free(struct trace_follow *f)
{
    if (!f)
        return;
    reader_free(&f->r);
    store_free(f->r.st);
    free(f->sites);
    free(f->threads);
    free(f->s.buf);
    if (f->s.fd >= 0)
        close(f->s.fd);
    free(f);
}
