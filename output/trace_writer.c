/* output/trace_writer.c: trace.bin's encoder (see trace_writer.h). Runs on the flusher thread or
 * at exit; writes through the one buffered writer (output/fd_writer.h) with a 64 KiB buffer of
 * its own, and keeps the file's ids in hash maps that may allocate (a failed add is skipped,
 * never an exit). Owns the bound's policy (SYNCSPY_TRACE_MB): which records a file past half of
 * it still gets; it never drops a count, only per-event detail and intermediate rewrites. */
#include "output/trace_writer.h"
#include "output/fd_writer.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define HASH_NONFATAL_OOM 1 /* never exit() inside the host process: a failed add is skipped */
#include <uthash.h>

#include "common/gencode.h"

#define TW_BUF_BYTES (64 * 1024)
#define API_CACHE 256 /* string ids of the first API ids, answered without hashing */
#define KCACHE 1024   /* direct-mapped cache: kernel host function -> name string id */

struct tw_string {
    UT_hash_handle hh;
    uint32_t id;
    char s[];
};

struct id_map { /* (u64, u64) key -> u32 id */
    UT_hash_handle hh;
    uint64_t key[2];
    uint32_t id;
};

/* A bit per id (stacks written): grows as ids grow. */
struct bitset {
    uint64_t *words;
    size_t nwords;
};

/* A part of the bound: its bytes, those spent, and how many halves of its rest are spent
 * (level k: spent >= size - size / 2^k), which sets how rare its records become. */
struct share {
    uint64_t size, spent;
    unsigned level;
};

#define SAMPLE_NONE 64        /* a sample level's shift that keeps no step's detail */
#define SAMPLE_LEVELS 80      /* at most 63 halvings, the first and the cut */
#define SAMPLE_FIRST_SHIFT 3  /* past the half, every 8th step's detail at first */
#define RUN_COUNTS_BYTES 4096 /* a run's per-step counts, after its record, at most */
#define GROUP_MAX_BYTES 30    /* one group of them: three LEB128 varints */
#define NAME_SLACK (TRACE_MAX_STRING_BYTES + 16) /* a kernel's name a launch record may bring */

/* From step from_step on, the detail of the steps whose number is a multiple of 2^shift. */
struct sample_level {
    uint64_t from_step;
    unsigned shift;
};

#define UNNAMED_MAX 64    /* generated code's frames awaiting their user line */
#define UNNAMED_TRIES 100 /* flushes each is named again (10 s at the flusher's period) */

struct trace_writer {
    struct fd_writer out;
    bool lost_marked; /* tw_mark_lost ran */
    /* the bound (0: none) and its policy */
    uint64_t bound, bytes;
    uint64_t usable; /* the bound less the eighth kept for summary.json (SUMMARY_SHARE) */
    bool sampling, final;
    struct share steps, detail, totals, reserve;
    struct share *charge; /* the share the records being written are spent from (NULL: none) */
    struct share *totals_charge;
    struct sample_level levels[SAMPLE_LEVELS];
    unsigned nlevels, detail_level;
    uint64_t max_step, steps_seen, last_totals_ns, steps_folded;
    bool have_run, run_summed; /* run_summed: the steps' share had no room for its counts */
    struct trace_step_run run;
    /* the run's per-step counts (trace_format.h): the groups so far, and the one still open */
    uint8_t run_counts[RUN_COUNTS_BYTES];
    size_t run_len;
    uint64_t group_repeat, group_syncs, group_launches;
    struct tw_namer namer;
    uint32_t next_string, next_frame;
    struct tw_string *strings;
    struct id_map *frames; /* frame key -> frame id */
    struct {               /* generated code's frames written unnamed (FRAME_NAME later) */
        struct tw_frame_key key;
        uint32_t id, tries;
    } unnamed[UNNAMED_MAX];
    uint32_t nunnamed;
    struct id_map *kernels; /* (func, 0) -> string id */
    struct id_map *threads; /* (tid, 0) -> 1 */
    struct bitset stacks;   /* stack ids written */
    uint64_t *site_counts;  /* by site id: the count of its last SITE_TOTALS */
    size_t nsite_counts;
    uint64_t dropped_syncs, dropped_launches; /* last written */
    uint64_t steps_lost;                      /* last written */
    uint32_t api_ids[API_CACHE];
    struct {
        uint64_t func;
        uint32_t id;
    } kcache[KCACHE];
    char buf[TW_BUF_BYTES];
};

