/* cli/ranks.c: the per-rank section of a merged report (see ranks.h). Memory: one small record
 * per process and one per (process, line), freed before it returns. CLI only. */
#include "cli/ranks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lines.h"
#include "output/fd_writer.h"
#include "output/report.h"

struct rank_fig {
    size_t proc;
    double syncs_per_step, share; /* share in %, -1 when the steps have no wall time */
    bool no_step;                 /* no step mark came: the whole run is one step */
};

/* One line of one process. */
struct proc_line {
    const struct rep_line *line;
    size_t proc;
};

void cli_rank_name(const struct rep_process *p, char *buf, size_t n)
{
    if (p->rank >= 0 && p->host && *p->host)
        snprintf(buf, n, "rank %d on %s", p->rank, p->host);
    else if (p->rank >= 0)
        snprintf(buf, n, "rank %d", p->rank);
    else
        snprintf(buf, n, "pid %d", p->pid);
}

static int cmp_double(double a, double b)
{
    return (a > b) - (a < b);
}

static int by_syncs(const void *pa, const void *pb)
{
    const struct rank_fig *a = pa, *b = pb;
    int c = cmp_double(a->syncs_per_step, b->syncs_per_step);
    return c ? c : (a->proc > b->proc) - (a->proc < b->proc);
}

static int by_share(const void *pa, const void *pb)
{
    const struct rank_fig *a = pa, *b = pb;
    int c = cmp_double(a->share, b->share);
    return c ? c : (a->proc > b->proc) - (a->proc < b->proc);
}

static int by_line(const void *pa, const void *pb)
{
    const struct proc_line *a = pa, *b = pb;
    int c = cli_lines_cmp(a->line, b->line);
    return c ? c : (a->proc > b->proc) - (a->proc < b->proc);
}

static int by_host(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    return strcmp(a ? a : "", b ? b : "");
}

/* The median of sorted figures f[0..n) by the field get reads. */
static double median(const struct rank_fig *f, size_t n, double (*get)(const struct rank_fig *))
{
    return n % 2 ? get(&f[n / 2]) : (get(&f[n / 2 - 1]) + get(&f[n / 2])) / 2;
}

static double get_syncs(const struct rank_fig *f)
{
    return f->syncs_per_step;
}

static double get_share(const struct rank_fig *f)
{
    return f->share;
}

static void put_name(struct fd_writer *w, const struct rep_process *procs, size_t proc)
{
    char name[128];
    cli_rank_name(&procs[proc], name, sizeof name);
    fdw_puts(w, name);
}

/* "  syncs/step      min 4.00 (rank 3)  median 5.00  max 9.00 (rank 7)" */
static void put_spread(struct fd_writer *w, const char *what, const struct rep_process *procs,
                       const struct rank_fig *f, size_t n, double (*get)(const struct rank_fig *), bool share)
{
    char a[32], b[32], c[32];
    double lo = get(&f[0]), mid = median(f, n, get), hi = get(&f[n - 1]);
    if (share) {
        snprintf(a, sizeof a, "%.1f%%", lo);
        snprintf(b, sizeof b, "%.1f%%", mid);
        snprintf(c, sizeof c, "%.1f%%", hi);
    } else {
        report_format_rate(a, sizeof a, lo);
        report_format_rate(b, sizeof b, mid);
        report_format_rate(c, sizeof c, hi);
    }
    fdw_printf(w, "    %-14s min %s (", what, a);
    put_name(w, procs, f[0].proc);
    fdw_printf(w, ")  median %s  max %s (", b, c);
    put_name(w, procs, f[n - 1].proc);
    fdw_puts(w, ")\n");
}

static void put_header(struct fd_writer *w, const struct rep_process *procs, size_t nprocs)
{
    const char **hosts = malloc(nprocs * sizeof *hosts);
    size_t nhosts = 0, ranked = 0;
    const char *job = NULL;
    bool jobs_differ = false;
    for (size_t i = 0; i < nprocs; i++) {
        ranked += procs[i].rank >= 0;
        if (hosts && procs[i].host)
            hosts[nhosts++] = procs[i].host;
        if (procs[i].job_id && !job)
            job = procs[i].job_id;
        else if (procs[i].job_id && strcmp(procs[i].job_id, job) != 0)
            jobs_differ = true;
    }
    size_t distinct = 0;
    if (hosts && nhosts) {
        qsort(hosts, nhosts, sizeof *hosts, by_host);
        for (size_t i = 0; i < nhosts; i++)
            distinct += i == 0 || strcmp(hosts[i - 1], hosts[i]) != 0;
    }
    free(hosts);
    fdw_printf(w, "\n  per %s: %zu process%s", ranked ? "rank" : "process", nprocs, nprocs == 1 ? "" : "es");
    if (ranked && ranked < nprocs)
        fdw_printf(w, " (%zu with a rank)", ranked);
    if (distinct)
        fdw_printf(w, " on %zu host%s", distinct, distinct == 1 ? "" : "s");
    if (jobs_differ)
        fdw_puts(w, ", of more than one job");
    else if (job)
        fdw_printf(w, ", job %s", job);
    fdw_puts(w, " (per step: each rank's own training steps)\n");
}

