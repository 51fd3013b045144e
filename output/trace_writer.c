/* output/trace_writer.c: trace.bin's encoder (see trace_writer.h). Runs on the flusher thread or
 * at exit; writes through the one buffered writer (output/fd_writer.h) with a 64 KiB buffer of
 * its own, and keeps the file's ids in hash maps that may allocate (a failed add is skipped,
 * never an exit). */
#include "output/trace_writer.h"
#include "output/fd_writer.h"

#include <stdlib.h>
#include <string.h>
#define HASH_NONFATAL_OOM 1 /* never exit() inside the host process: a failed add is skipped */
#include <uthash.h>

#define TW_BUF_BYTES (64 * 1024)
#define API_CACHE 256   /* string ids of the first API ids, answered without hashing */
#define KCACHE 1024     /* direct-mapped cache: kernel host function -> name string id */

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

struct trace_writer {
    struct fd_writer out;
    struct tw_namer namer;
    uint32_t next_string, next_frame;
    struct tw_string *strings;
    struct id_map *frames;   /* frame key -> frame id */
    struct id_map *kernels;  /* (func, 0) -> string id */
    struct id_map *threads;  /* (tid, 0) -> 1 */
    struct bitset stacks;    /* stack ids written */
    uint64_t *site_counts;   /* by site id: the count of its last SITE_TOTALS */
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
    HASH_ITER(hh, *m, e, tmp) {
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

static uint32_t frame_id(struct trace_writer *w, struct tw_frame_key key)
{
    uint32_t *known = map_find(w->frames, key.a, key.b);
    if (known)
        return *known;
    struct rep_frame f = {0};
    w->namer.frame(w->namer.ctx, key, &f);
    uint32_t kind = f.mark == REP_MARK_BACKWARD ? TRACE_FRAME_BACKWARD
                    : f.mark == REP_MARK_CALLER ? TRACE_FRAME_CALLER
                    : f.mark == REP_MARK_UNSEEN ? TRACE_FRAME_UNSEEN
                    : f.python                  ? TRACE_FRAME_PYTHON
                                                : TRACE_FRAME_NATIVE;
    struct trace_frame rec = {.id = w->next_frame++,
                              .kind = kind,
                              .function = string_id(w, f.function),
                              .file = string_id(w, f.file),
                              .line = f.line};
    if (kind == TRACE_FRAME_NATIVE) {
        rec.module = string_id(w, f.module);
        rec.offset = f.offset;
    }
    record(w, TREC_FRAME, &rec, sizeof rec, NULL, 0);
    map_put(&w->frames, key.a, key.b, rec.id);
    return rec.id;
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
        uint32_t api = api_string(w, r->api);
        if (r->kind == TW_SYNC) {
            struct trace_sync rec = {.start_ns = r->t0, .end_ns = r->t1, .stream = r->stream,
                                     .bytes = r->arg, .step = r->step, .tid = r->tid,
                                     .stack_id = r->stack_id, .dir = r->dir, .api_name = api};
            record(w, TREC_SYNC, &rec, sizeof rec, NULL, 0);
        } else {
            struct trace_launch rec = {.time_ns = r->t0, .stream = r->stream, .step = r->step,
                                       .tid = r->tid, .api_name = api,
                                       .kernel_name = kernel_name(w, r->arg)};
            record(w, TREC_LAUNCH, &rec, sizeof rec, NULL, 0);
        }
    }
}

void tw_step(struct trace_writer *w, const struct tw_step *s)
{
    struct trace_step rec = {.step = s->step, .start_ns = s->start_ns, .end_ns = s->end_ns,
                             .syncs = s->syncs, .blocked_ns = s->blocked_ns,
                             .launches = s->launches, .active = s->active, .partial = s->partial,
                             .tid = s->tid, .source = s->source, .attributed = s->attributed};
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
    const struct rep_phase_raw *p = &s->phase;
    struct trace_site_totals rec = {.site_id = s->site_id, .stack_id = s->stack_id,
                                    .api_name = api_string(w, s->api), .threads = s->threads,
                                    .count = p->count,
                                    .blocked_ns = p->ns, .max_ns = s->max_ns,
                                    .startup_count = p->startup_count, .startup_ns = p->startup_ns,
                                    .seen_step = p->seen_step, .base_count = p->base_count,
                                    .base_ns = p->base_ns};
    record(w, TREC_SITE_TOTALS, &rec, sizeof rec, NULL, 0);
    if (last)
        *last = p->count;
}

void tw_thread_totals(struct trace_writer *w, const struct tw_thread_totals *t)
{
    const struct rep_phase_raw *p = &t->phase;
    struct trace_thread_totals rec = {.tid = t->tid, .count = p->count, .blocked_ns = p->ns,
                                      .startup_count = p->startup_count, .startup_ns = p->startup_ns,
                                      .seen_step = p->seen_step, .base_count = p->base_count,
                                      .base_ns = p->base_ns};
    record(w, TREC_THREAD_TOTALS, &rec, sizeof rec, NULL, 0);
}

void tw_drops(struct trace_writer *w, uint64_t syncs_dropped, uint64_t launches_dropped)
{
    if (syncs_dropped == w->dropped_syncs && launches_dropped == w->dropped_launches)
        return;
    struct trace_drops rec = {.tid = 0, .syncs_dropped = syncs_dropped,
                              .launches_dropped = launches_dropped};
    record(w, TREC_DROPS, &rec, sizeof rec, NULL, 0);
    w->dropped_syncs = syncs_dropped;
    w->dropped_launches = launches_dropped;
}

void tw_steps_lost(struct trace_writer *w, const struct tw_steps_lost *l)
{
    if (l->records == w->steps_lost)
        return;
    struct trace_steps_lost rec = {.records = l->records, .active = l->active, .syncs = l->syncs,
                                   .blocked_ns = l->blocked_ns, .launches = l->launches,
                                   .wall_ns = l->wall_ns};
    record(w, TREC_STEPS_LOST, &rec, sizeof rec, NULL, 0);
    w->steps_lost = l->records;
}

void tw_end(struct trace_writer *w, uint64_t end_mono_ns, uint64_t unattributed_syncs,
            uint64_t steps_seen)
{
    struct trace_end rec = {.end_mono_ns = end_mono_ns, .unattributed_syncs = unattributed_syncs,
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
    fdw_write(&w->out, header, header->header_bytes > sizeof *header ? header->header_bytes : sizeof *header);
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
    HASH_ITER(hh, w->strings, s, tmp) {
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
