/* output/report.h: the human sync-hotspot report, for one process (at exit, inside the target)
 * or many (the CLI merges processes and ranks). Never called on a recording path: it may
 * allocate, but writes only to the fd it is given (never to stdout/stderr directly). */
#ifndef SYNCSPY_REPORT_H
#define SYNCSPY_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "output/model.h"

/* SYNCSPY_TOP and the CLI's --top: how many sites (groups) the report shows. One range for both. */
#define REPORT_TOP_DEFAULT 10
#define REPORT_TOP_MAX 1000

/* SYNCSPY_COLOR: colour only on a terminal (auto, the default; NO_COLOR or TERM=dumb: none),
 * always, or never. Files and pipes get the same bytes with or without this. */
enum report_color { REPORT_COLOR_AUTO, REPORT_COLOR_ALWAYS, REPORT_COLOR_NEVER };

/* Whether the report written to fd is coloured under mode (auto: fd is a terminal and TERM is
 * not "dumb"). */
bool report_color_wanted(enum report_color mode, int fd);

struct report_opts {
    int top;            /* sites (groups) shown, 1..REPORT_TOP_MAX; 0: REPORT_TOP_DEFAULT */
    const char *summary_path; /* shown at the end when not NULL */
    int write_timeout_ms; /* > 0: a pipe, fifo or socket that takes no more for this long fails
                           * the report (ETIMEDOUT) instead of blocking (fdw_set_deadline) */
    bool color;         /* ANSI colours (report_color_wanted) */
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
