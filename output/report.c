/* output/report.c: the human sync-hotspot report: per-process headers, then sites grouped by
 * their innermost user frame, heaviest first, each with its stack and a hint when one applies
 * (the rules: output/hints.c).
 * Runs at exit inside the target process (or in the CLI): it may malloc, but it writes only to
 * the fd it is given, through an fd_writer (no stdio FILE*). */
#include "output/report.h"
#include "common/clock.h"
#include "output/backward.h"
#include "output/fd_writer.h"
#include "output/hints.h"
#include "output/source.h"
#include "output/step_list.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STACK_FRAMES_SHOWN 8
#define APIS_SHOWN 4
#define NAME_MAX_CHARS 80 /* longer function names keep their tail (the function itself) */
#define NAME_COLUMN 36    /* frame name column width (longer names push the line) */
#define LOC_COLUMN 28
#define SOURCE_SHOWN_CHARS 100 /* of a user line's code */

static const char *str(const char *s)
{
    return s ? s : "";
}

/* ---- numbers people read ------------------------------------------------------------------ */

/* Three significant digits: 4.10, 41.3, 412. */
/* ---- colour (SYNCSPY_COLOR) ------------------------------------------------------------
 * ANSI SGR sequences around a few fields, only when the report's opts ask for colour: with it
 * off not one byte differs (files and pipes read as they always have). One report is rendered
 * at a time (the agent's once at exit, the CLI's once per command), so the switch is a static. */
static bool paint_on;
#define SGR_BOLD "1"
#define SGR_DIM "2"
#define SGR_RED "1;31"
#define SGR_YELLOW "33"
#define SGR_GREEN "32"
#define SGR_CYAN "36"

static void paint(struct fd_writer *w, const char *sgr)
{
    if (paint_on && sgr) {
        fdw_raw(w, "\033["); /* the tool's own: past a shown writer's escaping */
        fdw_raw(w, sgr);
        fdw_raw(w, "m");
    }
}

static void paint_end(struct fd_writer *w, const char *sgr)
{
    if (paint_on && sgr)
        fdw_raw(w, "\033[0m");
}

/* A share of the step's time: red from 20 %, yellow from 5 %. */
static const char *share_colour(double part, double whole)
{
    double f = whole > 0 ? part / whole : 0.0;
    return f >= 0.20 ? SGR_RED : f >= 0.05 ? SGR_YELLOW : NULL;
}

bool report_color_wanted(enum report_color mode, int fd)
{
    if (mode != REPORT_COLOR_AUTO)
        return mode == REPORT_COLOR_ALWAYS;
    const char *term = getenv("TERM");
    return isatty(fd) == 1 && !(term && strcmp(term, "dumb") == 0);
}

static void sig3(char *buf, size_t n, double v, const char *unit)
{
    if (v < 9.995)
        snprintf(buf, n, "%.2f%s", v, unit);
    else if (v < 99.95)
        snprintf(buf, n, "%.1f%s", v, unit);
    else
        snprintf(buf, n, "%.0f%s", v, unit);
}

static void fmt_ns(char *buf, size_t n, double ns)
{
    if (ns < 999.5)
        snprintf(buf, n, "%.0f ns", ns);
    else if (ns < 999.5e3)
        sig3(buf, n, ns / 1e3, " us");
    else if (ns < 999.5e6)
        sig3(buf, n, ns / 1e6, " ms");
    else
        sig3(buf, n, ns / 1e9, " s");
}

static void fmt_rate(char *buf, size_t n, double v)
{
    sig3(buf, n, v, "");
}

void report_format_ns(char *buf, size_t n, double ns)
{
    fmt_ns(buf, n, ns);
}

void report_format_rate(char *buf, size_t n, double v)
{
    fmt_rate(buf, n, v);
}

static void fmt_share(char *buf, size_t n, double part, double whole)
{
    if (whole <= 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.1f%%", 100.0 * part / whole);
}

/* A C++ name without its parameter list ("at::native::index(at::Tensor const&, ...)" ->
 * "at::native::index"), cut to NAME_MAX_CHARS keeping the tail. */
void report_display_name(const char *fn, char *buf, size_t n)
{
    const char *s = str(fn);
    size_t len = strlen(s), cut = len;
    int angle = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '<')
            angle++;
        else if (s[i] == '>' && angle > 0)
            angle--;
        else if (s[i] == '(' && angle == 0) {
            if (strncmp(s + i, "(anonymous namespace)", 21) == 0) {
                i += 20;
                continue;
            }
            if (i >= 8 && strncmp(s + i - 8, "operator", 8) == 0 && s[i + 1] == ')') {
                i++; /* operator() */
                continue;
            }
            if (i > 0) {
                cut = i;
                break;
            }
        }
    }
    if (cut <= NAME_MAX_CHARS) {
        snprintf(buf, n, "%.*s", (int)cut, s);
        return;
    }
    /* Too long: template arguments first become "<...>" (std::thread::_State_impl<...>::_M_run
     * says more than its tail); only then is the name cut from the left. */
    char shortened[1024];
    size_t k = 0;
    angle = 0;
    for (size_t i = 0; i < cut && k + 6 < sizeof shortened; i++) {
        if (s[i] == '<' && (i < 8 || strncmp(s + i - 8, "operator", 8) != 0)) {
            if (angle++ == 0) {
                memcpy(shortened + k, "<...>", 5);
                k += 5;
            }
        } else if (s[i] == '>' && angle > 0) {
            angle--;
        } else if (angle == 0) {
            shortened[k++] = s[i];
        }
    }
    shortened[k] = '\0';
    if (k > NAME_MAX_CHARS)
        snprintf(buf, n, "...%s", shortened + k - (NAME_MAX_CHARS - 3));
    else
        snprintf(buf, n, "%s", shortened);
}

/* "dir/file.py:42" with long paths cut to their last two components. */
static void display_loc(const struct rep_frame *f, char *buf, size_t n)
{
    const char *file = str(f->file);
    if (!*file) {
        buf[0] = '\0';
        return;
    }
    if (strlen(file) > LOC_COLUMN) {
        const char *last = strrchr(file, '/');
        const char *prev = last;
        while (prev && prev > file && prev[-1] != '/')
            prev--;
        if (prev && prev > file + 1)
            file = prev - 1; /* keep "/dir/file" */
    }
    const char *lead = file != str(f->file) ? "..." : "";
    size_t k = (size_t)snprintf(buf, n, "%s", lead);
    if (k < n)
        k += text_escape(buf + k, n - k, file);
    if (f->line && k < n)
        snprintf(buf + k, n - k, ":%u", f->line);
}

static void frame_texts(const struct rep_frame *f, char *name, size_t nn, char *loc, size_t nl,
                        char *tag, size_t nt);

/* ---- what per-step rates divide by ------------------------------------------------------- */

struct totals {
    double steps; /* divisor of per-step rates: training steps (summed over processes), >= 1 */
    double wall_ns;
};

/* What per-step rates divide by: the training steps. Start-up (step 0, up to the first mark) and
 * the step still open at exit (the teardown after the last mark) are left out whenever a step
 * is left besides: they would dilute (or swell) every rate. */
struct basis {
    double steps, wall_ns, blocked_ns, syncs, launches;
    bool startup_left_out, partial_left_out;
    const struct rep_process *p;
    size_t first, end;                /* the training steps among the listed ones: [first, end) */
    struct rep_step partial;          /* the step left out as partial_left_out */
    const struct rep_thread *trainer; /* the thread that ends the steps, when known */
};

static void leave_out(struct basis *b, const struct rep_step *st)
{
    b->steps -= 1;
    b->wall_ns -= (double)st->wall_ns;
    b->blocked_ns -= (double)st->blocked_ns;
    b->syncs -= (double)st->syncs;
    b->launches -= (double)st->launches;
}

static struct basis rate_basis(const struct rep_process *p)
{
    struct basis b = {(double)p->active_steps,
                      (double)p->wall_ns,
                      (double)p->blocked_ns,
                      (double)p->syncs,
                      (double)p->launches,
                      false,
                      false,
                      p,
                      0,
                      0,
                      {0},
                      NULL};
    struct rep_step first, last;
    b.end = rep_steps_listed(p);
    if (b.end > 0 && rep_step_at(p, 0, &first) && rep_step_at(p, b.end - 1, &last)) {
        if (p->startup_closed && first.step == 0 && !first.partial && b.steps > 1) {
            leave_out(&b, &first);
            b.first++;
            b.startup_left_out = true;
        }
        if (last.partial && b.end > b.first && b.steps > 1) {
            leave_out(&b, &last);
            b.end--;
            b.partial = last;
            b.partial_left_out = true;
        }
    } else {
        b.end = 0;
    }
    for (size_t i = 0; i < p->nthreads && p->threads; i++)
        if (p->threads[i].ends_steps)
            b.trainer = &p->threads[i];
    return b;
}

/* A count (of a site or a thread) as the basis counts it: without the parts left out. */
static uint64_t basis_count(const struct basis *b, uint64_t count, const struct rep_split *s)
{
    uint64_t out = count;
    if (b->startup_left_out)
        out -= s->startup_count < out ? s->startup_count : out;
    if (b->partial_left_out)
        out -= s->partial_count < out ? s->partial_count : out;
    return out;
}

static uint64_t basis_ns(const struct basis *b, uint64_t ns, const struct rep_split *s)
{
    uint64_t out = ns;
    if (b->startup_left_out)
        out -= s->startup_ns < out ? s->startup_ns : out;
    if (b->partial_left_out)
        out -= s->partial_ns < out ? s->partial_ns : out;
    return out;
}

void report_site_counts(const struct rep_process *p, const struct rep_site *s, bool with_startup,
                        uint64_t *count, uint64_t *blocked_ns)
{
    struct basis b = rate_basis(p);
    *count = basis_count(&b, s->count, &s->split);
    *blocked_ns = basis_ns(&b, s->blocked_ns, &s->split);
    if (with_startup && b.startup_left_out) {
        *count += s->split.startup_count;
        *blocked_ns += s->split.startup_ns;
    }
}

/* ---- grouping ----------------------------------------------------------------------------- */

/* How a site is grouped: by its own user frame, or (a backward-pass sync) by the forward line
 * that created the node whose backward it ran in; a backward sync whose forward line was not
 * recorded in any of its steps stays apart, by its node. */
enum entry_kind { ENTRY_PLAIN = 0, ENTRY_BACKWARD = 1, ENTRY_BACKWARD_UNSEEN = 2 };

struct entry {
    const struct rep_site *site;
    const struct rep_frame *key; /* the user frame (forward: the forward stack's); NULL when none */
    uint32_t user;               /* index of key in site->frames (but see gen) */
    uint32_t gen;                /* a compiled graph's backward: 1 + the index of its generated
                                  * frame named by the forward node's line, which is then the key
                                  * (user stays the forward stack's); 0: none */
    uint32_t proc;
    uint8_t kind;                  /* enum entry_kind */
    bool estimated;                /* a share of an unseen backward site's syncs, estimated for the
                                  * forward line of site `target` (split_unseen) */
    bool first_share;              /* estimated: the share that carries the site's start-up part */
    const char *cause;             /* unseen: why it has no forward line (a cause key; NULL: the
                                  * file does not say) */
    const struct rep_site *target; /* estimated: the forward site whose line it is counted for */
    char node[64];                 /* backward: the node's type name */
    uint64_t count, blocked_ns;    /* of the training steps (start-up, the open step left out) */
};

struct group {
    size_t first, n; /* entries[first .. first+n) */
    uint64_t count, blocked_ns, max_ns;
    uint64_t estimated_count, estimated_ns; /* of count: estimated (split_unseen) */
    uint32_t threads; /* the most threads one of its sites saw syncing (0: not known) */
    const struct entry *heaviest;
};

