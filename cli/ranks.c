/* cli/ranks.c: the per-rank view of a merged report and its text section (see ranks.h).
 * Memory: one small record per process and one per (process, line), freed by cli_ranks_free.
 * CLI only. */
#include "cli/ranks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lines.h"
#include "output/fd_writer.h"

void cli_rank_name(const struct rep_process *p, char *buf, size_t n)
{
    if (p->rank >= 0 && p->host && *p->host)
        snprintf(buf, n, "rank %d on %s", p->rank, p->host);
    else if (p->rank >= 0)
        snprintf(buf, n, "rank %d", p->rank);
    else
        snprintf(buf, n, "pid %d", p->pid);
}

void cli_ranks_format(char *buf, size_t n, double v, bool share)
{
    if (share)
        snprintf(buf, n, "%.1f%%", v);
    else
        report_format_rate(buf, n, v);
}

void cli_ranks_rule(char *buf, size_t n, bool none)
{
    if (none)
        snprintf(buf, n, "(no rank blocked %.1fx the median share and %.0f points above it)",
                 RANKS_STRAGGLER_RATIO, RANKS_STRAGGLER_POINTS);
    else
        snprintf(buf, n, "(blocked share %.1fx the median or more, and %.0f points above it)",
                 RANKS_STRAGGLER_RATIO, RANKS_STRAGGLER_POINTS);
}

bool cli_ranks_line_on(const struct ranks_line *l, size_t proc)
{
    size_t lo = 0, hi = l->nat; /* at[] is by process */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->at[mid].proc < proc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->nat && l->at[lo].proc == proc;
}

/* ---- the view -------------------------------------------------------------------------------- */

static int cmp_double(double a, double b)
{
    return (a > b) - (a < b);
}

static int cmp_size(size_t a, size_t b)
{
    return (a > b) - (a < b);
}

static int by_syncs(const void *pa, const void *pb, void *ctx)
{
    const struct ranks_fig *f = ctx;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int c = cmp_double(f[a].syncs_per_step, f[b].syncs_per_step);
    return c ? c : cmp_size(a, b);
}

static int by_share(const void *pa, const void *pb, void *ctx)
{
    const struct ranks_fig *f = ctx;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int c = cmp_double(f[a].share, f[b].share);
    return c ? c : cmp_size(a, b);
}

static int by_line(const void *pa, const void *pb, void *ctx)
{
    const struct rep_lines *lines = ctx;
    const struct ranks_at *a = pa, *b = pb;
    int c = cli_lines_cmp(&lines[a->proc].lines[a->line], &lines[b->proc].lines[b->line]);
    return c                            ? c
           : cmp_size(a->proc, b->proc) ? cmp_size(a->proc, b->proc)
                                        : cmp_size(a->line, b->line);
}

static int by_blocked(const void *pa, const void *pb)
{
    const struct ranks_line *a = pa, *b = pb;
    if (a->blocked_ns != b->blocked_ns)
        return a->blocked_ns < b->blocked_ns ? 1 : -1;
    return (a->at > b->at) - (a->at < b->at); /* the line order: the same on every run */
}

static int by_host(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    return strcmp(a, b);
}

static double median(const struct ranks_fig *f, const size_t *order, size_t n, bool share)
{
    double lo = share ? f[order[(n - 1) / 2]].share : f[order[(n - 1) / 2]].syncs_per_step;
    double hi = share ? f[order[n / 2]].share : f[order[n / 2]].syncs_per_step;
    return (lo + hi) / 2;
}

static int count_hosts(struct ranks_view *v)
{
    const char **hosts = malloc(v->nprocs * sizeof *hosts);
    if (!hosts)
        return -1;
    size_t nhosts = 0;
    for (size_t i = 0; i < v->nprocs; i++) {
        const struct rep_process *p = &v->procs[i];
        v->ranked += p->rank >= 0;
        if (p->host)
            hosts[nhosts++] = p->host;
        if (p->job_id && !v->job)
            v->job = p->job_id;
        else if (p->job_id && strcmp(p->job_id, v->job) != 0)
            v->jobs_differ = true;
    }
    qsort(hosts, nhosts, sizeof *hosts, by_host);
    for (size_t i = 0; i < nhosts; i++)
        v->hosts += i == 0 || strcmp(hosts[i - 1], hosts[i]) != 0;
    free(hosts);
    return 0;
}

