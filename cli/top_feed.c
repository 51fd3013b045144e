/* cli/top_feed.c: a watched process's state for `syncspy top` (see top_feed.h). Fed in file
 * order by the trace it follows; the per-(thread, api, stack) counters are output/phase_counter.h's (one
 * rule for what start-up's and the last step's parts are), the views are the report model so
 * the report's own rules (output/report.h) make their lines and rates. CLI only: malloc. */
#include "cli/top_feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/phase_counter.h"
#include "cli/trace_read.h"
#include "output/trace_format.h"
#include "output/report.h"

struct top_key { /* one (thread, api, stack) of the sync records */
    uint32_t tid;
    uint32_t nframes;
    const char *api;
    const struct rep_frame *frames;
    struct phase_counter phase;
    uint64_t max_ns;
};

struct
    top_step { /* a training step (active, ended by a mark, not start-up), or a run of them folded
                   * past half the bound (steps numbered step .. last, n of them active: their sums) */
    uint64_t step, last, n, wall_ns, syncs, blocked_ns;
};

struct top_event { /* a sync record kept for the window */
    uint64_t step, ns;
    uint32_t key;
};

/* A ring that grows by doubling up to its cap, then overwrites its oldest. */
struct ring {
    void *p;
    size_t elem, cap, max, head, n; /* the oldest at head */
};

struct top_feed {
    struct trace_follow *follow;
    struct rep_process snap; /* the follow's snapshot after the last poll */
    uint64_t last_step;      /* the step the snapshot's splits take as the last */
    bool bad;
    /* the active steps recorded (as trace_read's build_steps counts them) */
    uint64_t active, wall_ns, syncs, blocked_ns, launches;
    struct rep_step first, last; /* the first and the last active step */
    bool has_active, startup_closed;
    struct ring steps;       /* struct top_step, the newest training steps */
    uint64_t training_steps; /* pushed in all */
    struct top_key *keys;
    size_t nkeys, capkeys;
    uint32_t *slots; /* open addressing: key index + 1, 0 empty */
    size_t nslots;
    uint64_t keys_lost;                            /* records of a key with no room */
    struct ring events;                            /* struct top_event */
    uint64_t events_overwritten, overwritten_step; /* and the newest step among them */
};

/* ---- rings and keys --------------------------------------------------------------------------- */

static void *ring_at(const struct ring *r, size_t i)
{
    return (char *)r->p + ((r->head + i) % r->cap) * r->elem;
}

/* Room for one more at the tail; *overwrote when the oldest made way for it. NULL: no memory. */
static void *ring_push(struct ring *r, bool *overwrote)
{
    *overwrote = false;
    if (r->n == r->cap && r->cap < r->max) {
        size_t ncap = r->cap ? r->cap * 2 : 1024;
        ncap = ncap < r->max ? ncap : r->max;
        char *np = malloc(ncap * r->elem);
        if (np) {
            for (size_t i = 0; i < r->n; i++)
                memcpy(np + i * r->elem, ring_at(r, i), r->elem);
            free(r->p);
            r->p = np;
            r->cap = ncap;
            r->head = 0;
        }
    }
    if (!r->cap)
        return NULL;
    if (r->n == r->cap) {
        r->head = (r->head + 1) % r->cap;
        r->n--;
        *overwrote = true;
    }
    return ring_at(r, r->n++);
}

static void ring_pop_front(struct ring *r)
{
    r->head = (r->head + 1) % r->cap;
    r->n--;
}

static size_t key_hash(uint32_t tid, const char *api, const struct rep_frame *frames)
{
    uint64_t h = (uint64_t)tid * 0x9E3779B97F4A7C15ull ^
                 (uint64_t)(uintptr_t)api * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)(uintptr_t)frames * 0x165667B19E3779F9ull;
    return (size_t)(h ^ h >> 29);
}

