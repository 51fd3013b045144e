/* cli/diff.c: `syncspy diff` (see diff.h). Each run's processes are merged line by line (the
 * per-step numbers of a run are its sums over the mean process-step, as `syncspy report` merges
 * ranks), then the two runs' lines are matched. CLI only. */
#include "cli/diff.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lines.h"
#include "cli/schemas.h"
#include "output/fd_writer.h"

#define SAME_RATE 0.005 /* syncs/step closer than this read the same (two decimals shown) */

/* One line of a run, its processes merged. */
struct run_line {
    const struct rep_line *line; /* the first process's (for where) */
    uint64_t count, blocked_ns;
    int other;  /* the matching line of the other run, -1: none */
    size_t seq; /* where its first line was met */
};

struct run {
    const struct cli_set *set;
    struct rep_lines *per_proc;
    size_t nprocs;
    struct run_line *lines;
    size_t n;
    double steps, wall_ns;
    uint64_t syncs, blocked_ns, startup_syncs;
};

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->nprocs; i++)
        report_lines_free(&r->per_proc[i]);
    free(r->per_proc);
    free(r->lines);
    memset(r, 0, sizeof *r);
}

/* Lines sorted by their matching keys (cli_line_key_cmp), then by where they were met: a run
 * of equal lines begins with the first met. n log n: a linear search per line made 10^6 sites
 * take minutes (docs/PERFORMANCE.md). */
