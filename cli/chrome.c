/* cli/chrome.c: `syncspy export --chrome` (see chrome.h): the timeline of every traced process as
 * Chrome trace events, or the active steps of a summary.json laid end to end. CLI only; writes
 * through an fd_writer (whole pages) to the fd it is given. */
#include "cli/chrome.h"
#include "cli/progress.h"
#include "cli/version.h"
#include "output/fd_writer.h"
#include "output/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Chrome trace events ------------------------------------------------------------------
 * The JSON Object Format of the Trace Event Format: {"traceEvents": [...], "displayTimeUnit"}.
 * Every event carries ph, ts, pid, tid and name (metadata too: some viewers want them); X
 * events carry dur >= 0. Timestamps are microseconds with three decimals from the earliest
 * start of a traced process (CLOCK_MONOTONIC is one clock for the processes of one machine).
 * Per process: a "steps" track (tid 0: no thread has it), then one track per thread with its
 * syncs as slices and its launches as instants, each track in time order. */

#define STEPS_TID 0
#define FRAMES_IN_ARGS 5

#define FRAMES_CACHE 256
#define CHROME_BUF_BYTES (1u << 20)

struct frames_cached {
    const struct rep_frame *frames;
    uint32_t n;
    char *text;
    size_t len, cap;
};

/* Names as JSON strings (quotes included), escaped once each: a trace's millions of events
 * name a few hundred kernels and APIs. Keyed by the pointer, so only for strings that stay put
 * for the whole export: the reader's (interned) and literals. */
#define NAMES_MAX 65536   /* distinct names kept; more are escaped at each use */
#define NAME_MAX_LEN 1024 /* longer names are escaped at each use (and fit the scratch writer) */

struct name_slot {
    const char *key;   /* NULL: empty slot */
    uint32_t off, len; /* the JSON text: names.text + off */
};

struct names {
    struct name_slot *slots; /* open addressing, cap a power of two, at most half full */
    size_t cap, n;
    char *text;
    size_t len, size;
};

struct chrome {
    struct fd_writer w;
    bool first;            /* no event written yet: no comma before the next */
    uint64_t base;         /* CLOCK_REALTIME ns of ts 0: the earliest process start */
    uint64_t mono0, real0; /* the process being written: its start on both clocks */
    int pid;               /* the Chrome pid of the process being written (its pid, unless taken) */
    struct fd_writer scratch; /* fd -1: frames_json renders into its buffer, never flushed */
    struct frames_cached cache[FRAMES_CACHE];
    struct names names;
};

/* ns as microseconds with three decimals (the format's unit). No printf on the paths run once
 * per event: a trace has millions. */
static char *fmt_us(char *p, uint64_t ns)
{
    unsigned frac = (unsigned)(ns % 1000);
    p = fdw_fmt_u64(p, ns / 1000);
    p[0] = '.';
    p[1] = (char)('0' + frac / 100);
    p[2] = (char)('0' + frac / 10 % 10);
    p[3] = (char)('0' + frac % 10);
    return p + 4;
}

static void put_us(struct fd_writer *w, uint64_t ns)
{
    char *p = fdw_reserve(w, 24);
    if (p)
        fdw_commit(w, fmt_us(p, ns));
}

static void put_int(struct fd_writer *w, int v)
{
    if (v < 0)
        fdw_putc(w, '-');
    fdw_u64(w, v < 0 ? (uint64_t)0 - (uint64_t)(int64_t)v : (uint64_t)v);
}

