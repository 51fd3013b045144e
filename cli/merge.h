/* cli/merge.h: the report's lines (output/report.h's report_lines) of every process of a DIR,
 * merged line by line over the processes (cli/lines.h's cli_lines_same_row): the rows `syncspy
 * html` and `syncspy top` show for a SYNCSPY_OUT root, one per row of the report's table, in its
 * order (for one process its numbers: row k is the report's k + 1). CLI only. */
#ifndef SYNCSPY_CLI_MERGE_H
#define SYNCSPY_CLI_MERGE_H

#include <stdint.h>

#include "cli/load.h"
#include "output/hints.h"
#include "output/report.h"

struct cli_mline {
    const struct rep_line *line; /* the first process's (its where, api, kind) */
    size_t proc;                 /* that process */
    uint64_t count, blocked_ns;  /* summed over the processes' training steps */
    uint64_t startup_count, max_ns;
    struct rep_api_count apis[REP_LINE_APIS_MAX]; /* summed over the processes, most first */
    size_t napis, other_apis;
};

struct cli_merged {
    struct rep_lines *per_proc; /* each process's lines */
    uint32_t **merged;          /* [process][its line]: the index of its merged line */
    struct cli_mline *lines;    /* heaviest (blocked time) first */
    size_t n, nprocs;
    double steps, wall_ns; /* the training steps of all processes (at least 1) */
};

/* Every operator that synced at merged row k, summed over the processes (cli_line_ops_add),
 * heaviest first, into sum[0..cap); an op past cap counted in *more. Returns their number. */
size_t cli_merged_ops(const struct cli_set *set, const struct cli_merged *m, size_t k,
                      struct hints_op_sum *sum, size_t cap, size_t *more);

/* 0, or -1 (errno ENOMEM; free what was built with cli_merged_free). */
int cli_merge_lines(const struct cli_set *set, struct cli_merged *m);
void cli_merged_free(struct cli_merged *m);

#endif
