/* cli/ranks.h: the per-rank view of many processes (a job's ranks): syncs/step and blocked share
 * per rank (min, median, max), the ranks that wait most (stragglers), the lines that sync on
 * some ranks only, the ranks with no step. Built once (cli_ranks_build) and rendered by
 * `syncspy report`'s per-rank section (cli_ranks_render) and `syncspy html`'s page (cli/html.c
 * writes the same view as JSON): one copy of the figures and of the straggler rule. Counts as
 * the report's lines do (output/report.h report_lines), so `check` and this agree. CLI only. */
#ifndef SYNCSPY_CLI_RANKS_H
#define SYNCSPY_CLI_RANKS_H

#include <stdbool.h>
#include <stddef.h>

#include "output/model.h"
#include "output/report.h"

/* A straggler waits this much more than the median rank: its blocked share at least
 * RANKS_STRAGGLER_RATIO times the median's and RANKS_STRAGGLER_POINTS percentage points above. */
#define RANKS_STRAGGLER_RATIO 1.5
#define RANKS_STRAGGLER_POINTS 5.0
#define RANKS_NAMED_MAX 8  /* ranks named in one list of the text before "+N more" */
#define RANKS_LINES_MAX 10 /* lines on some ranks only the text shows */
#define RANKS_WAITS_MOST 3 /* ranks in "waits most" */

/* One process's figures, over its training steps. */
struct ranks_fig {
    double syncs_per_step;
    double share; /* blocked time in % of the steps' wall time (0 when none) */
    bool no_step; /* no step mark came: the whole run is one step */
    bool straggler;
};

/* One process's line: lines[proc].lines[line]. */
struct ranks_at {
    size_t proc, line;
};

/* A line that syncs (in the training steps) on some processes only. */
struct ranks_line {
    const struct ranks_at *at; /* each process's line, by process: at[0..nat) */
    size_t nat;
    size_t k;            /* the distinct processes among them */
    uint64_t blocked_ns; /* theirs, summed */
};

struct ranks_view {
    const struct rep_process *procs;
    size_t nprocs;
    const struct rep_lines *lines; /* per process (the caller's, or the view's own) */
    struct ranks_fig *fig;         /* per process */
    size_t *by_syncs, *by_share;   /* the processes, lowest first (ties by index) */
    double syncs_median, share_median;
    size_t nstragglers; /* the last nstragglers of by_share */
    size_t nno_step;
    struct ranks_line *partial; /* heaviest (blocked time) first */
    size_t npartial;
    size_t ranked, hosts; /* processes with a rank; distinct hosts */
    const char *job;      /* the job id when all that have one agree */
    bool jobs_differ;
    struct rep_lines *own_lines;
    struct ranks_at *at;
};

/* Builds the view of procs[0..nprocs) (nprocs >= 1); lines: each process's report_lines, or
 * NULL to compute them (kept until cli_ranks_free). Returns 0, or -1 (errno ENOMEM; free it). */
int cli_ranks_build(const struct rep_process *procs, size_t nprocs, const struct rep_lines *lines,
                    struct ranks_view *v);
void cli_ranks_free(struct ranks_view *v);

/* "per rank: 5 processes on 3 hosts, job 77 (per step: each rank's own training steps)" */
void cli_ranks_header(const struct ranks_view *v, char *buf, size_t n);
/* The straggler rule as the section says it: "(blocked share 1.5x the median or more, and 5
 * points above it)", or when none is (none) "(no rank blocked 1.5x the median share and ...)". */
void cli_ranks_rule(char *buf, size_t n, bool none);
/* A figure as the section prints it: a rate ("5.00"), or a share ("10.0%"). */
void cli_ranks_format(char *buf, size_t n, double v, bool share);
/* Whether line l syncs on process proc. */
bool cli_ranks_line_on(const struct ranks_line *l, size_t proc);

/* Writes the section for procs (nothing when nprocs < 2). Returns 0, or -1 (errno: ENOMEM or
 * the write's). */
int cli_ranks_render(const struct rep_process *procs, size_t nprocs, int fd);

/* "rank 3 on node-a", "rank 3" or "pid 1234": how a process is named in lists. */
void cli_rank_name(const struct rep_process *p, char *buf, size_t n);

#endif