static int cmp_str(const char *a, const char *b)
{
    return strcmp(str(a), str(b));
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* Group key: (function, module, file, line), or (module, offset) when the function is unknown. */
static int key_cmp(const struct rep_frame *a, const struct rep_frame *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    bool na = *str(a->function) != '\0', nb = *str(b->function) != '\0';
    if (na != nb)
        return na ? -1 : 1;
    int c;
    if (na) {
        /* a Python frame's module names the generated code it came from (torch.compile): one
         * user line is one group whichever recompilation ran it */
        bool py = a->python && b->python;
        if ((c = cmp_str(a->function, b->function)) ||
            (!py && (c = cmp_str(a->module, b->module))) || (c = cmp_str(a->file, b->file)))
            return c;
        return cmp_u64(a->line, b->line);
    }
    if ((c = cmp_str(a->module, b->module)))
        return c;
    return cmp_u64(a->offset, b->offset);
}

/* Plain groups and backward groups of one line stay apart; backward groups of one forward line
 * are one group whatever the node (one forward op, one backward). */
static int group_key_cmp(const struct entry *a, const struct entry *b)
{
    int c = cmp_u64(a->kind, b->kind);
    if (c)
        return c;
    if (a->kind == ENTRY_BACKWARD_UNSEEN && (c = cmp_str(a->node, b->node)))
        return c;
    return key_cmp(a->key, b->key);
}

static int entry_cmp(const void *pa, const void *pb)
{
    const struct entry *a = pa, *b = pb;
    int c = group_key_cmp(a, b);
    if (c)
        return c;
    if ((c = cmp_u64(a->proc, b->proc)))
        return c;
    if ((c = cmp_u64(b->blocked_ns, a->blocked_ns)))
        return c;
    return cmp_str(a->site->api, b->site->api);
}

static int group_cmp(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    int c = cmp_u64(b->blocked_ns, a->blocked_ns);
    if (c)
        return c;
    if ((c = cmp_u64(b->count, a->count)))
        return c;
    return group_key_cmp(a->heaviest, b->heaviest);
}

/* The own frames of two sites are the same (a backward sync recorded in an attribution step
 * and the same sync in a step without one). */
static bool same_own_frames(const struct rep_site *a, const struct rep_site *b)
{
    struct rep_sections sa = rep_site_sections(a->frames, a->nframes);
    struct rep_sections sb = rep_site_sections(b->frames, b->nframes);
    if (sa.own != sb.own || cmp_str(a->api, b->api) != 0)
        return false;
    for (uint32_t i = 0; i < sa.own; i++) {
        const struct rep_frame *x = &a->frames[i], *y = &b->frames[i];
        if (x->python != y->python || cmp_str(x->function, y->function) ||
            cmp_str(x->module, y->module) || cmp_str(x->file, y->file) || x->line != y->line ||
            (!x->function && x->offset != y->offset))
            return false;
    }
    return true;
}

/* Whether the report may estimate an unseen backward sync's forward line: it was made in a step
 * without attribution (SYNCSPY_BACKWARD=sampled), or the file does not say why (written before the
 * agent recorded causes). Syncs of attribution steps that had no tag (another thread, no Python
 * op, ...) are evidence of their own and are never given to a line. */
static bool estimable(const struct entry *e)
{
    return e->kind == ENTRY_BACKWARD_UNSEEN &&
           (!e->cause || !strcmp(e->cause, BACKWARD_CAUSE_KEY_STEP));
}

#define SPLIT_MAX 64 /* forward sites one unseen site is split between (the heaviest kept) */

/* total split in proportion of w[0..k) (largest remainders: the parts add up to total). */
static void split_u64(uint64_t total, const uint64_t *w, size_t k, uint64_t *out)
{
    unsigned __int128 sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += w[i];
    if (sum == 0) { /* no weight: evenly */
        for (size_t i = 0; i < k; i++)
            out[i] = total / k + (i < total % k);
        return;
    }
    uint64_t given = 0;
    unsigned __int128 rem[SPLIT_MAX];
    for (size_t i = 0; i < k; i++) {
        unsigned __int128 x = (unsigned __int128)total * w[i];
        out[i] = (uint64_t)(x / sum);
        rem[i] = x % sum;
        given += out[i];
    }
    while (given < total) { /* fewer than k left: one each to the largest remainders */
        size_t best = 0;
        for (size_t i = 1; i < k; i++)
            if (rem[i] > rem[best])
                best = i;
        out[best]++;
        rem[best] = 0;
        given++;
    }
}

/* The forward-line entries an unseen entry u is split between: the same sync (same own frames,
 * same process) recorded with its forward line in attribution steps. */
static size_t split_targets(const struct entry *e, size_t n, size_t u, size_t *t)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++) {
        if (e[j].kind != ENTRY_BACKWARD || e[j].estimated || e[j].proc != e[u].proc ||
            !same_own_frames(e[u].site, e[j].site))
            continue;
        if (k < SPLIT_MAX) {
            t[k++] = j;
            continue;
        }
        size_t light = 0; /* full: the heaviest SPLIT_MAX are kept */
        for (size_t i = 1; i < k; i++)
            if (e[t[i]].site->count < e[t[light]].site->count)
                light = i;
        if (e[j].site->count > e[t[light]].site->count)
            t[light] = j;
    }
    return k;
}

/* Issue 24 item 2: a backward sync of a step without attribution is split between the forward
 * lines seen making the same node at the same native stack in the attribution steps, in the
 * proportion seen there (their sites' counts, and blocked times for the time), never given to
 * one line of several; each share is an entry of its own, marked estimated. The entries grow
 * (*e reallocated, *n updated); -1 when out of memory (nothing estimated then). */
static int split_unseen(struct entry **pe, size_t *pn)
{
    struct entry *e = *pe;
    size_t n = *pn, extra = 0, t[SPLIT_MAX];
    for (size_t u = 0; u < n; u++) {
        size_t k = estimable(&e[u]) ? split_targets(e, n, u, t) : 0;
        extra += k > 1 ? k - 1 : 0;
    }
    if (extra) {
        struct entry *grown = realloc(e, (n + extra) * sizeof *e);
        if (!grown)
            return -1;
        *pe = e = grown;
    }
    size_t end = n;
    for (size_t u = 0; u < n; u++) {
        size_t k = estimable(&e[u]) ? split_targets(e, n, u, t) : 0;
        if (k == 0)
            continue;
        uint64_t wc[SPLIT_MAX], wn[SPLIT_MAX], cs[SPLIT_MAX], ns[SPLIT_MAX];
        for (size_t i = 0; i < k; i++) {
            wc[i] = e[t[i]].site->count;
            wn[i] = e[t[i]].site->blocked_ns;
        }
        split_u64(e[u].count, wc, k, cs);
        split_u64(e[u].blocked_ns, wn, k, ns);
        struct entry from = e[u];
        for (size_t i = 0; i < k; i++) {
            struct entry *x = i == 0 ? &e[u] : &e[end++];
            *x = from;
            x->kind = ENTRY_BACKWARD;
            x->estimated = true;
            x->first_share = i == 0;
            x->target = e[t[i]].site;
            x->key = e[t[i]].key;
            x->user = 0; /* its own frames hold no forward line: shown from the group's heaviest */
            x->count = cs[i];
            x->blocked_ns = ns[i];
        }
    }
    *pn = end;
    return 0;
}

static struct entry make_entry(const struct rep_site *s, uint32_t proc)
{
    struct entry e = {.site = s, .proc = proc};
    bool found;
    uint32_t fu = hints_forward_user_frame(s, &found);
    if (found) {
        e.kind = ENTRY_BACKWARD;
        e.user = fu;
    } else if (hints_backward_node(s, e.node, sizeof e.node)) {
        e.kind = ENTRY_BACKWARD_UNSEEN;
        e.user = hints_user_frame(s);
        e.cause = rep_site_sections(s->frames, s->nframes).unseen;
    } else {
        e.user = hints_user_frame(s);
    }
    if (e.kind == ENTRY_BACKWARD) {
        hints_backward_node(s, e.node, sizeof e.node);
        /* the node is made at the compiled function's line; its op at the line it came from */
        uint32_t g = hints_compiled_backward_frame(s, &found);
        if (found)
            e.gen = g + 1;
    }
    e.key = s->nframes ? &s->frames[e.gen ? e.gen - 1 : e.user] : NULL;
    return e;
}

/* The entries of every site in the training steps' figures, the unseen backward syncs of steps
 * without attribution split between their forward lines (*pe malloc'd; may be reallocated).
 * Returns their number, or (size_t)-1 when out of memory. */
static size_t build_entries(const struct rep_process *procs, size_t nprocs,
                            const struct basis *bases, struct entry **pe)
{
    size_t n = 0;
    struct entry *e = *pe;
    for (size_t p = 0; p < nprocs; p++) {
        for (size_t i = 0; i < procs[p].nsites && procs[p].sites; i++) {
            const struct rep_site *s = &procs[p].sites[i];
            if (!s->frames && s->nframes) /* a malformed site: treat as stackless */
                continue;
            if (hints_compile_work(s)) /* torch.compile's own: shown apart (render_apart) */
                continue;
            struct entry x = make_entry(s, (uint32_t)p);
            x.count = basis_count(&bases[p], s->count, &s->split);
            x.blocked_ns = basis_ns(&bases[p], s->blocked_ns, &s->split);
            if (x.count) /* a site of start-up (or of the open step) only: the header's */
                e[n++] = x;
        }
    }
    if (split_unseen(pe, &n) != 0)
        return (size_t)-1;
    qsort(*pe, n, sizeof **pe, entry_cmp);
    return n;
}

static size_t build_groups(const struct entry *e, size_t n, struct group *g)
{
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || group_key_cmp(&e[i - 1], &e[i]) != 0)
            g[ng++] = (struct group){.first = i, .heaviest = &e[i]};
        struct group *cur = &g[ng - 1];
        const struct rep_site *s = e[i].site;
        cur->n++;
        cur->count += e[i].count;
        cur->blocked_ns += e[i].blocked_ns;
        if (e[i].estimated) {
            cur->estimated_count += e[i].count;
            cur->estimated_ns += e[i].blocked_ns;
        }
        if (s->max_ns > cur->max_ns)
            cur->max_ns = s->max_ns;
        if (s->threads > cur->threads)
            cur->threads = s->threads;
        /* the heaviest site shows the group's stack: one that carries the forward line, if any */
        bool carries = e[i].kind != ENTRY_BACKWARD || e[i].user > 0;
        bool best_carries = cur->heaviest->kind != ENTRY_BACKWARD || cur->heaviest->user > 0;
        if ((carries && !best_carries) ||
            (carries == best_carries && e[i].blocked_ns > cur->heaviest->blocked_ns))
            cur->heaviest = &e[i];
    }
    qsort(g, ng, sizeof *g, group_cmp);
    return ng;
}

/* ---- rendering ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, mean and standard deviation of the training steps' wall times (the listed ones). */
static bool step_stats(const struct basis *b, double *median, double *mean, double *sd)
{
    if (b->end <= b->first)
        return false;
    size_t n = b->end - b->first;
    double *v = malloc(n * sizeof *v);
    if (!v)
        return false;
    double sum = 0, sq = 0;
    struct rep_step_cursor c;
    struct rep_step st;
    rep_steps_begin(&c, b->p);
    for (size_t i = 0; i < b->end && rep_steps_next(&c, &st); i++) {
        if (i < b->first)
            continue;
        v[i - b->first] = (double)st.wall_ns;
        sum += v[i - b->first];
    }
    *mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    free(v);
    return true;
}

/* One note of the header (what its numbers lack), coloured on its own line. */
static void header_note(struct fd_writer *w, const char *text)
{
    fdw_puts(w, "  ");
    paint(w, SGR_YELLOW);
    fdw_puts(w, text);
    paint_end(w, SGR_YELLOW);
    fdw_putc(w, '\n');
}

