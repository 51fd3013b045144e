/* cli/lines.h: what `syncspy check` and `syncspy diff` say about a line of the report
 * (output/report.h's rep_line): where it is, as text and as JSON fields, whether an --allow
 * FILE:LINE names it, and whether two runs' lines are the same one. CLI only. */
#ifndef SYNCSPY_CLI_LINES_H
#define SYNCSPY_CLI_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/fd_writer.h"
#include "output/report.h"

/* "at FUNCTION  FILE:LINE", "backward of FUNCTION  FILE:LINE", "backward of NODE (its forward
 * line was not recorded)", "at FUNCTION (module)" for a native frame without a line. */
void cli_line_where(const struct rep_line *l, char *buf, size_t n);

/* The line's fields, each `"name": value, ` (api, kind, node, file, line, function, module). */
void cli_line_json_fields(struct fd_writer *w, const struct rep_line *l);

/* `"ops": [{"op", "hint", "syncs_per_step", "blocked_per_step_ns"}, ...], ` of lines->lines[index]
 * in p: every operator that synced at that line (its sites' counts in the rates summed by op),
 * heaviest first, as the report lists them (issue 35 item 1). */
void cli_line_json_ops(struct fd_writer *w, const struct rep_process *p, const struct rep_lines *lines,
                       size_t index);

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

/* Whether two runs' lines are the same one: the same API and kind, and the same line of the
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
 * its key made once per line (what it compares: the API, kind, node, and the file's tail and
 * line, or the function and module, or the offset and module). */
int cli_lines_cmp(const struct rep_line *a, const struct rep_line *b);
struct cli_line_key {
    const struct rep_line *line;
    const char *api, *node, *name, *module;
    uint64_t num;
    uint8_t kind, cls;
    size_t seq; /* the caller's: where the line was met */
};
struct cli_line_key cli_line_key_of(const struct rep_line *l);
int cli_line_key_cmp(const struct cli_line_key *a, const struct cli_line_key *b);

/* A JSON number with the fraction a rate needs (no exponent, no NaN). */
void cli_json_double(struct fd_writer *w, double v);

#endif