/* ---- maps ------------------------------------------------------------------------------------ */

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
    HASH_ITER(hh, *m, e, tmp)
    {
        HASH_DEL(*m, e);
        free(e);
    }
}

static bool bit_get(const struct bitset *b, uint32_t i)
{
    return i / 64 < b->nwords && (b->words[i / 64] >> (i % 64) & 1);
}

static void bit_set(struct bitset *b, uint32_t i)
{
    if (i / 64 >= b->nwords) {
        size_t n = b->nwords ? b->nwords : 16;
        while (n <= i / 64)
            n *= 2;
        uint64_t *p = realloc(b->words, n * sizeof *p);
        if (!p)
            return; /* written again later: the reader keeps the last definition of an id */
        memset(p + b->nwords, 0, (n - b->nwords) * sizeof *p);
        b->words = p;
        b->nwords = n;
    }
    b->words[i / 64] |= 1ull << (i % 64);
}

/* ---- the bound's shares ------------------------------------------------------------------------ */

static void share_spend(struct share *s, uint64_t n)
{
    s->spent += n;
    while (s->level < 62 && s->spent >= s->size - (s->size >> (s->level + 1)))
        s->level++;
}

static bool share_fits(const struct share *s, uint64_t n)
{
    return s->spent + n <= s->size;
}

/* ---- records --------------------------------------------------------------------------------- */

/* Appends one record of the given type (the struct after its record header: its header is filled
 * here). extra/extra_len: bytes that follow the struct (frame ids of a stack, string bytes),
 * padded to 8. */
static void record(struct trace_writer *w, enum trace_record_type type, void *rec, size_t rec_len,
                   const void *extra, size_t extra_len)
{
    static const char zeros[8];
    size_t total = rec_len + extra_len, padded = (total + 7) & ~(size_t)7;
    struct trace_record_header *h = rec;
    h->type = type;
    h->bytes = (uint32_t)padded;
    w->bytes += padded;
    if (w->charge)
        share_spend(w->charge, padded);
    fdw_write(&w->out, rec, rec_len);
    if (extra_len)
        fdw_write(&w->out, extra, extra_len);
    if (padded != total)
        fdw_write(&w->out, zeros, padded - total);
}

/* The id of s, writing a STRING record the first time s is seen (NULL or "" -> 0). */
static uint32_t string_id(struct trace_writer *w, const char *s)
{
    if (!s || !*s)
        return 0;
    size_t n = strlen(s);
    if (n > TRACE_MAX_STRING_BYTES)
        n = TRACE_MAX_STRING_BYTES; /* cut (the key is the cut string too) */
    struct tw_string *e;
    HASH_FIND(hh, w->strings, s, n, e);
    if (e)
        return e->id;
    e = malloc(sizeof *e + n + 1);
    if (!e)
        return 0;
    memcpy(e->s, s, n);
    e->s[n] = 0;
    e->id = w->next_string++;
    HASH_ADD_KEYPTR(hh, w->strings, e->s, n, e);
    struct trace_string rec = {.id = e->id, .length = (uint32_t)n};
    record(w, TREC_STRING, &rec, sizeof rec, e->s, n);
    return e->id;
}

static uint32_t api_string(struct trace_writer *w, uint32_t api)
{
    if (api >= API_CACHE)
        return string_id(w, w->namer.api(w->namer.ctx, api));
    if (!w->api_ids[api])
        w->api_ids[api] = string_id(w, w->namer.api(w->namer.ctx, api));
    return w->api_ids[api];
}

