/* output/report.c: the human sync-hotspot report: per-process headers, then sites grouped by
 * their innermost user frame, heaviest first, each with its stack and a hint when one applies
 * (the rules: output/hints.c).
 * Runs at exit inside the target process (or in the CLI): it may malloc, but it writes only to
 * the fd it is given, through an fd_writer (no stdio FILE*). */
#include "output/report.h"
#include "common/clock.h"
#include "output/fd_writer.h"
#include "output/hints.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_FRAMES_SHOWN 8
#define APIS_SHOWN 4
#define NAME_MAX_CHARS 80  /* longer function names keep their tail (the function itself) */
#define NAME_COLUMN 36     /* frame name column width (longer names push the line) */
#define LOC_COLUMN 28

static const char *str(const char *s)
{
    return s ? s : "";
}

/* ---- numbers people read ------------------------------------------------------------------ */

/* Three significant digits: 4.10, 41.3, 412. */
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
    if (f->line)
        snprintf(buf, n, "%s%s:%u", lead, file, f->line);
    else
        snprintf(buf, n, "%s%s", lead, file);
}

/* ---- grouping ----------------------------------------------------------------------------- */

struct entry {
    const struct rep_site *site;
    const struct rep_frame *key; /* the user frame; NULL when the site has no frames */
    uint32_t user;
    uint32_t proc;
    /* what per-step rates count: the site's syncs less those in its process's step still open
     * at exit, when rate_basis leaves that step out */
    uint64_t rate_count, rate_blocked_ns;
};

struct group {
    size_t first, n; /* entries[first .. first+n) */
    uint64_t count, blocked_ns, max_ns;
    uint64_t rate_count, rate_blocked_ns;
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
        if ((c = cmp_str(a->function, b->function)) || (c = cmp_str(a->module, b->module)) ||
            (c = cmp_str(a->file, b->file)))
            return c;
        return cmp_u64(a->line, b->line);
    }
    if ((c = cmp_str(a->module, b->module)))
        return c;
    return cmp_u64(a->offset, b->offset);
}

static int entry_cmp(const void *pa, const void *pb)
{
    const struct entry *a = pa, *b = pb;
    int c = key_cmp(a->key, b->key);
    if (c)
        return c;
    if ((c = cmp_u64(a->proc, b->proc)))
        return c;
    if ((c = cmp_u64(b->site->blocked_ns, a->site->blocked_ns)))
        return c;
    return cmp_str(a->site->api, b->site->api);
}

static int group_cmp(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    int c = cmp_u64(b->rate_blocked_ns, a->rate_blocked_ns);
    if (c)
        return c;
    c = cmp_u64(b->blocked_ns, a->blocked_ns);
    if (c)
        return c;
    if ((c = cmp_u64(b->count, a->count)))
        return c;
    return key_cmp(a->heaviest->key, b->heaviest->key);
}

/* What per-step rates divide by. The step still open at exit (the teardown after the last
 * mark) is left out when there is any complete step: it would dilute every rate. */
struct basis {
    double steps, wall_ns, blocked_ns, syncs, launches;
    bool partial_left_out;
};

static struct basis rate_basis(const struct rep_process *p)
{
    struct basis b = {(double)p->active_steps, (double)p->wall_ns, (double)p->blocked_ns,
                      (double)p->syncs, (double)p->launches, false};
    if (p->steps && p->nsteps > 0 && p->active_steps > 1 && p->steps[p->nsteps - 1].partial) {
        const struct rep_step *last = &p->steps[p->nsteps - 1];
        b.steps -= 1;
        b.wall_ns -= (double)last->wall_ns;
        b.blocked_ns -= (double)last->blocked_ns;
        b.syncs -= (double)last->syncs;
        b.launches -= (double)last->launches;
        b.partial_left_out = true;
    }
    return b;
}