/* The ranks with the highest blocked share, and the stragglers among them. */
static void put_stragglers(struct fd_writer *w, const struct rep_process *procs,
                           const struct rank_fig *f, size_t n)
{
    double mid = median(f, n, get_share);
    fdw_puts(w, "    waits most:    ");
    for (size_t k = 0; k < 3 && k < n; k++) {
        fdw_puts(w, k ? ", " : "");
        put_name(w, procs, f[n - 1 - k].proc);
        fdw_printf(w, " %.1f%%", f[n - 1 - k].share);
    }
    fdw_putc(w, '\n');
    size_t named = 0, over = 0;
    for (size_t k = n; k-- > 0;) {
        double s = f[k].share;
        if (s < mid * RANKS_STRAGGLER_RATIO || s - mid < RANKS_STRAGGLER_POINTS)
            break;
        if (over++ == 0)
            fdw_puts(w, "    stragglers:    ");
        if (named < RANKS_NAMED_MAX) {
            fdw_puts(w, named++ ? ", " : "");
            put_name(w, procs, f[k].proc);
        }
    }
    if (over > named)
        fdw_printf(w, ", +%zu more", over - named);
    if (over)
        fdw_printf(w, " (blocked share %.1fx the median or more, and %.0f points above it)\n",
                   RANKS_STRAGGLER_RATIO, RANKS_STRAGGLER_POINTS);
    else
        fdw_printf(w, "    stragglers:    none (no rank blocked %.1fx the median share and %.0f points "
                   "above it)\n", RANKS_STRAGGLER_RATIO, RANKS_STRAGGLER_POINTS);
}

/* A group of one line's processes, g[0..k): on k of nprocs processes. */
struct line_group {
    size_t first, k;
    uint64_t blocked_ns;
};

static int by_blocked(const void *pa, const void *pb)
{
    const struct line_group *a = pa, *b = pb;
    return (a->blocked_ns < b->blocked_ns) - (a->blocked_ns > b->blocked_ns);
}

/* A list of processes: those in pl[first..first+k) (in), or those not in it (!in). */
static void put_ranks_of(struct fd_writer *w, const struct rep_process *procs, size_t nprocs,
                         const struct proc_line *pl, const struct line_group *g, bool in)
{
    size_t named = 0, total = in ? g->k : nprocs - g->k, j = 0;
    for (size_t p = 0; p < nprocs && named < RANKS_NAMED_MAX; p++) {
        while (j < g->k && pl[g->first + j].proc < p)
            j++;
        bool has = j < g->k && pl[g->first + j].proc == p;
        if (has != in)
            continue;
        fdw_puts(w, named++ ? ", " : " ");
        put_name(w, procs, p);
    }
    if (total > named)
        fdw_printf(w, ", +%zu more", total - named);
    fdw_putc(w, '\n');
}