static uint32_t kernel_name_slow(struct trace_writer *w, uint64_t func)
{
    uint32_t *known = map_find(w->kernels, func, 0);
    if (known)
        return *known;
    uint32_t id = string_id(w, w->namer.kernel(w->namer.ctx, func));
    map_put(&w->kernels, func, 0, id);
    return id;
}

static uint32_t kernel_name(struct trace_writer *w, uint64_t func)
{
    size_t slot = (size_t)((func >> 4) ^ (func >> 14)) & (KCACHE - 1);
    if (w->kcache[slot].func == func && func)
        return w->kcache[slot].id;
    uint32_t id = kernel_name_slow(w, func);
    w->kcache[slot].func = func;
    w->kcache[slot].id = id;
    return id;
}

/* A FRAME (or FRAME_NAME) record of frame `id` named f, written. */
static uint32_t write_frame(struct trace_writer *w, uint32_t type, uint32_t id,
                            const struct rep_frame *f)
{
    uint32_t kind = f->mark == REP_MARK_BACKWARD ? TRACE_FRAME_BACKWARD
                    : f->mark == REP_MARK_CALLER ? TRACE_FRAME_CALLER
                    : f->mark == REP_MARK_UNSEEN ? TRACE_FRAME_UNSEEN
                    : f->python                  ? TRACE_FRAME_PYTHON
                                                 : TRACE_FRAME_NATIVE;
    struct trace_frame rec = {.id = id,
                              .kind = kind,
                              .function = string_id(w, f->function),
                              .file = string_id(w, f->file),
                              .line = f->line};
    if (kind == TRACE_FRAME_NATIVE) {
        rec.module = string_id(w, f->module);
        rec.offset = f->offset;
    } else if (kind == TRACE_FRAME_PYTHON && f->module && *f->module) {
        rec.module = string_id(w, f->module); /* generated code named by its user line: the code */
    }
    record(w, type, &rec, sizeof rec, NULL, 0);
    return kind;
}

static uint32_t frame_id(struct trace_writer *w, struct tw_frame_key key)
{
    uint32_t *known = map_find(w->frames, key.a, key.b);
    if (known)
        return *known;
    struct rep_frame f = {0};
    w->namer.frame(w->namer.ctx, key, &f);
    uint32_t id = w->next_frame++;
    uint32_t kind = write_frame(w, TREC_FRAME, id, &f);
    map_put(&w->frames, key.a, key.b, id);
    /* torch.compile's generated code before its user line came (agent/record/compiled.h): asked again
     * at each flush, a FRAME_NAME record when it comes */
    if (kind == TRACE_FRAME_PYTHON && gencode_file(f.file) && w->nunnamed < UNNAMED_MAX) {
        w->unnamed[w->nunnamed].key = key;
        w->unnamed[w->nunnamed].tries = 0;
        w->unnamed[w->nunnamed++].id = id;
    }
    return id;
}

void tw_name_frames(struct trace_writer *w)
{
    w->charge = NULL;
    for (uint32_t i = 0; i < w->nunnamed;) {
        struct rep_frame f = {0};
        w->namer.frame(w->namer.ctx, w->unnamed[i].key, &f);
        if (!f.python || gencode_file(f.file)) { /* not yet: again at the next flush, a while */
            if (++w->unnamed[i].tries >= UNNAMED_TRIES)
                w->unnamed[i] = w->unnamed[--w->nunnamed]; /* code with no user line: left */
            else
                i++;
            continue;
        }
        write_frame(w, TREC_FRAME_NAME, w->unnamed[i].id, &f);
        w->unnamed[i] = w->unnamed[--w->nunnamed];
    }
}

/* ---- the bound's policy ---------------------------------------------------------------------- */

static void note_step(struct trace_writer *w, uint64_t step)
{
    if (step > w->max_step)
        w->max_step = step;
}

static void add_level(struct trace_writer *w, uint64_t from_step, unsigned shift)
{
    while (w->nlevels && w->levels[w->nlevels - 1].from_step >= from_step)
        w->nlevels--; /* a cut at an earlier step than a later level's start replaces it */
    if (w->nlevels < SAMPLE_LEVELS)
        w->levels[w->nlevels++] = (struct sample_level){from_step, shift};
}