static size_t build_entries(const struct rep_process *procs, size_t nprocs, struct entry *e)
{
    size_t n = 0;
    for (size_t p = 0; p < nprocs; p++) {
        for (size_t i = 0; i < procs[p].nsites && procs[p].sites; i++) {
            const struct rep_site *s = &procs[p].sites[i];
            if (!s->frames && s->nframes) /* a malformed site: treat as stackless */
                continue;
            uint32_t u = hints_user_frame(s);
            bool open_step_out = rate_basis(&procs[p]).partial_left_out;
            uint64_t pc = open_step_out && s->partial_count <= s->count ? s->partial_count : 0;
            uint64_t pb = open_step_out && s->partial_blocked_ns <= s->blocked_ns ? s->partial_blocked_ns : 0;
            e[n++] = (struct entry){.site = s, .key = s->nframes ? &s->frames[u] : NULL,
                                    .user = u, .proc = (uint32_t)p, .rate_count = s->count - pc,
                                    .rate_blocked_ns = s->blocked_ns - pb};
        }
    }
    qsort(e, n, sizeof *e, entry_cmp);
    return n;
}

static size_t build_groups(const struct entry *e, size_t n, struct group *g)
{
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || key_cmp(e[i - 1].key, e[i].key) != 0)
            g[ng++] = (struct group){.first = i, .heaviest = &e[i]};
        struct group *cur = &g[ng - 1];
        const struct rep_site *s = e[i].site;
        cur->n++;
        cur->count += s->count;
        cur->blocked_ns += s->blocked_ns;
        cur->rate_count += e[i].rate_count;
        cur->rate_blocked_ns += e[i].rate_blocked_ns;
        if (s->max_ns > cur->max_ns)
            cur->max_ns = s->max_ns;
        if (s->blocked_ns > cur->heaviest->site->blocked_ns)
            cur->heaviest = &e[i];
    }
    qsort(g, ng, sizeof *g, group_cmp);
    return ng;
}

/* ---- rendering ---------------------------------------------------------------------------- */

struct totals {
    double steps; /* divisor of per-step rates: active steps (summed over processes), >= 1 */
    double wall_ns;
};

static void render_header(struct fd_writer *w, const struct rep_process *p)
{
    char a[32], b[32], c[32], d[32], e[32];
    fdw_puts(w, "syncspy: ");
    if (p->rank >= 0)
        fdw_printf(w, "rank %d ", p->rank);
    fdw_printf(w, "pid %d: ", p->pid);
    if (p->active_steps)
        fdw_printf(w, "%llu active step%s of %llu", (unsigned long long)p->active_steps,
                   p->active_steps == 1 ? "" : "s", (unsigned long long)p->steps_seen);
    else
        fdw_printf(w, "no active steps of %llu", (unsigned long long)p->steps_seen);
    if (p->schedule && *p->schedule) {
        fdw_puts(w, " (schedule: ");
        fdw_puts(w, p->schedule);
        fdw_putc(w, ')');
    }
    fdw_putc(w, '\n');
    struct basis bs = rate_basis(p);
    double steps = bs.steps > 0 ? bs.steps : 1.0;
    fmt_ns(a, sizeof a, bs.wall_ns / steps);
    fmt_ns(b, sizeof b, bs.blocked_ns / steps);
    fmt_share(c, sizeof c, bs.blocked_ns, bs.wall_ns);
    fmt_rate(d, sizeof d, bs.syncs / steps);
    fmt_rate(e, sizeof e, bs.launches / steps);
    if (p->active_steps) {
        fdw_printf(w, "  step %s mean | blocked %s/step (%s) | %s syncs/step | %s "
                   "launches/step\n", a, b, c, d, e);
        if (bs.partial_left_out)
            fdw_printf(w, "  (rates over the %.0f complete steps; the last step was still open at exit)\n",
                       bs.steps);
    } else
        fdw_printf(w, "  totals, as no step was active: wall %s | blocked %s (%s) | %llu syncs "
                   "| %llu launches\n", a, b, c, (unsigned long long)p->syncs,
                   (unsigned long long)p->launches);
    if (p->unattributed_syncs)
        fdw_printf(w, "  %llu syncs had no room in the site table: counted in the totals, not "
                   "in the table below\n", (unsigned long long)p->unattributed_syncs);
    if (p->steps_omitted)
        fdw_printf(w, "  %llu active steps are in the totals but not listed in summary.json "
                   "(memory cap)\n", (unsigned long long)p->steps_omitted);
    if (p->trace_unfinished)
        fdw_printf(w, "  trace ends early (the process was killed?): up to the last flush%s\n",
                   p->trace_truncated ? "; its last record was cut" : "");
    if (p->syncs_dropped || p->launches_dropped)
        fdw_printf(w, "  %llu sync and %llu launch events found the trace buffers full: counts "
                   "stay exact, the timeline misses them (SYNCSPY_BUFFER_MB gives more room)\n",
                   (unsigned long long)p->syncs_dropped, (unsigned long long)p->launches_dropped);
}