static bool keys_grow(struct top_feed *f)
{
    size_t ncap = f->capkeys ? f->capkeys * 2 : 64, nslots = ncap * 2;
    struct top_key *k = realloc(f->keys, ncap * sizeof *k);
    if (!k)
        return false;
    f->keys = k;
    uint32_t *s = calloc(nslots, sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < f->nkeys; i++) {
        size_t j = key_hash(f->keys[i].tid, f->keys[i].api, f->keys[i].frames) & (nslots - 1);
        while (s[j])
            j = (j + 1) & (nslots - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(f->slots);
    f->slots = s;
    f->nslots = nslots;
    f->capkeys = ncap;
    return true;
}

/* The key of (tid, api, frames), made on first sight; UINT32_MAX when there is no room. */
static uint32_t key_of(struct top_feed *f, const struct trace_sync_event *e)
{
    if (f->nslots) {
        for (size_t j = key_hash(e->tid, e->api, e->frames) & (f->nslots - 1);;
             j = (j + 1) & (f->nslots - 1)) {
            if (!f->slots[j])
                break;
            const struct top_key *k = &f->keys[f->slots[j] - 1];
            if (k->tid == e->tid && k->api == e->api && k->frames == e->frames)
                return f->slots[j] - 1;
        }
    }
    if (f->nkeys == f->capkeys && !keys_grow(f))
        return UINT32_MAX;
    uint32_t i = (uint32_t)f->nkeys++;
    struct top_key *k = &f->keys[i];
    memset(k, 0, sizeof *k);
    k->tid = e->tid;
    k->api = e->api;
    k->frames = e->frames;
    k->nframes = e->frames ? e->nframes : 0;
    size_t j = key_hash(e->tid, e->api, e->frames) & (f->nslots - 1);
    while (f->slots[j])
        j = (j + 1) & (f->nslots - 1);
    f->slots[j] = i + 1;
    return i;
}

/* ---- what the trace hands over ---------------------------------------------------------------- */

static struct rep_step rep_step_of(const struct trace_step_event *e)
{
    return (struct rep_step){.step = e->step,
                             .wall_ns = e->end_ns - e->start_ns,
                             .syncs = e->syncs,
                             .blocked_ns = e->blocked_ns,
                             .launches = e->launches,
                             .partial = e->partial};
}

static void count_step(struct top_feed *f, const struct rep_step *s, int sign)
{
    f->active += (uint64_t)sign;
    f->wall_ns += (uint64_t)sign * s->wall_ns;
    f->syncs += (uint64_t)sign * s->syncs;
    f->blocked_ns += (uint64_t)sign * s->blocked_ns;
    f->launches += (uint64_t)sign * s->launches;
}

static void on_step(void *ctx, const struct trace_step_event *e)
{
    struct top_feed *f = ctx;
    if (e->step == 0 && !e->partial)
        f->startup_closed = true;
    if (!e->active)
        return;
    struct rep_step s = rep_step_of(e);
    if (f->has_active && e->step == f->last.step) { /* written again: the later record counts */
        count_step(f, &f->last, -1);
        struct top_step *newest = f->steps.n ? ring_at(&f->steps, f->steps.n - 1) : NULL;
        if (newest && newest->n == 1 && newest->step == e->step) {
            f->steps.n--;
            f->training_steps--;
        }
    }
    count_step(f, &s, 1);
    if (!f->has_active)
        f->first = s;
    f->last = s;
    f->has_active = true;
    if (e->partial || e->step == 0)
        return;
    bool overwrote;
    struct top_step *t = ring_push(&f->steps, &overwrote);
    if (t) {
        *t = (struct top_step){e->step, e->step, 1, s.wall_ns, s.syncs, s.blocked_ns};
        f->training_steps++;
    }
}

/* Folded steps (a long run past half its SYNCSPY_TRACE_MB): in the since-start figures, and one
 * entry of the window's ring (their sums are exact; the window takes the run whole). */
static void on_run(void *ctx, const struct trace_step_run *r)
{
    struct top_feed *f = ctx;
    f->startup_closed = true;
    f->active += r->active;
    f->wall_ns += r->wall_ns;
    f->syncs += r->syncs;
    f->blocked_ns += r->blocked_ns;
    f->launches += r->launches;
    if (!r->active)
        return;
    bool overwrote;
    struct top_step *t = ring_push(&f->steps, &overwrote);
    if (t) {
        *t = (struct top_step){r->first_step, r->last_step, r->active,
                               r->wall_ns,    r->syncs,     r->blocked_ns};
        f->training_steps += r->active;
    }
}

static void on_sync(void *ctx, const struct trace_sync_event *e)
{
    struct top_feed *f = ctx;
    uint32_t i = key_of(f, e);
    if (i == UINT32_MAX) {
        f->keys_lost++;
        return;
    }
    struct top_key *k = &f->keys[i];
    uint64_t ns = e->end_ns - e->start_ns;
    phase_add(&k->phase, e->step, ns);
    if (ns > k->max_ns)
        k->max_ns = ns;
    bool overwrote;
    struct top_event *ev = ring_push(&f->events, &overwrote);
    if (overwrote) {
        f->events_overwritten++;
        f->overwritten_step = f->overwritten_step > e->step ? f->overwritten_step : e->step;
    }
    if (ev)
        *ev = (struct top_event){e->step, ns, i};
    else
        f->keys_lost++;
}

/* ---- the feed ---------------------------------------------------------------------------------- */

struct top_feed *top_feed_open(const char *path, char *err, size_t errlen)
{
    struct top_feed *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory reading %s", path);
        return NULL;
    }
    f->steps = (struct ring){.elem = sizeof(struct top_step), .max = TOP_FEED_STEPS};
    f->events = (struct ring){.elem = sizeof(struct top_event), .max = TOP_FEED_EVENTS};
    struct trace_follow_sink sink = {.ctx = f, .step = on_step, .sync = on_sync, .run = on_run};
    if (!(f->follow = trace_follow_open(path, &sink, err, errlen))) {
        free(f);
        return NULL;
    }
    return f;
}

int top_feed_poll(struct top_feed *f, char *err, size_t errlen)
{
    int rc = f->bad ? -1 : trace_follow_poll(f->follow, err, errlen);
    f->bad = rc != 0;
    if (trace_follow_snapshot(f->follow, &f->snap, &f->last_step) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return rc;
}

void top_feed_free(struct top_feed *f)
{
    if (!f)
        return;
    trace_follow_free(f->follow);
    free(f->steps.p);
    free(f->events.p);
    free(f->keys);
    free(f->slots);
    free(f);
}

/* ---- views ------------------------------------------------------------------------------------- */

void top_thread_label(const struct rep_thread *t, char *buf, size_t n)
{
    if (t->name && *t->name)
        snprintf(buf, n, "%s", t->name);
    else
        snprintf(buf, n, "tid %u", t->tid);
}

/* Whether tid is one of the threads named thread (NULL: every thread). */
static bool tid_viewed(const struct rep_process *p, uint32_t tid, const char *thread)
{
    if (!thread)
        return true;
    char label[96];
    for (size_t i = 0; p->threads && i < p->nthreads; i++)
        if (p->threads[i].tid == tid) {
            top_thread_label(&p->threads[i], label, sizeof label);
            return strcmp(label, thread) == 0;
        }
    struct rep_thread unnamed = {.tid = tid};
    top_thread_label(&unnamed, label, sizeof label);
    return strcmp(label, thread) == 0;
}

/* The newest training steps that make the window. */
static struct top_window window_of(const struct top_feed *f)
{
    struct top_window w = {0};
    size_t i = f->steps.n;
    for (; i > 0 && w.wall_ns < (double)TOP_FEED_WINDOW_NS; i--) {
        const struct top_step *s = ring_at(&f->steps, i - 1);
        w.steps += (double)s->n;
        w.wall_ns += (double)s->wall_ns;
        w.syncs += (double)s->syncs;
        w.blocked_ns += (double)s->blocked_ns;
        w.first_step = s->step;
        w.folded |= s->n > 1 || s->last != s->step;
        if (i == f->steps.n)
            w.last_step = s->last;
        w.entries++;
    }
    w.short_of_steps =
        i == 0 && w.wall_ns < (double)TOP_FEED_WINDOW_NS && f->training_steps > (double)w.steps;
    return w;
}

/* Whether step is one of the window's (the ring's steps are in order, with gaps where the
 * schedule records none). */
static bool in_window(const struct top_feed *f, const struct top_window *w, uint64_t step)
{
    if (!w->steps || step < w->first_step || step > w->last_step)
        return false;
    size_t lo = f->steps.n - w->entries, hi = f->steps.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct top_step *s = ring_at(&f->steps, mid);
        if (step >= s->step && step <= s->last)
            return true;
        if (s->last < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

struct view_store {
    struct rep_step steps[3];
    struct rep_site *since_sites, *win_sites;
    uint64_t *win_count, *win_ns;
};

/* The since-start steps as the report model: the totals, with the first and last active steps
 * (what rate_basis looks at), and while the process runs a partial step of nothing for the one
 * still open, so the rates leave out its part of the sites' counts as the report does. */
static void since_steps(const struct top_feed *f, struct rep_process *p, struct rep_step *steps)
{
    p->active_steps = f->active;
    p->wall_ns = f->wall_ns;
    p->syncs = f->syncs;
    p->blocked_ns = f->blocked_ns;
    p->launches = f->launches;
    p->startup_closed = f->startup_closed;
    size_t n = 0;
    if (f->has_active) {
        steps[n++] = f->first;
        if (f->last.step != f->first.step)
            steps[n++] = f->last;
    }
    if (f->snap.trace_unfinished && !(f->has_active && f->last.partial)) {
        steps[n++] = (struct rep_step){.step = f->snap.steps_seen, .partial = true};
        p->active_steps++;
    }
    p->steps = n ? steps : NULL;
    p->nsteps = n;
}

/* Each key's syncs and blocked time in the window (the records of the steps before it are done
 * with: dropped). False: no memory. */
static bool count_window(struct top_feed *f, const struct top_view *v, struct view_store *st,
                         bool thread)
{
    /* the window only moves on: records of steps before it are done with */
    while (f->events.n && ((struct top_event *)ring_at(&f->events, 0))->step < v->w.first_step)
        ring_pop_front(&f->events);
    size_t nk = f->nkeys ? f->nkeys : 1;
    st->win_count = calloc(nk, sizeof *st->win_count);
    st->win_ns = calloc(nk, sizeof *st->win_ns);
    st->win_sites = calloc(nk, sizeof *st->win_sites);
    if (thread)
        st->since_sites = calloc(nk, sizeof *st->since_sites);
    if (!st->win_count || !st->win_ns || !st->win_sites || (thread && !st->since_sites))
        return false;
    for (size_t i = 0; i < f->events.n; i++) {
        const struct top_event *e = ring_at(&f->events, i);
        if (in_window(f, &v->w, e->step)) {
            st->win_count[e->key]++;
            st->win_ns[e->key] += e->ns;
        }
    }
    return true;
}

/* The keys viewed (thread's, or every thread's: NULL) as sites: the window's into st->win_sites
 * (*nw of them), and with a thread since start into st->since_sites (*ns). */
static void view_sites(const struct top_feed *f, const char *thread, struct view_store *st,
                       struct top_view *v, size_t *nw, size_t *ns)
{
    for (size_t i = 0; i < f->nkeys; i++) {
        const struct top_key *k = &f->keys[i];
        if (!tid_viewed(&f->snap, k->tid, thread))
            continue;
        if (st->win_count[i]) {
            st->win_sites[(*nw)++] = (struct rep_site){.api = k->api,
                                                       .frames = k->frames,
                                                       .nframes = k->nframes,
                                                       .count = st->win_count[i],
                                                       .blocked_ns = st->win_ns[i],
                                                       .max_ns = k->max_ns};
            v->thread_win_syncs += st->win_count[i];
            v->thread_win_blocked_ns += st->win_ns[i];
        }
        struct rep_phase_raw raw = phase_raw(&k->phase);
        if (thread && raw.count)
            st->since_sites[(*ns)++] =
                (struct rep_site){.api = k->api,
                                  .frames = k->frames,
                                  .nframes = k->nframes,
                                  .count = raw.count,
                                  .blocked_ns = raw.ns,
                                  .max_ns = k->max_ns,
                                  .split = rep_split_of(&raw, f->last_step, true)};
    }
}

/* One thread's exact totals for the header, from the threads' totals. */
static void thread_totals(const struct top_feed *f, const char *thread, struct top_view *v)
{
    for (size_t i = 0; f->snap.threads && i < f->snap.nthreads; i++) {
        const struct rep_thread *t = &f->snap.threads[i];
        if (!t->tid || !tid_viewed(&f->snap, t->tid, thread))
            continue;
        struct rep_site as_site = {
            .count = t->syncs, .blocked_ns = t->blocked_ns, .split = t->split};
        uint64_t c, b;
        report_site_counts(&v->since, &as_site, false, &c, &b);
        v->thread_syncs += c;
        v->thread_blocked_ns += b;
        v->thread_found = true;
    }
}

/* The last 10 s as a process of its own: the window's sites and figures. */
static void window_process(const struct top_feed *f, struct top_view *v, struct rep_site *sites,
                           size_t nw)
{
    v->window = f->snap;
    v->window.sites = sites;
    v->window.nsites = nw;
    v->window.steps = NULL;
    v->window.nsteps = 0;
    v->window.active_steps = (uint64_t)v->w.steps;
    v->window.wall_ns = (uint64_t)v->w.wall_ns;
    v->window.syncs = (uint64_t)v->w.syncs;
    v->window.blocked_ns = (uint64_t)v->w.blocked_ns;
    v->window.startup_closed = false;
}

int top_feed_view(struct top_feed *f, const char *thread, struct top_view *v)
{
    memset(v, 0, sizeof *v);
    struct view_store *st = calloc(1, sizeof *st);
    if (!st)
        return -1;
    v->owned = st;
    v->since = f->snap;
    since_steps(f, &v->since, st->steps);
    v->w = window_of(f);
    if (!count_window(f, v, st, thread != NULL))
        return -1;
    size_t nw = 0, ns = 0;
    view_sites(f, thread, st, v, &nw, &ns);
    if (thread) { /* one thread's: its sync records, and its exact totals for the header */
        v->since.sites = st->since_sites;
        v->since.nsites = ns;
        thread_totals(f, thread, v);
    }
    window_process(f, v, st->win_sites, nw);
    v->records_missing =
        f->snap.syncs_dropped + f->keys_lost +
        (f->events_overwritten && f->overwritten_step >= v->w.first_step ? f->events_overwritten
                                                                         : 0);
    return 0;
}

void top_view_free(struct top_view *v)
{
    struct view_store *st = v->owned;
    if (st) {
        free(st->since_sites);
        free(st->win_sites);
        free(st->win_count);
        free(st->win_ns);
        free(st);
    }
    memset(v, 0, sizeof *v);
}

const struct rep_process *top_feed_process(const struct top_feed *f)
{
    return &f->snap;
}