/* Groups every process's lines by line (one sort, not a pairwise match) and keeps the groups
 * that miss a process. */
static int find_partial(struct ranks_view *v)
{
    size_t total = 0;
    for (size_t p = 0; p < v->nprocs; p++)
        total += v->lines[p].n;
    v->at = malloc((total ? total : 1) * sizeof *v->at);
    v->partial = malloc((total ? total : 1) * sizeof *v->partial);
    if (!v->at || !v->partial)
        return -1;
    size_t n = 0;
    for (size_t p = 0; p < v->nprocs; p++)
        for (size_t i = 0; i < v->lines[p].n; i++)
            if (v->lines[p].lines[i].count)
                v->at[n++] = (struct ranks_at){p, i};
    qsort_r(v->at, n, sizeof *v->at, by_line, (void *)v->lines);
    for (size_t i = 0; i < n;) {
        const struct rep_line *first = &v->lines[v->at[i].proc].lines[v->at[i].line];
        size_t j = i, k = 0;
        uint64_t ns = 0;
        for (; j < n; j++) {
            const struct rep_line *l = &v->lines[v->at[j].proc].lines[v->at[j].line];
            if (cli_lines_cmp(first, l) != 0)
                break;
            k += j == i || v->at[j].proc != v->at[j - 1].proc;
            ns += l->blocked_ns;
        }
        if (k < v->nprocs)
            v->partial[v->npartial++] = (struct ranks_line){&v->at[i], j - i, k, ns};
        i = j;
    }
    qsort(v->partial, v->npartial, sizeof *v->partial, by_blocked);
    return 0;
}

static int build(struct ranks_view *v)
{
    if (!v->lines) {
        if (!(v->own_lines = calloc(v->nprocs, sizeof *v->own_lines)))
            return -1;
        for (size_t p = 0; p < v->nprocs; p++)
            if (report_lines(&v->procs[p], &v->own_lines[p]) != 0)
                return -1;
        v->lines = v->own_lines;
    }
    v->fig = calloc(v->nprocs, sizeof *v->fig);
    v->by_syncs = malloc(v->nprocs * sizeof *v->by_syncs);
    v->by_share = malloc(v->nprocs * sizeof *v->by_share);
    if (!v->fig || !v->by_syncs || !v->by_share || count_hosts(v) != 0)
        return -1;
    for (size_t p = 0; p < v->nprocs; p++) {
        const struct rep_lines *l = &v->lines[p];
        uint64_t syncs = 0, ns = 0;
        for (size_t i = 0; i < l->n; i++) {
            syncs += l->lines[i].count;
            ns += l->lines[i].blocked_ns;
        }
        v->fig[p].syncs_per_step = (double)syncs / l->steps;
        v->fig[p].share = l->wall_ns > 0 ? 100.0 * (double)ns / l->wall_ns : 0;
        v->fig[p].no_step = !v->procs[p].startup_closed;
        v->nno_step += v->fig[p].no_step;
        v->by_syncs[p] = v->by_share[p] = p;
    }
    qsort_r(v->by_syncs, v->nprocs, sizeof *v->by_syncs, by_syncs, v->fig);
    qsort_r(v->by_share, v->nprocs, sizeof *v->by_share, by_share, v->fig);
    v->syncs_median = median(v->fig, v->by_syncs, v->nprocs, false);
    v->share_median = median(v->fig, v->by_share, v->nprocs, true);
    /* the stragglers: from the most blocked down, while each waits clearly more than the median */
    for (size_t k = v->nprocs; k-- > 0;) {
        double s = v->fig[v->by_share[k]].share, mid = v->share_median;
        if (s < mid * RANKS_STRAGGLER_RATIO || s - mid < RANKS_STRAGGLER_POINTS)
            break;
        v->fig[v->by_share[k]].straggler = true;
        v->nstragglers++;
    }
    return find_partial(v);
}

