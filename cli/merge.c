/* cli/merge.c: the lines of a DIR's processes merged (see merge.h). CLI only: pure functions of
 * the report model, with malloc. */
#include "cli/merge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lines.h"

void cli_merged_free(struct cli_merged *m)
{
    for (size_t p = 0; p < m->nprocs; p++) {
        if (m->per_proc)
            report_lines_free(&m->per_proc[p]);
        if (m->merged)
            free(m->merged[p]);
    }
    free(m->per_proc);
    free(m->merged);
    free(m->lines);
    memset(m, 0, sizeof *m);
}

struct sorted {
    struct cli_mline line;
    size_t before; /* its index before the sort */
};

static int sorted_cmp(const void *pa, const void *pb)
{
    const struct sorted *a = pa, *b = pb;
    if (a->line.blocked_ns != b->line.blocked_ns)
        return a->line.blocked_ns > b->line.blocked_ns ? -1 : 1;
    if (a->line.count != b->line.count)
        return a->line.count > b->line.count ? -1 : 1;
    return (a->before > b->before) - (a->before < b->before);
}

/* Heaviest first, as the report's merged table (one process's lines come sorted already). */
static int sort_lines(struct cli_merged *m)
{
    struct sorted *s = malloc((m->n ? m->n : 1) * sizeof *s);
    uint32_t *where = malloc((m->n ? m->n : 1) * sizeof *where);
    if (!s || !where) {
        free(s);
        free(where);
        errno = ENOMEM;
        return -1;
    }
    for (size_t k = 0; k < m->n; k++)
        s[k] = (struct sorted){m->lines[k], k};
    qsort(s, m->n, sizeof *s, sorted_cmp);
    for (size_t k = 0; k < m->n; k++) {
        m->lines[k] = s[k].line;
        where[s[k].before] = (uint32_t)k;
    }
    for (size_t p = 0; p < m->nprocs; p++)
        for (size_t i = 0; i < m->per_proc[p].n; i++)
            m->merged[p][i] = where[m->merged[p][i]];
    free(s);
    free(where);
    return 0;
}

size_t cli_merged_ops(const struct cli_set *set, const struct cli_merged *m, size_t k,
                      struct hints_op_sum *sum, size_t cap, size_t *more)
{
    size_t n = 0;
    for (size_t p = 0; p < m->nprocs; p++)
        for (size_t i = 0; i < m->per_proc[p].n; i++)
            if (m->merged[p][i] == k)
                n = cli_line_ops_add(&set->procs[p], &m->per_proc[p], i, sum, n, cap, more);
    hints_op_sums_sort(sum, n);
    return n;
}

int cli_merge_lines(const struct cli_set *set, struct cli_merged *m)
{
    memset(m, 0, sizeof *m);
    size_t cap = 0;
    m->per_proc = calloc(set->n ? set->n : 1, sizeof *m->per_proc);
    m->merged = calloc(set->n ? set->n : 1, sizeof *m->merged);
    if (!m->per_proc || !m->merged)
        goto oom;
    for (size_t p = 0; p < set->n; p++) {
        if (report_lines(&set->procs[p], &m->per_proc[p]) != 0)
            goto oom;
        m->nprocs++;
        if (!(m->merged[p] = calloc(m->per_proc[p].n ? m->per_proc[p].n : 1, sizeof *m->merged[p])))
            goto oom;
        cap += m->per_proc[p].n;
        m->steps += m->per_proc[p].steps;
        m->wall_ns += m->per_proc[p].wall_ns;
    }
    if (!(m->lines = calloc(cap ? cap : 1, sizeof *m->lines)))
        goto oom;
    for (size_t p = 0; p < set->n; p++) {
        for (size_t i = 0; i < m->per_proc[p].n; i++) {
            const struct rep_line *l = &m->per_proc[p].lines[i];
            size_t k = set->n == 1 ? m->n : 0; /* one process: its lines are distinct */
            while (k < m->n && !cli_lines_same_row(m->lines[k].line, l))
                k++;
            if (k == m->n)
                m->lines[m->n++] = (struct cli_mline){.line = l, .proc = p};
            struct cli_mline *x = &m->lines[k];
            x->count += l->count;
            x->blocked_ns += l->blocked_ns;
            x->startup_count += l->startup_count;
            if (l->max_ns > x->max_ns)
                x->max_ns = l->max_ns;
            for (size_t a = 0; a < l->napis; a++)
                report_api_count_add(x->apis, &x->napis, REP_LINE_APIS_MAX, l->apis[a].api,
                                     l->apis[a].count, &x->other_apis);
            x->other_apis += l->other_apis;
            m->merged[p][i] = (uint32_t)k;
        }
    }
    for (size_t k = 0; k < m->n; k++)
        report_api_counts_sort(m->lines[k].apis, m->lines[k].napis);
    if (m->steps < 1)
        m->steps = 1;
    if (set->n > 1 && sort_lines(m) != 0)
        goto oom;
    return 0;
oom:
    errno = ENOMEM;
    return -1;
}