/* A part of the run kept out of the rates: start-up (before the first step mark) or the time
 * after the last one (the step still open at exit). Its counts come from the sites' splits. */
enum apart { APART_STARTUP, APART_AFTER, APART_COMPILE };

/* APART_COMPILE: torch.compile's own syncs (hints_compile_work: compiling, a new kernel's
 * autotuning), all of them, start-up's too; the other two parts hold the program's only. */
static void apart_of(const struct rep_site *s, enum apart which, uint64_t *count, uint64_t *ns)
{
    bool own = hints_compile_work(s);
    if (which == APART_COMPILE) {
        *count = own ? s->count : 0;
        *ns = own ? s->blocked_ns : 0;
        return;
    }
    *count = own ? 0 : which == APART_STARTUP ? s->split.startup_count : s->split.partial_count;
    *ns = own ? 0 : which == APART_STARTUP ? s->split.startup_ns : s->split.partial_ns;
}

/* The part's line: "before the first step (start-up, not in the rates): 3.02 s, 4 syncs,
 * blocked 271 us", "after the last step (...)", or torch.compile's own work. False: nothing to
 * say (torch.compile did no work). */
static bool render_apart_line(struct fd_writer *w, const struct rep_process *p,
                              const struct rep_step *st, enum apart which, bool left_out)
{
    char a[32], b[32];
    uint64_t syncs = 0, ns = 0, in_startup = 0;
    bool split = false; /* the sites split their counts (start-up, the open step) */
    for (size_t i = 0; i < p->nsites && p->sites; i++) {
        const struct rep_site *s = &p->sites[i];
        uint64_t c, t;
        apart_of(s, which, &c, &t);
        syncs += c;
        ns += t;
        split |= s->split.startup_count || s->split.partial_count;
        if (which == APART_COMPILE && c)
            in_startup += s->split.startup_count;
    }
    if (which == APART_COMPILE) {
        if (!syncs)
            return false;
        fmt_ns(b, sizeof b, (double)ns);
        fdw_printf(w,
                   "  torch.compile's own work (compiling, autotuning; not in the rates): %llu "
                   "sync%s, blocked %s",
                   (unsigned long long)syncs, syncs == 1 ? "" : "s", b);
        if (in_startup)
            fdw_printf(w, " (%llu in start-up)", (unsigned long long)in_startup);
        fdw_putc(w, '\n');
        return true;
    }
    if (!syncs && !split) { /* a trace or summary that does not split its sites: the step's own */
        syncs = st->syncs;
        ns = st->blocked_ns;
    }
    fmt_ns(a, sizeof a, (double)st->wall_ns);
    fmt_ns(b, sizeof b, (double)ns);
    fdw_printf(w, "  %s%s: %s, %llu sync%s, blocked %s\n",
               which == APART_STARTUP ? "before the first step (start-up" : "after the last step (",
               which == APART_STARTUP ? (left_out ? ", not in the rates)" : ")")
                                      : (left_out ? "not in the rates)" : "still open at exit)"),
               a, (unsigned long long)syncs, syncs == 1 ? "" : "s", b);
    return true;
}

/* A part's sites grouped by API and user frame (a module's .cuda() makes a site per parameter
 * kind), with the part's counts. */
struct sgroup {
    const struct rep_site *site;
    struct entry e; /* its line as the table groups it (a backward sync: its forward line) */
    uint64_t count, ns;
};

/* The groups of a part's sites into *out (the caller frees it; NULL: no sites, or no memory). */
static size_t apart_groups(const struct rep_process *p, enum apart which, struct sgroup **out)
{
    struct sgroup *g = p->sites ? calloc(p->nsites ? p->nsites : 1, sizeof *g) : NULL;
    size_t ng = 0;
    for (size_t i = 0; g && i < p->nsites; i++) {
        const struct rep_site *s = &p->sites[i];
        uint64_t c, t;
        apart_of(s, which, &c, &t);
        if (!c)
            continue;
        struct entry e = make_entry(s, 0);
        size_t k = 0;
        while (k < ng && !(cmp_str(g[k].site->api, s->api) == 0 && group_key_cmp(&g[k].e, &e) == 0))
            k++;
        if (k == ng)
            g[ng++] = (struct sgroup){.site = s, .e = e};
        g[k].count += c;
        g[k].ns += t;
    }
    *out = g;
    return ng;
}

/* The three heaviest groups (at most top), heaviest first: "4 x cudaStreamSynchronize, 20.0 ms,
 * at loss_fn  train.cpp:42". */
static void render_apart_groups(struct fd_writer *w, struct sgroup *g, size_t ng, int top)
{
    char a[32];
    for (int k = 0; k < 3 && k < top && g; k++) {
        size_t best = ng;
        for (size_t j = (size_t)k; j < ng; j++)
            if (best == ng || g[j].ns > g[best].ns)
                best = j;
        if (best == ng)
            break;
        struct sgroup t = g[k];
        g[k] = g[best];
        g[best] = t;
        char name[NAME_MAX_CHARS + 8], loc[NAME_MAX_CHARS + 24], tag[NAME_MAX_CHARS + 32];
        fmt_ns(a, sizeof a, (double)g[k].ns);
        fdw_printf(w, "    %llu x %s, %s", (unsigned long long)g[k].count, str(g[k].site->api), a);
        const struct entry *e = &g[k].e;
        if (e->kind == ENTRY_BACKWARD_UNSEEN) {
            fdw_puts(w, ", in the backward of ");
            fdw_text(w, e->node);
        } else if (e->key) {
            frame_texts(e->key, name, sizeof name, loc, sizeof loc, tag, sizeof tag);
            fdw_printf(w, ", %s %s  %s", e->kind == ENTRY_BACKWARD ? "backward of" : "at", name,
                       *loc ? loc : tag);
        }
        fdw_putc(w, '\n');
    }
}

/* "before the first step (start-up, not in the rates): 3.02 s, 4 syncs, blocked 271 us" (or
 * "after the last step ..."), and its three heaviest lines. */
static void render_apart(struct fd_writer *w, const struct rep_process *p,
                         const struct rep_step *st, enum apart which, bool left_out, int top)
{
    if (!render_apart_line(w, p, st, which, left_out))
        return;
    struct sgroup *g;
    size_t ng = apart_groups(p, which, &g);
    render_apart_groups(w, g, ng, top);
    free(g);
}

/* "recompiles: 5 in the training steps (1.00/step), 6 in all" and the functions most recompiled,
 * each with the last recompilation's first guard failure (Dynamo's words): why the compiler ran
 * again, which its own syncs above may come from. */
static void render_recompiles(struct fd_writer *w, const struct rep_process *p,
                              const struct basis *bs)
{
    uint64_t all = 0, in_steps = 0;
    for (size_t i = 0; i < p->nrecompiles && p->recompiles; i++) {
        all += p->recompiles[i].count;
        in_steps += p->recompiles[i].in_steps;
    }
    if (!all)
        return;
    char rate[32];
    fmt_rate(rate, sizeof rate, bs->steps > 0 ? (double)in_steps / bs->steps : 0.0);
    fdw_printf(w, "  torch.compile recompiled %llu time%s after start-up (%s/step), %llu in all:\n",
               (unsigned long long)in_steps, in_steps == 1 ? "" : "s", rate,
               (unsigned long long)all);
    for (size_t i = 0; i < p->nrecompiles && i < 5; i++) {
        const struct rep_recompile *r = &p->recompiles[i];
        struct rep_frame f = {
            .function = r->function, .file = r->file, .line = r->line, .python = true};
        char name[NAME_MAX_CHARS + 8], loc[NAME_MAX_CHARS + 24], tag[NAME_MAX_CHARS + 32];
        frame_texts(&f, name, sizeof name, loc, sizeof loc, tag, sizeof tag);
        fdw_printf(w, "    %llu x %s  %s: ", (unsigned long long)r->count, name, *loc ? loc : tag);
        fdw_text(w, *str(r->reason) ? r->reason
                                    : "(no reason given)"); /* Dynamo's words, from a file */
        if (strstr(str(r->reason), "size mismatch"))
            fdw_puts(w, "\n      hint: a size that changes from call to call: mark it dynamic "
                        "(torch._dynamo.mark_dynamic(t, dim)) or compile with dynamic=True");
        fdw_putc(w, '\n');
    }
    if (p->nrecompiles > 5)
        fdw_printf(w, "    ... %zu more functions\n", p->nrecompiles - 5);
}

/* autograd's engine threads (torch/csrc/autograd/engine.cpp names them pt_autograd_<device>) */
static bool is_autograd_thread(const struct rep_thread *t)
{
    return strncmp(str(t->name), "pt_autograd_", 12) == 0;
}

/* "python (tid 4232)", "tid 17", "threads that exited" */
static void put_thread_name(struct fd_writer *w, const struct rep_thread *t)
{
    const char *name = *str(t->name) ? t->name : "";
    fdw_text(w, *name || t->tid ? name : "threads that exited");
    if (t->tid)
        fdw_printf(w, "%stid %u%s", *name ? " (" : "", t->tid, *name ? ")" : "");
}

/* How many threads synced in the steps the rates count. */
static size_t syncing_threads(const struct rep_process *p, const struct basis *bs)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nthreads && p->threads; i++)
        n += basis_count(bs, p->threads[i].syncs, &p->threads[i].split) > 0;
    return n;
}

/* "the training thread (python, tid 4232) waited 540 us/step, 22.5% of the step; pt_autograd_0
 * (tid 5514) 132 us/step (1.00 syncs) during backward()": the wait of the thread that ends the
 * steps, which the step's wall time is made of, then the other threads' (the header's figures
 * are every thread's, as the table's). */
static void render_trainer(struct fd_writer *w, const struct rep_process *p, const struct basis *bs)
{
    if (!bs->trainer)
        return;
    const struct rep_thread *tr = bs->trainer;
    bool others = false; /* alone, the header's figures are the training thread's own */
    for (size_t i = 0; i < p->nthreads && !others; i++)
        others =
            &p->threads[i] != tr && basis_count(bs, p->threads[i].syncs, &p->threads[i].split) > 0;
    if (!others)
        return;
    double steps = bs->steps > 0 ? bs->steps : 1.0;
    double ns = (double)basis_ns(bs, tr->blocked_ns, &tr->split);
    char a[32], c[32], sh[32];
    fmt_ns(a, sizeof a, ns / steps);
    fmt_share(sh, sizeof sh, ns, bs->wall_ns);
    fmt_rate(c, sizeof c, (double)basis_count(bs, tr->syncs, &tr->split) / steps);
    fdw_puts(w, "  the training thread, ");
    put_thread_name(w, tr);
    fdw_printf(w, ", waited %s/step, ", a);
    const char *sgr = share_colour(ns, bs->wall_ns);
    paint(w, sgr);
    fdw_printf(w, "%s", sh);
    paint_end(w, sgr);
    fdw_printf(w, " of the step (%s syncs/step)", c);
    size_t shown = 0;
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct rep_thread *t = &p->threads[i];
        uint64_t tns = basis_ns(bs, t->blocked_ns, &t->split),
                 n = basis_count(bs, t->syncs, &t->split);
        if (t == tr || !n)
            continue;
        if (shown++ == 4) {
            fdw_puts(w, "; ...");
            break;
        }
        fmt_ns(a, sizeof a, (double)tns / steps);
        fmt_rate(c, sizeof c, (double)n / steps);
        fdw_puts(w, "; ");
        put_thread_name(w, t);
        fdw_printf(w, " %s/step (%s syncs)%s", a, c,
                   is_autograd_thread(t) ? " during backward()" : "");
    }
    fdw_putc(w, '\n');
}

/* The step marks the program made: every step but the last ended at one, the last is the one
 * still open at exit; when the last step known ended at a mark (a trace cut before the open
 * step was written, a file whose steps end at a mark), none is open. */
