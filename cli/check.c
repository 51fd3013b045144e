/* cli/check.c: `syncspy check` (see check.h): each process's syncs per training step and its
 * blocked share, counted as the report counts them (report_lines: start-up and the step still
 * open at exit left out of the rates), against the budget; the lines over it named. CLI only:
 * it reads the model, writes the verdict through an fd_writer. */
#include "cli/check.h"
#include "cli/ranks.h"
#include "cli/schemas.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/fd_writer.h"
#include "output/hints.h"
#include "output/identity_json.h"

/* One process's figures. */
struct verdict {
    struct rep_lines lines;
    bool *allowed;              /* per line */
    uint64_t syncs, blocked_ns; /* the counted lines', in the training steps */
    uint64_t estimated_syncs;   /* of syncs: estimated (backward syncs of steps without
                                    * attribution, split between their forward lines): counted,
                                    * a budget is about what the steps cost */
    uint64_t allowed_syncs;
    uint64_t startup_syncs, startup_ns, startup_allowed;
    double syncs_per_step, blocked_per_step,
        share; /* share in % of the steps' wall time, -1: none */
    double startup_share;
    bool one_step;        /* no step mark: the whole run is one step */
    bool startup_checked; /* --include-startup and start-up is apart */
    bool over_syncs, over_share, over_startup;
};

static bool is_allowed(const struct check_opts *o, const struct rep_line *l)
{
    for (size_t i = 0; i < o->nallow; i++)
        if (cli_allow_matches(&o->allow[i], l))
            return true;
    return false;
}

static int judge(const struct rep_process *p, const struct check_opts *o, struct verdict *v)
{
    memset(v, 0, sizeof *v);
    if (report_lines(p, &v->lines) != 0)
        return -1;
    v->allowed = calloc(v->lines.n ? v->lines.n : 1, sizeof *v->allowed);
    if (!v->allowed) {
        report_lines_free(&v->lines);
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < v->lines.n; i++) {
        const struct rep_line *l = &v->lines.lines[i];
        v->allowed[i] = is_allowed(o, l);
        if (v->allowed[i]) {
            v->allowed_syncs += l->count;
            v->startup_allowed += l->startup_count;
            continue;
        }
        v->syncs += l->count;
        v->estimated_syncs += l->estimated_count;
        v->blocked_ns += l->blocked_ns;
        v->startup_syncs += l->startup_count;
        v->startup_ns += l->startup_ns;
    }
    v->one_step = !p->startup_closed;
    v->syncs_per_step = (double)v->syncs / v->lines.steps;
    v->blocked_per_step = (double)v->blocked_ns / v->lines.steps;
    v->share = v->lines.wall_ns > 0 ? 100.0 * (double)v->blocked_ns / v->lines.wall_ns : -1;
    v->startup_checked = o->include_startup && v->lines.startup_left_out;
    v->startup_share = v->startup_checked && p->startup.wall_ns
                           ? 100.0 * (double)v->startup_ns / (double)p->startup.wall_ns
                           : -1;
    const double eps = 1e-9;
    v->over_syncs = o->has_max_syncs && v->syncs_per_step > o->max_syncs + eps;
    v->over_share = o->has_max_share && v->share > o->max_share + eps;
    v->over_startup = v->startup_checked &&
                      ((o->has_max_syncs && (double)v->startup_syncs > o->max_syncs + eps) ||
                       (o->has_max_share && v->startup_share > o->max_share + eps));
    return 0;
}

static bool over(const struct verdict *v)
{
    return v->over_syncs || v->over_share || v->over_startup;
}

static void verdict_free(struct verdict *v)
{
    report_lines_free(&v->lines);
    free(v->allowed);
}

/* ---- text ------------------------------------------------------------------------------------ */

#define CHECK_NAMED_MAX 32 /* processes named in the closing line before "+N more" */

