/* cli/summary_read.c: reads summary.json (output/summary_json.h) back into the report model, for
 * the CLI only. Strict and bounded: 256 MiB per file, JSON_MAX_DEPTH, and each object it keeps
 * needs its required fields, so memory stays proportional to the input. */
#include "cli/summary_read.h"
#include "cli/chunks.h"
#include "cli/input.h"
#include "cli/json_in.h"
#include "output/summary_json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SUMMARY_MAX_BYTES (256u * 1024 * 1024)

/* ---- reading: storage --------------------------------------------------------------------- */

#define SUMMARY_CHUNK_BYTES 60000 /* strings, frame arrays: a new chunk holds at least this */

/* Everything a read summary owns: strings and frame arrays in chunks, steps and sites in two
 * arrays. Hung on rep_process.owned. */
struct summary_store {
    struct chunks chunks;
    struct rep_step *steps;
    size_t nsteps, steps_cap;
    struct rep_site *sites;
    size_t nsites, sites_cap;
    struct rep_thread *threads;
    size_t nthreads, threads_cap;
    struct rep_recompile *recompiles;
    size_t nrecompiles, recompiles_cap;
    struct rep_range *ranges;
    size_t nranges, ranges_cap;
};

static void *store_alloc(struct summary_store *st, size_t n)
{
    return chunks_alloc(&st->chunks, n, SUMMARY_CHUNK_BYTES);
}

