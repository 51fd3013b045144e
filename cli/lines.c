/* cli/lines.c: a report line as `syncspy check` and `syncspy diff` show and match it (see
 * lines.h). CLI only: pure functions of the report model. */
#include "cli/lines.h"
#include "output/backward.h"
#include "output/fd_writer.h"
#include "output/hints.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *str(const char *s)
{
    return s ? s : "";
}

static const char *kind_name(uint8_t kind)
{
    return kind == REP_LINE_BACKWARD ? "backward" : kind == REP_LINE_NODE ? "node" : "line";
}

static void line_where_raw(const struct rep_line *l, char *buf, size_t n)
{
    const struct rep_frame *f = l->where;
    char name[128];
    report_display_name(f ? f->function : NULL, name, sizeof name);
    const char *lead = l->kind == REP_LINE_PLAIN ? "at" : "backward of";
    if (l->kind == REP_LINE_NODE && !f) {
        snprintf(buf, n, "backward of %s (its forward line was not recorded)", l->node);
    } else if (!f) {
        snprintf(buf, n, "(no stack)");
    } else if (*str(f->file) && f->line) {
        snprintf(buf, n, "%s %s  %s:%u", lead, *name ? name : "??", f->file, f->line);
    } else if (*str(f->file)) {
        snprintf(buf, n, "%s %s  %s", lead, *name ? name : "??", f->file);
    } else if (*name) {
        snprintf(buf, n, "%s %s (%s)", lead, name, rep_base_name(f->module));
    } else {
        snprintf(buf, n, "%s %s+0x%llx", lead, rep_base_name(f->module),
                 (unsigned long long)f->offset);
    }
    if (l->kind == REP_LINE_NODE && f) {
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, " (in the backward of %s)", l->node);
    }
}

/* ... with the file's and the node's control characters escaped (text_escape): it is printed */
void cli_line_where(const struct rep_line *l, char *buf, size_t n)
{
    char raw[1024];
    line_where_raw(l, raw, sizeof raw);
    text_escape(buf, n, raw);
}

static void json_field(struct fd_writer *w, const char *name, const char *value)
{
    fdw_printf(w, "\"%s\": ", name);
    if (value)
        fdw_json_string(w, value);
    else
        fdw_puts(w, "null");
    fdw_puts(w, ", ");
}

void cli_line_apis(const struct rep_line *l, char *buf, size_t n)
{
    char raw[1024];
    report_apis_text(l->apis, l->napis, l->other_apis, raw, sizeof raw);
    text_escape(buf, n, raw);
}

void cli_line_json_fields(struct fd_writer *w, const struct rep_line *l)
{
    const struct rep_frame *f = l->where;
    json_field(w, "api", l->api);
    fdw_puts(w, "\"apis\": ["); /* issue 35 item 6: a row's every API, a copy and its synchronize */
    for (size_t i = 0; i < l->napis; i++) {
        fdw_puts(w, i ? ", {" : "{");
        json_field(w, "api", l->apis[i].api);
        fdw_printf(w, "\"syncs\": %llu}", (unsigned long long)l->apis[i].count);
    }
    fdw_puts(w, "], ");
    json_field(w, "kind", kind_name(l->kind));
    json_field(w, "node", l->kind == REP_LINE_PLAIN ? NULL : l->node);
    json_field(w, "file", f && *str(f->file) ? f->file : NULL);
    fdw_printf(w, "\"line\": %u, ", f ? f->line : 0);
    json_field(w, "function", f && *str(f->function) ? f->function : NULL);
    json_field(w, "module", f && !f->python && *str(f->module) ? f->module : NULL);
    struct site_op op; /* which operator the line is (output/hints.h) */
    if (l->heaviest)
        hints_op(l->heaviest, &op);
    json_field(w, "op", l->heaviest ? op.op : NULL);
    json_field(w, "hint", l->heaviest && *op.hint ? op.hint : NULL);
    /* issue 35 item 2: the framework's own line that made the wait, under the user's */
    const struct rep_frame *fw =
        l->kind == REP_LINE_PLAIN && l->heaviest
            ? hints_framework_frame(l->heaviest, hints_user_frame(l->heaviest))
            : NULL;
    char at[1024] = "";
    if (fw)
        snprintf(at, sizeof at, "%s  %s:%u", str(fw->function), str(fw->file), fw->line);
    json_field(w, "framework_at", fw ? at : NULL);
    /* issue 24: the estimated part of a backward line's figure, and why a node line has none */
    fdw_printf(w, "\"estimated_syncs\": %llu, \"estimated_blocked_ns\": %llu, ",
               (unsigned long long)l->estimated_count, (unsigned long long)l->estimated_ns);
    fdw_printf(w, "\"estimate_split_lines\": %u, \"unseen_causes\": ",
               l->estimated_count ? l->split_lines : 0);
    if (l->kind != REP_LINE_NODE) {
        fdw_puts(w, "null, ");
        return;
    }
    fdw_putc(w, '[');
    for (uint32_t i = 0; i < l->ncauses; i++) {
        fdw_puts(w, i ? ", {" : "{");
        json_field(w, "cause", l->causes[i].cause);
        json_field(w, "why", l->causes[i].cause ? backward_cause_text(l->causes[i].cause) : NULL);
        fdw_printf(w, "\"syncs\": %llu}", (unsigned long long)l->causes[i].count);
    }
    fdw_puts(w, "], ");
}

size_t cli_line_ops_add(const struct rep_process *p, const struct rep_lines *lines, size_t index,
                        struct hints_op_sum *sum, size_t n, size_t cap, size_t *more)
{
    for (size_t i = 0; p->sites && lines->of_site && i < p->nsites; i++) {
        if (lines->of_site[i].line != index || !lines->of_site[i].count)
            continue;
        struct site_op op;
        hints_op(&p->sites[i], &op);
        n = hints_op_sum_add(sum, n, cap, &op, lines->of_site[i].count,
                             lines->of_site[i].blocked_ns, more);
    }
    return n;
}