/* As the report's title names it, the host with the rank: "rank 3 pid 1234 (node-a)". */
static void put_process(struct fd_writer *w, const struct rep_process *p)
{
    char who[160];
    report_process_label(p, who, sizeof who);
    fdw_puts(w, who);
}

static void put_hint(struct fd_writer *w, const struct rep_line *l)
{
    if (!l->heaviest)
        return;
    struct site_op op;
    hints_op(l->heaviest, &op);
    if (*op.hint) {
        fdw_puts(w, "                            hint: ");
        fdw_puts(w, op.hint);
        fdw_putc(w, '\n');
    }
}

/* "        1.00       1.47 ms  cudaStreamSynchronize at MaskedLoss.forward  train.py:71" */
static void put_line_row(struct fd_writer *w, const struct verdict *v, const struct rep_line *l)
{
    char a[32], b[32], where[1024], apis[1024];
    report_format_rate(a, sizeof a, (double)l->count / v->lines.steps);
    report_format_ns(b, sizeof b, (double)l->blocked_ns / v->lines.steps);
    cli_line_where(l, where, sizeof where);
    cli_line_apis(l, apis, sizeof apis);
    fdw_printf(w, "  %10s  %12s  ", a, b);
    fdw_puts(w, apis);
    fdw_puts(w, " ");
    fdw_puts(w, where);
    if (l->estimated_count) {
        report_format_rate(a, sizeof a, (double)l->estimated_count / v->lines.steps);
        fdw_printf(w, " (~%s/step of it estimated)", a);
    }
    fdw_putc(w, '\n');
}

/* "syncspy check: pid 4242: over budget: 3.00 syncs/step (budget 1), blocked 12.0 ms/step, 30.0%
 * of the step, over 3 training steps" */
static void text_verdict(struct fd_writer *w, const struct rep_process *p,
                         const struct check_opts *o, const struct verdict *v)
{
    char a[32];
    fdw_puts(w, "syncspy check: ");
    put_process(w, p);
    fdw_puts(w, over(v) ? ": over budget: " : ": within budget: ");
    report_format_rate(a, sizeof a, v->syncs_per_step);
    fdw_printf(w, "%s syncs/step", a);
    if (o->has_max_syncs)
        fdw_printf(w, " (budget %g)", o->max_syncs);
    report_format_ns(a, sizeof a, v->blocked_per_step);
    fdw_printf(w, ", blocked %s/step", a);
    if (v->share >= 0)
        fdw_printf(w, ", %.1f%% of the step", v->share);
    if (o->has_max_share)
        fdw_printf(w, " (budget %g%%)", o->max_share);
    fdw_printf(w, ", over %.0f %s\n", v->lines.steps,
               v->one_step           ? "step (no step mark: the whole run is one step)"
               : v->lines.steps == 1 ? "training step"
                                     : "training steps");
}

/* What the figures count and what they leave out: estimated syncs, missing step records,
 * start-up, torch.compile's own work. */
static void text_notes(struct fd_writer *w, const struct rep_process *p, const struct check_opts *o,
                       const struct verdict *v)
{
    char a[32];
    if (v->estimated_syncs) { /* counted: the budget is the steps' cost, exact or estimated */
        report_format_rate(a, sizeof a, (double)v->estimated_syncs / v->lines.steps);
        fdw_printf(w,
                   "  %s syncs/step of these are estimated (backward syncs of steps without "
                   "attribution, split between the forward lines seen making them in %llu "
                   "attribution step%s); counted\n",
                   a, (unsigned long long)v->lines.attribution_steps,
                   v->lines.attribution_steps == 1 ? "" : "s");
    }
    char note[256];
    if (report_steps_note(p, note, sizeof note)) {
        fdw_puts(w, "  ");
        fdw_puts(w, note);
        fdw_putc(w, '\n');
    }
    if (v->lines.startup_left_out && (v->startup_syncs || v->startup_allowed)) {
        fdw_printf(w, "  start-up (before the first step): %llu sync%s",
                   (unsigned long long)v->startup_syncs, v->startup_syncs == 1 ? "" : "s");
        if (v->startup_checked) {
            fdw_puts(w, v->over_startup ? ", over the budget as one step"
                                        : ", within the budget as one step");
            if (o->has_max_share && v->startup_share >= 0)
                fdw_printf(w, " (blocked %.1f%% of its time)", v->startup_share);
        } else {
            fdw_puts(w, ", not in the budget (--include-startup counts it)");
        }
        fdw_putc(w, '\n');
    }
    if (v->lines.compile_count)
        fdw_printf(
            w,
            "  torch.compile's own work in the training steps (compiling, autotuning): %llu sync%s, not in "
            "the budget\n",
            (unsigned long long)v->lines.compile_count, v->lines.compile_count == 1 ? "" : "s");
}