static uint64_t step_marks(const struct rep_process *p)
{
    if (!p->steps_seen)
        return 0;
    size_t n = rep_steps_listed(p);
    struct rep_step last;
    if (n && rep_step_at(p, n - 1, &last) && last.step + 1 == p->steps_seen && !last.partial)
        return p->steps_seen;
    return p->steps_seen - 1;
}

/* Whether the program marked steps at all (else the whole run is one step). */
static bool steps_marked(const struct rep_process *p)
{
    return p->startup_closed || p->steps_seen > 1;
}

/* Several optimizers step in a training step (a GAN's two, Muon beside AdamW, B every 4th
 * iteration beside A): a step is an iteration, found from the first one's cycle
 * (agent/step/pyhook.c). */
static bool several_optimizers(const struct rep_process *p)
{
    return (p->optimizers > 1 || p->optimizers_max > 1) && p->step_source &&
           !strcmp(p->step_source, "optimizer.step()");
}

/* How the user counts the steps: "30 optimizer steps", "12 syncspy.step() marks", "16 training
 * steps" (of several optimizers). */
static const char *marks_unit(const struct rep_process *p, uint64_t marks)
{
    if (several_optimizers(p))
        return marks == 1 ? "training step" : "training steps";
    if (p->step_source && !strcmp(p->step_source, "optimizer.step()"))
        return marks == 1 ? "optimizer step" : "optimizer steps";
    if (p->step_source && !strcmp(p->step_source, "syncspy.step()"))
        return marks == 1 ? "syncspy.step() mark" : "syncspy.step() marks";
    return marks == 1 ? "step mark" : "step marks";
}

static bool every_step(const struct rep_process *p)
{
    return !p->schedule || !*p->schedule || !strcmp(p->schedule, "every step");
}

/* Whether some recorded step was asked for (`syncspy start`, syncspy.start()), not scheduled. */
static bool recorded_on_request(const struct rep_process *p)
{
    for (size_t i = 0; i < p->nranges && p->ranges; i++)
        if (p->ranges[i].cause != REP_CAUSE_SCHEDULE)
            return true;
    return false;
}

#define RANGES_SHOWN 4

/* "; recorded: steps 201-300 by syncspy start, 401-460 by syncspy.start()" */
static void render_ranges(struct fd_writer *w, const struct rep_process *p)
{
    fdw_puts(w, "; recorded: ");
    if (!p->nranges)
        fdw_puts(w, "none");
    for (size_t i = 0; i < p->nranges && i < RANGES_SHOWN; i++) {
        const struct rep_range *r = &p->ranges[i];
        fdw_puts(w, i ? ", " : r->first == r->last ? "step " : "steps ");
        if (r->first == r->last)
            fdw_printf(w, "%llu", (unsigned long long)r->first);
        else
            fdw_printf(w, "%llu-%llu", (unsigned long long)r->first, (unsigned long long)r->last);
        fdw_printf(w, " by %s", rep_cause_name(r->cause));
    }
    uint64_t more = (p->nranges > RANGES_SHOWN ? p->nranges - RANGES_SHOWN : 0) + p->ranges_omitted;
    if (more)
        fdw_printf(w, " and %llu more range%s (summary.json)", (unsigned long long)more,
                   more == 1 ? "" : "s");
}

void report_process_label(const struct rep_process *p, char *buf, size_t n)
{
    if (p->rank >= 0 && p->host && *p->host)
        snprintf(buf, n, "rank %d pid %d (%s)", p->rank, p->pid, p->host);
    else if (p->rank >= 0)
        snprintf(buf, n, "rank %d pid %d", p->rank, p->pid);
    else
        snprintf(buf, n, "pid %d", p->pid);
}

/* The first two lines: who, how many steps the user made and which of them the rates count. */
static void render_title(struct fd_writer *w, const struct rep_process *p, const struct basis *bs)
{
    paint(w, SGR_BOLD);
    char who[160];
    report_process_label(p, who, sizeof who);
    fdw_puts(w, "syncspy: ");
    fdw_puts(w, who);
    fdw_puts(w, ": ");
    bool marked = steps_marked(p);
    uint64_t marks = step_marks(p);
    if (!marked)
        fdw_puts(w, "no step found: whole-run totals");
    else
        fdw_printf(w, "%llu %s", (unsigned long long)marks, marks_unit(p, marks));
    if (marked && several_optimizers(p) && p->optimizers > 1)
        fdw_printf(w, " (%u optimizers step in each: a step ends at the last one's step())",
                   p->optimizers);
    else if (marked && several_optimizers(p))
        fdw_printf(w,
                   " (up to %u optimizers step in one: a step ends at each step() of the first"
                   " one)",
                   p->optimizers_max);
    bool asked = recorded_on_request(p), off = p->schedule && !strcmp(p->schedule, "off");
    if (!every_step(p) || asked) {
        fdw_printf(w, " (schedule: %s", p->schedule && *p->schedule ? p->schedule : "every step");
        if (asked || (off && p->ranges))
            render_ranges(w, p);
        fdw_putc(w, ')');
    }
    paint_end(w, SGR_BOLD);
    fdw_putc(w, '\n');
    if (!marked || !p->active_steps)
        return;
    /* the steps between the marks, as the rates count them */
    fdw_puts(w, "  ");
    if (bs->startup_left_out)
        fdw_puts(w, "start-up runs to the first, ");
    fdw_printf(w, "%.0f step%s counted", bs->steps, bs->steps == 1 ? "" : "s");
    if (recorded_on_request(p))
        fdw_printf(w, " (%llu of %llu recorded)", (unsigned long long)p->active_steps,
                   (unsigned long long)p->steps_seen);
    else if (!every_step(p))
        fdw_printf(w, " (the schedule records %llu of %llu)", (unsigned long long)p->active_steps,
                   (unsigned long long)p->steps_seen);
    if (bs->partial_left_out)
        fdw_puts(w, ", the time after the last is shown apart");
    fdw_putc(w, '\n');
}

bool report_lost_note(const struct rep_process *p, char *buf, size_t n)
{
    if (!p->trace_lost_errno)
        return false;
    if (p->trace_unfinished) /* the figures are the trace's, up to its failed write */
        snprintf(buf, n,
                 "the figures are a lower bound: trace.bin lost data (a write failed: %s), "
                 "so it holds the run only up to then; the process was not killed. summary.json "
                 "has the exact counts when it could be written",
                 strerror(p->trace_lost_errno));
    else
        snprintf(buf, n,
                 "trace.bin lost data (a write failed: %s): its events stop there; these "
                 "counts are exact",
                 strerror(p->trace_lost_errno));
    return true;
}

bool report_steps_note(const struct rep_process *p, char *buf, size_t n)
{
    typedef unsigned long long ull;
    if (p->steps_basis == REP_STEPS_FROM_SUMMARY)
        snprintf(buf, n,
                 "trace.bin misses %llu step records (the agent's step queue was full): "
                 "the step figures are summary.json's",
                 (ull)p->step_records_missing);
    else if (p->steps_basis == REP_STEPS_ESTIMATED)
        snprintf(buf, n,
                 "trace.bin misses %llu step records and there is no summary.json: active "
                 "steps and per-step rates are estimates (%llu of them counted as active steps, "
                 "their syncs and time unknown)",
                 (ull)p->step_records_missing, (ull)p->steps_lost);
    else if (p->steps_lost)
        snprintf(buf, n,
                 "%llu active steps lost their step records (the agent's step queue was "
                 "full): in the totals, not in the step list",
                 (ull)p->steps_lost);
    else
        return false;
    return true;
}

/* Every thread's syncs and blocked time in the steps the rates count, as the table's rows and
 * `syncspy check` count them (torch.compile's own work is shown apart). */
struct header_totals {
    double syncs, blocked_ns;
};

static struct header_totals header_totals(const struct rep_process *p, const struct basis *bs)
{
    struct header_totals t = {0, 0};
    for (size_t i = 0; i < p->nsites && p->sites; i++) {
        if (hints_compile_work(&p->sites[i])) /* torch.compile's own: shown apart */
            continue;
        t.blocked_ns += (double)basis_ns(bs, p->sites[i].blocked_ns, &p->sites[i].split);
        t.syncs += (double)basis_count(bs, p->sites[i].count, &p->sites[i].split);
    }
    if (!p->sites || !p->nsites) { /* no site table (a trace cut before it): the steps' own */
        t.blocked_ns = bs->blocked_ns;
        t.syncs = bs->syncs;
    }
    return t;
}

/* The header's figures: per step where steps are marked ("step 41.3 ms median (mean 41.3 ms, sd
 * 0 ns) | 3.80 syncs/step | blocked 23.1 ms/step (55.9%) | 210 launches/step"), the run's totals
 * where no mark came, or why no step was recorded. */
static void render_rates(struct fd_writer *w, const struct rep_process *p, const struct basis *bs)
{
    char wall[32], blocked[32], share[32], syncs_rate[32], launches_rate[32], median[32], sd[32];
    double steps = bs->steps > 0 ? bs->steps : 1.0;
    struct header_totals tot = header_totals(p, bs);
    fmt_ns(wall, sizeof wall, bs->wall_ns / steps);
    fmt_ns(blocked, sizeof blocked, tot.blocked_ns / steps);
    fmt_share(share, sizeof share, tot.blocked_ns, bs->wall_ns);
    fmt_rate(syncs_rate, sizeof syncs_rate, tot.syncs / steps);
    fmt_rate(launches_rate, sizeof launches_rate, bs->launches / steps);
    const char *sgr = share_colour(tot.blocked_ns, bs->wall_ns);
    double med, mean, dev;
    if (p->active_steps && steps_marked(p)) {
        if (step_stats(bs, &med, &mean, &dev)) {
            /* the mean stays the totals' (exact when steps are omitted) */
            fmt_ns(median, sizeof median, med);
            fmt_ns(sd, sizeof sd, dev);
            fdw_printf(w, "  step %s median (mean %s, sd %s) | %s syncs/step | blocked %s/step (",
                       median, wall, sd, syncs_rate, blocked);
        } else {
            fdw_printf(w, "  step %s mean | %s syncs/step | blocked %s/step (", wall, syncs_rate,
                       blocked);
        }
        /* summed over threads: a share of one step's time could pass 100 % */
        if (syncing_threads(p, bs) > 1) {
            fdw_puts(w, "all threads");
        } else {
            paint(w, sgr);
            fdw_puts(w, share);
            paint_end(w, sgr);
        }
        fdw_printf(w, ") | %s launches/step\n", launches_rate);
    } else if (p->active_steps) {
        fdw_printf(w, "  wall %s | %.0f sync%s | blocked %s (", wall, tot.syncs,
                   tot.syncs == 1 ? "" : "s", blocked);
        paint(w, sgr);
        fdw_puts(w, share);
        paint_end(w, sgr);
        fdw_printf(w, ") | %.0f launches\n", bs->launches);
    } else {
        fdw_puts(w, p->schedule && !strcmp(p->schedule, "off")
                        ? "  no step was recorded (SYNCSPY_SCHEDULE=off, and no `syncspy start` or "
                          "syncspy.start() came)"
                        : "  no step was recorded (the schedule's active steps never came)");
        if (tot.syncs > 0)
            fdw_printf(w, "; totals: %.0f sync%s, blocked %s", tot.syncs, tot.syncs == 1 ? "" : "s",
                       blocked);
        fdw_putc(w, '\n');
    }
}

/* ---- the header's notes: what its numbers lack ---------------------------------------------- */

/* Each note writes its text into buf and says whether it applies (report_steps_note and
 * report_lost_note, shared with top, are two of them). */
typedef bool header_note_fn(const struct rep_process *p, char *buf, size_t n);