static const char *store_string(struct summary_store *st, const char *s, size_t n)
{
    if (n == 0)
        return "";
    char *p = store_alloc(st, n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

/* Grows *arr (elements of size elem) to hold one more; false when out of memory. */
static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t ncap = array_doubled(*cap, elem);
    return ncap && array_realloc(arr, cap, ncap, elem);
}

static void store_free(struct summary_store *st)
{
    chunks_free(&st->chunks);
    free(st->steps);
    free(st->sites);
    free(st->threads);
    free(st->recompiles);
    free(st->ranges);
    free(st);
}

void summary_free(struct rep_process *proc)
{
    if (proc->owned)
        store_free(proc->owned);
    memset(proc, 0, sizeof *proc);
    rep_identity_unknown(proc);
}

/* ---- reading: the schema ------------------------------------------------------------------ */

struct summary_reader {
    struct json_in in;
    struct summary_store *st;
    struct rep_process *out;
    struct rep_frame *frames; /* the site being read; copied into the store when complete */
    size_t nframes, frames_cap;
};

static bool nomem(struct summary_reader *r)
{
    r->in.nomem = true;
    return json_fail(&r->in, r->in.pos, "out of memory");
}

/* One kind of object: its keys, which of them it must have, and how each value is read. */
struct schema {
    const char *const *keys;
    int nkeys;
    unsigned required; /* bits of keys[] */
    const char *what;  /* "a frame": for "%s has no \"%s\"" */
    /* Reads the value of keys[k] into obj (in->field names the key meanwhile). */
    bool (*field)(struct summary_reader *r, void *obj, int k);
};

/* Which of sc's keys key is; -1 when unknown. Refuses a known key seen twice. */
static int known_key(struct summary_reader *r, const struct schema *sc, const char *key,
                     size_t keylen, unsigned *seen, size_t keypos)
{
    for (int i = 0; i < sc->nkeys; i++) {
        const char *name = sc->keys[i];
        if (strlen(name) == keylen && memcmp(name, key, keylen) == 0) {
            if (*seen & (1u << i)) {
                json_fail(&r->in, keypos, "the key \"%s\" appears twice", name);
                return -2;
            }
            *seen |= 1u << i;
            r->in.field = name;
            return i;
        }
    }
    return -1;
}

/* All of sc's required keys in seen, or an error naming the first missing one. */
static bool require(struct summary_reader *r, const struct schema *sc, unsigned seen, size_t pos)
{
    for (int i = 0; sc->required >> i; i++)
        if ((sc->required & (1u << i)) && !(seen & (1u << i)))
            return json_fail(&r->in, pos, "%s has no \"%s\"", sc->what, sc->keys[i]);
    return true;
}

/* The members of an object whose '{' is read, up to its '}': known keys through sc->field,
 * unknown ones skipped. The keys met are added to *seen. */
static bool read_members(struct summary_reader *r, const struct schema *sc, void *obj,
                         unsigned *seen)
{
    struct json_in *in = &r->in;
    bool first = true, ok = true;
    const char *key;
    size_t keylen;
    int more;
    while (ok && (more = json_object_next(in, &first, &key, &keylen)) == 1) {
        int k = known_key(r, sc, key, keylen, seen, in->pos);
        ok = k == -1 ? json_skip(in) : k >= 0 && sc->field(r, obj, k);
        in->field = NULL;
    }
    return ok && more == 0;
}

/* A nested object (its '{' read, at: where it began) into obj, with its required keys. */
static bool read_fields(struct summary_reader *r, const struct schema *sc, void *obj, size_t at)
{
    unsigned seen = 0;
    return read_members(r, sc, obj, &seen) && require(r, sc, seen, at);
}

/* A count the model keeps in 32 bits: a larger one in the file reads as UINT32_MAX. */
static bool json_u32_saturated(struct json_in *in, uint32_t *dst)
{
    uint64_t v;
    if (!json_u64(in, &v))
        return false;
    *dst = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    return true;
}

static bool read_string_into(struct summary_reader *r, const char **dst)
{
    const char *s;
    size_t n;
    if (!json_string(&r->in, &s, &n))
        return false;
    *dst = store_string(r->st, s, n);
    return *dst ? true : nomem(r);
}

static bool read_u32(struct summary_reader *r, uint32_t *dst)
{
    uint64_t v;
    if (!json_u64_max(&r->in, UINT32_MAX, &v))
        return false;
    *dst = (uint32_t)v;
    return true;
}

enum { F_FUNCTION, F_MODULE, F_FILE, F_LINE, F_PYTHON, F_OFFSET, F_MARKER, F_N };
static const char *const frame_keys[F_N] = {"function", "module", "file",  "line",
                                            "python",   "offset", "marker"};

/* "marker": a backward-pass sync's section marker (output/model.h) */
static bool read_marker(struct summary_reader *r, uint8_t *mark)
{
    const char *s;
    size_t n, at = r->in.pos;
    if (!json_string(&r->in, &s, &n))
        return false;
    if (n == 8 && !memcmp(s, "backward", 8))
        *mark = REP_MARK_BACKWARD;
    else if (n == 15 && !memcmp(s, "backward_caller", 15))
        *mark = REP_MARK_CALLER;
    else if (n == 15 && !memcmp(s, "backward_unseen", 15))
        *mark = REP_MARK_UNSEEN;
    else
        return json_fail(&r->in, at,
                         "a marker that is not \"backward\", \"backward_caller\" or "
                         "\"backward_unseen\"");
    return true;
}

static bool frame_field(struct summary_reader *r, void *obj, int k)
{
    struct rep_frame *f = obj;
    switch (k) {
    case F_FUNCTION: return read_string_into(r, &f->function);
    case F_MODULE: return read_string_into(r, &f->module);
    case F_FILE: return read_string_into(r, &f->file);
    case F_LINE: return read_u32(r, &f->line);
    case F_PYTHON: return json_bool(&r->in, &f->python);
    case F_OFFSET: return json_u64(&r->in, &f->offset);
    case F_MARKER: return read_marker(r, &f->mark);
    }
    return false; /* known_key returns no other k */
}

/* "function" and "python" are required: every kept frame costs input bytes */
static const struct schema frame_schema = {frame_keys, F_N, 1u << F_FUNCTION | 1u << F_PYTHON,
                                           "a frame", frame_field};

static bool read_frame(struct summary_reader *r)
{
    size_t at = r->in.pos;
    if (!json_expect(&r->in, '{', "a frame object"))
        return false;
    if (!grow((void **)&r->frames, &r->frames_cap, r->nframes, sizeof *r->frames))
        return nomem(r);
    struct rep_frame *f = &r->frames[r->nframes];
    *f = (struct rep_frame){.function = "", .module = "", .file = ""};
    if (!read_fields(r, &frame_schema, f, at))
        return false;
    r->nframes++;
    return true;
}

static bool read_frames(struct summary_reader *r, struct rep_site *site)
{
    struct json_in *in = &r->in;
    if (!json_expect(in, '[', "an array of frames"))
        return false;
    r->nframes = 0;
    bool first = true;
    int more;
    while ((more = json_array_next(in, &first)) == 1) {
        if (r->nframes >= UINT32_MAX)
            return json_fail(in, in->pos, "too many frames in one site");
        if (!read_frame(r))
            return false;
    }
    if (more != 0)
        return false;
    site->nframes = (uint32_t)r->nframes;
    if (r->nframes) {
        struct rep_frame *copy = store_alloc(r->st, r->nframes * sizeof *copy);
        if (!copy)
            return nomem(r);
        memcpy(copy, r->frames, r->nframes * sizeof *copy);
        site->frames = copy;
    }
    return true;
}

/* The split of a site's or a thread's count (output/model.h): its start-up and open-step parts. */
#define SPLIT_KEYS "startup_count", "startup_blocked_ns", "partial_count", "partial_blocked_ns"

static bool split_field(struct summary_reader *r, struct rep_split *sp, int k)
{
    uint64_t *dst[] = {&sp->startup_count, &sp->startup_ns, &sp->partial_count, &sp->partial_ns};
    return json_u64(&r->in, dst[k]);
}

enum {
    S_API,
    S_COUNT,
    S_BLOCKED,
    S_MAX,
    S_FRAMES,
    S_GPU_IDLE,
    S_GPU_SYNCS,
    S_GPU_NEXT,
    S_THREADS,
    S_PINNED,
    S_SPLIT,
    S_N = S_SPLIT + 4
};
static const char *const site_keys[S_N] = {
    "api",         "count",          "blocked_ns",    "max_ns",  "frames",
    "gpu_idle_ns", "gpu_idle_syncs", "gpu_next_work", "threads", "after_pinned_copy",
    SPLIT_KEYS};

static bool site_field(struct summary_reader *r, void *obj, int k)
{
    struct rep_site *s = obj;
    struct json_in *in = &r->in;
    switch (k) {
    case S_API: return read_string_into(r, &s->api);
    case S_COUNT: return json_u64(in, &s->count);
    case S_BLOCKED: return json_u64(in, &s->blocked_ns);
    case S_MAX: return json_u64(in, &s->max_ns);
    case S_FRAMES: in->field = NULL; return read_frames(r, s);
    case S_GPU_IDLE: return json_u64(in, &s->gpu_idle_ns);
    case S_GPU_SYNCS: return json_u64(in, &s->gpu_idle_syncs);
    case S_GPU_NEXT: return read_string_into(r, &s->gpu_next_work);
    case S_THREADS: return json_u32_saturated(in, &s->threads);
    case S_PINNED: return json_u64(in, &s->pinned);
    }
    if (k >= S_SPLIT && k < S_N)
        return split_field(r, &s->split, k - S_SPLIT);
    return false; /* known_key returns no other k */
}

static const struct schema site_schema = {
    site_keys, S_N, 1u << S_API | 1u << S_COUNT | 1u << S_BLOCKED, "a site", site_field};

static bool read_site(struct summary_reader *r)
{
    struct summary_store *st = r->st;
    size_t at = r->in.pos;
    if (!json_expect(&r->in, '{', "a site object"))
        return false;
    if (!grow((void **)&st->sites, &st->sites_cap, st->nsites, sizeof *st->sites))
        return nomem(r);
    struct rep_site *s = &st->sites[st->nsites];
    *s = (struct rep_site){.api = ""};
    if (!read_fields(r, &site_schema, s, at))
        return false;
    st->nsites++;
    return true;
}

enum { T_STEP, T_WALL, T_SYNCS, T_BLOCKED, T_LAUNCHES, T_PARTIAL, T_STARTUP, T_ATTRIBUTED, T_N };
static const char *const step_keys[T_N] = {"step",     "wall_ns", "syncs",   "blocked_ns",
                                           "launches", "partial", "startup", "attributed"};

static bool step_field(struct summary_reader *r, void *obj, int k)
{
    struct rep_step *s = obj;
    struct json_in *in = &r->in;
    switch (k) {
    case T_STEP: return json_u64(in, &s->step);
    case T_WALL: return json_u64(in, &s->wall_ns);
    case T_SYNCS: return json_u64(in, &s->syncs);
    case T_BLOCKED: return json_u64(in, &s->blocked_ns);
    case T_LAUNCHES: return json_u64(in, &s->launches);
    case T_PARTIAL: return json_bool(in, &s->partial);
    case T_ATTRIBUTED: return json_bool(in, &s->attributed);
    case T_STARTUP: { /* the start-up step (step 0): its own object says the rest */
        bool startup;
        return json_bool(in, &startup);
    }
    }
    return false; /* known_key returns no other k */
}

static const struct schema step_schema = {
    step_keys, T_N, 1u << T_STEP | 1u << T_WALL | 1u << T_SYNCS | 1u << T_BLOCKED, "a step",
    step_field};

static bool read_step(struct summary_reader *r)
{
    struct summary_store *st = r->st;
    size_t at = r->in.pos;
    if (!json_expect(&r->in, '{', "a step object"))
        return false;
    if (!grow((void **)&st->steps, &st->steps_cap, st->nsteps, sizeof *st->steps))
        return nomem(r);
    struct rep_step *s = &st->steps[st->nsteps];
    *s = (struct rep_step){0};
    if (!read_fields(r, &step_schema, s, at))
        return false;
    st->nsteps++;
    return true;
}

enum { H_TID, H_NAME, H_SYNCS, H_BLOCKED, H_ENDS, H_SPLIT, H_N = H_SPLIT + 4 };
static const char *const thread_keys[H_N] = {"tid",        "name",       "syncs",
                                             "blocked_ns", "ends_steps", SPLIT_KEYS};

static bool thread_field(struct summary_reader *r, void *obj, int k)
{
    struct rep_thread *t = obj;
    struct json_in *in = &r->in;
    uint64_t v;
    switch (k) {
    case H_TID:
        if (!json_u64_max(in, UINT32_MAX, &v))
            return false;
        t->tid = (uint32_t)v;
        return true;
    case H_NAME: return read_string_into(r, &t->name);
    case H_SYNCS: return json_u64(in, &t->syncs);
    case H_BLOCKED: return json_u64(in, &t->blocked_ns);
    case H_ENDS: return json_bool(in, &t->ends_steps);
    }
    if (k >= H_SPLIT && k < H_N)
        return split_field(r, &t->split, k - H_SPLIT);
    return false;
}

static const struct schema thread_schema = {
    thread_keys, H_N, 1u << H_TID | 1u << H_SYNCS | 1u << H_BLOCKED, "a thread", thread_field};

static bool read_thread(struct summary_reader *r)
{
    struct summary_store *st = r->st;
    size_t at = r->in.pos;
    if (!json_expect(&r->in, '{', "a thread object"))
        return false;
    if (!grow((void **)&st->threads, &st->threads_cap, st->nthreads, sizeof *st->threads))
        return nomem(r);
    struct rep_thread *t = &st->threads[st->nthreads];
    *t = (struct rep_thread){.name = ""};
    if (!read_fields(r, &thread_schema, t, at))
        return false;
    st->nthreads++;
    return true;
}

/* "recompiles": torch.compile's recompilations by function (output/model.h rep_recompile) */
enum { R_FUNCTION, R_FILE, R_LINE, R_COUNT, R_IN_STEPS, R_REASON, R_N };
static const char *const recompile_keys[R_N] = {"function", "file",     "line",
                                                "count",    "in_steps", "reason"};

static bool recompile_field(struct summary_reader *r, void *obj, int k)
{
    struct rep_recompile *c = obj;
    struct json_in *in = &r->in;
    switch (k) {
    case R_FUNCTION: return read_string_into(r, &c->function);
    case R_FILE: return read_string_into(r, &c->file);
    case R_LINE: return read_u32(r, &c->line);
    case R_COUNT: return json_u64(in, &c->count);
    case R_IN_STEPS: return json_u64(in, &c->in_steps);
    case R_REASON: return read_string_into(r, &c->reason);
    }
    return false; /* known_key returns no other k */
}

static const struct schema recompile_schema = {
    recompile_keys, R_N, 1u << R_FUNCTION | 1u << R_COUNT, "a recompile", recompile_field};

static bool read_recompile(struct summary_reader *r)
{
    struct summary_store *st = r->st;
    size_t at = r->in.pos;
    if (!json_expect(&r->in, '{', "a recompile object"))
        return false;
    if (!grow((void **)&st->recompiles, &st->recompiles_cap, st->nrecompiles,
              sizeof *st->recompiles))
        return nomem(r);
    struct rep_recompile *c = &st->recompiles[st->nrecompiles];
    *c = (struct rep_recompile){.function = "", .file = "", .reason = ""};
    if (!read_fields(r, &recompile_schema, c, at))
        return false;
    if (c->in_steps > c->count)
        return json_fail(&r->in, at, "a recompile has \"in_steps\" %llu above its \"count\" %llu",
                         (unsigned long long)c->in_steps, (unsigned long long)c->count);
    st->nrecompiles++;
    return true;
}

/* "recorded": the recorded steps, {"first", "last", "cause"} (output/model.h rep_range) */
enum { G_FIRST, G_LAST, G_CAUSE, G_N };
static const char *const range_keys[G_N] = {"first", "last", "cause"};

static bool range_field(struct summary_reader *r, void *obj, int k)
{
    struct rep_range *g = obj;
    struct json_in *in = &r->in;
    const char *cause;
    switch (k) {
    case G_FIRST: return json_u64(in, &g->first);
    case G_LAST: return json_u64(in, &g->last);
    case G_CAUSE:
        if (!read_string_into(r, &cause))
            return false;
        for (unsigned c = 0; c < REP_CAUSES; c++)
            if (!strcmp(cause, rep_cause_name(c))) {
                g->cause = (uint8_t)c;
                return true;
            }
        return json_fail(in, in->pos,
                         "a recorded range's cause \"%s\" is none of \"schedule\", "
                         "\"syncspy start\", \"syncspy.start()\"",
                         cause);
    }
    return false; /* known_key returns no other k */
}

static const struct schema range_schema = {
    range_keys, G_N, 1u << G_FIRST | 1u << G_LAST | 1u << G_CAUSE, "a recorded range", range_field};

static bool read_range(struct summary_reader *r)
{
    struct summary_store *st = r->st;
    size_t at = r->in.pos;
    if (!json_expect(&r->in, '{', "a recorded range object"))
        return false;
    if (!grow((void **)&st->ranges, &st->ranges_cap, st->nranges, sizeof *st->ranges))
        return nomem(r);
    struct rep_range *g = &st->ranges[st->nranges];
    *g = (struct rep_range){0};
    if (!read_fields(r, &range_schema, g, at))
        return false;
    if (g->last < g->first)
        return json_fail(&r->in, at, "a recorded range ends (%llu) before it begins (%llu)",
                         (unsigned long long)g->last, (unsigned long long)g->first);
    st->nranges++;
    return true;
}

/* "startup": {"step": 0, "wall_ns", "syncs", "blocked_ns", "launches"} or null */
enum { U_STEP, U_WALL, U_SYNCS, U_BLOCKED, U_LAUNCHES, U_N };
static const char *const startup_keys[U_N] = {"step", "wall_ns", "syncs", "blocked_ns", "launches"};

static bool startup_field(struct summary_reader *r, void *obj, int k)
{
    struct rep_step *s = obj;
    uint64_t *dst[] = {&s->step, &s->wall_ns, &s->syncs, &s->blocked_ns, &s->launches};
    return json_u64(&r->in, dst[k]);
}

static const struct schema startup_schema = {startup_keys, U_N, 1u << U_WALL, "the start-up",
                                             startup_field};

static bool read_startup(struct summary_reader *r, struct rep_process *p)
{
    if (json_try_null(&r->in))
        return true;
    size_t at = r->in.pos;
    if (!json_expect(&r->in, '{', "the start-up object or null"))
        return false;
    p->startup_closed = true;
    return read_fields(r, &startup_schema, &p->startup, at);
}

static bool read_array(struct summary_reader *r, bool (*one)(struct summary_reader *),
                       const char *what)
{
    struct json_in *in = &r->in;
    if (!json_expect(in, '[', what))
        return false;
    bool first = true;
    int more;
    while ((more = json_array_next(in, &first)) == 1)
        if (!one(r))
            return false;
    return more == 0;
}

enum {
    P_VERSION,
    P_PID,
    P_RANK,
    P_SCHEDULE,
    P_STEPS_SEEN,
    P_ACTIVE,
    P_OMITTED,
    P_WALL,
    P_SYNCS,
    P_BLOCKED,
    P_LAUNCHES,
    P_UNATTRIBUTED,
    P_STEPS,
    P_SITES,
    P_TOOL,
    P_STARTUP,
    P_SOURCE,
    P_NO_HOOK,
    P_THREADS,
    P_LOCAL_RANK,
    P_WORLD_SIZE,
    P_NODE,
    P_HOST,
    P_JOB,
    P_LAUNCHER,
    P_ATTRIBUTION_STEPS,
    P_OPTIMIZERS,
    P_OPTIMIZERS_MAX,
    P_RECOMPILES,
    P_TRACE_LOST,
    P_RECORDED,
    P_RECORDED_OMITTED,
    P_N
};
static const char *const top_keys[P_N] = {"version",       "pid",
                                          "rank",          "schedule",
                                          "steps_seen",    "active_steps",
                                          "steps_omitted", "wall_ns",
                                          "syncs",         "blocked_ns",
                                          "launches",      "unattributed_syncs",
                                          "steps",         "sites",
                                          "tool",          "startup",
                                          "step_source",   "no_step_hook",
                                          "threads",       "local_rank",
                                          "world_size",    "node",
                                          "host",          "job_id",
                                          "launcher",      "attribution_steps",
                                          "optimizers",    "optimizers_max",
                                          "recompiles",    "trace_lost_errno",
                                          "recorded",      "recorded_omitted"};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* Totals a minimal file (DESIGN.md's shape) leaves out are computed from its steps. */
static void fill_totals(struct rep_process *p, unsigned seen)
{
    uint64_t wall = 0, syncs = 0, blocked = 0, launches = 0, last = 0;
    for (size_t i = 0; i < p->nsteps; i++) {
        wall = sat_add(wall, p->steps[i].wall_ns);
        syncs = sat_add(syncs, p->steps[i].syncs);
        blocked = sat_add(blocked, p->steps[i].blocked_ns);
        launches = sat_add(launches, p->steps[i].launches);
        if (sat_add(p->steps[i].step, 1) > last)
            last = sat_add(p->steps[i].step, 1);
    }
    if (!(seen & 1u << P_WALL))
        p->wall_ns = wall;
    if (!(seen & 1u << P_SYNCS))
        p->syncs = syncs;
    if (!(seen & 1u << P_BLOCKED))
        p->blocked_ns = blocked;
    if (!(seen & 1u << P_LAUNCHES))
        p->launches = launches;
    if (!(seen & 1u << P_ACTIVE))
        p->active_steps = sat_add(p->nsteps, p->steps_omitted);
    if (!(seen & 1u << P_STEPS_SEEN))
        p->steps_seen = last;
}

/* A whole number up to INT_MAX, or null (*out = unknown). */
static bool read_int_or_null(struct json_in *in, int unknown, int *out)
{
    uint64_t v;
    if (json_try_null(in)) {
        *out = unknown;
        return true;
    }
    if (!json_u64_max(in, INT_MAX, &v))
        return false;
    *out = (int)v;
    return true;
}

static bool top_field(struct summary_reader *r, void *obj, int k)
{
    struct json_in *in = &r->in;
    struct rep_process *p = obj;
    uint64_t v = 0;
    const char *tool;
    switch (k) {
    case P_VERSION:
        if (!json_u64(in, &v))
            return false;
        if (v > SUMMARY_VERSION)
            return json_fail(in, in->pos,
                             "summary.json version %llu is newer than this syncspy "
                             "understands (%d); read it with a newer syncspy",
                             (unsigned long long)v, SUMMARY_VERSION);
        if (v < 1)
            return json_fail(in, in->pos, "summary.json version 0 does not exist");
        return true;
    case P_PID:
        if (!json_u64_max(in, INT_MAX, &v))
            return false;
        p->pid = (int)v;
        return true;
    case P_RANK: return read_int_or_null(in, -1, &p->rank);
    case P_LOCAL_RANK: return read_int_or_null(in, -1, &p->local_rank);
    case P_WORLD_SIZE: return read_int_or_null(in, 0, &p->world_size);
    case P_NODE: return read_int_or_null(in, -1, &p->node);
    case P_HOST: return json_try_null(in) || read_string_into(r, &p->host);
    case P_JOB: return json_try_null(in) || read_string_into(r, &p->job_id);
    case P_LAUNCHER: return json_try_null(in) || read_string_into(r, &p->launcher);
    case P_SCHEDULE: return read_string_into(r, &p->schedule);
    case P_STEPS_SEEN: return json_u64(in, &p->steps_seen);
    case P_ACTIVE: return json_u64(in, &p->active_steps);
    case P_OMITTED: return json_u64(in, &p->steps_omitted);
    case P_WALL: return json_u64(in, &p->wall_ns);
    case P_SYNCS: return json_u64(in, &p->syncs);
    case P_BLOCKED: return json_u64(in, &p->blocked_ns);
    case P_LAUNCHES: return json_u64(in, &p->launches);
    case P_UNATTRIBUTED: return json_u64(in, &p->unattributed_syncs);
    case P_ATTRIBUTION_STEPS: return json_u64(in, &p->attribution_steps);
    case P_STEPS: in->field = NULL; return read_array(r, read_step, "an array of steps");
    case P_SITES: in->field = NULL; return read_array(r, read_site, "an array of sites");
    case P_TOOL: return read_string_into(r, &tool);
    case P_STARTUP: in->field = NULL; return read_startup(r, p);
    case P_SOURCE:
        if (json_try_null(in))
            return true;
        return read_string_into(r, &p->step_source);
    case P_NO_HOOK: return json_bool(in, &p->no_step_hook);
    case P_OPTIMIZERS: return json_u32_saturated(in, &p->optimizers);
    case P_OPTIMIZERS_MAX: return json_u32_saturated(in, &p->optimizers_max);
    case P_TRACE_LOST: { /* an errno (1..4095); anything else reads as an unknown error */
        uint32_t e;
        if (!json_u32_saturated(in, &e))
            return false;
        p->trace_lost_errno = e && e < 4096 ? (int)e : (e ? EIO : 0);
        return true;
    }
    case P_THREADS: in->field = NULL; return read_array(r, read_thread, "an array of threads");
    case P_RECOMPILES:
        in->field = NULL;
        return read_array(r, read_recompile, "an array of recompiles");
    case P_RECORDED:
        in->field = NULL;
        return read_array(r, read_range, "an array of recorded ranges");
    case P_RECORDED_OMITTED: return json_u64(in, &p->ranges_omitted);
    }
    return false; /* known_key returns no other k */
}

static const struct schema top_schema = {top_keys, P_N, 1u << P_PID | 1u << P_STEPS | 1u << P_SITES,
                                         "the summary", top_field};

static bool read_summary(struct summary_reader *r)
{
    struct json_in *in = &r->in;
    if (json_peek(in) != '{')
        return json_fail(in, in->pos,
                         "it does not start with '{', so it is not a "
                         "summary.json");
    in->pos++;
    unsigned seen = 0;
    if (!read_members(r, &top_schema, r->out, &seen) || !json_end(in))
        return false;
    if (!(seen & 1u << P_VERSION))
        return json_fail(in, 0, "it has no \"version\" field, so it is not a syncspy summary");
    if (!require(r, &top_schema, seen, 0))
        return false;
    struct rep_process *p = r->out;
    p->steps = r->st->steps;
    p->nsteps = r->st->nsteps;
    p->sites = r->st->sites;
    p->nsites = r->st->nsites;
    p->threads = r->st->threads;
    p->nthreads = r->st->nthreads;
    p->recompiles = r->st->recompiles;
    p->nrecompiles = r->st->nrecompiles;
    if (seen & 1u << P_RECORDED) { /* an older file has none: not known (NULL) */
        static const struct rep_range none;
        p->ranges = r->st->ranges ? r->st->ranges : &none;
        p->nranges = r->st->nranges;
    }
    fill_totals(p, seen);
    if (!p->schedule)
        p->schedule = "";
    return true;
}

/* ---- reading: the file -------------------------------------------------------------------- */

/* The whole file into *buf (NUL-terminated). 0, or -1 with a sentence in err. */
static int slurp(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    struct stat sb;
    int fd = cli_open_input(path, &sb, err, errlen);
    if (fd < 0)
        return -1;
    if ((uint64_t)sb.st_size > SUMMARY_MAX_BYTES) {
        snprintf(err, errlen, "%s is %lld bytes, more than the %u MiB a summary.json may have",
                 path, (long long)sb.st_size, SUMMARY_MAX_BYTES >> 20);
        close(fd);
        return -1;
    }
    /* the size may change under us (a process still writing): read up to the limit + 1 */
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *b = malloc(cap + 1);
    for (;;) {
        if (!b) {
            snprintf(err, errlen, "out of memory reading %s", path);
            close(fd);
            return -1;
        }
        if (n == cap) {
            if (cap > SUMMARY_MAX_BYTES) {
                snprintf(err, errlen, "%s grew past the %u MiB a summary.json may have", path,
                         SUMMARY_MAX_BYTES >> 20);
                free(b);
                close(fd);
                return -1;
            }
            cap = cap * 2 > SUMMARY_MAX_BYTES + 1 ? SUMMARY_MAX_BYTES + 1 : cap * 2;
            char *nb = realloc(b, cap + 1);
            if (!nb)
                free(b);
            b = nb;
            continue;
        }
        ssize_t k = read(fd, b + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            free(b);
            close(fd);
            return -1;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int summary_read_json(const char *path, struct rep_process *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    rep_identity_unknown(out);
    char *buf;
    size_t len;
    if (slurp(path, &buf, &len, err, errlen) != 0)
        return -1;
    if (len == 0) {
        snprintf(err, errlen, "%s is empty (was the process killed while writing it?)", path);
        free(buf);
        return -1;
    }
    struct summary_reader r = {.out = out};
    r.st = calloc(1, sizeof *r.st);
    if (!r.st) {
        snprintf(err, errlen, "out of memory reading %s", path);
        free(buf);
        return -1;
    }
    json_in_init(&r.in, buf, len);
    bool ok = read_summary(&r);
    if (ok) {
        out->owned = r.st;
    } else {
        struct json_in *in = &r.in;
        if (in->nomem)
            snprintf(err, errlen, "out of memory reading %s", path);
        else if (strncmp(in->err, "summary.json version", 20) == 0)
            snprintf(err, errlen, "%s: %s", path, in->err);
        else if (in->truncated)
            snprintf(err, errlen,
                     "%s ends early at byte %zu (%s): the file is truncated; was "
                     "the process killed while writing it?",
                     path, in->err_pos, in->err);
        else
            snprintf(err, errlen, "%s is not a valid summary.json: %s at byte %zu", path, in->err,
                     in->err_pos);
        store_free(r.st);
        memset(out, 0, sizeof *out);
        rep_identity_unknown(out);
    }
    json_in_fini(&r.in);
    free(r.frames);
    free(buf);
    return ok ? 0 : -1;
}