/* Over budget: the lines counted, each with its hint, then start-up's when it is over too. */
static void text_over_lines(struct fd_writer *w, const struct verdict *v)
{
    char b[32], where[1024];
    bool header = false;
    for (size_t i = 0; i < v->lines.n; i++) {
        const struct rep_line *l = &v->lines.lines[i];
        if (v->allowed[i] || !l->count)
            continue;
        if (!header) {
            fdw_printf(w, "  %10s  %12s  %s\n", "syncs/step", "blocked/step", "api / where");
            header = true;
        }
        put_line_row(w, v, l);
        put_hint(w, l);
    }
    for (size_t i = 0; v->over_startup && i < v->lines.n; i++) {
        const struct rep_line *l = &v->lines.lines[i];
        if (v->allowed[i] || !l->startup_count)
            continue;
        report_format_ns(b, sizeof b, (double)l->startup_ns);
        cli_line_where(l, where, sizeof where);
        char api[256];
        text_escape(api, sizeof api, l->api);
        fdw_printf(w, "  start-up: %llu x %s, %s, ", (unsigned long long)l->startup_count, api, b);
        fdw_puts(w, where);
        fdw_putc(w, '\n');
    }
}

/* each allowed line and API once, as the counted ones are shown */
static void text_allowed(struct fd_writer *w, const struct verdict *v)
{
    char a[32];
    report_format_rate(a, sizeof a, (double)v->allowed_syncs / v->lines.steps);
    fdw_printf(w, "  allowed, not counted: %s syncs/step\n", a);
    for (size_t i = 0; i < v->lines.n; i++) {
        const struct rep_line *l = &v->lines.lines[i];
        if (v->allowed[i] && l->count)
            put_line_row(w, v, l);
    }
}

static void text_process(struct fd_writer *w, const struct rep_process *p,
                         const struct check_opts *o, const struct verdict *v)
{
    text_verdict(w, p, o, v);
    text_notes(w, p, o, v);
    if (over(v))
        text_over_lines(w, v);
    if (v->allowed_syncs)
        text_allowed(w, v);
}