static bool note_no_step_mark(const struct rep_process *p, char *buf, size_t n)
{
    if (p->no_step_hook)
        snprintf(buf, n,
                 "no step mark: torch.optim's optimizer step hook could not be registered "
                 "(torch.optim was never imported): mark steps with syncspy.step()");
    else if (!steps_marked(p) && p->active_steps)
        snprintf(buf, n,
                 "no step mark came (no optimizer.step(), no syncspy.step()): the whole run "
                 "is one step; mark steps with syncspy.step() for per-step rates");
    else
        return false;
    return true;
}

static bool note_unattributed(const struct rep_process *p, char *buf, size_t n)
{
    if (!p->unattributed_syncs)
        return false;
    snprintf(buf, n,
             "%llu syncs had no room in the site table: counted in the totals, not in the "
             "table below",
             (unsigned long long)p->unattributed_syncs);
    return true;
}

static bool note_steps_omitted(const struct rep_process *p, char *buf, size_t n)
{
    if (!p->steps_omitted)
        return false;
    snprintf(buf, n, "%llu active steps are in the totals but not listed one by one (%s)",
             (unsigned long long)p->steps_omitted,
             p->steps_folded ? "SYNCSPY_TRACE_MB folded their records, or a memory cap"
                             : "a memory cap, or SYNCSPY_TRACE_MB's room for summary.json");
    return true;
}

static bool note_detail_sampled(const struct rep_process *p, char *buf, size_t n)
{
    if (!p->trace_bound_bytes)
        return false;
    snprintf(buf, n,
             "per-event detail kept for %llu of %llu steps: SYNCSPY_TRACE_MB=%llu (every "
             "event before step %llu, then a sample; counts stay exact)",
             (unsigned long long)p->detail_steps, (unsigned long long)p->steps_seen,
             (unsigned long long)(p->trace_bound_bytes >> 20), (unsigned long long)p->sampled_from);
    return true;
}

static bool note_steps_summed(const struct rep_process *p, char *buf, size_t n)
{
    if (!p->steps_summed)
        return false;
    snprintf(buf, n,
             "per-step counts of %llu folded steps are known only as their sums "
             "(SYNCSPY_TRACE_MB's room for steps was full); the totals stay exact",
             (unsigned long long)p->steps_summed);
    return true;
}

/* A failed write (report_lost_note), else a trace that ends early. */
static bool note_trace_cut(const struct rep_process *p, char *buf, size_t n)
{
    if (report_lost_note(p, buf, n))
        return true;
    if (!p->trace_unfinished)
        return false;
    char cut[200] = "";
    if (p->steps_after_totals)
        snprintf(
            cut, sizeof cut,
            "; the records of %llu later step%s are left out (SYNCSPY_TRACE_MB "
            "rewrites the totals at growing intervals and the last rewrite does not count them)",
            (unsigned long long)p->steps_after_totals, p->steps_after_totals == 1 ? "" : "s");
    snprintf(buf, n, "trace ends early (the process was killed?): up to the last %s%s%s",
             p->steps_after_totals ? "rewrite of the totals" : "flush",
             p->trace_truncated ? "; its last record was cut" : "", cut);
    return true;
}

static bool note_events_dropped(const struct rep_process *p, char *buf, size_t n)
{
    if (!p->syncs_dropped && !p->launches_dropped)
        return false;
    snprintf(buf, n,
             "%llu sync and %llu launch events found the trace buffers full: counts stay "
             "exact, the timeline misses them (SYNCSPY_BUFFER_MB gives more room)",
             (unsigned long long)p->syncs_dropped, (unsigned long long)p->launches_dropped);
    return true;
}

/* The notes in the order the header shows them. */
static header_note_fn *const header_notes[] = {
    note_no_step_mark, note_unattributed, note_steps_omitted, note_detail_sampled,
    note_steps_summed, report_steps_note, note_trace_cut,     note_events_dropped,
};

static void render_notes(struct fd_writer *w, const struct rep_process *p)
{
    char note[512];
    for (size_t i = 0; i < sizeof header_notes / sizeof header_notes[0]; i++)
        if (header_notes[i](p, note, sizeof note))
            header_note(w, note);
}

static void render_header(struct fd_writer *w, const struct rep_process *p, int top)
{
    struct basis bs = rate_basis(p);
    render_title(w, p, &bs);
    render_rates(w, p, &bs);
    render_trainer(w, p, &bs);
    struct rep_step first;
    if (p->startup_closed)
        render_apart(w, p, &p->startup, APART_STARTUP,
                     bs.startup_left_out || !rep_step_at(p, 0, &first) || first.step != 0, top);
    if (bs.partial_left_out)
        render_apart(w, p, &bs.partial, APART_AFTER, true, top);
    render_apart(w, p, NULL, APART_COMPILE, true, top);
    render_recompiles(w, p, &bs);
    render_notes(w, p); /* what the numbers lack, to the end of the header */
}

void report_api_count_add(struct rep_api_count *a, size_t *n, size_t max, const char *api,
                          uint64_t count, size_t *others)
{
    size_t j = 0;
    while (j < *n && cmp_str(a[j].api, api) != 0)
        j++;
    if (j == *n) {
        if (*n == max) {
            (*others)++;
            return;
        }
        a[(*n)++] = (struct rep_api_count){str(api), 0};
    }
    a[j].count += count;
}

void report_api_counts_sort(struct rep_api_count *a, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && a[j].count > a[j - 1].count; j--) {
            struct rep_api_count t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

/* Appends to buf[*len .. size) (cut at size, always NUL-terminated). */
static void buf_printf(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void buf_printf(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    if (*len >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    *len = k < 0 ? *len : *len + (size_t)k < size ? *len + (size_t)k : size - 1;
}

void report_apis_text(const struct rep_api_count *a, size_t n, size_t others, char *buf,
                      size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < APIS_SHOWN; i++) {
        buf_printf(buf, size, &len, "%s%s", i ? ", " : "", *str(a[i].api) ? a[i].api : "?");
        if (n > 1) /* several: each with its syncs */
            buf_printf(buf, size, &len, " x%llu", (unsigned long long)a[i].count);
    }
    if (n > APIS_SHOWN || others)
        buf_printf(buf, size, &len, ", +%zu more", n - (n > APIS_SHOWN ? APIS_SHOWN : n) + others);
}

/* "cudaStreamSynchronize x30, cudaMemcpy x10": the group's APIs by syncs. */
static void render_apis(struct fd_writer *w, const struct entry *e, size_t n)
{
    struct rep_api_count apis[APIS_SHOWN * 4];
    size_t na = 0, others = 0;
    for (size_t i = 0; i < n; i++)
        report_api_count_add(apis, &na, sizeof apis / sizeof apis[0], e[i].site->api, e[i].count,
                             &others);
    report_api_counts_sort(apis, na);
    char text[APIS_SHOWN * 96];
    report_apis_text(apis, na, others, text, sizeof text);
    fdw_puts(w, text);
}

static void frame_texts(const struct rep_frame *f, char *name, size_t nn, char *loc, size_t nl,
                        char *tag, size_t nt)
{
    bool named = *str(f->function) != '\0';
    if (named) { /* escaped (text_escape): a name from a file never moves the cursor */
        char raw[NAME_MAX_CHARS + 8];
        report_display_name(f->function, raw, sizeof raw);
        text_escape(name, nn, raw);
    } else {
        snprintf(name, nn, "??");
    }
    display_loc(f, loc, nl);
    if (f->python && *str(f->module))
        snprintf(tag, nt,
                 "[compiled]"); /* generated code named by its user line (module: the code) */
    else if (f->python)
        snprintf(tag, nt, "[py]");
    else if (!*str(f->module))
        tag[0] = '\0';
    else {
        char mod[NAME_MAX_CHARS + 8];
        text_escape(mod, sizeof mod, rep_base_name(f->module));
        if (named)
            snprintf(tag, nt, "(%s)", mod);
        else
            snprintf(tag, nt, "(%s+0x%llx)", mod, (unsigned long long)f->offset);
    }
}

/* Frames every stack ends with (process and thread start-up): not worth a line. */
static bool is_startup_frame(const struct rep_frame *f)
{
    static const char *const names[] = {
        "_start",  "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3",
        "__clone", "__clone3"};
    const char *fn = str(f->function);
    if (f->python || !*fn)
        return false;
    if (!strncmp(fn, "__GI_", 5)) /* glibc's internal aliases: __GI___clone3 */
        fn += 5;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(fn, names[i], n) && (fn[n] == '\0' || fn[n] == '@'))
            return true;
    }
    return false;
}

/* Native frames of the interpreter itself (the evaluation loop's helpers, ctypes, libffi):
 * between two Python frames they only say "Python called C". */