/* "cudaStreamSynchronize x30, cudaMemcpy x10": the group's APIs by syncs. */
static void render_apis(struct fd_writer *w, const struct entry *e, size_t n)
{
    struct {
        const char *api;
        uint64_t count;
    } apis[APIS_SHOWN * 4];
    size_t na = 0, others = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < na && cmp_str(apis[j].api, e[i].site->api) != 0)
            j++;
        if (j == na) {
            if (na == sizeof apis / sizeof apis[0]) {
                others++;
                continue;
            }
            apis[na].api = str(e[i].site->api);
            apis[na++].count = 0;
        }
        apis[j].count += e[i].site->count;
    }
    for (size_t i = 1; i < na; i++) /* insertion sort by count, desc */
        for (size_t j = i; j > 0 && apis[j].count > apis[j - 1].count; j--) {
            __typeof__(apis[0]) t = apis[j];
            apis[j] = apis[j - 1];
            apis[j - 1] = t;
        }
    for (size_t i = 0; i < na && i < APIS_SHOWN; i++) {
        if (i)
            fdw_puts(w, ", ");
        fdw_puts(w, *apis[i].api ? apis[i].api : "?");
        if (na > 1)
            fdw_printf(w, " x%llu", (unsigned long long)apis[i].count);
    }
    if (na > APIS_SHOWN || others)
        fdw_printf(w, ", +%zu more", na - (na > APIS_SHOWN ? APIS_SHOWN : na) + others);
}

static void frame_texts(const struct rep_frame *f, char *name, size_t nn, char *loc, size_t nl,
                        char *tag, size_t nt)
{
    bool named = *str(f->function) != '\0';
    if (named)
        report_display_name(f->function, name, nn);
    else
        snprintf(name, nn, "??");
    display_loc(f, loc, nl);
    if (f->python)
        snprintf(tag, nt, "[py]");
    else if (!*str(f->module))
        tag[0] = '\0';
    else if (named)
        snprintf(tag, nt, "(%s)", rep_base_name(f->module));
    else
        snprintf(tag, nt, "(%s+0x%llx)", rep_base_name(f->module), (unsigned long long)f->offset);
}