int cli_ranks_build(const struct rep_process *procs, size_t nprocs, const struct rep_lines *lines,
                    struct ranks_view *v)
{
    memset(v, 0, sizeof *v);
    v->procs = procs;
    v->nprocs = nprocs;
    v->lines = lines;
    if (nprocs == 0 || build(v) == 0)
        return 0;
    errno = ENOMEM;
    return -1;
}

void cli_ranks_free(struct ranks_view *v)
{
    for (size_t p = 0; v->own_lines && p < v->nprocs; p++)
        report_lines_free(&v->own_lines[p]);
    free(v->own_lines);
    free(v->fig);
    free(v->by_syncs);
    free(v->by_share);
    free(v->at);
    free(v->partial);
    memset(v, 0, sizeof *v);
}

void cli_ranks_header(const struct ranks_view *v, char *buf, size_t n)
{
    size_t len = 0;
#define PUT(...) \
    (len += (size_t)snprintf(buf + (len < n ? len : n), len < n ? n - len : 0, __VA_ARGS__))
    PUT("per %s: %zu process%s", v->ranked ? "rank" : "process", v->nprocs,
        v->nprocs == 1 ? "" : "es");
    if (v->ranked && v->ranked < v->nprocs)
        PUT(" (%zu with a rank)", v->ranked);
    if (v->hosts)
        PUT(" on %zu host%s", v->hosts, v->hosts == 1 ? "" : "s");
    if (v->jobs_differ)
        PUT(", of more than one job");
    else if (v->job)
        PUT(", job %s", v->job);
    PUT(" (per step: each rank's own training steps)");
#undef PUT
}

/* ---- the text section ------------------------------------------------------------------------ */

static void put_name(struct fd_writer *w, const struct ranks_view *v, size_t proc)
{
    char name[128];
    cli_rank_name(&v->procs[proc], name, sizeof name);
    fdw_puts(w, name);
}

/* "    syncs/step     min 4.00 (rank 3)  median 5.00  max 9.00 (rank 7)" */
static void put_spread(struct fd_writer *w, const struct ranks_view *v, const char *what,
                       bool share)
{
    const size_t *order = share ? v->by_share : v->by_syncs;
    size_t lo = order[0], hi = order[v->nprocs - 1];
    char a[32], b[32], c[32];
    cli_ranks_format(a, sizeof a, share ? v->fig[lo].share : v->fig[lo].syncs_per_step, share);
    cli_ranks_format(b, sizeof b, share ? v->share_median : v->syncs_median, share);
    cli_ranks_format(c, sizeof c, share ? v->fig[hi].share : v->fig[hi].syncs_per_step, share);
    fdw_printf(w, "    %-14s min %s (", what, a);
    put_name(w, v, lo);
    fdw_printf(w, ")  median %s  max %s (", b, c);
    put_name(w, v, hi);
    fdw_puts(w, ")\n");
}

static void put_stragglers(struct fd_writer *w, const struct ranks_view *v)
{
    char rule[128], s[32];
    fdw_puts(w, "    waits most:    ");
    for (size_t k = 0; k < RANKS_WAITS_MOST && k < v->nprocs; k++) {
        size_t p = v->by_share[v->nprocs - 1 - k];
        fdw_puts(w, k ? ", " : "");
        put_name(w, v, p);
        cli_ranks_format(s, sizeof s, v->fig[p].share, true);
        fdw_printf(w, " %s", s);
    }
    fdw_putc(w, '\n');
    cli_ranks_rule(rule, sizeof rule, v->nstragglers == 0);
    if (!v->nstragglers) {
        fdw_printf(w, "    stragglers:    none %s\n", rule);
        return;
    }
    fdw_puts(w, "    stragglers:    ");
    size_t named = 0;
    for (; named < v->nstragglers && named < RANKS_NAMED_MAX; named++) {
        fdw_puts(w, named ? ", " : "");
        put_name(w, v, v->by_share[v->nprocs - 1 - named]);
    }
    if (v->nstragglers > named)
        fdw_printf(w, ", +%zu more", v->nstragglers - named);
    fdw_printf(w, " %s\n", rule);
}