static bool is_interpreter_frame(const struct rep_frame *f)
{
    static const char *const prefixes[] = {"libpython", "python", "_ctypes", "libffi"};
    if (f->python)
        return false;
    if (hints_frame_is_dynamo_eval(f))
        return true;
    const char *b = rep_base_name(str(f->module));
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(b, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

static bool has_python_frames(const struct rep_site *s)
{
    for (uint32_t i = 0; i < s->nframes; i++)
        if (s->frames[i].python)
            return true;
    return false;
}

/* The code of a frame's line, read from its file now ("      65 | keep = torch.nonzero(m)"),
 * when the file is there; the line number keeps it apart from the table's rows. */
static void render_source(struct fd_writer *w, const struct rep_frame *f)
{
    char code[SOURCE_SHOWN_CHARS + 1];
    if (!f->line || !source_line(f->file, f->line, code, sizeof code))
        return;
    fdw_printf(w, "      %u | ", f->line);
    fdw_text(w, code);
    fdw_putc(w, '\n');
}

/* Frames [u, last) from the user frame outwards (interpreter frames left out when the stack has
 * Python frames), the first one after `first` ("at ", "backward of "), at most
 * STACK_FRAMES_SHOWN of them, then how many more there are. */
/* The frames [u, last) (interpreter frames left out), the first one prefixed `first` and
 * followed by the operator of the row (op, when not NULL). */
static void render_frame_list_src(struct fd_writer *w, const struct rep_frame *frames, uint32_t u,
                                  uint32_t last, bool py, const char *first, const char *op,
                                  bool source);

static void render_frame_list(struct fd_writer *w, const struct rep_frame *frames, uint32_t u,
                              uint32_t last, bool py, const char *first, const char *op)
{
    render_frame_list_src(w, frames, u, last, py, first, op, true);
}

/* The same, the first frame's source line shown or not. */
static void render_frame_list_src(struct fd_writer *w, const struct rep_frame *frames, uint32_t u,
                                  uint32_t last, bool py, const char *first, const char *op,
                                  bool source)
{
    while (last > u + 1 &&
           (is_startup_frame(&frames[last - 1]) || (py && is_interpreter_frame(&frames[last - 1]))))
        last--;
    uint32_t shown[STACK_FRAMES_SHOWN], nshown = 0, end = u;
    for (; end < last && nshown < STACK_FRAMES_SHOWN; end++)
        if (!py || !is_interpreter_frame(&frames[end]))
            shown[nshown++] = end;
    int wname = 0, wloc = 0;
    char name[NAME_MAX_CHARS + 8], loc[NAME_MAX_CHARS + 24], tag[NAME_MAX_CHARS + 32];
    for (uint32_t k = 0; k < nshown; k++) {
        frame_texts(&frames[shown[k]], name, sizeof name, loc, sizeof loc, tag, sizeof tag);
        int ln = (int)strlen(name), ll = (int)strlen(loc);
        if (ln > wname)
            wname = ln < NAME_COLUMN ? ln : NAME_COLUMN;
        if (ll > wloc)
            wloc = ll < LOC_COLUMN + 3 ? ll : LOC_COLUMN + 3;
    }
    for (uint32_t k = 0; k < nshown; k++) {
        frame_texts(&frames[shown[k]], name, sizeof name, loc, sizeof loc, tag, sizeof tag);
        fdw_puts(w, "   ");
        if (k == 0)
            fdw_puts(w, first);
        else
            fdw_spaces(w, 3);
        const char *name_sgr = k == 0 ? SGR_BOLD : NULL, *loc_sgr = k == 0 ? SGR_CYAN : NULL;
        paint(w, name_sgr);
        fdw_puts(w, name);
        paint_end(w, name_sgr);
        /* at least two spaces between columns, also when a long name overflows its column */
        int pad_name = wname - (int)strlen(name), pad_loc = wloc - (int)strlen(loc);
        if (*loc || *tag)
            fdw_spaces(w, (pad_name > 0 ? pad_name : 0) + 2);
        paint(w, *loc ? loc_sgr : NULL);
        fdw_puts(w, loc);
        paint_end(w, *loc ? loc_sgr : NULL);
        if (*tag) {
            fdw_spaces(w, (*loc || wloc) ? (pad_loc > 0 ? pad_loc : 0) + 2 : 0);
            fdw_puts(w, tag);
        }
        if (k == 0 && op && *op) { /* which operator the row is (DESIGN.md: every site names it) */
            fdw_puts(w, "  op: ");
            paint(w, SGR_BOLD);
            fdw_text(w, op);
            paint_end(w, SGR_BOLD);
        }
        fdw_putc(w, '\n');
        if (k == 0 && source)
            render_source(w, &frames[shown[k]]);
    }
    uint32_t above = 0;
    for (uint32_t i = end; i < last; i++)
        above += !py || !is_interpreter_frame(&frames[i]);
    if (above) {
        paint(w, SGR_DIM);
        fdw_printf(w, "      ... %u frames above", above);
        paint_end(w, SGR_DIM);
        fdw_putc(w, '\n');
    }
}

/* A backward-pass sync: the forward line that created the node, its callers, then where the
 * backward ran (the node, the thread that called backward) and the sync's own first frames. */
static void render_backward(struct fd_writer *w, const struct entry *e, const char *op)
{
    const struct rep_site *s = e->site;
    struct rep_sections sec = rep_site_sections(s->frames, s->nframes);
    if (e->kind == ENTRY_BACKWARD && (e->user > 0 || e->gen)) {
        if (e->gen) {
            /* a compiled graph's backward: the forward line its op came from, then the
             * forward stack that made the node (the compiled function's call) */
            render_frame_list(w, s->frames, e->gen - 1, e->gen, true, "backward of ", op);
            render_frame_list_src(w, s->frames, e->user, sec.forward + sec.nforward, true, "   ",
                                  NULL, false);
        } else {
            render_frame_list(w, s->frames, e->user, sec.forward + sec.nforward, true,
                              "backward of ", op);
        }
        fdw_puts(w, "      node ");
        fdw_text(w, e->node);
        fdw_puts(w, ", in autograd's thread");
        bool found;
        uint32_t cu = hints_caller_user_frame(s, &found);
        if (found) {
            char name[NAME_MAX_CHARS + 8], loc[NAME_MAX_CHARS + 24], tag[NAME_MAX_CHARS + 32];
            frame_texts(&s->frames[cu], name, sizeof name, loc, sizeof loc, tag, sizeof tag);
            fdw_printf(w, "; backward() called at %s  %s", name, loc);
        }
        fdw_putc(w, '\n');
    } else {
        fdw_puts(w, "   backward of ");
        fdw_text(w, e->node);
        fdw_puts(
            w,
            ", in autograd's thread (its forward line was not recorded)\n"); /* why: render_causes */
    }
    /* where it synced: the sync's own frames, from their user frame (a custom Function's Python
     * backward) or, when all are the framework's, from the CUDA call */
    bool py = false;
    for (uint32_t i = 0; i < sec.own; i++)
        py |= s->frames[i].python;
    uint32_t u = hints_user_frame(s);
    if (sec.own && !(e->gen && u == e->gen - 1)) /* not the generated frame named above again */
        render_frame_list(w, s->frames, u, sec.own, py, "in ", NULL);
}

static void render_stack(struct fd_writer *w, const struct entry *e, const char *op)
{
    const struct rep_site *s = e->site;
    if (s->nframes == 0) {
        fdw_puts(w, "      (no stack)\n");
        return;
    }
    if (e->kind != ENTRY_PLAIN) {
        render_backward(w, e, op);
        return;
    }
    render_frame_list(w, s->frames, e->user, s->nframes, has_python_frames(s), "at ", op);
}

static void render_where(struct fd_writer *w, const struct rep_process *procs, size_t nprocs,
                         const struct entry *e, size_t n, bool *mark)
{
    size_t distinct = 0;
    memset(mark, 0, nprocs * sizeof *mark);
    for (size_t i = 0; i < n; i++)
        if (!mark[e[i].proc]) {
            mark[e[i].proc] = true;
            distinct++;
        }
    if (distinct == nprocs) {
        fdw_printf(w, "      in all %zu processes\n", nprocs);
        return;
    }
    fdw_printf(w, "      in %zu of %zu processes:", distinct, nprocs);
    size_t shown = 0;
    for (size_t p = 0; p < nprocs && shown < 8; p++) {
        if (!mark[p])
            continue;
        fdw_puts(w, shown ? ", " : " ");
        if (procs[p].rank >= 0)
            fdw_printf(w, "rank %d", procs[p].rank);
        else
            fdw_printf(w, "pid %d", procs[p].pid);
        shown++;
    }
    if (distinct > shown)
        fdw_printf(w, ", +%zu more", distinct - shown);
    fdw_putc(w, '\n');
}

/* SYNCSPY_GPU=1: how long the GPU then sat idle after these syncs, when it was measured. */
static void render_gpu_idle(struct fd_writer *w, const struct entry *e, size_t n)
{
    uint64_t idle = 0, syncs = 0;
    const char *next = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct rep_site *s = e[i].site;
        if (!s->gpu_idle_syncs)
            continue;
        idle += s->gpu_idle_ns;
        syncs += s->gpu_idle_syncs;
        if (s->gpu_next_work && *s->gpu_next_work)
            next = s->gpu_next_work;
    }
    if (!syncs)
        return;
    char a[32], m[NAME_MAX_CHARS + 8];
    fmt_ns(a, sizeof a, (double)idle / (double)syncs);
    fdw_printf(w, "      gpu then idle: %s per sync (%llu measured)", a, (unsigned long long)syncs);
    if (next) {
        report_display_name(next, m, sizeof m);
        fdw_printf(w, ", until %s", m);
    }
    fdw_putc(w, '\n');
}

/* An unseen backward group: why its syncs have no forward line, as the agent recorded it with
 * each sync (issue 24 item 3), each cause with its rate. */
static void render_causes(struct fd_writer *w, const struct entry *e, size_t n,
                          const struct totals *t)
{
    static const char *const untold =
        "not recorded with the syncs (a file of an older syncspy, or a "
        "backward run on another thread than autograd's)";
    bool in_attribution_step = false; /* a cause only an attribution step records */
    for (size_t i = 0; i < n; i++)
        in_attribution_step |= e[i].cause && strcmp(e[i].cause, BACKWARD_CAUSE_KEY_STEP) &&
                               strcmp(e[i].cause, "no_optimizer_step") &&
                               strcmp(e[i].cause, "backward_off") &&
                               strcmp(e[i].cause, "torch_compile");
    for (size_t i = 0; i < n; i++) {
        bool first = true;
        for (size_t j = 0; j < i && first; j++)
            first = cmp_str(e[j].cause, e[i].cause) != 0;
        if (!first)
            continue;
        uint64_t count = 0;
        for (size_t j = i; j < n; j++)
            if (cmp_str(e[j].cause, e[i].cause) == 0)
                count += e[j].count;
        const char *text = e[i].cause ? backward_cause_text(e[i].cause) : untold;
        char c[32];
        fmt_rate(c, sizeof c, (double)count / t->steps);
        fdw_printf(w, "      why (%s/step): ", c);
        fdw_text(w, text ? text : e[i].cause);
        if (e[i].cause && !strcmp(e[i].cause, BACKWARD_CAUSE_KEY_STEP) && !in_attribution_step)
            fdw_puts(
                w, "; no attribution step saw this node made (it first synced after the last one)");
        fdw_putc(w, '\n');
    }
}

void report_frame_loc(const struct rep_frame *f, char *buf, size_t size)
{
    if (f)
        display_loc(f, buf, size);
    else
        snprintf(buf, size, "(no stack)");
}

void report_estimate_words(char *buf, size_t size, double here_per_step, uint64_t attribution_steps,
                           const struct rep_estimate_other *others, size_t n, size_t more)
{
    size_t len = 0;
    char c[32];
    if (!size)
        return;
    buf[0] = '\0';
    fmt_rate(c, sizeof c, here_per_step);
    buf_printf(buf, size, &len,
               "~%s/step of these estimated: the same node's syncs at the same native "
               "stack in steps without attribution, ",
               c);
    const char *s = attribution_steps == 1 ? "" : "s";
    if (!n) {
        buf_printf(buf, size, &len,
                   "counted for the only forward line seen making it in the %llu "
                   "attribution step%s (an estimate; SYNCSPY_BACKWARD=all names each)",
                   (unsigned long long)attribution_steps, s);
        return;
    }
    buf_printf(buf, size, &len, "split as in the %llu attribution step%s: ~%s/step here",
               (unsigned long long)attribution_steps, s, c);
    for (size_t k = 0; k < n; k++) {
        char loc[NAME_MAX_CHARS + 24];
        report_frame_loc(others[k].where, loc, sizeof loc);
        fmt_rate(c, sizeof c, others[k].per_step);
        buf_printf(buf, size, &len, ", ~%s/step from %s", c, loc);
    }
    if (more)
        buf_printf(buf, size, &len, " and %zu more", more);
}

/* The part of a forward line's figure estimated (split_unseen): how much, and the lines it was
 * split with, each with its share (entries: all of them, to find the other lines' shares). */
#define SPLIT_SHOWN REPORT_ESTIMATE_SHOWN
static void render_estimate(struct fd_writer *w, const struct group *g, const struct entry *all,
                            size_t nall, const struct totals *t, const struct rep_process *procs)
{
    const struct entry *mine = all + g->first;
    struct {
        const struct entry *e;
        uint64_t count;
    } other[SPLIT_SHOWN];
    size_t nother = 0, more = 0;
    for (size_t i = 0; i < nall; i++) {
        const struct entry *y = &all[i];
        if (!y->estimated || (size_t)(y - mine) < g->n || !y->count)
            continue;
        bool shared = false; /* split from a site this line has a share of */
        for (size_t k = 0; k < g->n && !shared; k++)
            shared = mine[k].estimated && mine[k].site == y->site;
        if (!shared)
            continue;
        size_t k = 0;
        while (k < nother && group_key_cmp(other[k].e, y) != 0)
            k++;
        if (k < nother)
            other[k].count += y->count;
        else if (nother < SPLIT_SHOWN)
            other[nother++] = (typeof(other[0])){y, y->count};
        else
            more++;
    }
    struct rep_estimate_other o[SPLIT_SHOWN];
    for (size_t k = 0; k < nother; k++)
        o[k] = (struct rep_estimate_other){other[k].e->key, (double)other[k].count / t->steps};
    char text[REPORT_ESTIMATE_WORDS_MAX];
    report_estimate_words(text, sizeof text, (double)g->estimated_count / t->steps,
                          procs[g->heaviest->proc].attribution_steps, o, nother, more);
    fdw_puts(w, "      ");
    fdw_puts(w, text);
    fdw_putc(w, '\n');
}

/* Every other operator that synced at the row's line, with its own rate, blocked time and hint,
 * heaviest first (issue 35 item 1: `a, b = x.sum().item(), bool((x > 0).all())` is two ops);
 * the row's own op (the heaviest site's) is named beside the line and hinted above. */
#define OPS_SHOWN 8
static void render_other_ops(struct fd_writer *w, const struct entry *e, size_t n,
                             const struct totals *t, const char *shown)
{
    struct hints_op_sum *sum = calloc(OPS_SHOWN, sizeof *sum);
    size_t nsum = 0, more = 0;
    if (!sum)
        return;
    for (size_t i = 0; i < n; i++) {
        struct site_op op;
        hints_op(e[i].site, &op);
        if (strcmp(op.op, shown))
            nsum = hints_op_sum_add(sum, nsum, OPS_SHOWN, &op, e[i].count, e[i].blocked_ns, &more);
    }
    hints_op_sums_sort(sum, nsum);
    for (size_t k = 0; k < nsum; k++) {
        char rate[32], ns[32];
        fmt_rate(rate, sizeof rate, (double)sum[k].count / t->steps);
        fmt_ns(ns, sizeof ns, (double)sum[k].ns / t->steps);
        fdw_puts(w, "      also op: ");
        fdw_text(w, sum[k].op.op);
        fdw_printf(w, "  %s syncs/step, %s/step", rate, ns);
        if (*sum[k].op.hint) {
            fdw_puts(w, "\n        hint: ");
            fdw_text(w, sum[k].op.hint);
        }
        fdw_putc(w, '\n');
    }
    if (more)
        fdw_printf(w, "      ... and %zu more sites of other ops\n", more);
    free(sum);
}

/* The row's figures: "   1       15.0 ms   36.3%        1.00    15.0 ms    20.0 ms  api" */
static void render_group_row(struct fd_writer *w, int rank, const struct group *g,
                             const struct entry *entries, const struct totals *t)
{
    char a[32], b[32], c[32], d[32], e[32];
    fmt_ns(a, sizeof a, (double)g->blocked_ns / t->steps);
    /* the share of the syncing threads' time: 8 workers each blocked all step long read 100 %,
     * not 800 % (threads that sync at one line together) */
    double threads = g->threads > 1 ? (double)g->threads : 1.0;
    double part = (double)g->blocked_ns, whole = t->wall_ns * threads;
    fmt_share(b, sizeof b, part < whole ? part : whole, whole);
    fmt_rate(c, sizeof c, (double)g->count / t->steps);
    fmt_ns(d, sizeof d, g->count ? (double)g->blocked_ns / (double)g->count : 0.0);
    fmt_ns(e, sizeof e, (double)g->max_ns);
    paint(w, SGR_BOLD);
    fdw_printf(w, "%4d  %12s", rank, a);
    paint_end(w, SGR_BOLD);
    fdw_puts(w, "  ");
    const char *share_sgr = share_colour(part < whole ? part : whole, whole);
    paint(w, share_sgr);
    fdw_printf(w, "%6s", b);
    paint_end(w, share_sgr);
    fdw_printf(w, "  %10s  %9s  %9s  ", c, d, e);
    render_apis(w, entries + g->first, g->n);
    if (g->threads > 1)
        fdw_printf(w, "  (%s%u threads)", g->threads >= 16 ? ">= " : "", g->threads);
    fdw_putc(w, '\n');
}

/* Where the line shown is not the whole story: the framework's own line that made the wait
 * (under the user's call of it), or torch.compile's generated code whose user line is unknown
 * (never generated code as the user's line: say which line is shown instead). */
static void render_group_origin(struct fd_writer *w, const struct entry *heaviest)
{
    if (heaviest->kind == ENTRY_PLAIN) {
        const struct rep_frame *fw = hints_framework_frame(heaviest->site, heaviest->user);
        if (fw) {
            char name[NAME_MAX_CHARS + 8], loc[NAME_MAX_CHARS + 24], tag[NAME_MAX_CHARS + 32];
            frame_texts(fw, name, sizeof name, loc, sizeof loc, tag, sizeof tag);
            fdw_printf(w, "      in the framework: %s  %s\n", name, *loc ? loc : tag);
        }
    }
    const struct rep_frame *gen = hints_unnamed_generated(heaviest->site);
    if (gen) {
        fdw_puts(w, "      in torch.compile's generated code (");
        fdw_text(w, rep_base_name(str(gen->file)));
        fdw_printf(w,
                   ":%u) whose user line is not known: the line above called the compiled code\n",
                   gen->line);
    }
}

/* "      hint: ..." (the label in green), the rule it matched after it, if any */
static void render_advice(struct fd_writer *w, const char *label, const char *text,
                          const char *matched)
{
    fdw_puts(w, "      ");
    paint(w, SGR_GREEN);
    fdw_puts(w, label);
    paint_end(w, SGR_GREEN);
    fdw_putc(w, ' ');
    fdw_puts(w, text);
    if (matched) {
        char m[NAME_MAX_CHARS + 8];
        report_display_name(matched, m, sizeof m);
        fdw_puts(w, "  [matched: ");
        fdw_puts(w, m);
        fdw_puts(w, "]");
    }
    fdw_putc(w, '\n');
}

static void render_group(struct fd_writer *w, int rank, const struct group *g,
                         const struct entry *entries, size_t nentries, const struct totals *t,
                         const struct rep_process *procs, size_t nprocs, bool *mark)
{
    render_group_row(w, rank, g, entries, t);
    struct site_op op;
    hints_op(g->heaviest->site, &op);
    /* the operator beside the line, unless it is no more than the API already shown */
    render_stack(w, g->heaviest, strcmp(op.op, str(g->heaviest->site->api)) ? op.op : NULL);
    render_group_origin(w, g->heaviest);
    if (g->estimated_count) /* which part of the figure is an estimate (issue 24 item 2) */
        render_estimate(w, g, entries, nentries, t, procs);
    if (g->heaviest->kind == ENTRY_BACKWARD_UNSEEN)
        render_causes(w, entries + g->first, g->n, t);
    render_gpu_idle(w, entries + g->first, g->n);
    if (nprocs > 1)
        render_where(w, procs, nprocs, entries + g->first, g->n, mark);
    if (*op.hint)
        render_advice(w, "hint:", op.hint, op.matched);
    render_other_ops(w, entries + g->first, g->n, t, op.op);
    if (*op.compiled)
        render_advice(w, "graph break:", op.compiled, NULL);
}

static int render_table(struct fd_writer *w, const struct rep_process *procs, size_t nprocs,
                        const struct basis *bases, const struct report_opts *opts,
                        const struct totals *t)
{
    size_t nsites = 0;
    for (size_t p = 0; p < nprocs; p++)
        nsites += procs[p].sites ? procs[p].nsites : 0;
    if (nsites == 0)
        return 0;
    struct entry *entries = malloc(nsites * sizeof *entries);
    size_t n = entries ? build_entries(procs, nprocs, bases, &entries) : (size_t)-1;
    struct group *groups = n != (size_t)-1 ? malloc((n ? n : 1) * sizeof *groups) : NULL;
    bool *mark = calloc(nprocs, sizeof *mark);
    if (!entries || !groups || !mark) {
        free(entries);
        free(groups);
        free(mark);
        fdw_puts(w, "  (out of memory: no hotspot table)\n");
        errno = ENOMEM;
        return -1;
    }
    size_t ng = build_groups(entries, n, groups);
    int top = opts && opts->top > 0 ? opts->top : REPORT_TOP_DEFAULT;
    if (ng == 0) { /* every sync was start-up's (or the open step's): the header says it */
        fdw_puts(w, "  no host-device syncs in the training steps\n");
        free(entries);
        free(groups);
        free(mark);
        return 0;
    }
    fdw_putc(w, '\n');
    if (nprocs > 1)
        fdw_printf(w,
                   "  hotspots of all %zu processes (per step: summed over processes / their "
                   "%.0f training steps)\n",
                   nprocs, t->steps);
    paint(w, SGR_DIM);
    fdw_printf(w, "%4s  %12s  %6s  %10s  %9s  %9s  %s", "#", "blocked/step", "share", "syncs/step",
               "mean", "max", "api / where");
    paint_end(w, SGR_DIM);
    fdw_putc(w, '\n');
    for (size_t i = 0; i < ng && i < (size_t)top; i++)
        render_group(w, (int)i + 1, &groups[i], entries, n, t, procs, nprocs, mark);
    if (ng > (size_t)top) {
        uint64_t rest = 0;
        for (size_t i = (size_t)top; i < ng; i++)
            rest += groups[i].blocked_ns;
        char a[32];
        fmt_ns(a, sizeof a, (double)rest / t->steps);
        fdw_printf(w,
                   "  (%zu more site%s, %s/step together; SYNCSPY_TOP or --top shows more "
                   "than %d)\n",
                   ng - (size_t)top, ng - (size_t)top == 1 ? "" : "s", a, top);
    }
    free(entries);
    free(groups);
    free(mark);
    return 0;
}

/* ---- lines, for the CLI's check and diff ---------------------------------------------------- */

static int line_cmp(const void *pa, const void *pb)
{
    const struct rep_line *a = pa, *b = pb;
    int c = cmp_u64(b->blocked_ns, a->blocked_ns);
    if (c || (c = cmp_u64(b->count, a->count)) || (c = cmp_u64(b->startup_ns, a->startup_ns)))
        return c;
    if ((c = key_cmp(a->where, b->where)))
        return c;
    return cmp_str(a->api, b->api);
}

/* A line's figures from one of its entries (s: its site; with_startup: start-up is apart). */
static void line_add(struct rep_line *l, const struct entry *x, bool with_startup)
{
    const struct rep_site *s = x->site;
    l->count += x->count;
    l->blocked_ns += x->blocked_ns;
    report_api_count_add(l->apis, &l->napis, REP_LINE_APIS_MAX, s->api, x->count, &l->other_apis);
    if (with_startup && (!x->estimated || x->first_share)) {
        l->startup_count += s->split.startup_count;
        l->startup_ns += s->split.startup_ns;
    }
    if (s->max_ns > l->max_ns)
        l->max_ns = s->max_ns;
    if (x->estimated) {
        l->estimated_count += x->count;
        l->estimated_ns += x->blocked_ns;
        return;
    }
    /* one of its own sites, never a share (of_site names its line) */
    if (!l->heaviest || x->blocked_ns > l->heaviest_ns ||
        (x->blocked_ns == l->heaviest_ns && s->blocked_ns > l->heaviest->blocked_ns)) {
        l->heaviest = s;
        l->heaviest_ns = x->blocked_ns;
    }
    if (x->kind != ENTRY_BACKWARD_UNSEEN)
        return;
    uint32_t k = 0;
    while (k < l->ncauses && cmp_str(l->causes[k].cause, x->cause) != 0)
        k++;
    if (k == l->ncauses && k < REP_LINE_CAUSES_MAX)
        l->causes[l->ncauses++] = (struct rep_line_cause){x->cause, 0};
    if (k < l->ncauses)
        l->causes[k].count += x->count;
}

/* How many lines the estimated shares of this line (e[first, end)) were split between: this one
 * and the others with a share of the same sites. */
static uint32_t split_lines_of(const struct entry *e, size_t n, size_t first, size_t end)
{
    const struct entry *other[SPLIT_MAX];
    uint32_t nother = 0;
    for (size_t i = 0; i < n && nother < SPLIT_MAX; i++) {
        if (!e[i].estimated || (i >= first && i < end))
            continue;
        bool shared = false;
        for (size_t k = first; k < end && !shared; k++)
            shared = e[k].estimated && e[k].site == e[i].site;
        bool known = false;
        for (uint32_t k = 0; k < nother && !known; k++)
            known = group_key_cmp(other[k], &e[i]) == 0;
        if (shared && !known)
            other[nother++] = &e[i];
    }
    return 1 + nother;
}

/* The entries of process p's sites, the unseen backward syncs of steps without attribution split
 * between their forward lines (split_unseen), unsorted: with b, each site's figures in the
 * training steps b counts (a site of start-up alone kept when start-up is apart); without, its
 * whole count (summary.json's sites partition it). NULL when out of memory (errno ENOMEM). */
static struct entry *entries_of(const struct rep_process *p, const struct basis *b, size_t *pn,
                                uint64_t *compile_count, uint64_t *compile_ns)
{
    size_t n = 0, cap = p->sites ? p->nsites : 0;
    struct entry *e = malloc((cap ? cap : 1) * sizeof *e);
    for (size_t i = 0; e && i < cap; i++) {
        const struct rep_site *s = &p->sites[i];
        if (!s->frames && s->nframes) /* a malformed site: treat as stackless */
            continue;
        if (hints_compile_work(s)) { /* torch.compile's own: in no line, as in the report */
            *compile_count += b ? basis_count(b, s->count, &s->split) : s->count;
            *compile_ns += b ? basis_ns(b, s->blocked_ns, &s->split) : s->blocked_ns;
            continue;
        }
        struct entry x = make_entry(s, 0);
        x.count = b ? basis_count(b, s->count, &s->split) : s->count;
        x.blocked_ns = b ? basis_ns(b, s->blocked_ns, &s->split) : s->blocked_ns;
        if (x.count || (b && b->startup_left_out && s->split.startup_count))
            e[n++] = x;
    }
    if (!e || split_unseen(&e, &n) != 0) {
        free(e);
        errno = ENOMEM;
        return NULL;
    }
    *pn = n;
    return e;
}

/* The estimated entries of e[0..n) as lines' shares (line: into the unsorted lines, of_line). */
static size_t shares_of(const struct entry *e, size_t n, const uint32_t *of_line,
                        const struct rep_site *sites, struct rep_line_share *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].estimated && (e[i].count || e[i].blocked_ns))
            out[k++] = (struct rep_line_share){of_line[i], (uint32_t)(e[i].site - sites),
                                               e[i].count, e[i].blocked_ns};
    return k;
}