/* Frames every stack ends with (process and thread start-up): not worth a line. */
static bool is_startup_frame(const struct rep_frame *f)
{
    static const char *const names[] = {"_start", "__libc_start_main", "__libc_start_call_main",
                                        "start_thread", "clone", "clone3", "__clone", "__clone3"};
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

static void render_stack(struct fd_writer *w, const struct entry *e)
{
    const struct rep_site *s = e->site;
    if (s->nframes == 0) {
        fdw_puts(w, "      (no stack)\n");
        return;
    }
    uint32_t u = e->user;
    if (u > 0) {
        const struct rep_frame *in = &s->frames[0];
        fdw_puts(w, "      via ");
        fdw_puts(w, *str(s->api) ? s->api : "?");
        fdw_puts(w, " in ");
        fdw_puts(w, in->python ? "python" : *str(in->module) ? rep_base_name(in->module) : "??");
        fdw_printf(w, " (%u runtime frame%s)\n", u, u == 1 ? "" : "s");
    }
    uint32_t last = s->nframes;
    bool py = has_python_frames(s);
    while (last > u + 1 && (is_startup_frame(&s->frames[last - 1]) || (py && is_interpreter_frame(&s->frames[last - 1]))))
        last--;
    /* the frames shown: from the user frame outwards, interpreter frames left out */
    uint32_t shown[STACK_FRAMES_SHOWN], nshown = 0, end = u;
    for (; end < last && nshown < STACK_FRAMES_SHOWN; end++)
        if (!py || !is_interpreter_frame(&s->frames[end]))
            shown[nshown++] = end;
    int wname = 0, wloc = 0;
    char name[NAME_MAX_CHARS + 8], loc[NAME_MAX_CHARS + 24], tag[NAME_MAX_CHARS + 32];
    for (uint32_t k = 0; k < nshown; k++) {
        frame_texts(&s->frames[shown[k]], name, sizeof name, loc, sizeof loc, tag, sizeof tag);
        int ln = (int)strlen(name), ll = (int)strlen(loc);
        if (ln > wname)
            wname = ln < NAME_COLUMN ? ln : NAME_COLUMN;
        if (ll > wloc)
            wloc = ll < LOC_COLUMN + 3 ? ll : LOC_COLUMN + 3;
    }
    for (uint32_t k = 0; k < nshown; k++) {
        frame_texts(&s->frames[shown[k]], name, sizeof name, loc, sizeof loc, tag, sizeof tag);
        fdw_puts(w, k == 0 ? "   at " : "      ");
        fdw_puts(w, name);
        /* at least two spaces between columns, also when a long name overflows its column */
        int pad_name = wname - (int)strlen(name), pad_loc = wloc - (int)strlen(loc);
        if (*loc || *tag)
            fdw_spaces(w, (pad_name > 0 ? pad_name : 0) + 2);
        fdw_puts(w, loc);
        if (*tag) {
            fdw_spaces(w, (*loc || wloc) ? (pad_loc > 0 ? pad_loc : 0) + 2 : 0);
            fdw_puts(w, tag);
        }
        fdw_putc(w, '\n');
    }
    uint32_t above = 0;
    for (uint32_t i = end; i < last; i++)
        above += !py || !is_interpreter_frame(&s->frames[i]);
    if (above)
        fdw_printf(w, "      ... %u frames above\n", above);
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

static void render_group(struct fd_writer *w, int rank, const struct group *g,
                         const struct entry *entries, const struct totals *t,
                         const struct rep_process *procs, size_t nprocs, bool *mark)
{
    char a[32], b[32], c[32], d[32], e[32];
    fmt_ns(a, sizeof a, (double)g->rate_blocked_ns / t->steps);
    fmt_share(b, sizeof b, (double)g->rate_blocked_ns, t->wall_ns);
    fmt_rate(c, sizeof c, (double)g->rate_count / t->steps);
    fmt_ns(d, sizeof d, g->count ? (double)g->blocked_ns / (double)g->count : 0.0);
    fmt_ns(e, sizeof e, (double)g->max_ns);
    fdw_printf(w, "%4d  %12s  %6s  %10s  %9s  %9s  ", rank, a, b, c, d, e);
    render_apis(w, entries + g->first, g->n);
    fdw_putc(w, '\n');
    render_stack(w, g->heaviest);
    if (g->rate_count < g->count)
        fdw_printf(w, "      %llu of its %llu syncs in the step still open at exit (not in the rates)\n",
                   (unsigned long long)(g->count - g->rate_count), (unsigned long long)g->count);
    render_gpu_idle(w, entries + g->first, g->n);
    if (nprocs > 1)
        render_where(w, procs, nprocs, entries + g->first, g->n, mark);
    const char *matched;
    const char *hint = hints_find(g->heaviest->site, &matched);
    if (hint) {
        char m[NAME_MAX_CHARS + 8];
        report_display_name(matched, m, sizeof m);
        fdw_puts(w, "      hint: ");
        fdw_puts(w, hint);
        fdw_puts(w, "  [matched: ");
        fdw_puts(w, m);
        fdw_puts(w, "]\n");
    }
}

static int render_table(struct fd_writer *w, const struct rep_process *procs, size_t nprocs,
                        const struct report_opts *opts, const struct totals *t)
{
    size_t nsites = 0;
    for (size_t p = 0; p < nprocs; p++)
        nsites += procs[p].sites ? procs[p].nsites : 0;
    if (nsites == 0)
        return 0;
    struct entry *entries = malloc(nsites * sizeof *entries);
    struct group *groups = malloc(nsites * sizeof *groups);
    bool *mark = calloc(nprocs, sizeof *mark);
    if (!entries || !groups || !mark) {
        free(entries);
        free(groups);
        free(mark);
        fdw_puts(w, "  (out of memory: no hotspot table)\n");
        errno = ENOMEM;
        return -1;
    }
    size_t n = build_entries(procs, nprocs, entries);
    size_t ng = build_groups(entries, n, groups);
    int top = opts && opts->top > 0 ? opts->top : REPORT_TOP_DEFAULT;
    fdw_putc(w, '\n');
    if (nprocs > 1)
        fdw_printf(w, "  hotspots of all %zu processes (per step: summed over processes / their "
                   "%.0f active steps)\n", nprocs, t->steps);
    fdw_printf(w, "%4s  %12s  %6s  %10s  %9s  %9s  %s\n", "#", "blocked/step", "share",
               "syncs/step", "mean", "max", "api / where");
    for (size_t i = 0; i < ng && i < (size_t)top; i++)
        render_group(w, (int)i + 1, &groups[i], entries, t, procs, nprocs, mark);
    if (ng > (size_t)top) {
        uint64_t rest = 0;
        for (size_t i = (size_t)top; i < ng; i++)
            rest += groups[i].rate_blocked_ns;
        char a[32];
        fmt_ns(a, sizeof a, (double)rest / t->steps);
        fdw_printf(w, "  (%zu more site%s, %s/step together; SYNCSPY_TOP or --top shows more "
                   "than %d)\n", ng - (size_t)top, ng - (size_t)top == 1 ? "" : "s", a, top);
    }
    free(entries);
    free(groups);
    free(mark);
    return 0;
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
    if (opts && opts->write_timeout_ms > 0)
        fdw_set_deadline(w, clock_mono_ns() + (uint64_t)opts->write_timeout_ms * 1000000u);
    struct totals t = {0};
    uint64_t steps = 0, syncs = 0, nsites = 0;
    for (size_t p = 0; p < nprocs; p++) {
        render_header(w, &procs[p]);
        struct basis bs = rate_basis(&procs[p]);
        steps += procs[p].active_steps;
        syncs += procs[p].syncs;
        nsites += procs[p].sites ? procs[p].nsites : 0;
        t.steps += bs.steps;
        t.wall_ns += bs.wall_ns;
    }
    if (t.steps < 1)
        t.steps = 1.0;
    int rc = 0;
    if (nsites == 0 && syncs == 0) {
        if (nprocs > 1)
            fdw_printf(w, "  no host-device syncs in %llu active steps of %zu processes\n",
                       (unsigned long long)steps, nprocs);
        else
            fdw_printf(w, "  no host-device syncs in %llu active step%s\n",
                       (unsigned long long)steps, steps == 1 ? "" : "s");
    } else if (nsites == 0) {
        fdw_puts(w, "  no sync site was recorded with its stack\n");
    } else {
        rc = render_table(w, procs, nprocs, opts, &t);
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
    free(w);
    return rc;
}
