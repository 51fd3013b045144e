/* cli/lines.h: what `syncspy check` and `syncspy diff` say about a line of the report
 * (output/report.h's rep_line): where it is, as text and as JSON fields, whether an --allow
 * FILE:LINE names it, and whether two runs' lines are the same one. CLI only. */
#ifndef SYNCSPY_CLI_LINES_H
#define SYNCSPY_CLI_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/fd_writer.h"
#include "output/hints.h"
#include "output/report.h"

/* "at FUNCTION  FILE:LINE", "backward of FUNCTION  FILE:LINE", "backward of NODE (its forward
 * line was not recorded)", "at FUNCTION (module)" for a native frame without a line. */
void cli_line_where(const struct rep_line *l, char *buf, size_t n);

/* The line's fields, each `"name": value, ` (api, kind, node, file, line, function, module). */
void cli_line_json_fields(struct fd_writer *w, const struct rep_line *l);

/* The row's APIs as the report's table prints them ("cudaMemcpyAsync x19, cudaStreamSynchronize
 * x19", report_apis_text), control characters escaped (text_escape): it is printed. */
void cli_line_apis(const struct rep_line *l, char *buf, size_t n);

/* Every operator that synced at a row (issue 35 item 1), for each view that lists them: the sites
 * of lines->lines[index] in p, their counts in the rates summed by op into sum[0..n) (n: those
 * there already, so the rows of several processes add up; an op past cap counted in *more).
 * Returns the new number of sums; hints_op_sums_sort puts the heaviest first. */
#define CLI_OPS_MAX 16
size_t cli_line_ops_add(const struct rep_process *p, const struct rep_lines *lines, size_t index,
                        struct hints_op_sum *sum, size_t n, size_t cap, size_t *more);
/* `"ops": [{"op", "hint", "syncs_per_step", "blocked_per_step_ns"}, ...], ` of sum[0..n). */
void cli_ops_json(struct fd_writer *w, const struct hints_op_sum *sum, size_t n, double steps);
/* cli_ops_json of lines->lines[index] in p, heaviest first, as the report lists them. */
void cli_line_json_ops(struct fd_writer *w, const struct rep_process *p,
                       const struct rep_lines *lines, size_t index);

/* --allow FILE:LINE: FILE a path or its tail at a '/', LINE >= 1. */
struct cli_allow {
    const char *file;
    size_t file_len;
    uint32_t line;
};
/* 0, or -1 when s is not FILE:LINE. */
int cli_allow_parse(const char *s, struct cli_allow *out);
/* Whether the line's FILE:LINE (its user frame, or a backward sync's forward line) is a's. */
bool cli_allow_matches(const struct cli_allow *a, const struct rep_line *l);

/* Whether two runs' lines are the same one: the same kind, and the same line of the
 * same file (a file compared by its last two path components, so checkouts in other folders
 * match), or for a native frame without a line the same function of the same module; a
 * backward sync whose forward line is unknown by its node. */
bool cli_lines_same(const struct rep_line *a, const struct rep_line *b);
/* cli_lines_same, and the same function at that line: one row of one process's report
 * (report_lines groups by function, file and line). The views that put two sets of one run's
 * lines side by side match their rows with it (top's last 10 s against since start, the lines
 * of several processes merged); a diff of two runs matches by line alone. */
bool cli_lines_same_row(const struct rep_line *a, const struct rep_line *b);
/* The order whose ties are cli_lines_same (for sorting lines to match them in n log n), and
 * its key made once per line (what it compares: the kind, node, and the file's tail and
 * line, or the function and module, or the offset and module). */
int cli_lines_cmp(const struct rep_line *a, const struct rep_line *b);
struct cli_line_key {
    const struct rep_line *line;
    const char *node, *name, *module;
    uint64_t num;
    uint8_t kind, cls;
    size_t seq; /* the caller's: where the line was met */
};
struct cli_line_key cli_line_key_of(const struct rep_line *l);
int cli_line_key_cmp(const struct cli_line_key *a, const struct cli_line_key *b);

/* A JSON number with the fraction a rate needs (no exponent, no NaN). */
void cli_json_double(struct fd_writer *w, double v);

#endif