/* report_lines' arrays: the entries, the lines, each site's line, and the scratch of the
 * grouping and of the renumbering after the lines' sort. */
struct lines_work {
    struct entry *e;
    size_t n;
    struct rep_line *lines;
    struct rep_site_line *of_site;
    uint64_t *largest; /* a site's largest share */
    uint32_t *moved;   /* a line's place after the sort */
    uint32_t *of_line; /* each entry's line */
    struct rep_line_share *shares;
};

static bool lines_work_alloc(struct lines_work *w, size_t cap)
{
    size_t n = w->n ? w->n : 1;
    w->lines = w->e ? malloc(n * sizeof *w->lines) : NULL;
    w->of_site = malloc((cap ? cap : 1) * sizeof *w->of_site);
    w->largest = malloc((cap ? cap : 1) * sizeof *w->largest);
    w->moved = malloc(n * sizeof *w->moved);
    w->of_line = malloc(n * sizeof *w->of_line);
    w->shares = malloc(n * sizeof *w->shares);
    return w->e && w->lines && w->of_site && w->largest && w->moved && w->of_line && w->shares;
}

static void lines_work_free(struct lines_work *w)
{
    free(w->e);
    free(w->lines);
    free(w->of_site);
    free(w->largest);
    free(w->moved);
    free(w->of_line);
    free(w->shares);
}