/* "syncspy check: 2 of 8 processes over budget (...): rank 3 (node-b), rank 5 (node-c)" */
static void put_over_closing(struct fd_writer *w, const struct cli_set *set,
                             const struct verdict *v, size_t nover, const struct check_opts *o)
{
    fdw_printf(w, "syncspy check: %zu of %zu process%s over budget (%s)", nover, set->n,
               set->n == 1 ? "" : "es", o->budget_text);
    size_t named = 0;
    char name[128];
    for (size_t i = 0; i < set->n && named < CHECK_NAMED_MAX; i++) {
        if (!over(&v[i]) || set->n == 1)
            continue;
        cli_rank_name(&set->procs[i], name, sizeof name);
        fdw_puts(w, named++ ? ", " : ": ");
        fdw_puts(w, name);
    }
    if (nover > named && named)
        fdw_printf(w, ", +%zu more", nover - named);
    fdw_putc(w, '\n');
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void json_budget(struct fd_writer *w, const struct check_opts *o)
{
    fdw_printf(w, "{\"version\": %d, \"budget\": {\"max_syncs_per_step\": ", CHECK_JSON_VERSION);
    if (o->has_max_syncs)
        cli_json_double(w, o->max_syncs);
    else
        fdw_puts(w, "null");
    fdw_puts(w, ", \"max_blocked_share\": ");
    if (o->has_max_share)
        cli_json_double(w, o->max_share / 100.0);
    else
        fdw_puts(w, "null");
    fdw_printf(w, ", \"include_startup\": %s, \"allow\": [", o->include_startup ? "true" : "false");
    for (size_t i = 0; i < o->nallow; i++) {
        if (i)
            fdw_puts(w, ", ");
        fdw_json_string(w, o->allow[i].file);
    }
    fdw_puts(w, "], \"settings_from\": "); /* the pyproject.toml some of the budget came from */
    if (o->settings_from)
        fdw_json_string(w, o->settings_from);
    else
        fdw_puts(w, "null");
    fdw_puts(w, "},\n \"processes\": [");
}

static void json_process(struct fd_writer *w, const struct rep_process *p, const struct verdict *v,
                         bool first)
{
    fdw_puts(w, first ? "\n  " : ",\n  ");
    fdw_printf(w, "{\"pid\": %d, \"rank\": ", p->pid);
    if (p->rank >= 0)
        fdw_printf(w, "%d", p->rank);
    else
        fdw_puts(w, "null");
    identity_write_json(w, p); /* as summary.json names the process's place in its job */
    fdw_printf(w, ",\n   \"ok\": %s, \"training_steps\": ", over(v) ? "false" : "true");
    cli_json_double(w, v->lines.steps);
    fdw_printf(
        w, ", \"whole_run_as_one_step\": %s, \"syncs_per_step\": ", v->one_step ? "true" : "false");
    cli_json_double(w, v->syncs_per_step);
    fdw_puts(w, ", \"blocked_per_step_ns\": ");
    cli_json_double(w, v->blocked_per_step);
    fdw_puts(w, ", \"blocked_share\": ");
    if (v->share >= 0)
        cli_json_double(w, v->share / 100.0);
    else
        fdw_puts(w, "null");
    char note[256];
    fdw_puts(w, ", \"steps_note\": ");
    if (report_steps_note(p, note, sizeof note))
        fdw_json_string(w, note);
    else
        fdw_puts(w, "null");
    fdw_printf(w, ", \"over_syncs\": %s, \"over_share\": %s, \"allowed_syncs_per_step\": ",
               v->over_syncs ? "true" : "false", v->over_share ? "true" : "false");
    cli_json_double(w, (double)v->allowed_syncs / v->lines.steps);
    fdw_puts(w, ", \"estimated_syncs_per_step\": "); /* of syncs_per_step (issue 24: counted) */
    cli_json_double(w, (double)v->estimated_syncs / v->lines.steps);
    fdw_printf(w, ", \"attribution_steps\": %llu", (unsigned long long)v->lines.attribution_steps);
    fdw_printf(
        w,
        ",\n   \"startup\": {\"apart\": %s, \"checked\": %s, \"syncs\": %llu, \"blocked_ns\": %llu, "
        "\"ok\": %s},\n",
        v->lines.startup_left_out ? "true" : "false", v->startup_checked ? "true" : "false",
        (unsigned long long)v->startup_syncs, (unsigned long long)v->startup_ns,
        v->over_startup ? "false" : "true");
    /* torch.compile's own syncs in the training steps: in no site row, not in the budget */
    fdw_printf(w, "   \"compile_work\": {\"syncs\": %llu, \"blocked_ns\": %llu},\n   \"sites\": [",
               (unsigned long long)v->lines.compile_count, (unsigned long long)v->lines.compile_ns);
    for (size_t i = 0; i < v->lines.n; i++) {
        const struct rep_line *l = &v->lines.lines[i];
        fdw_puts(w, i ? ",\n    {" : "\n    {");
        /* the report's row number (issue 35 item 6: one numbering in every view) */
        fdw_printf(w, "\"row\": %zu, ", i + 1);
        cli_line_json_fields(w, l);
        cli_line_json_ops(w, p, &v->lines, i);
        fdw_puts(w, "\"syncs_per_step\": ");
        cli_json_double(w, (double)l->count / v->lines.steps);
        fdw_puts(w, ", \"blocked_per_step_ns\": ");
        cli_json_double(w, (double)l->blocked_ns / v->lines.steps);
        fdw_puts(w, ", \"exact_syncs_per_step\": ");
        cli_json_double(w, (double)(l->count - l->estimated_count) / v->lines.steps);
        fdw_puts(w, ", \"estimated_syncs_per_step\": ");
        cli_json_double(w, (double)l->estimated_count / v->lines.steps);
        fdw_printf(w, ", \"startup_syncs\": %llu, \"allowed\": %s}",
                   (unsigned long long)l->startup_count, v->allowed[i] ? "true" : "false");
    }
    fdw_puts(w, "]}");
}

/* The closing members: the processes over budget named as the text's closing line names them
 * ("rank 3 on node-b"), each with its pid, rank and host; then "ok". */
static void json_over(struct fd_writer *w, const struct cli_set *set, const struct verdict *v,
                      size_t nover)
{
    fdw_puts(w, "],\n \"over_budget\": [");
    char name[128];
    for (size_t i = 0, k = 0; i < set->n; i++) {
        const struct rep_process *p = &set->procs[i];
        if (!over(&v[i]))
            continue;
        cli_rank_name(p, name, sizeof name);
        fdw_printf(w, "%s{\"name\": ", k++ ? ",\n  " : "\n  ");
        fdw_json_string(w, name);
        fdw_printf(w, ", \"pid\": %d, \"rank\": ", p->pid);
        if (p->rank >= 0)
            fdw_printf(w, "%d", p->rank);
        else
            fdw_puts(w, "null");
        fdw_puts(w, ", \"host\": ");
        if (p->host && *p->host)
            fdw_json_string(w, p->host);
        else
            fdw_puts(w, "null");
        fdw_putc(w, '}');
    }
    fdw_printf(w, "],\n \"ok\": %s}\n", nover ? "false" : "true");
}

int cli_check(const struct cli_set *set, const struct check_opts *o, int fd)
{
    struct fd_writer *w = malloc(sizeof *w);
    struct verdict *v = calloc(set->n ? set->n : 1, sizeof *v);
    if (!w || !v) {
        free(w);
        free(v);
        fprintf(stderr, "syncspy: out of memory\n");
        return 2;
    }
    fdw_init(w, fd);
    if (!o->json) /* names from the files: no control character reaches the terminal */
        fdw_set_shown(w);
    size_t judged = 0, nover = 0;
    int rc = 0;
    for (; judged < set->n; judged++) {
        if (judge(&set->procs[judged], o, &v[judged]) != 0) {
            fprintf(stderr, "syncspy: out of memory\n");
            rc = 2;
            break;
        }
        nover += over(&v[judged]);
    }
    if (rc == 0) {
        if (o->json)
            json_budget(w, o);
        for (size_t i = 0; i < set->n; i++) {
            if (o->json)
                json_process(w, &set->procs[i], &v[i], i == 0);
            else
                text_process(w, &set->procs[i], o, &v[i]);
        }
        if (o->json)
            json_over(w, set, v, nover);
        else if (nover)
            put_over_closing(w, set, v, nover, o);
        else
            fdw_printf(w, "syncspy check: %s within budget (%s)\n",
                       set->n == 1 ? "the process is" : "every process is", o->budget_text);
        rc = nover ? 1 : 0;
    }
    if (fdw_flush(w) != 0) {
        fprintf(stderr, "syncspy: writing the verdict: %s\n", strerror(errno));
        rc = 2;
    }
    for (size_t i = 0; i < judged; i++)
        verdict_free(&v[i]);
    free(v);
    free(w);
    return rc;
}