static int keyed_cmp(const void *pa, const void *pb)
{
    const struct cli_line_key *a = pa, *b = pb;
    int c = cli_line_key_cmp(a, b);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

static int line_seq_cmp(const void *pa, const void *pb)
{
    const struct run_line *a = pa, *b = pb;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static int run_build(const struct cli_set *set, struct run *r)
{
    memset(r, 0, sizeof *r);
    r->set = set;
    size_t cap = 0;
    r->per_proc = calloc(set->n ? set->n : 1, sizeof *r->per_proc);
    if (!r->per_proc)
        return -1;
    for (size_t p = 0; p < set->n; p++) {
        if (report_lines(&set->procs[p], &r->per_proc[p]) != 0)
            return -1;
        r->nprocs++;
        cap += r->per_proc[p].n;
        r->steps += r->per_proc[p].steps;
        r->wall_ns += r->per_proc[p].wall_ns;
    }
    r->lines = calloc(cap ? cap : 1, sizeof *r->lines);
    struct cli_line_key *k = malloc((cap ? cap : 1) * sizeof *k);
    if (!r->lines || !k) {
        free(k);
        return -1;
    }
    size_t nk = 0;
    for (size_t p = 0; p < r->nprocs; p++) {
        for (size_t i = 0; i < r->per_proc[p].n; i++) {
            const struct rep_line *l = &r->per_proc[p].lines[i];
            r->startup_syncs += l->startup_count;
            if (!l->count)
                continue; /* start-up's only */
            r->syncs += l->count;
            r->blocked_ns += l->blocked_ns;
            k[nk] = cli_line_key_of(l);
            k[nk].seq = nk;
            nk++;
        }
    }
    qsort(k, nk, sizeof *k, keyed_cmp);
    /* each run of equal lines merged into its first, then in the order met, as a report
     * reads them */
    for (size_t i = 0, j; i < nk; i = j) {
        uint64_t count = 0, blocked = 0;
        for (j = i; j < nk && cli_line_key_cmp(&k[i], &k[j]) == 0; j++) {
            count += k[j].line->count;
            blocked += k[j].line->blocked_ns;
        }
        r->lines[r->n++] = (struct run_line){
            .line = k[i].line, .count = count, .blocked_ns = blocked, .other = -1, .seq = k[i].seq};
    }
    free(k);
    qsort(r->lines, r->n, sizeof *r->lines, line_seq_cmp);
    if (r->steps < 1)
        r->steps = 1;
    return 0;
}

/* A row of the comparison: a line of base, of new, or of both. */
struct row {
    const struct run_line *b, *n;
    double b_rate, n_rate, b_ns, n_ns;
};

static const char *change(const struct row *r)
{
    if (!r->n)
        return "gone";
    if (!r->b)
        return "new";
    if (fabs(r->n_rate - r->b_rate) < SAME_RATE)
        return "same";
    return r->n_rate > r->b_rate ? "more" : "fewer";
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    double x = fmax(a->b_ns, a->n_ns), y = fmax(b->b_ns, b->n_ns);
    if (x != y)
        return x > y ? -1 : 1;
    x = fmax(a->b_rate, a->n_rate);
    y = fmax(b->b_rate, b->n_rate);
    return (x < y) - (x > y);
}

/* A run's lines' keys in the matching order (seq: the line's index; each run's lines are
 * merged already: no two are equal). NULL when memory ran out. */
static struct cli_line_key *matching_order(const struct run *r)
{
    struct cli_line_key *k = malloc((r->n ? r->n : 1) * sizeof *k);
    if (!k)
        return NULL;
    for (size_t i = 0; i < r->n; i++) {
        k[i] = cli_line_key_of(r->lines[i].line);
        k[i].seq = i;
    }
    qsort(k, r->n, sizeof *k, keyed_cmp);
    return k;
}

/* The rows: base's lines (with their match in new), then new's unmatched ones. 0 and *ok false
 * when memory ran out. */
static size_t make_rows(struct run *base, struct run *neu, struct row *rows, bool *ok)
{
    size_t n = 0;
    struct cli_line_key *bi = matching_order(base), *ni = matching_order(neu);
    *ok = bi && ni;
    for (size_t i = 0, j = 0; *ok && i < base->n && j < neu->n;) { /* a merge join */
        int c = cli_line_key_cmp(&bi[i], &ni[j]);
        if (c == 0) {
            base->lines[bi[i].seq].other = (int)ni[j].seq;
            neu->lines[ni[j].seq].other = (int)bi[i].seq;
        }
        i += c <= 0;
        j += c >= 0;
    }
    free(bi);
    free(ni);
    if (!*ok)
        return 0;
    for (size_t i = 0; i < base->n; i++) {
        struct run_line *b = &base->lines[i];
        rows[n++] = (struct row){.b = b, .n = b->other >= 0 ? &neu->lines[b->other] : NULL};
    }
    for (size_t j = 0; j < neu->n; j++)
        if (neu->lines[j].other < 0)
            rows[n++] = (struct row){.n = &neu->lines[j]};
    for (size_t i = 0; i < n; i++) {
        struct row *r = &rows[i];
        r->b_rate = r->b ? (double)r->b->count / base->steps : 0;
        r->b_ns = r->b ? (double)r->b->blocked_ns / base->steps : 0;
        r->n_rate = r->n ? (double)r->n->count / neu->steps : 0;
        r->n_ns = r->n ? (double)r->n->blocked_ns / neu->steps : 0;
    }
    qsort(rows, n, sizeof *rows, row_cmp);
    return n;
}

/* ---- text ------------------------------------------------------------------------------------ */

static void text_run(struct fd_writer *w, const char *what, const char *path, const struct run *r)
{
    fdw_printf(w, "%s ", what);
    fdw_puts(w, path);
    fdw_printf(w, " (%zu process%s, %.0f training step%s)", r->nprocs, r->nprocs == 1 ? "" : "es",
               r->steps, r->steps == 1 ? "" : "s");
}

/* What the step figures of a run's processes lack (report_steps_note), a line each. */
static void text_notes(struct fd_writer *w, const char *what, const struct run *r)
{
    char note[256];
    for (size_t i = 0; i < r->set->n; i++)
        if (report_steps_note(&r->set->procs[i], note, sizeof note)) {
            fdw_printf(w, "  %s pid %d: ", what, r->set->procs[i].pid);
            fdw_puts(w, note);
            fdw_putc(w, '\n');
        }
}

static void pair(struct fd_writer *w, int width, const char *a, const char *b)
{
    char buf[96];
    snprintf(buf, sizeof buf, "%s -> %s", a, b);
    fdw_printf(w, "%-*s", width, buf);
}

static void text_diff(struct fd_writer *w, const struct run *base, const struct run *neu,
                      const struct row *rows, size_t n, const struct diff_opts *o)
{
    char a[32], b[32], where[1024];
    fdw_puts(w, "syncspy diff: ");
    text_run(w, "base", o->base_path, base);
    fdw_puts(w, "\n              ");
    text_run(w, "new ", o->new_path, neu);
    fdw_putc(w, '\n');
    text_notes(w, "base", base);
    text_notes(w, "new", neu);
    report_format_rate(a, sizeof a, (double)base->syncs / base->steps);
    report_format_rate(b, sizeof b, (double)neu->syncs / neu->steps);
    fdw_printf(w, "  syncs/step %s -> %s", a, b);
    report_format_ns(a, sizeof a, (double)base->blocked_ns / base->steps);
    report_format_ns(b, sizeof b, (double)neu->blocked_ns / neu->steps);
    fdw_printf(w, ", blocked/step %s -> %s", a, b);
    report_format_ns(a, sizeof a, base->wall_ns / base->steps);
    report_format_ns(b, sizeof b, neu->wall_ns / neu->steps);
    fdw_printf(w, ", step %s -> %s (mean); start-up syncs %llu -> %llu\n", a, b,
               (unsigned long long)base->startup_syncs, (unsigned long long)neu->startup_syncs);
    if (n == 0) {
        fdw_puts(w, "  no host-device syncs in the training steps of either run\n");
        return;
    }
    fdw_printf(w, "\n  %-6s  %-18s  %-22s  %s\n", "change", "syncs/step", "blocked/step",
               "api / where");
    size_t count[5] = {0};
    static const char *const names[5] = {"gone", "new", "more", "fewer", "same"};
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        const char *c = change(r);
        for (int k = 0; k < 5; k++)
            count[k] += strcmp(c, names[k]) == 0;
        fdw_printf(w, "  %-6s  ", c);
        char ra[32] = "-", rb[32] = "-", na[32] = "-", nb[32] = "-";
        if (r->b) {
            report_format_rate(ra, sizeof ra, r->b_rate);
            report_format_ns(na, sizeof na, r->b_ns);
        }
        if (r->n) {
            report_format_rate(rb, sizeof rb, r->n_rate);
            report_format_ns(nb, sizeof nb, r->n_ns);
        }
        pair(w, 18, ra, rb);
        fdw_puts(w, "  ");
        pair(w, 22, na, nb);
        fdw_puts(w, "  ");
        const struct rep_line *l = r->n ? r->n->line : r->b->line;
        cli_line_where(l, where, sizeof where);
        char apis[1024];
        cli_line_apis(l, apis, sizeof apis);
        fdw_puts(w, apis);
        fdw_putc(w, ' ');
        fdw_puts(w, where);
        fdw_putc(w, '\n');
    }
    fdw_printf(
        w, "syncspy diff: %zu gone, %zu new, %zu more, %zu fewer, %zu the same (syncs per step)\n",
        count[0], count[1], count[2], count[3], count[4]);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void json_run(struct fd_writer *w, const char *name, const char *path, const struct run *r)
{
    fdw_printf(w, "\"%s\": {\"path\": ", name);
    fdw_json_string(w, path);
    fdw_printf(w, ", \"processes\": %zu, \"training_steps\": ", r->nprocs);
    cli_json_double(w, r->steps);
    fdw_puts(w, ", \"syncs_per_step\": ");
    cli_json_double(w, (double)r->syncs / r->steps);
    fdw_puts(w, ", \"blocked_per_step_ns\": ");
    cli_json_double(w, (double)r->blocked_ns / r->steps);
    fdw_puts(w, ", \"step_ns\": ");
    cli_json_double(w, r->wall_ns / r->steps);
    fdw_printf(w, ", \"startup_syncs\": %llu, \"steps_notes\": [",
               (unsigned long long)r->startup_syncs);
    char note[256];
    for (size_t i = 0, k = 0; i < r->set->n; i++)
        if (report_steps_note(&r->set->procs[i], note, sizeof note)) {
            fdw_puts(w, k++ ? ", " : "");
            fdw_json_string(w, note);
        }
    fdw_puts(w, "]}");
}

static void json_side(struct fd_writer *w, const char *name, bool present, double rate, double ns)
{
    fdw_printf(w, ", \"%s\": ", name);
    if (!present) {
        fdw_puts(w, "null");
        return;
    }
    fdw_puts(w, "{\"syncs_per_step\": ");
    cli_json_double(w, rate);
    fdw_puts(w, ", \"blocked_per_step_ns\": ");
    cli_json_double(w, ns);
    fdw_putc(w, '}');
}

static void json_diff(struct fd_writer *w, const struct run *base, const struct run *neu,
                      const struct row *rows, size_t n, const struct diff_opts *o)
{
    fdw_printf(w, "{\"version\": %d, ", DIFF_JSON_VERSION);
    json_run(w, "base", o->base_path, base);
    fdw_puts(w, ",\n ");
    json_run(w, "new", o->new_path, neu);
    fdw_puts(w, ",\n \"sites\": [");
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        fdw_puts(w, i ? ",\n  {" : "\n  {");
        fdw_printf(w, "\"change\": \"%s\", ", change(r));
        const struct rep_line *l = r->n ? r->n->line : r->b->line;
        cli_line_json_fields(w, l);
        fdw_puts(w, "\"delta_syncs_per_step\": ");
        cli_json_double(w, r->n_rate - r->b_rate);
        json_side(w, "base", r->b != NULL, r->b_rate, r->b_ns);
        json_side(w, "new", r->n != NULL, r->n_rate, r->n_ns);
        fdw_putc(w, '}');
    }
    fdw_puts(w, "]}\n");
}

int cli_diff(const struct cli_set *bset, const struct cli_set *nset, const struct diff_opts *o,
             int fd)
{
    struct run base, neu;
    struct fd_writer *w = malloc(sizeof *w);
    int ok_b = run_build(bset, &base), ok_n = run_build(nset, &neu);
    struct row *rows = calloc(base.n + neu.n + 1, sizeof *rows);
    int rc = 0;
    if (!w || ok_b || ok_n || !rows) {
        fprintf(stderr, "syncspy: out of memory\n");
        rc = 2;
    } else {
        fdw_init(w, fd);
        if (!o->json) /* names from the files: no control character reaches the terminal */
            fdw_set_shown(w);
        bool ok;
        size_t n = make_rows(&base, &neu, rows, &ok);
        if (!ok) {
            fprintf(stderr, "syncspy: out of memory\n");
            rc = 2;
        } else if (o->json)
            json_diff(w, &base, &neu, rows, n, o);
        else
            text_diff(w, &base, &neu, rows, n, o);
        if (fdw_flush(w) != 0) {
            fprintf(stderr, "syncspy: writing the comparison: %s\n", strerror(errno));
            rc = 2;
        }
    }
    free(rows);
    free(w);
    run_free(&base);
    run_free(&neu);
    return rc;
}