/* The rows of the report's table (one key: group_key_cmp), each heaviest entry first; each
 * entry's line, each site's line (a split site: its largest share's) with the site's whole
 * figure. Returns how many lines. */
static size_t group_lines(struct lines_work *w, const struct rep_process *p, bool startup_left_out)
{
    struct entry *e = w->e;
    struct rep_line *lines = w->lines;
    size_t n = w->n, nl = 0, first = 0;
    qsort(e, n, sizeof *e, entry_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct rep_site *s = e[i].site;
        if (i == 0 || group_key_cmp(&e[i - 1], &e[i]) != 0) {
            if (nl && lines[nl - 1].estimated_count)
                lines[nl - 1].split_lines = split_lines_of(e, n, first, i);
            first = i;
            struct rep_line *l = &lines[nl++];
            memset(l, 0, sizeof *l);
            l->kind = e[i].kind == ENTRY_BACKWARD          ? REP_LINE_BACKWARD
                      : e[i].kind == ENTRY_BACKWARD_UNSEEN ? REP_LINE_NODE
                                                           : REP_LINE_PLAIN;
            l->where = e[i].key;
            if (l->kind == REP_LINE_NODE && l->where && hints_frame_is_runtime(l->where))
                l->where = NULL;
            snprintf(l->node, sizeof l->node, "%s", e[i].node);
        }
        line_add(&lines[nl - 1], &e[i], startup_left_out);
        w->of_line[i] = (uint32_t)(nl - 1);
        size_t si = (size_t)(s - p->sites);
        struct rep_site_line *sl = &w->of_site[si];
        if (sl->line == REP_NO_LINE ||
            e[i].count > w->largest[si]) { /* split: its largest share's line */
            sl->line = (uint32_t)(nl - 1);
            w->largest[si] = e[i].count;
        }
        sl->count += e[i].count; /* every share: the site's whole figure */
        sl->blocked_ns += e[i].blocked_ns;
    }
    if (nl && lines[nl - 1].estimated_count)
        lines[nl - 1].split_lines = split_lines_of(e, n, first, n);
    for (size_t k = 0; k < nl; k++) {
        report_api_counts_sort(lines[k].apis, lines[k].napis);
        lines[k].api = lines[k].napis ? lines[k].apis[0].api : "";
    }
    return nl;
}

/* The lines in the table's order, and the sites' and the shares' lines renumbered after it:
 * each line's heaviest site is one of its own, it says where the sort moved the line. */
static void sort_lines(struct lines_work *w, size_t nl, size_t cap, size_t nshares,
                       const struct rep_site *sites)
{
    qsort(w->lines, nl, sizeof *w->lines, line_cmp);
    for (size_t k = 0; k < nl; k++)
        w->moved[w->of_site[w->lines[k].heaviest - sites].line] = (uint32_t)k;
    for (size_t i = 0; i < cap; i++)
        if (w->of_site[i].line != REP_NO_LINE)
            w->of_site[i].line = w->moved[w->of_site[i].line];
    for (size_t i = 0; i < nshares; i++)
        w->shares[i].line = w->moved[w->shares[i].line];
}

int report_lines(const struct rep_process *p, struct rep_lines *out)
{
    memset(out, 0, sizeof *out);
    struct basis b = rate_basis(p);
    out->steps = b.steps >= 1 ? b.steps : 1.0;
    out->wall_ns = b.wall_ns > 0 ? b.wall_ns : 0.0;
    out->startup_left_out = b.startup_left_out;
    out->partial_left_out = b.partial_left_out;
    out->attribution_steps = p->attribution_steps;
    size_t cap = p->sites ? p->nsites : 0;
    struct lines_work w = {0};
    w.e = entries_of(p, &b, &w.n, &out->compile_count, &out->compile_ns);
    if (!lines_work_alloc(&w, cap)) {
        lines_work_free(&w);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        w.of_site[i] = (struct rep_site_line){REP_NO_LINE, 0, 0};
    size_t nl = group_lines(&w, p, b.startup_left_out);
    size_t nshares = shares_of(w.e, w.n, w.of_line, p->sites, w.shares);
    sort_lines(&w, nl, cap, nshares, p->sites);
    out->lines = w.lines;
    out->n = nl;
    out->of_site = w.of_site;
    out->shares = w.shares;
    out->nshares = nshares;
    w.lines = NULL; /* the caller's now */
    w.of_site = NULL;
    w.shares = NULL;
    lines_work_free(&w);
    return 0;
}

long report_estimate_shares(const struct rep_process *p, struct rep_estimate_share **out)
{
    *out = NULL;
    size_t n = 0;
    uint64_t compile_count = 0, compile_ns = 0;
    struct entry *e = entries_of(p, NULL, &n, &compile_count, &compile_ns);
    if (!e)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].estimated)
            e[k++] = e[i];
    struct rep_estimate_share *sh = k ? malloc(k * sizeof *sh) : NULL;
    if (k && !sh) {
        free(e);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < k; i++)
        sh[i] = (struct rep_estimate_share){(uint32_t)(e[i].site - p->sites),
                                            (uint32_t)(e[i].target - p->sites), e[i].count,
                                            e[i].blocked_ns};
    free(e);
    *out = sh;
    return (long)k;
}

void report_lines_free(struct rep_lines *l)
{
    free(l->shares);
    free(l->of_site);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

/* Each process's header (all of them up to REPORT_HEADERS_MAX, else a line saying they are left
 * out), its basis into bases[], and the totals the table's rates divide by; *steps, *syncs and
 * *nsites: the processes' recorded steps, syncs and sites. */
static void render_headers(struct fd_writer *w, const struct rep_process *procs, size_t nprocs,
                           const struct report_opts *opts, struct basis *bases, struct totals *t,
                           uint64_t *steps, uint64_t *syncs, uint64_t *nsites)
{
    bool headers = nprocs <= REPORT_HEADERS_MAX;
    if (!headers)
        fdw_printf(w,
                   "syncspy: %zu processes (each one's own header is left out past %d; the "
                   "per-rank figures follow the hotspots)\n",
                   nprocs, REPORT_HEADERS_MAX);
    for (size_t p = 0; p < nprocs; p++) {
        if (headers)
            render_header(w, &procs[p], opts && opts->top > 0 ? opts->top : REPORT_TOP_DEFAULT);
        struct basis bs = bases[p] = rate_basis(&procs[p]);
        *steps += procs[p].active_steps;
        *syncs += procs[p].syncs;
        *nsites += procs[p].sites ? procs[p].nsites : 0;
        t->steps += bs.steps;
        t->wall_ns += bs.wall_ns;
    }
    if (t->steps < 1)
        t->steps = 1.0;
}

int report_render_text(const struct rep_process *procs, size_t nprocs,
                       const struct report_opts *opts, int fd)
{
    struct fd_writer *w = malloc(sizeof *w);
    if (!w) {
        errno = ENOMEM;
        return -1;
    }
    fdw_init(w, fd);
    fdw_set_shown(w); /* names and lines from files: no control character reaches a terminal */
    paint_on = opts && opts->color;
    if (opts && opts->write_timeout_ms > 0)
        fdw_set_deadline(w, clock_mono_ns() + (uint64_t)opts->write_timeout_ms * 1000000u);
    if (opts && opts->own_line)
        fdw_putc(w, '\n');
    struct totals t = {0};
    uint64_t steps = 0, syncs = 0, nsites = 0;
    struct basis *bases = calloc(nprocs ? nprocs : 1, sizeof *bases);
    if (!bases) {
        free(w);
        errno = ENOMEM;
        return -1;
    }
    render_headers(w, procs, nprocs, opts, bases, &t, &steps, &syncs, &nsites);
    int rc = 0;
    if (nsites == 0 && syncs == 0) {
        if (nprocs > 1)
            fdw_printf(w, "  no host-device syncs in %llu recorded steps of %zu processes\n",
                       (unsigned long long)steps, nprocs);
        else
            fdw_printf(w, "  no host-device syncs in %llu recorded step%s\n",
                       (unsigned long long)steps, steps == 1 ? "" : "s");
    } else if (nsites == 0) {
        fdw_puts(w, "  no sync site was recorded with its stack\n");
    } else {
        rc = render_table(w, procs, nprocs, bases, opts, &t);
    }
    if (opts && opts->summary_path) {
        fdw_puts(w, "syncspy: summary in ");
        fdw_puts(w, opts->summary_path);
        fdw_putc(w, '\n');
    }
    int saved = errno;
    if (fdw_flush(w) != 0)
        rc = -1;
    else if (rc != 0)
        errno = saved;
    free(bases);
    free(w);
    paint_on = false;
    return rc;
}
