/* output/report.h: the human sync-hotspot report, for one process (at exit, inside the target)
 * or many (the CLI merges processes and ranks). Never called on a recording path: it may
 * allocate, but writes only to the fd it is given (never to stdout/stderr directly). */
#ifndef SYNCSPY_REPORT_H
#define SYNCSPY_REPORT_H

#include <stddef.h>

#include "output/model.h"

/* SYNCSPY_TOP and the CLI's --top: how many sites (groups) the report shows. One range for both. */
#define REPORT_TOP_DEFAULT 10
#define REPORT_TOP_MAX 1000

struct report_opts {
    int top;            /* sites (groups) shown, 1..REPORT_TOP_MAX; 0: REPORT_TOP_DEFAULT */
    const char *summary_path; /* shown at the end when not NULL */
    int write_timeout_ms; /* > 0: a pipe, fifo or socket that takes no more for this long fails
                           * the report (ETIMEDOUT) instead of blocking (fdw_set_deadline) */
};

/* The human report for one or more processes (the CLI merges ranks/processes; each process
 * gets its header, then a merged hotspot table when nprocs > 1). Returns 0, or -1 on a write
 * error (errno set). */
int report_render_text(const struct rep_process *procs, size_t nprocs,
                       const struct report_opts *opts, int fd);

/* A function name as the report shows it: a C++ name without its parameter list, cut to 80
 * characters keeping its tail. Writes into buf (always NUL-terminated). */
void report_display_name(const char *function, char *buf, size_t buflen);

#endif