void cli_ops_json(struct fd_writer *w, const struct hints_op_sum *sum, size_t n, double steps)
{
    fdw_puts(w, "\"ops\": [");
    for (size_t k = 0; k < n; k++) {
        fdw_puts(w, k ? ", {" : "{");
        json_field(w, "op", sum[k].op.op);
        json_field(w, "hint", *sum[k].op.hint ? sum[k].op.hint : NULL);
        fdw_puts(w, "\"syncs_per_step\": ");
        cli_json_double(w, (double)sum[k].count / steps);
        fdw_puts(w, ", \"blocked_per_step_ns\": ");
        cli_json_double(w, (double)sum[k].ns / steps);
        fdw_putc(w, '}');
    }
    fdw_puts(w, "], ");
}

void cli_line_json_ops(struct fd_writer *w, const struct rep_process *p,
                       const struct rep_lines *lines, size_t index)
{
    struct hints_op_sum sum[CLI_OPS_MAX];
    size_t more = 0; /* more than CLI_OPS_MAX ops at one line: the first ones */
    size_t n = cli_line_ops_add(p, lines, index, sum, 0, CLI_OPS_MAX, &more);
    hints_op_sums_sort(sum, n);
    cli_ops_json(w, sum, n, lines->steps);
}

int cli_allow_parse(const char *s, struct cli_allow *out)
{
    const char *colon = s ? strrchr(s, ':') : NULL;
    if (!colon || colon == s || !colon[1])
        return -1;
    unsigned long v = 0;
    for (const char *p = colon + 1; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000ul)
            return -1;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v == 0)
        return -1;
    out->file = s;
    out->file_len = (size_t)(colon - s);
    out->line = (uint32_t)v;
    return 0;
}

/* path is name, or ends with "/" name */
static bool path_is(const char *path, const char *name, size_t len)
{
    while (len && *name == '/' && len > 1 && name[1] == '/') /* "//x" as "/x" */
        name++, len--;
    size_t pl = strlen(path);
    if (pl < len || memcmp(path + pl - len, name, len) != 0)
        return false;
    return pl == len || name[0] == '/' || path[pl - len - 1] == '/';
}

bool cli_allow_matches(const struct cli_allow *a, const struct rep_line *l)
{
    const struct rep_frame *f = l->where;
    return f && f->line == a->line && *str(f->file) && path_is(f->file, a->file, a->file_len);
}

/* The last two components of a path ("examples/seg_loss.py"). */
static const char *path_tail(const char *path)
{
    const char *s = str(path), *end = s + strlen(s), *p = end;
    int slashes = 0;
    while (p > s) {
        if (p[-1] == '/' && ++slashes == 2)
            break;
        p--;
    }
    return p;
}

/* How two lines are matched, by class: no frame, a frame with a file (its tail and line), a
 * native frame with a function (it and its module's base name), else its offset and module. */
enum where_class { WHERE_NONE, WHERE_FILE, WHERE_FUNCTION, WHERE_OFFSET };

static enum where_class where_class(const struct rep_frame *f)
{
    if (!f)
        return WHERE_NONE;
    if (*str(f->file))
        return WHERE_FILE;
    return *str(f->function) ? WHERE_FUNCTION : WHERE_OFFSET;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

struct cli_line_key cli_line_key_of(const struct rep_line *l)
{
    const struct rep_frame *f = l->where;
    struct cli_line_key k = {.line = l,
                             .kind = l->kind,
                             .node = l->kind == REP_LINE_NODE ? l->node : "",
                             .cls = (uint8_t)where_class(f),
                             .name = "",
                             .module = ""};
    switch (k.cls) {
    case WHERE_FILE: k.name = path_tail(f->file), k.num = f->line; break;
    case WHERE_FUNCTION: k.name = f->function, k.module = rep_base_name(f->module); break;
    case WHERE_OFFSET: k.num = f->offset, k.module = rep_base_name(f->module); break;
    }
    return k;
}

int cli_line_key_cmp(const struct cli_line_key *a, const struct cli_line_key *b)
{
    int c = (int)a->kind - (int)b->kind;
    if (c || (c = strcmp(a->node, b->node)) || (c = (int)a->cls - (int)b->cls) ||
        (c = cmp_u64(a->num, b->num)) || (c = strcmp(a->name, b->name)))
        return c;
    return strcmp(a->module, b->module);
}

int cli_lines_cmp(const struct rep_line *a, const struct rep_line *b)
{
    struct cli_line_key x = cli_line_key_of(a), y = cli_line_key_of(b);
    return cli_line_key_cmp(&x, &y);
}

bool cli_lines_same(const struct rep_line *a, const struct rep_line *b)
{
    return cli_lines_cmp(a, b) == 0;
}

bool cli_lines_same_row(const struct rep_line *a, const struct rep_line *b)
{
    if (!cli_lines_same(a, b))
        return false;
    /* the report's groups (output/report.c key_cmp) are by function too: three functions
     * defined on one line are three rows */
    const struct rep_frame *x = a->where, *y = b->where;
    return !x || !y || strcmp(str(x->function), str(y->function)) == 0;
}

void cli_json_double(struct fd_writer *w, double v)
{
    if (!isfinite(v))
        v = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", v);
    /* trailing zeros off, keeping one digit after the point: 5.000000 -> 5.0 */
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot + 1 && *end == '0')
            *end-- = '\0';
    }
    fdw_puts(w, buf);
}