/* The file reached half the bound: the steps after the latest one seen are sampled. */
static void start_sampling(struct trace_writer *w)
{
    w->sampling = true;
    add_level(w, w->max_step + 1, SAMPLE_FIRST_SHIFT);
}

/* Whether a record of len bytes of a policy-controlled kind may still be written in full (below
 * half the bound, or no bound); else sampling starts. */
static bool below_half(struct trace_writer *w, uint64_t len)
{
    if (!w->bound)
        return true;
    if (!w->sampling && w->bytes + len <= w->usable / 2)
        return true;
    if (!w->sampling)
        start_sampling(w);
    return false;
}

/* The sample thins as the run goes on: in the j-th doubling of the step number since sampling
 * began (steps base * 2^j .. base * 2^(j+1) - 1) a level's stride is 2^j times longer, so each
 * doubling of the run keeps about as many steps' detail as the one before. */
static unsigned octave(const struct trace_writer *w, uint64_t step)
{
    uint64_t base = w->levels[0].from_step ? w->levels[0].from_step : 1;
    return step / base ? 63u - (unsigned)__builtin_clzll(step / base) : 0;
}

static unsigned level_shift(const struct trace_writer *w, unsigned i, uint64_t step)
{
    unsigned shift = w->levels[i].shift;
    if (shift >= SAMPLE_NONE)
        return SAMPLE_NONE;
    shift += octave(w, step);
    return shift < 63 ? shift : 63;
}

static bool step_sampled(const struct trace_writer *w, uint64_t step)
{
    for (unsigned i = w->nlevels; i-- > 0;) {
        if (step >= w->levels[i].from_step) {
            unsigned shift = level_shift(w, i, step);
            return shift < SAMPLE_NONE && (step & ((1ull << shift) - 1)) == 0;
        }
    }
    return true; /* before sampling began */
}

/* Multiples of 2^shift in [lo, hi). */
static uint64_t multiples(uint64_t lo, uint64_t hi, unsigned shift)
{
    uint64_t m = (1ull << shift) - 1;
    uint64_t a = (lo >> shift) + ((lo & m) != 0), b = (hi >> shift) + ((hi & m) != 0);
    return b > a ? b - a : 0;
}

/* Steps (of the first `seen`) whose every event is in the file. */
static uint64_t detail_steps(const struct trace_writer *w, uint64_t seen)
{
    if (!w->nlevels)
        return seen;
    uint64_t n = w->levels[0].from_step < seen ? w->levels[0].from_step : seen;
    uint64_t base = w->levels[0].from_step ? w->levels[0].from_step : 1;
    for (unsigned i = 0; i < w->nlevels; i++) {
        uint64_t lo = w->levels[i].from_step;
        uint64_t hi = i + 1 < w->nlevels ? w->levels[i + 1].from_step : seen;
        if (hi > seen)
            hi = seen;
        while (lo < hi && w->levels[i].shift < SAMPLE_NONE) { /* octave by octave */
            unsigned j = octave(w, lo);
            uint64_t end = j < 62 && base <= (UINT64_MAX >> (j + 1)) ? base << (j + 1) : UINT64_MAX;
            if (end > hi)
                end = hi;
            n += multiples(lo, end, level_shift(w, i, lo));
            lo = end;
        }
    }
    return n;
}

/* Whether an event of step `step` (a record of len bytes) is written. */
static bool detail_kept(struct trace_writer *w, uint64_t step, uint64_t len)
{
    note_step(w, step);
    w->charge = NULL;
    if (below_half(w, len))
        return true;
    if (!step_sampled(w, step))
        return false;
    if (!share_fits(&w->detail, len + NAME_SLACK)) { /* full: no step's detail from this one on */
        add_level(w, step, SAMPLE_NONE);
        return false;
    }
    w->charge = &w->detail;
    return true;
}