/* "0x..." (a quoted JSON string: stream handles are pointers, above 2^53) */
static char *fmt_hex_string(char *p, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof tmp;
    tmp[--i] = '"';
    do {
        tmp[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    tmp[--i] = '"';
    memcpy(p, tmp + i, sizeof tmp - i);
    return p + (sizeof tmp - i);
}

static void put_hex_string(struct fd_writer *w, uint64_t v)
{
    char *p = fdw_reserve(w, 20);
    if (p)
        fdw_commit(w, fmt_hex_string(p, v));
}

static size_t name_hash(const char *key, size_t cap)
{
    return (size_t)(((uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* The cached JSON string of name (a pointer that stays put), escaped on first use; NULL when
 * it is not cached (too long, too many names, out of memory): escape it then. */
static const struct name_slot *name_json(struct chrome *c, const char *name)
{
    struct names *nm = &c->names;
    size_t i = 0;
    if (nm->cap) {
        for (i = name_hash(name, nm->cap); nm->slots[i].key; i = (i + 1) & (nm->cap - 1))
            if (nm->slots[i].key == name)
                return &nm->slots[i];
    }
    if (nm->n >= NAMES_MAX || strlen(name) > NAME_MAX_LEN)
        return NULL;
    if (2 * (nm->n + 1) > nm->cap) { /* grow, and find the slot again */
        size_t cap = nm->cap ? 2 * nm->cap : 1024;
        struct name_slot *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t k = 0; k < nm->cap; k++) {
            if (!nm->slots[k].key)
                continue;
            size_t j = name_hash(nm->slots[k].key, cap);
            while (slots[j].key)
                j = (j + 1) & (cap - 1);
            slots[j] = nm->slots[k];
        }
        free(nm->slots);
        nm->slots = slots;
        nm->cap = cap;
        for (i = name_hash(name, cap); slots[i].key; i = (i + 1) & (cap - 1))
            ;
    }
    /* at most 6 bytes of JSON per byte (\ufffd) and the quotes: fits the scratch writer */
    _Static_assert(2 + 6 * NAME_MAX_LEN <= FDW_BUF_BYTES, "a name fits the scratch writer");
    struct fd_writer *mw = &c->scratch;
    mw->len = 0;
    mw->err = 0;
    fdw_json_string(mw, name);
    if (mw->err)
        return NULL;
    if (nm->len + mw->len > nm->size) {
        size_t size = nm->size ? nm->size : 16384;
        while (size < nm->len + mw->len)
            size *= 2;
        char *text = realloc(nm->text, size);
        if (!text)
            return NULL;
        nm->text = text;
        nm->size = size;
    }
    memcpy(nm->text + nm->len, mw->buf, mw->len);
    nm->slots[i] = (struct name_slot){name, (uint32_t)nm->len, (uint32_t)mw->len};
    nm->len += mw->len;
    nm->n++;
    return &nm->slots[i];
}

/* name as a JSON string; stable: the pointer stays put for the whole export (see names). */
static void put_name(struct chrome *c, const char *name, bool stable)
{
    const struct name_slot *n = stable ? name_json(c, name) : NULL;
    if (n)
        fdw_write(&c->w, c->names.text + n->off, n->len);
    else
        fdw_json_string(&c->w, name);
}

/* A CLOCK_MONOTONIC time of the process being written, on the common time line. Processes are
 * placed by their wall-clock start (ranks on other hosts have unrelated monotonic clocks), and
 * events within a process by its own monotonic clock. */
static uint64_t since(const struct chrome *c, uint64_t t)
{
    uint64_t real = c->real0 + (t > c->mono0 ? t - c->mono0 : 0);
    return real > c->base ? real - c->base : 0;
}

/* Starts an event: {"ph":PH,"name":NAME,"pid":P,"tid":T,"ts":TS. No blanks: a trace has
 * millions of events, and their bytes are most of the export's time. */
static void event_name(struct chrome *c, const char *ph, const char *name, bool stable, int pid,
                       uint32_t tid, uint64_t ts_ns)
{
    struct fd_writer *w = &c->w;
    fdw_puts(w, c->first ? "\n" : ",\n");
    c->first = false;
    fdw_puts(w, "{\"ph\":\"");
    fdw_puts(w, ph);
    fdw_puts(w, "\",\"name\":");
    put_name(c, name, stable);
    fdw_puts(w, ",\"pid\":");
    put_int(w, pid);
    fdw_puts(w, ",\"tid\":");
    fdw_u64(w, tid);
    fdw_puts(w, ",\"ts\":");
    put_us(w, ts_ns);
}

static void event(struct chrome *c, const char *ph, const char *name, int pid, uint32_t tid,
                  uint64_t ts_ns)
{
    event_name(c, ph, name, false, pid, tid, ts_ns);
}

static void metadata(struct chrome *c, const char *what, int pid, uint32_t tid, const char *key,
                     const char *text, long number)
{
    event(c, "M", what, pid, tid, 0);
    fdw_puts(&c->w, ", \"args\": {\"");
    fdw_puts(&c->w, key);
    fdw_puts(&c->w, "\": ");
    if (text)
        fdw_json_string(&c->w, text);
    else
        fdw_printf(&c->w, "%ld", number);
    fdw_puts(&c->w, "}}");
}

static void process_metadata(struct chrome *c, const struct rep_process *p, size_t index)
{
    char name[64];
    if (p->rank >= 0)
        snprintf(name, sizeof name, "rank %d pid %d", p->rank, p->pid);
    else
        snprintf(name, sizeof name, "pid %d", p->pid);
    metadata(c, "process_name", c->pid, STEPS_TID, "name", name, 0);
    metadata(c, "process_sort_index", c->pid, STEPS_TID, "sort_index", NULL, (long)index);
    metadata(c, "thread_name", c->pid, STEPS_TID, "name", "steps", 0);
    metadata(c, "thread_sort_index", c->pid, STEPS_TID, "sort_index", NULL, -1);
}

static void step_slice(struct chrome *c, int pid, uint64_t ts_ns, uint64_t dur_ns, uint64_t step,
                       uint64_t syncs, uint64_t blocked_ns, uint64_t launches, bool active,
                       bool partial)
{
    char name[40];
    snprintf(name, sizeof name, "step %llu", (unsigned long long)step);
    struct fd_writer *w = &c->w;
    event(c, "X", name, pid, STEPS_TID, ts_ns);
    fdw_puts(w, ", \"dur\": ");
    put_us(w, dur_ns);
    fdw_printf(w,
               ", \"cat\": \"step\", \"args\": {\"step\": %llu, \"syncs\": %llu, "
               "\"blocked_ns\": %llu, \"launches\": %llu, \"active\": %s, \"partial\": %s}}",
               (unsigned long long)step, (unsigned long long)syncs, (unsigned long long)blocked_ns,
               (unsigned long long)launches, active ? "true" : "false", partial ? "true" : "false");
    if (!active)
        return;
    /* a counter track: blocked time per active step, readable at a glance */
    event(c, "C", "blocked per step (us)", pid, STEPS_TID, ts_ns);
    fdw_puts(w, ", \"args\": {\"blocked_us\": ");
    put_us(w, blocked_ns);
    fdw_puts(w, "}}");
}

/* summary.json has no start times: its active steps are laid end to end from ts 0. */
static void summary_steps(struct chrome *c, const struct rep_process *p)
{
    uint64_t ts = 0;
    for (size_t i = 0; i < p->nsteps && p->steps; i++) {
        const struct rep_step *st = &p->steps[i];
        step_slice(c, c->pid, ts, st->wall_ns, st->step, st->syncs, st->blocked_ns, st->launches,
                   true, st->partial);
        ts = ts + st->wall_ns < ts ? ts : ts + st->wall_ns;
    }
}

static const char *dir_name(uint32_t dir, char *buf, size_t n)
{
    static const char *const names[] = {"none", "H2D", "D2H", "D2D", "H2H"};
    if (dir < sizeof names / sizeof names[0])
        return names[dir];
    snprintf(buf, n, "%u", dir);
    return buf;
}

/* "function (file:line)", or "function (module+0xoffset)" for a native frame without a line. */
static void frame_string(const struct rep_frame *f, char *buf, size_t n)
{
    char name[128];
    if (f->function && *f->function)
        report_display_name(f->function, name, sizeof name);
    else
        snprintf(name, sizeof name, "??");
    if (f->file && *f->file)
        snprintf(buf, n, "%s (%s:%u)", name, f->file, f->line);
    else if (f->module && *f->module)
        snprintf(buf, n, "%s (%s+0x%llx)", name, rep_base_name(f->module),
                 (unsigned long long)f->offset);
    else
        snprintf(buf, n, "%s", name);
}

/* The top frames of a stack as a JSON array, rendered once per stack: syncs of one stack share
 * its frames array, so a small direct-mapped cache keyed by that pointer catches nearly all. */
static void frames_json(struct chrome *c, const struct rep_frame *frames, uint32_t n)
{
    if (!frames || n == 0) {
        fdw_puts(&c->w, "[]");
        return;
    }
    struct frames_cached *e = &c->cache[((uintptr_t)frames >> 4) % FRAMES_CACHE];
    if (e->frames != frames || e->n != n) {
        /* render through a memory-backed writer: the text is kept for the next syncs */
        char frame[256];
        /* at most 6 bytes of JSON per byte of text (\ufffd): it all fits the writer's buffer */
        _Static_assert(2 + FRAMES_IN_ARGS * (4 + 6 * (sizeof frame - 1)) <= FDW_BUF_BYTES,
                       "frames fit the scratch writer");
        size_t cap = FDW_BUF_BYTES;
        char *text = e->text && e->cap >= cap ? e->text : realloc(e->text, cap);
        if (!text) {
            e->frames = NULL;
            fdw_puts(&c->w, "[]");
            return;
        }
        e->text = text;
        e->cap = cap;
        struct fd_writer *mw = &c->scratch;
        mw->len = 0;
        mw->err = 0;
        fdw_putc(mw, '[');
        for (uint32_t i = 0; i < n && i < FRAMES_IN_ARGS; i++) {
            if (i)
                fdw_puts(mw, ", ");
            frame_string(&frames[i], frame, sizeof frame);
            fdw_json_string(mw, frame);
        }
        fdw_putc(mw, ']');
        if (mw->err) { /* cannot happen (see the assertion above) */
            e->frames = NULL;
            fdw_puts(&c->w, "[]");
            return;
        }
        memcpy(text, mw->buf, mw->len);
        e->len = mw->len;
        e->frames = frames;
        e->n = n;
    }
    fdw_write(&c->w, e->text, e->len);
}

static void sync_slice(struct chrome *c, int pid, const struct trace_sync_event *e)
{
    struct fd_writer *w = &c->w;
    char dir[16];
    event_name(c, "X", *e->api ? e->api : "sync", true, pid, e->tid, since(c, e->start_ns));
    fdw_puts(w, ", \"dur\": ");
    put_us(w, e->end_ns - e->start_ns);
    fdw_puts(w, ", \"cat\": \"sync\", \"args\": {\"bytes\": ");
    fdw_u64(w, e->bytes);
    fdw_puts(w, ", \"dir\": ");
    fdw_json_string(w, dir_name(e->dir, dir, sizeof dir));
    fdw_puts(w, ", \"stream\": ");
    put_hex_string(w, e->stream);
    fdw_puts(w, ", \"step\": ");
    fdw_u64(w, e->step);
    fdw_puts(w, ", \"frames\": ");
    frames_json(c, e->frames, e->nframes);
    fdw_puts(w, "}}");
}

/* Launches are most of a trace's events: only what nothing else says (the step is the step
 * slice above it; the API is the name when the kernel has none; the stream when it is not the
 * default one). */
static void launch_instant(struct chrome *c, int pid, const struct trace_launch_event *e)
{
    struct fd_writer *w = &c->w;
    const char *name = *e->kernel ? e->kernel : *e->api ? e->api : "launch";
    event_name(c, "i", name, true, pid, e->tid, since(c, e->time_ns));
    fdw_puts(w, ",\"s\":\"t\",\"cat\":\"launch\"");
    if (e->stream) {
        fdw_puts(w, ",\"args\":{\"stream\":");
        put_hex_string(w, e->stream);
        fdw_putc(w, '}');
    }
    fdw_putc(w, '}');
}

/* The same bytes formatted in place: the name from the cache, ",\"pid\":P,\"tid\":T,\"ts\":"
 * from the track (prefix). */
static void launch_fast(struct chrome *c, const char *prefix, size_t prefix_len,
                        const struct trace_launch_event *e)
{
    static const char head[] = ",\n{\"ph\":\"i\",\"name\":";
    static const char tail[] = ",\"s\":\"t\",\"cat\":\"launch\"";
    static const char args[] = ",\"args\":{\"stream\":";
    const char *name = *e->kernel ? e->kernel : *e->api ? e->api : "launch";
    const struct name_slot *n = name_json(c, name);
    char *p;
    if (!n || c->first ||
        !(p = fdw_reserve(&c->w, sizeof head + n->len + prefix_len + 24 + sizeof tail +
                                     sizeof args + 20 + 2))) {
        launch_instant(c, c->pid, e);
        return;
    }
    memcpy(p, head, sizeof head - 1);
    p += sizeof head - 1;
    memcpy(p, c->names.text + n->off, n->len);
    p += n->len;
    memcpy(p, prefix, prefix_len);
    p += prefix_len;
    p = fmt_us(p, since(c, e->time_ns));
    memcpy(p, tail, sizeof tail - 1);
    p += sizeof tail - 1;
    if (e->stream) {
        memcpy(p, args, sizeof args - 1);
        p += sizeof args - 1;
        p = fmt_hex_string(p, e->stream);
        *p++ = '}';
    }
    *p++ = '}';
    fdw_commit(&c->w, p);
}

/* ---- tracks: the events of each thread in time order --------------------------------------
 * Order: tid, then time, syncs before launches at one time, then file order. The reader keeps
 * syncs and launches in file order, which is time order on each thread but for rare records
 * written late: so the events are bucketed by tid (indexes, counting sort), each thread's syncs
 * and launches are checked for order (and only a thread's run out of order is sorted), and the
 * two runs of a thread are merged as they are written. */

#define LAUNCH_PREFETCH 16 /* launches ahead */

_Static_assert(TRACE_READ_MAX_EVENTS <= UINT32_MAX, "event indexes fit 32 bits");

struct track {
    uint32_t tid;
    bool syncs_unsorted, launches_unsorted;
    size_t nsyncs, nlaunches; /* its events */
    size_t sync0, launch0;    /* where its indexes start in the index arrays */
    size_t sfill, lfill;      /* indexes placed so far */
    uint64_t slast, llast;    /* the time of its last sync and launch, for the order check */
};

struct tracks {
    struct track *t;
    size_t n, cap;
    uint32_t *slot; /* open addressing by tid: track index + 1, 0 when empty; at most half full */
    size_t slots;
};

static size_t tid_hash(uint32_t tid, size_t slots)
{
    return (size_t)(((uint64_t)tid * 0x9E3779B97F4A7C15ull) >> 32) & (slots - 1);
}

/* The track of tid (added when new); NULL when out of memory. */
static struct track *track_of(struct tracks *ts, uint32_t tid)
{
    size_t i = 0;
    if (ts->slots) {
        for (i = tid_hash(tid, ts->slots); ts->slot[i]; i = (i + 1) & (ts->slots - 1))
            if (ts->t[ts->slot[i] - 1].tid == tid)
                return &ts->t[ts->slot[i] - 1];
    }
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 16;
        struct track *t = realloc(ts->t, cap * sizeof *t);
        if (!t)
            return NULL;
        ts->t = t;
        ts->cap = cap;
    }
    if (2 * (ts->n + 1) > ts->slots) {
        size_t slots = ts->slots ? 2 * ts->slots : 64;
        uint32_t *slot = calloc(slots, sizeof *slot);
        if (!slot)
            return NULL;
        for (size_t k = 0; k < ts->n; k++) {
            size_t j = tid_hash(ts->t[k].tid, slots);
            while (slot[j])
                j = (j + 1) & (slots - 1);
            slot[j] = (uint32_t)k + 1;
        }
        free(ts->slot);
        ts->slot = slot;
        ts->slots = slots;
        for (i = tid_hash(tid, slots); slot[i]; i = (i + 1) & (slots - 1))
            ;
    }
    ts->t[ts->n] = (struct track){.tid = tid};
    ts->slot[i] = (uint32_t)++ts->n;
    return &ts->t[ts->n - 1];
}

/* The track of a tid known to have one. */
static struct track *track_find(const struct tracks *ts, uint32_t tid)
{
    size_t i = tid_hash(tid, ts->slots);
    while (ts->t[ts->slot[i] - 1].tid != tid)
        i = (i + 1) & (ts->slots - 1);
    return &ts->t[ts->slot[i] - 1];
}

static int track_tid_cmp(const void *pa, const void *pb)
{
    const struct track *a = *(const struct track *const *)pa, *b = *(const struct track *const *)pb;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

struct ts_index {
    uint64_t ts;
    uint32_t index;
};

static int ts_index_cmp(const void *pa, const void *pb)
{
    const struct ts_index *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Sorts a thread's run of sync (launch = false) or launch indexes by (time, index). */
static int sort_run(const struct trace_events *ev, bool launch, uint32_t *idx, size_t n)
{
    struct ts_index *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp)
        return -1;
    for (size_t i = 0; i < n; i++)
        tmp[i] = (struct ts_index){
            launch ? ev->launches[idx[i]].time_ns : ev->syncs[idx[i]].start_ns, idx[i]};
    qsort(tmp, n, sizeof *tmp, ts_index_cmp);
    for (size_t i = 0; i < n; i++)
        idx[i] = tmp[i].index;
    free(tmp);
    return 0;
}

/* Buckets the events by thread: sidx/lidx hold each track's sync/launch indexes in order, and
 * *order the tracks by tid. -1 when out of memory. */
static int tracks_build(const struct trace_events *ev, struct tracks *ts, uint32_t *sidx,
                        uint32_t *lidx, struct track ***order)
{
    for (size_t i = 0; i < ev->nsyncs; i++) {
        struct track *t = track_of(ts, ev->syncs[i].tid);
        if (!t)
            return -1;
        uint64_t at = ev->syncs[i].start_ns;
        t->syncs_unsorted |= t->nsyncs++ && at < t->slast;
        t->slast = at;
    }
    for (size_t i = 0; i < ev->nlaunches; i++) {
        struct track *t = track_of(ts, ev->launches[i].tid);
        if (!t)
            return -1;
        uint64_t at = ev->launches[i].time_ns;
        t->launches_unsorted |= t->nlaunches++ && at < t->llast;
        t->llast = at;
    }
    size_t s0 = 0, l0 = 0;
    for (size_t k = 0; k < ts->n; k++) {
        ts->t[k].sync0 = s0;
        ts->t[k].launch0 = l0;
        s0 += ts->t[k].nsyncs;
        l0 += ts->t[k].nlaunches;
    }
    for (size_t i = 0; i < ev->nsyncs; i++) {
        struct track *t = track_find(ts, ev->syncs[i].tid);
        sidx[t->sync0 + t->sfill++] = (uint32_t)i;
    }
    for (size_t i = 0; i < ev->nlaunches; i++) {
        struct track *t = track_find(ts, ev->launches[i].tid);
        lidx[t->launch0 + t->lfill++] = (uint32_t)i;
    }
    for (size_t k = 0; k < ts->n; k++) {
        struct track *t = &ts->t[k];
        if ((t->syncs_unsorted && sort_run(ev, false, sidx + t->sync0, t->nsyncs) != 0) ||
            (t->launches_unsorted && sort_run(ev, true, lidx + t->launch0, t->nlaunches) != 0))
            return -1;
    }
    *order = malloc((ts->n ? ts->n : 1) * sizeof **order);
    if (!*order)
        return -1;
    for (size_t k = 0; k < ts->n; k++)
        (*order)[k] = &ts->t[k];
    qsort(*order, ts->n, sizeof **order, track_tid_cmp);
    return 0;
}

/* "pid P's events: ...": the sample of steps whose events a timeline has (the trace's, past
 * half its SYNCSPY_TRACE_MB, and the reader's, past its cap). */
static void timeline_note(const struct rep_process *p, const struct trace_events *ev, char *buf,
                          size_t n)
{
    int k = snprintf(buf, n, "pid %d's events:", p->pid);
    if (p->trace_bound_bytes && k >= 0 && (size_t)k < n)
        k += snprintf(
            buf + k, n - (size_t)k,
            " the trace keeps every event of the steps before %llu, then "
            "those of a sample spread over the run (%llu of %llu steps: SYNCSPY_TRACE_MB=%llu);",
            (unsigned long long)p->sampled_from, (unsigned long long)p->detail_steps,
            (unsigned long long)p->steps_seen, (unsigned long long)(p->trace_bound_bytes >> 20));
    if (ev->sample_stride > 1 && k >= 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k,
                 " drawn: every event kept of the steps before %llu, then those of "
                 "one step in %llu",
                 (unsigned long long)ev->sample_from, (unsigned long long)ev->sample_stride);
    else if (k >= 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " drawn: every event kept");
}

static int trace_tracks(struct chrome *c, const struct rep_process *p,
                        const struct trace_events *ev)
{
    for (size_t i = 0; i < ev->nthreads; i++)
        metadata(c, "thread_name", c->pid, ev->threads[i].tid, "name", ev->threads[i].name, 0);
    for (size_t i = 0; i < ev->nsteps; i++) {
        const struct trace_step_event *s = &ev->steps[i];
        if (s->spanned) /* no STEP record: its events are drawn, not a step made up of them */
            continue;
        step_slice(c, c->pid, since(c, s->start_ns), s->end_ns - s->start_ns, s->step, s->syncs,
                   s->blocked_ns, s->launches, s->active, s->partial);
    }
    size_t n = ev->nsyncs + ev->nlaunches;
    if (n == 0)
        return 0;
    struct tracks ts = {0};
    struct track **order = NULL;
    uint32_t *sidx = malloc((ev->nsyncs ? ev->nsyncs : 1) * sizeof *sidx);
    uint32_t *lidx = malloc((ev->nlaunches ? ev->nlaunches : 1) * sizeof *lidx);
    int rc = sidx && lidx ? tracks_build(ev, &ts, sidx, lidx, &order) : -1;
    const struct trace_sync_event *syncs = ev->syncs;
    const struct trace_launch_event *launches = ev->launches;
    size_t done = 0, progress_at = CLI_PROGRESS_EVERY;
    for (size_t k = 0; rc == 0 && k < ts.n && !c->w.err; k++) {
        const struct track *t = order[k];
        char prefix[64];
        int plen = snprintf(prefix, sizeof prefix, ",\"pid\":%d,\"tid\":%u,\"ts\":", c->pid,
                            (unsigned)t->tid);
        const uint32_t *si = sidx + t->sync0, *se = si + t->nsyncs;
        const uint32_t *li = lidx + t->launch0, *le = li + t->nlaunches;
        while ((si < se || li < le) && !c->w.err) {
            /* the next sync, or the launches before it */
            uint64_t next_sync = si < se ? syncs[*si].start_ns : UINT64_MAX;
            if (si < se && (li == le || next_sync <= launches[*li].time_ns)) {
                sync_slice(c, c->pid, &syncs[*si++]);
                done++;
            } else {
                do {
                    /* a thread's launches are strided through the array: fetch ahead */
                    if (le - li > LAUNCH_PREFETCH)
                        __builtin_prefetch(&launches[li[LAUNCH_PREFETCH]]);
                    launch_fast(c, prefix, (size_t)plen, &launches[*li++]);
                    done++;
                } while (li < le && launches[*li].time_ns < next_sync && done < progress_at);
            }
            if (done >= progress_at) {
                progress_at = (done / CLI_PROGRESS_EVERY + 1) * CLI_PROGRESS_EVERY;
                if (done < n && cli_progress_wanted())
                    cli_progress_say("syncspy: writing the events of pid %d: %zu M of %zu M",
                                     p->pid, done / 1000000, (n + 999999) / 1000000);
            }
        }
    }
    cli_progress_end();
    free(order);
    free(ts.t);
    free(ts.slot);
    free(sidx);
    free(lidx);
    return rc;
}

struct pid_index {
    int pid;
    size_t index;
};

static int pid_index_cmp(const void *pa, const void *pb)
{
    const struct pid_index *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The Chrome pid of each process: its pid, except that of two processes with one pid (ranks on
 * different hosts) the later gets one of its own, or the viewer would merge their tracks (its
 * name still says its pid). NULL when out of memory. */
static int *chrome_pids(const struct cli_set *set)
{
    int *pids = malloc((set->n ? set->n : 1) * sizeof *pids);
    struct pid_index *order = malloc((set->n ? set->n : 1) * sizeof *order);
    if (!pids || !order) {
        free(pids);
        free(order);
        return NULL;
    }
    for (size_t i = 0; i < set->n; i++) {
        order[i] = (struct pid_index){set->items[i].rep.pid, i};
        pids[i] = set->items[i].rep.pid;
    }
    qsort(order, set->n, sizeof *order, pid_index_cmp);
    for (size_t i = 1; i < set->n; i++)
        if (order[i].pid == order[i - 1].pid)
            pids[order[i].index] = (int)(0x40000000 + order[i].index);
    free(order);
    return pids;
}

/* The exporter and its writer: a large buffer written out in whole pages (gigabytes of output
 * in few write()s, none of them making the kernel zero the rest of a page first), else the
 * plain one. NULL: no memory. */
static struct chrome *chrome_new(int fd)
{
    struct chrome *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    long page = sysconf(_SC_PAGESIZE);
    char *out = malloc(CHROME_BUF_BYTES);
    if (out)
        fdw_init_buffer(&c->w, fd, out, CHROME_BUF_BYTES,
                        page > 0 && (page & (page - 1)) == 0 ? (size_t)page : 0);
    else
        fdw_init(&c->w, fd);
    fdw_init(&c->scratch, -1);
    c->first = true;
    return c;
}

static void chrome_free(struct chrome *c)
{
    for (size_t i = 0; i < FRAMES_CACHE; i++)
        free(c->cache[i].text);
    if (c->w.buf != c->w.own)
        free(c->w.buf);
    free(c->names.slots);
    free(c->names.text);
    free(c);
}

/* The time all timestamps count from: the earliest start of a process with events (0: none). */
static uint64_t chrome_base(const struct cli_set *set)
{
    uint64_t base = UINT64_MAX;
    for (size_t i = 0; i < set->n; i++) {
        const struct cli_proc *it = &set->items[i];
        if (it->has_events && it->events.start_real_ns < base)
            base = it->events.start_real_ns;
    }
    return base == UINT64_MAX ? 0 : base;
}

/* "otherData": the tool, and what the events lack: processes read from summary.json alone,
 * events the trace dropped or the export left out, the steps track's and the timeline's notes. */
static void write_other_data(struct chrome *c, const struct cli_set *set)
{
    uint64_t omitted = 0, dropped_syncs = 0, dropped_launches = 0;
    size_t summaries = 0;
    for (size_t i = 0; i < set->n; i++) {
        const struct cli_proc *it = &set->items[i];
        omitted += it->has_events ? it->events.events_omitted : 0;
        dropped_syncs += it->rep.syncs_dropped;
        dropped_launches += it->rep.launches_dropped;
        summaries += !it->has_events;
    }
    fdw_puts(&c->w, "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"tool\": \"syncspy\", "
                    "\"version\": \"" SYNCSPY_VERSION "\"");
    if (summaries)
        fdw_printf(&c->w,
                   ", \"note\": \"%zu process%s read from summary.json alone (no "
                   "readable trace.bin): only %s active steps, laid end to end\"",
                   summaries, summaries == 1 ? "" : "es", summaries == 1 ? "its" : "their");
    if (dropped_syncs || dropped_launches)
        fdw_printf(&c->w, ", \"sync_events_dropped\": %llu, \"launch_events_dropped\": %llu",
                   (unsigned long long)dropped_syncs, (unsigned long long)dropped_launches);
    if (omitted)
        fdw_printf(&c->w, ", \"events_not_exported\": %llu", (unsigned long long)omitted);
    char note[400];
    size_t notes = 0;
    for (size_t i = 0; i < set->n; i++) /* the steps track lacks what these say */
        if (report_steps_note(&set->items[i].rep, note, sizeof note)) {
            fdw_puts(&c->w, notes++ ? ", " : ", \"steps_notes\": [");
            fdw_json_string(&c->w, note);
        }
    if (notes)
        fdw_putc(&c->w, ']');
    notes = 0;
    for (size_t i = 0; i < set->n; i++) { /* which steps' events the timeline has */
        const struct cli_proc *it = &set->items[i];
        if (!it->has_events || (!it->rep.trace_bound_bytes && it->events.sample_stride <= 1))
            continue;
        timeline_note(&it->rep, &it->events, note, sizeof note);
        fdw_puts(&c->w, notes++ ? ", " : ", \"timeline_notes\": [");
        fdw_json_string(&c->w, note);
    }
    if (notes)
        fdw_putc(&c->w, ']');
    fdw_puts(&c->w, "}}\n");
}

int cli_export_chrome(const struct cli_set *set, int fd)
{
    struct chrome *c = chrome_new(fd);
    if (!c) {
        errno = ENOMEM;
        return -1;
    }
    c->base = chrome_base(set);
    int *pids = chrome_pids(set);
    fdw_puts(&c->w, "{\"traceEvents\": [");
    int rc = pids || set->n == 0 ? 0 : -1;
    for (size_t i = 0; i < set->n && rc == 0; i++) {
        const struct cli_proc *it = &set->items[i];
        c->pid = pids ? pids[i] : it->rep.pid;
        process_metadata(c, &it->rep, i);
        c->mono0 = it->has_events ? it->events.start_mono_ns : 0;
        c->real0 = it->has_events ? it->events.start_real_ns : c->base;
        if (it->has_events)
            rc = trace_tracks(c, &it->rep, &it->events);
        else
            summary_steps(c, &it->rep);
    }
    write_other_data(c, set);
    int saved = rc ? ENOMEM : 0;
    if (fdw_flush(&c->w) != 0)
        rc = -1;
    else if (rc)
        errno = saved;
    chrome_free(c);
    free(pids);
    return rc;
}
