/* cli/html.c: `syncspy html` (see html.h). The page is the compiled-in skeleton, style and script
 * of cli/html/ around one JSON block built here from the report model: the report's own text
 * (its header shown as it is), the report's lines (report_lines, merged over processes as
 * `syncspy diff` merges them, cli/lines.h), their sites and stacks, the steps, of many processes
 * the report's per-rank view (cli/ranks.h: the same figures its text section prints), and from a
 * trace.bin the per-step blocked time by line and a few steps' timelines; the diff form embeds
 * `syncspy diff --json` as it is. CLI only: it mallocs and reads source files; the page it
 * writes never asks the network for anything (its Content-Security-Policy forbids it). */
#include "cli/html.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/diff.h"
#include "cli/lines.h"
#include "cli/merge.h"
#include "cli/ranks.h"
#include "cli/schemas.h"
#include "cli/version.h"
#include "output/backward.h"
#include "output/fd_writer.h"
#include "output/hints.h"
#include "output/report.h"

static const char page_css[] =
#include "html_page.css.inc"
    ;
static const char page_js[] =
#include "html_page.js.inc"
    ;

#define TOP_LINES 8             /* lines the chart stacks by name (the rest: "other") */
#define TIMELINE_EVENTS 200000  /* events of the steps whose timelines the page carries */
#define TIMELINE_STEPS_ALL 2000 /* up to this many steps (and events) every step's timeline */
#define TIMELINE_PICKED 16      /* else the slowest and evenly spaced steps */
#define SOURCE_CONTEXT 3        /* lines shown either side of a user line */
#define SOURCE_MAX_BYTES (8u << 20)
#define SOURCE_LINE_CHARS 240
#define LINE_THREADS 8    /* threads named per line */
#define TIMELINE_PROCS 16 /* processes whose timelines the page carries (of a job's ranks) */

static const char *str(const char *s)
{
    return s ? s : "";
}

/* ---- what a function writes to an fd, as a string ------------------------------------------ */

struct text {
    char *s;
    size_t len;
};

typedef int (*fd_fn)(void *ctx, int fd);

