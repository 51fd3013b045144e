/* cli/ranks.h: the per-rank section of `syncspy report` over many processes (a job's ranks):
 * syncs/step and blocked share per rank (min, median, max), the ranks that wait most
 * (stragglers), the lines that sync on some ranks only, the ranks with no step. Counts as the
 * report's lines do (output/report.h report_lines), so `check` and this agree. CLI only. */
#ifndef SYNCSPY_CLI_RANKS_H
#define SYNCSPY_CLI_RANKS_H

#include <stddef.h>

#include "output/model.h"

/* A straggler waits this much more than the median rank: its blocked share at least
 * RANKS_STRAGGLER_RATIO times the median's and RANKS_STRAGGLER_POINTS percentage points above. */
#define RANKS_STRAGGLER_RATIO 1.5
#define RANKS_STRAGGLER_POINTS 5.0
#define RANKS_NAMED_MAX 8     /* ranks named in one list before "+N more" */
#define RANKS_LINES_MAX 10    /* lines on some ranks only shown */

/* Writes the section for procs (nothing when nprocs < 2). Returns 0, or -1 (errno: ENOMEM or
 * the write's). */
int cli_ranks_render(const struct rep_process *procs, size_t nprocs, int fd);

/* "rank 3 on node-a", "rank 3" or "pid 1234": how a process is named in lists. */
void cli_rank_name(const struct rep_process *p, char *buf, size_t n);

#endif