static int put_partial_lines(struct fd_writer *w, const struct rep_process *procs, size_t nprocs,
                             const struct rep_lines *lines)
{
    size_t total = 0;
    for (size_t p = 0; p < nprocs; p++)
        total += lines[p].n;
    struct proc_line *pl = malloc((total ? total : 1) * sizeof *pl);
    struct line_group *g = malloc((total ? total : 1) * sizeof *g);
    if (!pl || !g) {
        free(pl);
        free(g);
        return -1;
    }
    size_t n = 0;
    for (size_t p = 0; p < nprocs; p++)
        for (size_t i = 0; i < lines[p].n; i++)
            if (lines[p].lines[i].count)
                pl[n++] = (struct proc_line){&lines[p].lines[i], p};
    qsort(pl, n, sizeof *pl, by_line);
    size_t ng = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, procs_in = 0;
        uint64_t ns = 0;
        for (; j < n && cli_lines_cmp(pl[i].line, pl[j].line) == 0; j++) {
            procs_in += j == i || pl[j].proc != pl[j - 1].proc;
            ns += pl[j].line->blocked_ns;
        }
        if (procs_in < nprocs)
            g[ng++] = (struct line_group){i, j - i, ns};
        i = j;
    }
    qsort(g, ng, sizeof *g, by_blocked);
    if (ng == 0)
        fdw_puts(w, "    lines on some ranks only: none (every line syncs on every rank)\n");
    else
        fdw_printf(w, "    lines on some ranks only (%zu):\n", ng);
    char where[1024];
    for (size_t i = 0; i < ng && i < RANKS_LINES_MAX; i++) {
        const struct rep_line *l = pl[g[i].first].line;
        cli_line_where(l, where, sizeof where);
        fdw_printf(w, "      %s %s\n", l->api, where);
        if (g[i].k * 2 <= nprocs) {
            fdw_printf(w, "        on %zu of %zu:", g[i].k, nprocs);
            put_ranks_of(w, procs, nprocs, pl, &g[i], true);
        } else {
            fdw_printf(w, "        not on %zu of %zu:", nprocs - g[i].k, nprocs);
            put_ranks_of(w, procs, nprocs, pl, &g[i], false);
        }
    }
    if (ng > RANKS_LINES_MAX)
        fdw_printf(w, "      +%zu more lines\n", ng - RANKS_LINES_MAX);
    free(pl);
    free(g);
    return 0;
}

static void put_no_step(struct fd_writer *w, const struct rep_process *procs, const struct rank_fig *f,
                        size_t n)
{
    size_t none = 0, named = 0;
    for (size_t i = 0; i < n; i++)
        none += f[i].no_step;
    if (!none)
        return;
    fdw_printf(w, "    no step mark (the whole run is one step): %zu:", none);
    for (size_t i = 0; i < n && named < RANKS_NAMED_MAX; i++) {
        if (!f[i].no_step)
            continue;
        fdw_puts(w, named++ ? ", " : " ");
        put_name(w, procs, f[i].proc);
    }
    if (none > named)
        fdw_printf(w, ", +%zu more", none - named);
    fdw_putc(w, '\n');
}

static int render(struct fd_writer *w, const struct rep_process *procs, size_t nprocs,
                  struct rep_lines *lines, struct rank_fig *f)
{
    for (size_t p = 0; p < nprocs; p++) {
        if (report_lines(&procs[p], &lines[p]) != 0)
            return -1;
        uint64_t syncs = 0, ns = 0;
        for (size_t i = 0; i < lines[p].n; i++) {
            syncs += lines[p].lines[i].count;
            ns += lines[p].lines[i].blocked_ns;
        }
        f[p].proc = p;
        f[p].syncs_per_step = (double)syncs / lines[p].steps;
        f[p].share = lines[p].wall_ns > 0 ? 100.0 * (double)ns / lines[p].wall_ns : 0;
        f[p].no_step = !procs[p].startup_closed;
    }
    put_header(w, procs, nprocs);
    put_no_step(w, procs, f, nprocs);
    qsort(f, nprocs, sizeof *f, by_syncs);
    put_spread(w, "syncs/step", procs, f, nprocs, get_syncs, false);
    qsort(f, nprocs, sizeof *f, by_share);
    put_spread(w, "blocked share", procs, f, nprocs, get_share, true);
    put_stragglers(w, procs, f, nprocs);
    return put_partial_lines(w, procs, nprocs, lines);
}

int cli_ranks_render(const struct rep_process *procs, size_t nprocs, int fd)
{
    if (nprocs < 2)
        return 0;
    struct fd_writer *w = malloc(sizeof *w);
    struct rep_lines *lines = calloc(nprocs, sizeof *lines);
    struct rank_fig *f = calloc(nprocs, sizeof *f);
    int rc = -1;
    if (w && lines && f) {
        fdw_init(w, fd);
        rc = render(w, procs, nprocs, lines, f);
        int saved = errno;
        if (fdw_flush(w) != 0)
            rc = -1;
        else if (rc != 0)
            errno = saved;
    } else {
        errno = ENOMEM;
    }
    for (size_t p = 0; lines && p < nprocs; p++)
        report_lines_free(&lines[p]);
    free(lines);
    free(f);
    free(w);
    return rc;
}