static int capture(fd_fn fn, void *ctx, struct text *out)
{
    out->s = NULL;
    out->len = 0;
    int fd = memfd_create("syncspy-html", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fn(ctx, fd);
    off_t end = lseek(fd, 0, SEEK_END);
    if (rc == 0 && end >= 0 && (out->s = malloc((size_t)end + 1)) != NULL) {
        size_t got = 0;
        while (got < (size_t)end) {
            ssize_t k = pread(fd, out->s + got, (size_t)end - got, (off_t)got);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        out->s[got] = '\0';
        out->len = got;
    } else if (rc == 0) {
        rc = -1;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* ---- interned strings and frames -------------------------------------------------------------- */

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Keys (strings with their NUL, frames as bytes) copied once each, numbered in order. */
struct intern {
    uint32_t *slots; /* id + 1; 0 empty; a power of two, at most half full */
    size_t cap;
    char **keys;
    size_t *lens;
    size_t n, kcap, lcap;
};

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

#define FNV_BASIS 14695981039346656037ull

/* The id of the key (copied on first sight), or UINT32_MAX when memory ran out. */
static uint32_t intern(struct intern *t, const void *key, size_t len)
{
    if (t->n * 2 >= t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        uint32_t *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return UINT32_MAX;
        for (size_t i = 0; i < t->n; i++) {
            size_t k = hash_bytes(t->keys[i], t->lens[i], FNV_BASIS) & (ncap - 1);
            while (ns[k])
                k = (k + 1) & (ncap - 1);
            ns[k] = (uint32_t)i + 1;
        }
        free(t->slots);
        t->slots = ns;
        t->cap = ncap;
    }
    size_t k = hash_bytes(key, len, FNV_BASIS) & (t->cap - 1);
    for (; t->slots[k]; k = (k + 1) & (t->cap - 1)) {
        uint32_t id = t->slots[k] - 1;
        if (t->lens[id] == len && memcmp(t->keys[id], key, len) == 0)
            return id;
    }
    char *copy = malloc(len ? len : 1);
    if (!copy || !grow((void **)&t->keys, &t->kcap, t->n + 1, sizeof *t->keys) ||
        !grow((void **)&t->lens, &t->lcap, t->n + 1, sizeof *t->lens)) {
        free(copy);
        return UINT32_MAX;
    }
    memcpy(copy, key, len);
    t->keys[t->n] = copy;
    t->lens[t->n] = len;
    t->slots[k] = (uint32_t)++t->n;
    return t->slots[k] - 1;
}

static void intern_free(struct intern *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->keys[i]);
    free(t->keys);
    free(t->lens);
    free(t->slots);
}

static uint32_t str_id(struct intern *t, const char *s)
{
    s = str(s);
    return intern(t, s, strlen(s) + 1);
}

/* A frame as the page shows it: [function, file, line, module, flags] (flags: 1 Python, 2 the
 * runtime's or a framework's, 4 a backward marker, 8 a caller marker, 16 why a backward sync
 * has no forward line: the function is the words). */
struct pframe {
    uint32_t fn, file, line, module, flags;
};

/* ---- one run: its processes, their lines merged (cli/merge.h) -------------------------------- */

struct mextra {           /* what the page adds to a merged line */
    size_t heaviest_site; /* run-wide site index */
    const struct rep_site *heaviest;
    uint64_t heaviest_ns; /* its blocked ns + 1 */
    bool carries;         /* it has the forward line (a backward line's) */
    uint32_t tids[LINE_THREADS];
    uint32_t ntids;
    int top; /* its place in the chart's stack, -1: "other" */
};

struct run {
    const struct cli_set *set;
    struct cli_merged m;
    struct mextra *x;   /* per merged line */
    size_t *first_site; /* per process: the run-wide index of its first site */
    uint32_t top[TOP_LINES];
    size_t ntop;
    struct ranks_view ranks; /* of two processes or more (cli/ranks.h: the report's section) */
    bool has_ranks;
    bool *timeline_of; /* per process: the page carries its timeline */
};

static void run_free(struct run *r)
{
    cli_merged_free(&r->m);
    free(r->x);
    free(r->first_site);
    if (r->has_ranks)
        cli_ranks_free(&r->ranks);
    free(r->timeline_of);
}

/* The processes whose timelines the page carries: all of them when they are few, else the
 * first, the least and the median blocked, and the most blocked (the stragglers first). */
static void pick_timeline_procs(struct run *r)
{
    size_t n = r->set->n;
    if (n <= TIMELINE_PROCS || !r->has_ranks) {
        for (size_t p = 0; p < n; p++)
            r->timeline_of[p] = true;
        return;
    }
    const size_t *by = r->ranks.by_share;
    r->timeline_of[0] = r->timeline_of[by[0]] = r->timeline_of[by[n / 2]] = true;
    size_t picked = 0;
    for (size_t p = 0; p < n; p++)
        picked += r->timeline_of[p];
    for (size_t k = n; k-- > 0 && picked < TIMELINE_PROCS;)
        if (!r->timeline_of[by[k]]) {
            r->timeline_of[by[k]] = true;
            picked++;
        }
}

static int run_build(const struct cli_set *set, struct run *r)
{
    memset(r, 0, sizeof *r);
    r->set = set;
    if (cli_merge_lines(set, &r->m) != 0)
        return -1;
    r->x = calloc(r->m.n ? r->m.n : 1, sizeof *r->x);
    r->first_site = calloc(set->n ? set->n : 1, sizeof *r->first_site);
    r->timeline_of = calloc(set->n ? set->n : 1, sizeof *r->timeline_of);
    if (!r->x || !r->first_site || !r->timeline_of)
        return -1;
    if (set->n >= 2) { /* the lines the report's section counts: the same report_lines */
        if (cli_ranks_build(set->procs, set->n, r->m.per_proc, &r->ranks) != 0) {
            cli_ranks_free(&r->ranks);
            return -1;
        }
        r->has_ranks = true;
    }
    pick_timeline_procs(r);
    size_t sites = 0;
    for (size_t p = 0; p < set->n; p++) {
        r->first_site[p] = sites;
        sites += set->procs[p].sites ? set->procs[p].nsites : 0;
    }
    /* each line opens the stack of its heaviest site, one that carries the forward line when
     * one does (as the report's table picks it) */
    for (size_t p = 0; p < set->n; p++) {
        const struct rep_process *rp = &set->procs[p];
        for (size_t i = 0; rp->sites && i < rp->nsites; i++) {
            uint32_t pl = r->m.per_proc[p].of_site[i].line;
            if (pl == REP_NO_LINE)
                continue;
            uint32_t k = r->m.merged[p][pl];
            struct mextra *x = &r->x[k];
            const struct rep_site *s = &rp->sites[i];
            bool found = true;
            if (r->m.lines[k].line->kind == REP_LINE_BACKWARD)
                hints_backward_line_frame(s, &found);
            uint64_t ns = s->blocked_ns + 1;
            if (!x->heaviest || (found && !x->carries) ||
                (found == x->carries && ns > x->heaviest_ns)) {
                x->heaviest = s;
                x->heaviest_ns = ns;
                x->carries = found;
                x->heaviest_site = r->first_site[p] + i;
            }
        }
    }
    for (size_t k = 0; k < r->m.n; k++) {
        r->x[k].top = -1;
        if (r->m.lines[k].count && r->ntop < TOP_LINES) {
            r->x[k].top = (int)r->ntop;
            r->top[r->ntop++] = (uint32_t)k;
        }
    }
    return 0;
}

/* ---- a sync event's site ---------------------------------------------------------------------- */

/* The reader builds each stack's frames once, so a sync event and its site share the pointer. */
struct sitemap {
    const struct rep_site **slots;
    size_t cap;
};

static uint64_t site_key(const struct rep_frame *frames, const char *api)
{
    uintptr_t f = (uintptr_t)frames;
    return hash_bytes(&f, sizeof f,
                      hash_bytes(str(api), strlen(str(api)), 14695981039346656037ull));
}

static int sitemap_build(struct sitemap *m, const struct rep_process *p)
{
    m->cap = 16;
    while (m->cap < 2 * p->nsites + 2)
        m->cap *= 2;
    if (!(m->slots = calloc(m->cap, sizeof *m->slots)))
        return -1;
    for (size_t i = 0; p->sites && i < p->nsites; i++) {
        const struct rep_site *s = &p->sites[i];
        size_t k = site_key(s->nframes ? s->frames : NULL, s->api) & (m->cap - 1);
        while (m->slots[k])
            k = (k + 1) & (m->cap - 1);
        m->slots[k] = s;
    }
    return 0;
}

static const struct rep_site *sitemap_find(const struct sitemap *m,
                                           const struct trace_sync_event *e)
{
    const struct rep_frame *frames = e->nframes ? e->frames : NULL;
    for (size_t k = site_key(frames, e->api) & (m->cap - 1); m->slots[k];
         k = (k + 1) & (m->cap - 1)) {
        const struct rep_site *s = m->slots[k];
        if ((s->nframes ? s->frames : NULL) == frames && strcmp(str(s->api), str(e->api)) == 0)
            return s;
    }
    return NULL;
}

/* t - base in ns as the page's signed offset: the difference is taken unsigned (a file may hold
 * any two times; the fuzzer found the signed one overflowing) and read as two's complement. */
static long long rel_ns(uint64_t t, uint64_t base)
{
    return (long long)(t - base);
}

/* The run-wide line of a sync event, -1 when none. */
static int event_line(const struct run *r, size_t p, const struct sitemap *m,
                      const struct trace_sync_event *e)
{
    const struct rep_site *s = sitemap_find(m, e);
    if (!s)
        return -1;
    uint32_t l = r->m.per_proc[p].of_site[s - r->set->procs[p].sites].line;
    return l == REP_NO_LINE ? -1 : (int)r->m.merged[p][l];
}

/* The index of step number `step` in steps (sorted by number), or -1. */
static long step_index_of(const struct rep_step *steps, size_t n, uint64_t step)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (steps[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && steps[lo].step == step ? (long)lo : -1;
}

static long trace_step_index(const struct trace_events *ev, uint64_t step)
{
    size_t lo = 0, hi = ev->nsteps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ev->steps[mid].step < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ev->nsteps && ev->steps[lo].step == step ? (long)lo : -1;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

struct page {
    struct fd_writer w;
    struct intern strings;
    struct intern frames; /* struct pframe keys */
    int err;
};

static void key(struct fd_writer *w, const char *name)
{
    fdw_putc(w, '"');
    fdw_puts(w, name);
    fdw_puts(w, "\":");
}

static void jstr(struct fd_writer *w, const char *name, const char *value)
{
    key(w, name);
    if (value)
        fdw_json_string(w, value);
    else
        fdw_puts(w, "null");
    fdw_putc(w, ',');
}

static void ju64(struct fd_writer *w, const char *name, uint64_t v)
{
    key(w, name);
    fdw_u64(w, v);
    fdw_putc(w, ',');
}

static void jnum(struct fd_writer *w, const char *name, double v)
{
    key(w, name);
    cli_json_double(w, v);
    fdw_putc(w, ',');
}

/* Ends an object whose members each end with ',' (a last member that means nothing: the ','
 * may already have gone out to the fd). */
static void close_obj(struct fd_writer *w)
{
    fdw_puts(w, "\"_\":0}");
}

static uint32_t page_frame(struct page *pg, const struct rep_frame *f)
{
    char name[160];
    if (f->mark == REP_MARK_NONE && !*str(f->function) && *str(f->module))
        snprintf(name, sizeof name, "%s+0x%llx", rep_base_name(f->module),
                 (unsigned long long)f->offset);
    else if (f->mark == REP_MARK_NONE)
        report_display_name(f->function, name, sizeof name);
    else if (f->mark == REP_MARK_UNSEEN && backward_cause_text(f->function)) /* why, in words */
        snprintf(name, sizeof name, "%s", backward_cause_text(f->function));
    else
        snprintf(name, sizeof name, "%s", str(f->function));
    struct pframe pf = {
        .fn = str_id(&pg->strings, name),
        .file = str_id(&pg->strings, f->file),
        .line = f->line,
        .module = str_id(&pg->strings, f->python ? "" : rep_base_name(f->module)),
        .flags = (f->python ? 1u : 0u) |
                 (f->mark == REP_MARK_NONE && hints_frame_is_runtime(f) ? 2u : 0u) |
                 (f->mark == REP_MARK_BACKWARD ? 4u : 0u) | (f->mark == REP_MARK_CALLER ? 8u : 0u) |
                 (f->mark == REP_MARK_UNSEEN ? 16u : 0u),
    };
    uint32_t id = pf.fn == UINT32_MAX || pf.file == UINT32_MAX || pf.module == UINT32_MAX
                      ? UINT32_MAX
                      : intern(&pg->frames, &pf, sizeof pf);
    if (id == UINT32_MAX) {
        pg->err = ENOMEM;
        return 0;
    }
    return id;
}

/* ---- source text of a user line ------------------------------------------------------------- */

struct source_cache {
    char *path, *text; /* the last file read (text NULL: it could not be) */
    size_t len;
};

static bool load_source(struct source_cache *c, const char *path)
{
    if (c->path && strcmp(c->path, path) == 0)
        return c->text != NULL;
    free(c->path);
    free(c->text);
    c->path = strdup(path);
    c->text = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (off_t)SOURCE_MAX_BYTES &&
        (c->text = malloc((size_t)st.st_size + 1)) != NULL) {
        size_t got = 0;
        ssize_t k;
        while (got < (size_t)st.st_size &&
               ((k = read(fd, c->text + got, (size_t)st.st_size - got)) > 0 ||
                (k < 0 && errno == EINTR)))
            got += k > 0 ? (size_t)k : 0;
        c->text[got] = '\0';
        c->len = got;
    }
    close(fd);
    return c->text != NULL;
}

/* "source": {"first": N, "line": L, "text": [...]} when the file is there now. */
static void write_source(struct fd_writer *w, struct source_cache *c, const struct rep_frame *f)
{
    if (!f || !f->line || !*str(f->file) || !load_source(c, f->file))
        return;
    uint32_t first = f->line > SOURCE_CONTEXT ? f->line - SOURCE_CONTEXT : 1,
             last = f->line + SOURCE_CONTEXT;
    const char *p = c->text, *end = c->text + c->len;
    uint32_t n = 1;
    while (n < first && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
        n++;
    }
    if (p >= end)
        return; /* the file no longer has that line */
    key(w, "source");
    fdw_printf(w, "{\"first\":%u,\"line\":%u,\"text\":[", first, f->line);
    for (bool any = false; n <= last && p < end; n++, any = true) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)((nl ? nl : end) - p);
        char buf[SOURCE_LINE_CHARS + 1];
        size_t k = len < SOURCE_LINE_CHARS ? len : SOURCE_LINE_CHARS;
        memcpy(buf, p, k);
        buf[k] = '\0';
        for (size_t i = 0; i < k; i++)
            if (buf[i] == '\r' || buf[i] == '\0')
                buf[i] = ' ';
        if (any)
            fdw_putc(w, ',');
        fdw_json_string(w, buf);
        p = nl ? nl + 1 : end;
    }
    fdw_puts(w, "]},");
}

/* ---- the run's JSON ------------------------------------------------------------------------- */

static void proc_label(char *buf, size_t n, const struct rep_process *p)
{
    if (p->rank >= 0)
        snprintf(buf, n, "rank %d pid %d", p->rank, p->pid);
    else
        snprintf(buf, n, "pid %d", p->pid);
}

/* The chart's bars: each step's numbers; its kind (0 a training step, 1 start-up, 2 the step
 * still open at exit: the report's rates leave both out); from a trace the blocked time of each
 * of the run's top lines. */
static void write_steps(struct page *pg, const struct run *r, size_t p, const struct sitemap *m)
{
    struct fd_writer *w = &pg->w;
    const struct rep_process *rp = &r->set->procs[p];
    const struct rep_lines *rl = &r->m.per_proc[p];
    size_t n = rp->steps ? rp->nsteps : 0;
    const char *names[] = {"step", "wall", "blocked", "syncs", "launches"};
    key(w, "steps");
    fdw_putc(w, '{');
    for (int f = 0; f < 5; f++) {
        key(w, names[f]);
        fdw_putc(w, '[');
        for (size_t i = 0; i < n; i++) {
            const struct rep_step *s = &rp->steps[i];
            uint64_t v = f == 0   ? s->step
                         : f == 1 ? s->wall_ns
                         : f == 2 ? s->blocked_ns
                         : f == 3 ? s->syncs
                                  : s->launches;
            if (i)
                fdw_putc(w, ',');
            fdw_u64(w, v);
        }
        fdw_puts(w, "],");
    }
    key(w, "kind");
    fdw_putc(w, '[');
    for (size_t i = 0; i < n; i++) {
        int kind = i == 0 && rl->startup_left_out ? 1 : i == n - 1 && rl->partial_left_out ? 2 : 0;
        fdw_printf(w, i ? ",%d" : "%d", kind);
    }
    fdw_puts(w, "],");
    const struct cli_proc *cp = &r->set->items[p];
    if (cp->has_events && n && r->ntop) {
        uint64_t *by = calloc(n * r->ntop, sizeof *by);
        if (!by) {
            pg->err = ENOMEM;
        } else {
            for (size_t i = 0; i < cp->events.nsyncs; i++) {
                const struct trace_sync_event *e = &cp->events.syncs[i];
                int l = event_line(r, p, m, e);
                long si = l >= 0 && r->x[l].top >= 0 ? step_index_of(rp->steps, n, e->step) : -1;
                if (si >= 0)
                    by[(size_t)si * r->ntop + (size_t)r->x[l].top] += e->end_ns - e->start_ns;
            }
            key(w, "by_line");
            fdw_putc(w, '[');
            for (size_t t = 0; t < r->ntop; t++) {
                fdw_puts(w, t ? ",[" : "[");
                for (size_t i = 0; i < n; i++) {
                    if (i)
                        fdw_putc(w, ',');
                    fdw_u64(w, by[i * r->ntop + t]);
                }
                fdw_putc(w, ']');
            }
            fdw_puts(w, "],");
            free(by);
        }
    }
    close_obj(w);
    fdw_putc(w, ',');
}

static int wall_desc(const void *pa, const void *pb, void *ctx)
{
    const struct trace_events *ev = ctx;
    const struct trace_step_event *a = &ev->steps[*(const size_t *)pa],
                                  *b = &ev->steps[*(const size_t *)pb];
    uint64_t x = a->end_ns - a->start_ns, y = b->end_ns - b->start_ns;
    return (x < y) - (x > y);
}

/* A step the timeline may show: an active one, or one spanned by its sampled events. */
static bool shown(const struct trace_step_event *s)
{
    return s->active || s->spanned;
}

/* The steps whose timelines the page carries: every step when they are few, else the slowest
 * and evenly spaced ones (by trace step index); returns how many, in step order. */
static size_t pick_timeline_steps(const struct trace_events *ev, const uint32_t *events_of,
                                  size_t *pick)
{
    size_t total = 0, n = 0, cand = 0;
    for (size_t i = 0; i < ev->nsteps; i++)
        if (shown(&ev->steps[i])) {
            total += events_of[i];
            cand++;
        }
    if (cand <= TIMELINE_STEPS_ALL && total <= TIMELINE_EVENTS) {
        for (size_t i = 0; i < ev->nsteps; i++)
            if (shown(&ev->steps[i]))
                pick[n++] = i;
        return n;
    }
    size_t *order = malloc((cand ? cand : 1) * sizeof *order);
    if (!order)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < ev->nsteps; i++)
        if (shown(&ev->steps[i]))
            order[k++] = i;
    size_t budget = TIMELINE_EVENTS;
    /* evenly spaced by step number (the steps listed crowd the run's start and end) */
    uint64_t s0 = k ? ev->steps[order[0]].step : 0, s1 = k ? ev->steps[order[k - 1]].step : 0;
    for (size_t j = 0, at = 0; j < TIMELINE_PICKED / 2 && at < k; j++) {
        uint64_t target = s0 + (uint64_t)((double)(s1 - s0) * (double)j / (TIMELINE_PICKED / 2));
        while (at + 1 < k && ev->steps[order[at]].step < target)
            at++;
        if (events_of[order[at]] <= budget && (!n || pick[n - 1] != order[at])) {
            pick[n++] = order[at];
            budget -= events_of[pick[n - 1]];
        }
    }
    qsort_r(order, k, sizeof *order, wall_desc, (void *)ev);
    for (size_t j = 0; j < k && n < TIMELINE_PICKED; j++) {
        bool have = false;
        for (size_t q = 0; q < n; q++)
            have |= pick[q] == order[j];
        if (!have && events_of[order[j]] <= budget) {
            pick[n++] = order[j];
            budget -= events_of[order[j]];
        }
    }
    free(order);
    for (size_t i = 1; i < n; i++) /* step order */
        for (size_t j = i; j > 0 && pick[j] < pick[j - 1]; j--) {
            size_t t = pick[j];
            pick[j] = pick[j - 1];
            pick[j - 1] = t;
        }
    return n;
}

/* "timeline": the picked steps' syncs [tid, start, duration, line, api] and launches [tid, time],
 * times in ns from the step's start, flat. */
/* One step of the timeline: its figures, its syncs as [tid, start, duration, line, api] and its
 * launches as [tid, time] (flattened; times from the step's start). sync_step and launch_step:
 * each event's step (its index in ev->steps). */
static void write_timeline_step(struct page *pg, const struct run *r, size_t p,
                                const struct sitemap *m, size_t si, const long *sync_step,
                                const long *launch_step)
{
    struct fd_writer *w = &pg->w;
    const struct trace_events *ev = &r->set->items[p].events;
    const struct trace_step_event *st = &ev->steps[si];
    bool apart = st->partial || (st->step == 0 && r->m.per_proc[p].startup_left_out);
    fdw_printf(w, "{\"step\":%llu,\"tid\":%u,\"dur\":%llu,\"apart\":%s,%s\"syncs\":[",
               (unsigned long long)st->step, st->tid,
               (unsigned long long)(st->end_ns - st->start_ns), apart ? "true" : "false",
               st->spanned ? "\"spanned\":true," : "");
    bool any = false;
    for (size_t i = 0; i < ev->nsyncs; i++) {
        const struct trace_sync_event *e = &ev->syncs[i];
        if (sync_step[i] != (long)si)
            continue;
        uint32_t api = str_id(&pg->strings, e->api);
        long long t0 = rel_ns(e->start_ns, st->start_ns);
        fdw_printf(w, "%s%u,%lld,%llu,%d,%u", any ? "," : "", e->tid, t0,
                   (unsigned long long)(e->end_ns - e->start_ns), event_line(r, p, m, e),
                   api == UINT32_MAX ? 0 : api);
        any = true;
    }
    fdw_puts(w, "],\"launches\":[");
    any = false;
    for (size_t i = 0; i < ev->nlaunches; i++) {
        const struct trace_launch_event *e = &ev->launches[i];
        if (launch_step[i] != (long)si)
            continue;
        fdw_printf(w, "%s%u,%lld", any ? "," : "", e->tid, rel_ns(e->time_ns, st->start_ns));
        any = true;
    }
    fdw_puts(w, "]}");
}

static void write_timeline(struct page *pg, const struct run *r, size_t p, const struct sitemap *m)
{
    struct fd_writer *w = &pg->w;
    const struct trace_events *ev = &r->set->items[p].events;
    if (!r->set->items[p].has_events || !ev->nsteps || !r->timeline_of[p])
        return;
    uint32_t *events_of = calloc(ev->nsteps, sizeof *events_of);
    long *slot = malloc(ev->nsteps * sizeof *slot);
    size_t *pick = malloc(ev->nsteps * sizeof *pick);
    long *sync_step = malloc((ev->nsyncs ? ev->nsyncs : 1) * sizeof *sync_step);
    long *launch_step = malloc((ev->nlaunches ? ev->nlaunches : 1) * sizeof *launch_step);
    if (!events_of || !slot || !pick || !sync_step || !launch_step) {
        pg->err = ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < ev->nsyncs; i++)
        if ((sync_step[i] = trace_step_index(ev, ev->syncs[i].step)) >= 0)
            events_of[sync_step[i]]++;
    for (size_t i = 0; i < ev->nlaunches; i++)
        if ((launch_step[i] = trace_step_index(ev, ev->launches[i].step)) >= 0)
            events_of[launch_step[i]]++;
    size_t n = pick_timeline_steps(ev, events_of, pick);
    for (size_t i = 0; i < ev->nsteps; i++)
        slot[i] = -1;
    for (size_t k = 0; k < n; k++)
        slot[pick[k]] = (long)k;
    key(w, "timeline");
    fdw_puts(w, "{\"threads\":[");
    for (size_t i = 0; i < ev->nthreads; i++) {
        fdw_printf(w, "%s[%u,", i ? "," : "", ev->threads[i].tid);
        fdw_json_string(w, ev->threads[i].name);
        fdw_putc(w, ']');
    }
    fdw_printf(w, "],\"omitted\":%llu,", (unsigned long long)ev->events_omitted);
    if (ev->sample_stride > 1) /* what the reader kept: the first steps' events, then a spread */
        fdw_printf(w, "\"sample\":[%llu,%llu],", (unsigned long long)ev->sample_from,
                   (unsigned long long)ev->sample_stride);
    fdw_puts(w, "\"steps\":[");
    for (size_t k = 0; k < n; k++) {
        fdw_puts(w, k ? "," : "");
        write_timeline_step(pg, r, p, m, pick[k], sync_step, launch_step);
    }
    fdw_puts(w, "]},");
out:
    free(events_of);
    free(slot);
    free(pick);
    free(sync_step);
    free(launch_step);
}

static void add_tid(struct mextra *m, uint32_t tid)
{
    for (uint32_t i = 0; i < m->ntids; i++)
        if (m->tids[i] == tid)
            return;
    if (m->ntids < LINE_THREADS)
        m->tids[m->ntids++] = tid;
}

/* A process's place in its job and its figures of the per-rank view, as the report's section
 * names and prints them. */
static void write_rank_figures(struct fd_writer *w, const struct run *r, size_t p)
{
    const struct rep_process *rp = &r->set->procs[p];
    const struct ranks_fig *f = &r->ranks.fig[p];
    char buf[128];
    cli_rank_name(rp, buf, sizeof buf);
    jstr(w, "name", buf);
    jstr(w, "host", rp->host && *rp->host ? rp->host : NULL);
    fdw_printf(w, "\"local_rank\":%d,\"node\":%d,\"world_size\":%d,", rp->local_rank, rp->node,
               rp->world_size);
    jnum(w, "rank_syncs_per_step", f->syncs_per_step);
    cli_ranks_format(buf, sizeof buf, f->syncs_per_step, false);
    jstr(w, "rank_syncs_text", buf);
    jnum(w, "rank_share", f->share);
    cli_ranks_format(buf, sizeof buf, f->share, true);
    jstr(w, "rank_share_text", buf);
    fdw_printf(w, "\"no_step\":%s,\"straggler\":%s,", f->no_step ? "true" : "false",
               f->straggler ? "true" : "false");
}

/* One spread of the per-rank view: {"min": proc, "max": proc, "*_text": as the section prints}. */
static void write_spread(struct fd_writer *w, const struct ranks_view *v, const char *name,
                         bool share)
{
    const size_t *order = share ? v->by_share : v->by_syncs;
    size_t lo = order[0], hi = order[v->nprocs - 1];
    char buf[32];
    key(w, name);
    fdw_printf(w, "{\"min\":%zu,\"max\":%zu,", lo, hi);
    cli_ranks_format(buf, sizeof buf, share ? v->fig[lo].share : v->fig[lo].syncs_per_step, share);
    jstr(w, "min_text", buf);
    cli_ranks_format(buf, sizeof buf, share ? v->share_median : v->syncs_median, share);
    jstr(w, "median_text", buf);
    cli_ranks_format(buf, sizeof buf, share ? v->fig[hi].share : v->fig[hi].syncs_per_step, share);
    jstr(w, "max_text", buf);
    close_obj(w);
    fdw_putc(w, ',');
}

/* "ranks": the report's per-rank section (cli/ranks.h) as data: the processes by index into
 * "procs", the lines on some ranks only by index into "lines" (each with the processes of its
 * shorter side, as the section names them: those it is on, or those it is not on). */
static void write_ranks(struct page *pg, const struct run *r)
{
    struct fd_writer *w = &pg->w;
    const struct ranks_view *v = &r->ranks;
    char buf[256];
    key(w, "ranks");
    fdw_putc(w, '{');
    cli_ranks_header(v, buf, sizeof buf);
    jstr(w, "header", buf);
    cli_ranks_rule(buf, sizeof buf, v->nstragglers == 0);
    jstr(w, "rule", buf);
    write_spread(w, v, "syncs", false);
    write_spread(w, v, "share", true);
    key(w, "waits_most");
    for (size_t k = 0; k < RANKS_WAITS_MOST && k < v->nprocs; k++)
        fdw_printf(w, k ? ",%zu" : "[%zu", v->by_share[v->nprocs - 1 - k]);
    fdw_puts(w, "],");
    key(w, "stragglers");
    fdw_putc(w, '[');
    for (size_t k = 0; k < v->nstragglers; k++)
        fdw_printf(w, k ? ",%zu" : "%zu", v->by_share[v->nprocs - 1 - k]);
    fdw_puts(w, "],");
    key(w, "no_step");
    fdw_putc(w, '[');
    for (size_t p = 0, any = 0; p < v->nprocs; p++)
        if (v->fig[p].no_step)
            fdw_printf(w, any++ ? ",%zu" : "%zu", p);
    fdw_puts(w, "],");
    key(w, "partial");
    fdw_putc(w, '[');
    for (size_t i = 0; i < v->npartial; i++) {
        const struct ranks_line *g = &v->partial[i];
        bool on = g->k * 2 <= v->nprocs;
        fdw_printf(w, "%s{\"line\":%u,\"k\":%zu,\"on\":%s,\"procs\":[", i ? "," : "",
                   r->m.merged[g->at[0].proc][g->at[0].line], g->k, on ? "true" : "false");
        for (size_t p = 0, any = 0; p < v->nprocs; p++)
            if (cli_ranks_line_on(g, p) == on)
                fdw_printf(w, any++ ? ",%zu" : "%zu", p);
        fdw_puts(w, "]}");
    }
    fdw_puts(w, "],");
    size_t carried = 0;
    for (size_t p = 0; p < v->nprocs; p++)
        carried += r->timeline_of[p] && r->set->items[p].has_events;
    ju64(w, "timelines", carried);
    close_obj(w);
    fdw_putc(w, ',');
}

static void write_procs(struct page *pg, struct run *r, struct sitemap *maps)
{
    struct fd_writer *w = &pg->w;
    key(w, "procs");
    fdw_putc(w, '[');
    for (size_t p = 0; p < r->set->n; p++) {
        const struct rep_process *rp = &r->set->procs[p];
        const struct rep_lines *pl = &r->m.per_proc[p];
        const struct cli_proc *cp = &r->set->items[p];
        char label[64];
        proc_label(label, sizeof label, rp);
        uint64_t syncs = 0, blocked = 0;
        for (size_t i = 0; i < pl->n; i++) {
            syncs += pl->lines[i].count;
            blocked += pl->lines[i].blocked_ns;
        }
        fdw_puts(w, p ? ",{" : "{");
        jstr(w, "label", label);
        fdw_printf(w, "\"pid\":%d,\"rank\":%d,", rp->pid, rp->rank);
        if (r->has_ranks)
            write_rank_figures(w, r, p);
        jnum(w, "training_steps", pl->steps);
        jnum(w, "wall_ns", pl->wall_ns);
        ju64(w, "syncs", syncs);
        ju64(w, "blocked_ns", blocked);
        fdw_printf(w, "\"traced\":%s,", cp->traced ? "true" : "false");
        /* whether the timeline can show launches: the agent wrote them (SYNCSPY_LAUNCHES=trace) */
        fdw_printf(w, "\"launches_traced\":%s,",
                   cp->has_events && cp->events.launches_traced ? "true" : "false");
        key(w, "startup");
        fdw_printf(
            w, "{\"closed\":%s,\"apart\":%s,\"wall_ns\":%llu,\"syncs\":%llu,\"blocked_ns\":%llu},",
            rp->startup_closed ? "true" : "false", pl->startup_left_out ? "true" : "false",
            (unsigned long long)rp->startup.wall_ns, (unsigned long long)rp->startup.syncs,
            (unsigned long long)rp->startup.blocked_ns);
        key(w, "threads");
        fdw_putc(w, '[');
        for (size_t i = 0; rp->threads && i < rp->nthreads; i++) {
            fdw_printf(w, "%s[%u,", i ? "," : "", rp->threads[i].tid);
            fdw_json_string(w, str(rp->threads[i].name));
            fdw_printf(w, ",%llu,%llu,%d]", (unsigned long long)rp->threads[i].syncs,
                       (unsigned long long)rp->threads[i].blocked_ns,
                       rp->threads[i].ends_steps ? 1 : 0);
        }
        fdw_puts(w, "],");
        write_steps(pg, r, p, &maps[p]);
        write_timeline(pg, r, p, &maps[p]);
        if (cp->has_events)
            for (size_t i = 0; i < cp->events.nsyncs; i++) {
                int l = event_line(r, p, &maps[p], &cp->events.syncs[i]);
                if (l >= 0)
                    add_tid(&r->x[l], cp->events.syncs[i].tid);
            }
        close_obj(w);
    }
    fdw_puts(w, "],");
}

/* "sites": [proc, api, line, count, blocked_ns, [frames]] each, counts of the training steps. */
static void write_sites(struct page *pg, const struct run *r)
{
    struct fd_writer *w = &pg->w;
    key(w, "sites");
    fdw_putc(w, '[');
    bool any = false;
    for (size_t p = 0; p < r->set->n; p++) {
        const struct rep_process *rp = &r->set->procs[p];
        for (size_t i = 0; rp->sites && i < rp->nsites; i++) {
            const struct rep_site *s = &rp->sites[i];
            const struct rep_site_line *sl = &r->m.per_proc[p].of_site[i];
            long line = sl->line == REP_NO_LINE ? -1 : (long)r->m.merged[p][sl->line];
            uint32_t api = str_id(&pg->strings, s->api);
            fdw_printf(w, "%s[%zu,%u,%ld,%llu,%llu,[", any ? "," : "", p,
                       api == UINT32_MAX ? 0 : api, line, (unsigned long long)sl->count,
                       (unsigned long long)sl->blocked_ns);
            for (uint32_t k = 0; s->frames && k < s->nframes; k++)
                fdw_printf(w, k ? ",%u" : "%u", page_frame(pg, &s->frames[k]));
            fdw_puts(w, "]]");
            any = true;
        }
    }
    fdw_puts(w, "],");
}

/* The lines (run-wide) line k's estimate was split with (issue 24 item 2): the shares of the
 * unseen sites it has a share of, summed by line; cnt/ns indexed by run-wide line, [k]: its own.
 * Returns the attribution steps of the first process with a share (0: k has no estimate, or
 * out of memory: *oom set). */
static uint64_t estimate_parts(const struct run *r, size_t k, uint64_t *cnt, uint64_t *ns,
                               bool *oom)
{
    uint64_t steps = 0;
    memset(cnt, 0, r->m.n * sizeof *cnt);
    memset(ns, 0, r->m.n * sizeof *ns);
    for (size_t p = 0; p < r->set->n; p++) {
        const struct rep_lines *pl = &r->m.per_proc[p];
        uint32_t *mine = pl->nshares ? malloc(pl->nshares * sizeof *mine) : NULL;
        if (pl->nshares && !mine) {
            *oom = true;
            return 0;
        }
        size_t nmine = 0; /* the unseen sites line k has a share of */
        for (size_t i = 0; i < pl->nshares; i++)
            if (r->m.merged[p][pl->shares[i].line] == k)
                mine[nmine++] = pl->shares[i].from;
        for (size_t i = 0; nmine && i < pl->nshares; i++) {
            const struct rep_line_share *y = &pl->shares[i];
            bool shared = false;
            for (size_t j = 0; j < nmine && !shared; j++)
                shared = mine[j] == y->from;
            if (!shared)
                continue;
            cnt[r->m.merged[p][y->line]] += y->count;
            ns[r->m.merged[p][y->line]] += y->blocked_ns;
        }
        if (nmine && !steps)
            steps = pl->attribution_steps ? pl->attribution_steps : 1;
        free(mine);
    }
    return cnt[k] || ns[k] ? steps : 0;
}

static void write_share(struct fd_writer *w, const struct run *r, size_t line, bool here,
                        uint64_t count, uint64_t ns)
{
    char buf[512];
    fdw_putc(w, '{');
    ju64(w, "line", line);
    fdw_printf(w, "\"here\":%s,", here ? "true" : "false");
    ju64(w, "count", count);
    ju64(w, "blocked_ns", ns);
    jnum(w, "syncs_per_step", (double)count / r->m.steps);
    report_format_rate(buf, sizeof buf, (double)count / r->m.steps);
    jstr(w, "syncs_per_step_text", buf);
    report_format_ns(buf, sizeof buf, (double)ns / r->m.steps);
    jstr(w, "blocked_per_step_text", buf);
    report_frame_loc(r->m.lines[line].line->where, buf, sizeof buf);
    jstr(w, "where", buf);
    close_obj(w);
}

/* "estimate": the report's words on line k's estimated part and one share per line it was split
 * between (its own first, then the heaviest), or nothing when its figure is exact. */
static void write_estimate(struct page *pg, const struct run *r, size_t k)
{
    struct fd_writer *w = &pg->w;
    uint64_t *cnt = malloc(r->m.n * 2 * sizeof *cnt);
    size_t *order = malloc(r->m.n * sizeof *order);
    bool oom = !cnt || !order;
    uint64_t steps = oom ? 0 : estimate_parts(r, k, cnt, cnt + r->m.n, &oom);
    uint64_t *ns = cnt ? cnt + r->m.n : NULL;
    size_t n = 0;
    for (size_t j = 0; steps && j < r->m.n; j++)
        if (j != k && (cnt[j] || ns[j])) {
            size_t at = n++; /* heaviest (count) first, then by line */
            while (at && cnt[order[at - 1]] < cnt[j]) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = j;
        }
    if (steps) {
        struct rep_estimate_other o[REPORT_ESTIMATE_SHOWN];
        size_t shown = n < REPORT_ESTIMATE_SHOWN ? n : REPORT_ESTIMATE_SHOWN;
        for (size_t i = 0; i < shown; i++)
            o[i] = (struct rep_estimate_other){r->m.lines[order[i]].line->where,
                                               (double)cnt[order[i]] / r->m.steps};
        char *text = malloc(REPORT_ESTIMATE_WORDS_MAX);
        if (text)
            report_estimate_words(text, REPORT_ESTIMATE_WORDS_MAX, (double)cnt[k] / r->m.steps,
                                  steps, o, shown, n - shown);
        key(w, "estimate");
        fdw_putc(w, '{');
        jstr(w, "text", text);
        ju64(w, "attribution_steps", steps);
        key(w, "shares");
        fdw_putc(w, '[');
        write_share(w, r, k, true, cnt[k], ns[k]);
        for (size_t i = 0; i < n; i++) {
            fdw_putc(w, ',');
            write_share(w, r, order[i], false, cnt[order[i]], ns[order[i]]);
        }
        fdw_puts(w, "]},");
        free(text);
    } else if (oom) {
        pg->err = ENOMEM;
    }
    free(cnt);
    free(order);
}

/* "ops": every operator that synced at row k, heaviest first, each with its rates and hint
 * (issue 35 item 1, summed over the processes as the row is); "ops_more": the sites of ops past
 * those. */
static void write_ops(struct page *pg, const struct run *r, size_t k)
{
    struct fd_writer *w = &pg->w;
    struct hints_op_sum *sum = calloc(CLI_OPS_MAX, sizeof *sum);
    size_t more = 0, n = sum ? cli_merged_ops(r->set, &r->m, k, sum, CLI_OPS_MAX, &more) : 0;
    char buf[256];
    if (!sum)
        pg->err = ENOMEM;
    key(w, "ops");
    fdw_putc(w, '[');
    for (size_t i = 0; i < n; i++) {
        fdw_puts(w, i ? ",{" : "{");
        jstr(w, "op", sum[i].op.op);
        jstr(w, "hint", *sum[i].op.hint ? sum[i].op.hint : NULL);
        if (*sum[i].op.matched)
            report_display_name(sum[i].op.matched, buf, sizeof buf);
        jstr(w, "matched", *sum[i].op.matched ? buf : NULL);
        jnum(w, "syncs_per_step", (double)sum[i].count / r->m.steps);
        jnum(w, "blocked_per_step_ns", (double)sum[i].ns / r->m.steps);
        report_format_rate(buf, sizeof buf, (double)sum[i].count / r->m.steps);
        jstr(w, "syncs_per_step_text", buf);
        report_format_ns(buf, sizeof buf, (double)sum[i].ns / r->m.steps);
        jstr(w, "blocked_per_step_text", buf);
        close_obj(w);
    }
    fdw_puts(w, "],");
    ju64(w, "ops_more", more);
    free(sum);
}

/* A line's figures: where it is, its APIs and operators, counts, rates and their texts. */
static void write_line_figures(struct page *pg, const struct run *r, size_t k)
{
    struct fd_writer *w = &pg->w;
    const struct cli_mline *m = &r->m.lines[k];
    const struct mextra *x = &r->x[k];
    char where[1024], buf[256];
    cli_line_json_fields(w, m->line); /* `"name": value, ` as check and diff write them */
    cli_line_where(m->line, where, sizeof where);
    jstr(w, "where", where);
    report_apis_text(m->apis, m->napis, m->other_apis, where, sizeof where);
    jstr(w, "apis_text", where); /* "cudaMemcpyAsync x19, cudaStreamSynchronize x19" */
    write_ops(pg, r, k);
    ju64(w, "count", m->count);
    ju64(w, "blocked_ns", m->blocked_ns);
    ju64(w, "startup_count", m->startup_count);
    ju64(w, "max_ns", m->max_ns);
    jnum(w, "syncs_per_step", (double)m->count / r->m.steps);
    jnum(w, "blocked_per_step_ns", (double)m->blocked_ns / r->m.steps);
    report_format_rate(buf, sizeof buf, (double)m->count / r->m.steps);
    jstr(w, "syncs_per_step_text", buf);
    report_format_ns(buf, sizeof buf, (double)m->blocked_ns / r->m.steps);
    jstr(w, "blocked_per_step_text", buf);
    report_format_ns(buf, sizeof buf, m->count ? (double)m->blocked_ns / (double)m->count : 0.0);
    jstr(w, "mean_text", buf);
    report_format_ns(buf, sizeof buf, (double)m->max_ns);
    jstr(w, "max_text", buf);
    jnum(w, "share", r->m.wall_ns > 0 ? (double)m->blocked_ns / r->m.wall_ns : 0.0);
    ju64(w, "site", x->heaviest_site);
    fdw_printf(w, "\"top\":%d,", x->top);
}

/* The operator that synced in the line's heaviest site, and its hint. */
static void write_line_op(struct fd_writer *w, const struct rep_site *site)
{
    char buf[256];
    struct site_op so;
    hints_op(site, &so);
    jstr(w, "op", so.op);
    jstr(w, "hint", *so.hint ? so.hint : NULL);
    if (*so.matched)
        report_display_name(so.matched, buf, sizeof buf);
    jstr(w, "matched", *so.matched ? buf : NULL);
}

/* The user's frame in the stack the page opens (the heaviest site's), as the report finds it;
 * a backward line's also the line that called backward(). */
static void write_line_user(struct fd_writer *w, const struct rep_line *l,
                            const struct rep_site *site)
{
    bool found = false;
    uint32_t user = l->kind == REP_LINE_BACKWARD ? hints_backward_line_frame(site, &found) : 0;
    if (!found)
        user = hints_user_frame(site);
    fdw_printf(w, "\"user\":%ld,", site->nframes && l->where ? (long)user : -1L);
    if (l->kind != REP_LINE_BACKWARD)
        return;
    bool caller_found;
    uint32_t cu = hints_caller_user_frame(site, &caller_found);
    if (caller_found) {
        char where[1024], buf[256];
        const struct rep_frame *f = &site->frames[cu];
        report_display_name(f->function, buf, sizeof buf);
        snprintf(where, sizeof where, "%s  %s:%u", buf, str(f->file), f->line);
        jstr(w, "backward_called_at", where);
    }
}

/* "threads": the threads that synced at the line; "per_proc": [process, count, blocked ns] of
 * each process that has it. */
static void write_line_spread(struct fd_writer *w, const struct run *r, size_t k)
{
    const struct mextra *x = &r->x[k];
    key(w, "threads");
    fdw_putc(w, '[');
    for (uint32_t t = 0; t < x->ntids; t++)
        fdw_printf(w, t ? ",%u" : "%u", x->tids[t]);
    fdw_puts(w, "],");
    key(w, "per_proc");
    fdw_putc(w, '[');
    bool any = false;
    for (size_t p = 0; p < r->set->n; p++)
        for (size_t i = 0; i < r->m.per_proc[p].n; i++)
            if (r->m.merged[p][i] == k) {
                const struct rep_line *pl = &r->m.per_proc[p].lines[i];
                fdw_printf(w, "%s[%zu,%llu,%llu]", any ? "," : "", p, (unsigned long long)pl->count,
                           (unsigned long long)pl->blocked_ns);
                any = true;
            }
    fdw_puts(w, "],");
}

static void write_lines(struct page *pg, const struct run *r)
{
    struct fd_writer *w = &pg->w;
    struct source_cache sc = {0};
    key(w, "lines");
    fdw_putc(w, '[');
    for (size_t k = 0; k < r->m.n; k++) {
        const struct rep_line *l = r->m.lines[k].line;
        const struct rep_site *site = r->x[k].heaviest;
        fdw_puts(w, k ? ",{" : "{");
        write_line_figures(pg, r, k);
        write_line_op(w, site);
        write_line_user(w, l, site);
        write_line_spread(w, r, k);
        if (l->kind == REP_LINE_BACKWARD)
            write_estimate(pg, r, k);
        write_source(w, &sc, l->where);
        close_obj(w);
    }
    fdw_puts(w, "],");
    free(sc.path);
    free(sc.text);
}

struct report_ctx {
    const struct cli_set *set;
    int top;
};

static int render_report(void *ctx, int fd)
{
    const struct report_ctx *c = ctx;
    struct report_opts o = {.top = c->top, .color = false};
    if (report_render_text(c->set->procs, c->set->n, &o, fd) != 0)
        return -1;
    return cli_ranks_render(c->set->procs, c->set->n, fd); /* as `syncspy report` ends */
}

static void write_run(struct page *pg, const struct cli_set *set, const char *path, int top)
{
    struct fd_writer *w = &pg->w;
    struct run r;
    struct sitemap *maps = calloc(set->n ? set->n : 1, sizeof *maps);
    if (!maps || run_build(set, &r) != 0) {
        pg->err = ENOMEM;
        if (maps)
            run_free(&r);
        free(maps);
        return;
    }
    for (size_t p = 0; p < set->n; p++)
        if (sitemap_build(&maps[p], &set->procs[p]) != 0)
            pg->err = ENOMEM;
    fdw_putc(w, '{');
    jstr(w, "path", path);
    struct report_ctx rc = {set, top};
    struct text report;
    if (capture(render_report, &rc, &report) != 0)
        pg->err = errno ? errno : EIO;
    jstr(w, "report", report.s ? report.s : "");
    free(report.s);
    jnum(w, "training_steps", r.m.steps);
    jnum(w, "wall_ns", r.m.wall_ns);
    key(w, "top");
    fdw_putc(w, '[');
    for (size_t t = 0; t < r.ntop; t++)
        fdw_printf(w, t ? ",%u" : "%u", r.top[t]);
    fdw_puts(w, "],");
    if (!pg->err) {
        write_procs(pg, &r, maps); /* before the lines: it finds their threads */
        if (r.has_ranks)
            write_ranks(pg, &r);
        write_lines(pg, &r);
        write_sites(pg, &r);
    }
    close_obj(w);
    for (size_t p = 0; p < set->n; p++)
        free(maps[p].slots);
    free(maps);
    run_free(&r);
}

struct diff_ctx {
    const struct cli_set *base, *neu;
    struct diff_opts o;
};

static int render_diff(void *ctx, int fd)
{
    const struct diff_ctx *c = ctx;
    return cli_diff(c->base, c->neu, &c->o, fd) ? -1 : 0;
}

struct data_ctx {
    const struct cli_set *set, *neu;
    const struct html_opts *opts;
};

static int write_data(void *ctx, int fd)
{
    const struct data_ctx *c = ctx;
    struct page *pg = calloc(1, sizeof *pg);
    if (!pg) {
        errno = ENOMEM;
        return -1;
    }
    struct fd_writer *w = &pg->w;
    fdw_init(w, fd);
    fdw_printf(w, "{\"version\":%d,", HTML_DATA_VERSION);
    jstr(w, "syncspy", SYNCSPY_VERSION);
    jstr(w, "kind", c->neu ? "diff" : "report");
    key(w, "runs");
    fdw_putc(w, '[');
    write_run(pg, c->set, c->opts->path, c->opts->top);
    if (c->neu) {
        fdw_putc(w, ',');
        write_run(pg, c->neu, c->opts->new_path, c->opts->top);
    }
    fdw_puts(w, "],");
    if (c->neu) {
        struct diff_ctx d = {
            c->set,
            c->neu,
            {.json = true, .base_path = c->opts->path, .new_path = c->opts->new_path}};
        struct text json, text;
        if (capture(render_diff, &d, &json) != 0)
            pg->err = errno ? errno : EIO;
        d.o.json = false;
        if (capture(render_diff, &d, &text) != 0)
            pg->err = errno ? errno : EIO;
        key(w, "diff");
        fdw_puts(w, json.s && *json.s ? json.s : "null");
        fdw_putc(w, ',');
        jstr(w, "diff_text", text.s);
        free(json.s);
        free(text.s);
    }
    key(w, "strings");
    fdw_putc(w, '[');
    for (size_t i = 0; i < pg->strings.n; i++) {
        if (i)
            fdw_putc(w, ',');
        fdw_json_string(w, pg->strings.keys[i]);
    }
    fdw_puts(w, "],");
    key(w, "frames");
    fdw_putc(w, '[');
    for (size_t i = 0; i < pg->frames.n; i++) {
        const struct pframe *f = (const struct pframe *)pg->frames.keys[i];
        fdw_printf(w, "%s%u,%u,%u,%u,%u", i ? "," : "", f->fn, f->file, f->line, f->module,
                   f->flags);
    }
    fdw_puts(w, "]}");
    int rc = fdw_flush(w);
    if (rc == 0 && pg->err) {
        errno = pg->err;
        rc = -1;
    }
    intern_free(&pg->strings);
    intern_free(&pg->frames);
    free(pg);
    return rc;
}

/* Text in HTML: the five characters that could end an element or an attribute; control
 * characters shown as text_escape writes them (the page may be written to a terminal: -o -). */
static void html_text(struct fd_writer *w, const char *s)
{
    char shown[PATH_MAX + 64];
    text_escape(shown, sizeof shown, s);
    for (const char *p = shown; *p; p++) {
        switch (*p) {
        case '<': fdw_puts(w, "&lt;"); break;
        case '>': fdw_puts(w, "&gt;"); break;
        case '&': fdw_puts(w, "&amp;"); break;
        case '"': fdw_puts(w, "&quot;"); break;
        case '\'': fdw_puts(w, "&#39;"); break;
        default: fdw_putc(w, *p);
        }
    }
}

int cli_html(const struct cli_set *set, const struct cli_set *neu, const struct html_opts *opts,
             int fd)
{
    struct data_ctx c = {set, neu, opts};
    struct text data;
    if (capture(write_data, &c, &data) != 0)
        return -1;
    struct fd_writer *w = malloc(sizeof *w);
    if (!w) {
        free(data.s);
        errno = ENOMEM;
        return -1;
    }
    fdw_init(w, fd);
    fdw_puts(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>syncspy");
    fdw_puts(w, neu ? " diff: " : ": ");
    html_text(w, str(opts->path));
    if (neu) {
        fdw_puts(w, " -> ");
        html_text(w, str(opts->new_path));
    }
    fdw_puts(w, "</title>\n<style>\n");
    fdw_puts(w, page_css);
    fdw_puts(w, "</style></head>\n<body><div id=\"app\"><p class=\"loading\">syncspy: loading the "
                "report (this page needs JavaScript)</p></div>\n"
                "<script id=\"syncspy-data\" type=\"application/json\">");
    /* '<' only ever stands inside JSON strings, where \u003c is the same: no "</script>" ends
     * the block early */
    const char *p = data.s, *end = data.s + data.len;
    while (p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        fdw_write(w, p, (size_t)((lt ? lt : end) - p));
        if (!lt)
            break;
        fdw_puts(w, "\\u003c");
        p = lt + 1;
    }
    fdw_puts(w, "</script>\n<script>\n");
    fdw_puts(w, page_js);
    fdw_puts(w, "</script>\n</body></html>\n");
    free(data.s);
    int rc = fdw_flush(w);
    free(w);
    return rc;
}