/* After an event written from the detail share: a new level halves the sample of later steps. */
static void detail_spent(struct trace_writer *w)
{
    if (w->charge != &w->detail || w->detail.level == w->detail_level)
        return;
    w->detail_level = w->detail.level;
    if (w->nlevels && w->levels[w->nlevels - 1].shift < SAMPLE_NONE)
        add_level(w, w->max_step + 1, w->detail_level + SAMPLE_FIRST_SHIFT);
}

static void put_varint(struct trace_writer *w, uint64_t v)
{
    do {
        w->run_counts[w->run_len++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void close_group(struct trace_writer *w)
{
    if (!w->group_repeat)
        return;
    put_varint(w, w->group_repeat);
    put_varint(w, w->group_syncs);
    put_varint(w, w->group_launches);
    w->group_repeat = 0;
}

/* The open run's record: its per-step counts follow it unless its active steps are all alike
 * (one group: syncs_min == syncs_max says them) or the share had no room for them. */
static void write_run(struct trace_writer *w)
{
    if (!w->have_run)
        return;
    struct trace_step_run rec = w->run;
    bool one_group = w->run_len == 0;
    close_group(w);
    size_t n = w->run_summed || one_group ? 0 : w->run_len;
    record(w, TREC_STEP_RUN, &rec, sizeof rec, w->run_counts, n);
    w->have_run = false;
    w->run_len = 0;
}

static void write_bound(struct trace_writer *w)
{
    struct tw_bound_state b;
    tw_bound_state(w, &b);
    struct trace_bound rec = {.bound_bytes = w->bound,
                              .sampled_from = b.sampled_from,
                              .detail_steps = b.detail_steps,
                              .steps_seen = b.steps_seen,
                              .steps_folded = b.steps_folded};
    record(w, TREC_BOUND, &rec, sizeof rec, NULL, 0);
}

/* Whether the steps' share has room for the open run's record with extra more bytes of counts. */
static bool run_room(const struct trace_writer *w, uint64_t extra)
{
    return share_fits(&w->steps, sizeof(struct trace_step_run) + w->run_len + extra);
}

/* Step s into the open run: the next step while the run's counts have room (in the run and in
 * the steps' share), else a new run; a run begun with no room in the share for its counts keeps
 * only their sums (run_summed) and takes every step until a rewrite of the totals closes it. */
static void fold_step(struct trace_writer *w, const struct tw_step *s)
{
    if (w->have_run && !w->run_summed &&
        !(s->step == w->run.last_step + 1 && w->run_len + 2 * GROUP_MAX_BYTES <= RUN_COUNTS_BYTES &&
          run_room(w, 2 * GROUP_MAX_BYTES))) {
        w->charge = &w->steps;
        write_run(w);
    }
    if (!w->have_run) {
        w->run = (struct trace_step_run){
            .first_step = s->step, .last_step = s->step, .syncs_min = UINT64_MAX};
        w->have_run = true;
        w->run_len = 0;
        w->group_repeat = 0;
        w->run_summed = !run_room(w, 2 * GROUP_MAX_BYTES);
    }
    struct trace_step_run *r = &w->run;
    if (s->step > r->last_step)
        r->last_step = s->step;
    if (s->step < r->first_step)
        r->first_step = s->step;
    r->steps++;
    w->steps_folded++;
    if (!s->active)
        return;
    r->active++;
    if (s->syncs < r->syncs_min)
        r->syncs_min = s->syncs;
    if (s->syncs > r->syncs_max)
        r->syncs_max = s->syncs;
    r->syncs += s->syncs;
    r->blocked_ns += s->blocked_ns;
    r->launches += s->launches;
    r->wall_ns += s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
    if (w->run_summed)
        return;
    if (w->group_repeat && w->group_syncs == s->syncs && w->group_launches == s->launches) {
        w->group_repeat++;
        return;
    }
    close_group(w);
    w->group_repeat = 1;
    w->group_syncs = s->syncs;
    w->group_launches = s->launches;
}

void tw_set_bound(struct trace_writer *w, uint64_t bound_bytes)
{
    w->bound = bound_bytes;
    w->usable = bound_bytes - bound_bytes / TW_SUMMARY_SHARE;
    w->steps = (struct share){.size = w->usable / 4};
    w->detail = (struct share){.size = w->usable / 8};
    w->totals = (struct share){.size = w->usable / 16};
    w->reserve = (struct share){.size = w->usable / 16};
}

void tw_finishing(struct trace_writer *w)
{
    w->final = true;
}

bool tw_totals_due(struct trace_writer *w, uint64_t now_ns, size_t nsites, size_t nthreads)
{
    w->totals_charge = NULL;
    if (!w->sampling)
        return true; /* below half the bound (or none): every flush, as always */
    uint64_t cost = (uint64_t)nsites * (sizeof(struct trace_site_totals) + 8) +
                    (uint64_t)nthreads * sizeof(struct trace_thread_totals) +
                    sizeof(struct trace_drops) + sizeof(struct trace_steps_lost) +
                    sizeof(struct trace_step_run) + w->run_len + GROUP_MAX_BYTES + 8 +
                    sizeof(struct trace_bound);
    if (w->final) {
        w->totals_charge = &w->reserve;
    } else {
        unsigned shift = w->totals.level < 40 ? w->totals.level : 40;
        if ((w->last_totals_ns && now_ns - w->last_totals_ns < (1000000000ull << shift)) ||
            !share_fits(&w->totals, cost))
            return false;
        w->totals_charge = &w->totals;
    }
    w->last_totals_ns = now_ns;
    w->charge = w->totals_charge;
    write_run(w);
    write_bound(w);
    return true;
}

void tw_bound_state(const struct trace_writer *w, struct tw_bound_state *out)
{
    *out = (struct tw_bound_state){.bytes = w->bytes};
    if (!w->sampling)
        return;
    out->sampling = true;
    out->steps_seen = w->steps_seen > w->max_step + 1 ? w->steps_seen : w->max_step + 1;
    out->sampled_from = w->nlevels ? w->levels[0].from_step : out->steps_seen;
    out->detail_steps = detail_steps(w, out->steps_seen);
    out->steps_folded = w->steps_folded;
}

/* ---- the batches ----------------------------------------------------------------------------- */

bool tw_thread_written(const struct trace_writer *w, uint32_t tid)
{
    return map_find(w->threads, tid, 0) != NULL;
}

void tw_thread(struct trace_writer *w, uint32_t tid, const char *name)
{
    if (tw_thread_written(w, tid))
        return;
    w->charge = NULL;
    struct trace_thread rec = {.tid = tid, .name = string_id(w, name)};
    record(w, TREC_THREAD, &rec, sizeof rec, NULL, 0);
    map_put(&w->threads, tid, 0, 1);
}

bool tw_stack_written(const struct trace_writer *w, uint32_t stack_id)
{
    return bit_get(&w->stacks, stack_id);
}

void tw_stack(struct trace_writer *w, uint32_t stack_id, const struct tw_frame_key *frames,
              uint32_t nframes)
{
    uint32_t ids[TRACE_MAX_FRAMES];
    w->charge = NULL;
    uint32_t n = nframes < TRACE_MAX_FRAMES ? nframes : TRACE_MAX_FRAMES;
    for (uint32_t i = 0; i < n; i++)
        ids[i] = frame_id(w, frames[i]);
    struct trace_stack rec = {.id = stack_id, .nframes = n};
    record(w, TREC_STACK, &rec, sizeof rec, ids, n * sizeof ids[0]);
    bit_set(&w->stacks, stack_id);
}

void tw_events(struct trace_writer *w, const struct tw_event *events, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct tw_event *r = &events[i];
        bool sync = r->kind == TW_SYNC;
        if (!detail_kept(w, r->step,
                         sync ? sizeof(struct trace_sync) : sizeof(struct trace_launch)))
            continue;
        uint32_t api = api_string(w, r->api);
        if (sync) {
            struct trace_sync rec = {.start_ns = r->t0,
                                     .end_ns = r->t1,
                                     .stream = r->stream,
                                     .bytes = r->arg,
                                     .step = r->step,
                                     .tid = r->tid,
                                     .stack_id = r->stack_id,
                                     .dir = r->dir,
                                     .api_name = api};
            record(w, TREC_SYNC, &rec, sizeof rec, NULL, 0);
        } else {
            struct trace_launch rec = {.time_ns = r->t0,
                                       .stream = r->stream,
                                       .step = r->step,
                                       .tid = r->tid,
                                       .api_name = api,
                                       .kernel_name = kernel_name(w, r->arg)};
            record(w, TREC_LAUNCH, &rec, sizeof rec, NULL, 0);
        }
        detail_spent(w);
    }
}

void tw_step(struct trace_writer *w, const struct tw_step *s)
{
    note_step(w, s->step);
    if (s->step + 1 > w->steps_seen)
        w->steps_seen = s->step + 1;
    w->charge = NULL;
    if (!below_half(w, sizeof(struct trace_step))) {
        /* the exit's partial step keeps its record (the report leaves it out of rates) */
        if (!s->partial &&
            (w->steps.level > 0 || !share_fits(&w->steps, sizeof(struct trace_step)))) {
            fold_step(w, s);
            return;
        }
        w->charge = s->partial ? &w->reserve : &w->steps;
    }
    struct trace_step rec = {.step = s->step,
                             .start_ns = s->start_ns,
                             .end_ns = s->end_ns,
                             .syncs = s->syncs,
                             .blocked_ns = s->blocked_ns,
                             .launches = s->launches,
                             .active = s->active,
                             .partial = s->partial,
                             .tid = s->tid,
                             .source = s->source,
                             .attributed = s->attributed,
                             .optimizers = s->optimizers};
    record(w, TREC_STEP, &rec, sizeof rec, NULL, 0);
}

/* The slot of a site's last written count; NULL when it cannot grow (the record is written). */
static uint64_t *site_count_slot(struct trace_writer *w, uint32_t site_id)
{
    if (site_id >= w->nsite_counts) {
        size_t n = w->nsite_counts ? w->nsite_counts : 64;
        while (n <= site_id)
            n *= 2;
        uint64_t *p = realloc(w->site_counts, n * sizeof *p);
        if (!p)
            return NULL;
        memset(p + w->nsite_counts, 0, (n - w->nsite_counts) * sizeof *p);
        w->site_counts = p;
        w->nsite_counts = n;
    }
    return &w->site_counts[site_id];
}

void tw_site(struct trace_writer *w, const struct tw_site *s)
{
    uint64_t *last = site_count_slot(w, s->site_id);
    if (last && *last == s->phase.count)
        return;
    w->charge = w->totals_charge;
    const struct rep_phase_raw *p = &s->phase;
    struct trace_site_totals rec = {.site_id = s->site_id,
                                    .stack_id = s->stack_id,
                                    .api_name = api_string(w, s->api),
                                    .threads = s->threads,
                                    .count = p->count,
                                    .blocked_ns = p->ns,
                                    .max_ns = s->max_ns,
                                    .startup_count = p->startup_count,
                                    .startup_ns = p->startup_ns,
                                    .seen_step = p->seen_step,
                                    .base_count = p->base_count,
                                    .base_ns = p->base_ns,
                                    .pinned = s->pinned};
    record(w, TREC_SITE_TOTALS, &rec, sizeof rec, NULL, 0);
    if (last)
        *last = p->count;
}

void tw_thread_totals(struct trace_writer *w, const struct tw_thread_totals *t)
{
    const struct rep_phase_raw *p = &t->phase;
    w->charge = w->totals_charge;
    struct trace_thread_totals rec = {.tid = t->tid,
                                      .count = p->count,
                                      .blocked_ns = p->ns,
                                      .startup_count = p->startup_count,
                                      .startup_ns = p->startup_ns,
                                      .seen_step = p->seen_step,
                                      .base_count = p->base_count,
                                      .base_ns = p->base_ns};
    record(w, TREC_THREAD_TOTALS, &rec, sizeof rec, NULL, 0);
}

void tw_drops(struct trace_writer *w, uint64_t syncs_dropped, uint64_t launches_dropped)
{
    if (syncs_dropped == w->dropped_syncs && launches_dropped == w->dropped_launches)
        return;
    w->charge = w->totals_charge;
    struct trace_drops rec = {
        .tid = 0, .syncs_dropped = syncs_dropped, .launches_dropped = launches_dropped};
    record(w, TREC_DROPS, &rec, sizeof rec, NULL, 0);
    w->dropped_syncs = syncs_dropped;
    w->dropped_launches = launches_dropped;
}

void tw_steps_lost(struct trace_writer *w, const struct tw_steps_lost *l)
{
    if (l->records == w->steps_lost)
        return;
    w->charge = w->totals_charge;
    struct trace_steps_lost rec = {.records = l->records,
                                   .active = l->active,
                                   .syncs = l->syncs,
                                   .blocked_ns = l->blocked_ns,
                                   .launches = l->launches,
                                   .wall_ns = l->wall_ns};
    record(w, TREC_STEPS_LOST, &rec, sizeof rec, NULL, 0);
    w->steps_lost = l->records;
}

void tw_end(struct trace_writer *w, uint64_t end_mono_ns, uint64_t unattributed_syncs,
            uint64_t steps_seen)
{
    w->charge = w->sampling ? &w->reserve : NULL;
    write_run(w); /* a run still open (its share full, no rewrite since) */
    struct trace_end rec = {.end_mono_ns = end_mono_ns,
                            .unattributed_syncs = unattributed_syncs,
                            .steps_seen = steps_seen};
    record(w, TREC_END, &rec, sizeof rec, NULL, 0);
}

/* ---- the file -------------------------------------------------------------------------------- */

struct trace_writer *tw_open(int fd, const struct trace_file_header *header,
                             const struct tw_namer *namer)
{
    struct trace_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    fdw_init_buffer(&w->out, fd, w->buf, sizeof w->buf, 0);
    w->namer = *namer;
    w->next_string = 1;
    w->next_frame = 1;
    /* header_bytes: the header and the parts that follow it (struct trace_file_header_v13) */
    size_t header_bytes =
        header->header_bytes > sizeof *header ? header->header_bytes : sizeof *header;
    fdw_write(&w->out, header, header_bytes);
    w->bytes = header_bytes;
    tw_flush(w);
    return w;
}

int tw_flush(struct trace_writer *w)
{
    return fdw_flush(&w->out);
}

int tw_error(const struct trace_writer *w)
{
    return w->out.err;
}

void tw_mark_lost(struct trace_writer *w)
{
    if (!w->out.err || w->lost_marked)
        return;
    w->lost_marked = true;
    int fd = w->out.fd;
    int32_t err = w->out.err;
    off_t at = (off_t)offsetof(struct trace_file_header_v13, id.write_errno);
    struct stat sb;
    /* only into a header that is there (a hole would grow the file) */
    if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)sizeof(struct trace_file_header_v13))
        return;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || ((flags & O_APPEND) && fcntl(fd, F_SETFL, flags & ~O_APPEND) != 0))
        return; /* with O_APPEND, pwrite() appends whatever its offset */
    ssize_t n = pwrite(fd, &err, sizeof err, at);
    (void)n; /* nothing more to do: summary.json and the exit report say it too */
    if (flags & O_APPEND)
        fcntl(fd, F_SETFL, flags);
}

void tw_close(struct trace_writer *w)
{
    if (!w)
        return;
    tw_flush(w);
    tw_discard(w);
}

void tw_discard(struct trace_writer *w)
{
    if (!w)
        return;
    struct tw_string *s, *tmp;
    HASH_ITER(hh, w->strings, s, tmp)
    {
        HASH_DEL(w->strings, s);
        free(s);
    }
    map_free(&w->frames);
    map_free(&w->kernels);
    map_free(&w->threads);
    free(w->stacks.words);
    free(w->site_counts);
    free(w);
}