/* The processes line l syncs on (in), or those it does not (!in), up to RANKS_NAMED_MAX. */
static void put_ranks_of(struct fd_writer *w, const struct ranks_view *v,
                         const struct ranks_line *l, bool in)
{
    size_t named = 0, total = in ? l->k : v->nprocs - l->k;
    for (size_t p = 0; p < v->nprocs && named < RANKS_NAMED_MAX; p++) {
        if (cli_ranks_line_on(l, p) != in)
            continue;
        fdw_puts(w, named++ ? ", " : " ");
        put_name(w, v, p);
    }
    if (total > named)
        fdw_printf(w, ", +%zu more", total - named);
    fdw_putc(w, '\n');
}

static void put_partial_lines(struct fd_writer *w, const struct ranks_view *v)
{
    if (v->npartial == 0)
        fdw_puts(w, "    lines on some ranks only: none (every line syncs on every rank)\n");
    else
        fdw_printf(w, "    lines on some ranks only (%zu):\n", v->npartial);
    char where[1024];
    for (size_t i = 0; i < v->npartial && i < RANKS_LINES_MAX; i++) {
        const struct ranks_line *g = &v->partial[i];
        const struct rep_line *l = &v->lines[g->at[0].proc].lines[g->at[0].line];
        char apis[1024];
        cli_line_where(l, where, sizeof where);
        cli_line_apis(l, apis, sizeof apis);
        fdw_printf(w, "      %s %s\n", apis, where);
        if (g->k * 2 <= v->nprocs) {
            fdw_printf(w, "        on %zu of %zu:", g->k, v->nprocs);
            put_ranks_of(w, v, g, true);
        } else {
            fdw_printf(w, "        not on %zu of %zu:", v->nprocs - g->k, v->nprocs);
            put_ranks_of(w, v, g, false);
        }
    }
    if (v->npartial > RANKS_LINES_MAX)
        fdw_printf(w, "      +%zu more lines\n", v->npartial - RANKS_LINES_MAX);
}

static void put_no_step(struct fd_writer *w, const struct ranks_view *v)
{
    if (!v->nno_step)
        return;
    size_t named = 0;
    fdw_printf(w, "    no step mark (the whole run is one step): %zu:", v->nno_step);
    for (size_t p = 0; p < v->nprocs && named < RANKS_NAMED_MAX; p++) {
        if (!v->fig[p].no_step)
            continue;
        fdw_puts(w, named++ ? ", " : " ");
        put_name(w, v, p);
    }
    if (v->nno_step > named)
        fdw_printf(w, ", +%zu more", v->nno_step - named);
    fdw_putc(w, '\n');
}

static void render(struct fd_writer *w, const struct ranks_view *v)
{
    char header[256];
    cli_ranks_header(v, header, sizeof header);
    fdw_printf(w, "\n  %s\n", header);
    put_no_step(w, v);
    put_spread(w, v, "syncs/step", false);
    put_spread(w, v, "blocked share", true);
    put_stragglers(w, v);
    put_partial_lines(w, v);
}

int cli_ranks_render(const struct rep_process *procs, size_t nprocs, int fd)
{
    if (nprocs < 2)
        return 0;
    struct fd_writer *w = malloc(sizeof *w);
    struct ranks_view v;
    int rc = -1;
    if (w && cli_ranks_build(procs, nprocs, NULL, &v) == 0) {
        fdw_init(w, fd);
        fdw_set_shown(w); /* host names from the files */
        render(w, &v);
        rc = fdw_flush(w);
    } else {
        errno = ENOMEM;
    }
    if (w)
        cli_ranks_free(&v);
    free(w);
    return rc;
}
