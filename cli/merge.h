/* cli/merge.h: the report's lines (output/report.h's report_lines) of every process of a DIR,
 * merged line by line over the processes (cli/lines.h's cli_lines_same): the rows `syncspy
 * html` and `syncspy top` show for a SYNCSPY_OUT root. CLI only. */
#ifndef SYNCSPY_CLI_MERGE_H
#define SYNCSPY_CLI_MERGE_H

#include <stdint.h>

#include "cli/load.h"
#include "output/report.h"

struct cli_mline {
    const struct rep_line *line;      /* the first process's (its where, api, kind) */
    size_t proc;                      /* that process */
    uint64_t count, blocked_ns;       /* summed over the processes' training steps */
    uint64_t startup_count, max_ns;
};

struct cli_merged {
    struct rep_lines *per_proc;       /* each process's lines */
    uint32_t **merged;                /* [process][its line]: the index of its merged line */
    struct cli_mline *lines;          /* heaviest (blocked time) first */
    size_t n, nprocs;
    double steps, wall_ns;            /* the training steps of all processes (at least 1) */
};

/* 0, or -1 (errno ENOMEM; free what was built with cli_merged_free). */
int cli_merge_lines(const struct cli_set *set, struct cli_merged *m);
void cli_merged_free(struct cli_merged *m);

#endif
