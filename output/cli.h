/* output/cli.h: shared by the files of the `syncspy` command (output/cli*.c), which is a program
 * of its own: it reads trace.bin and summary.json files and never runs inside a target process. */
#ifndef SYNCSPY_CLI_H
#define SYNCSPY_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "output/report.h"
#include "output/trace_read.h"

#define SYNCSPY_VERSION "0.1.0"

/* One process as read from its folder. */
struct cli_proc {
    struct rep_process rep;
    bool traced;               /* read from trace.bin (else from summary.json) */
    bool has_events;           /* events holds its timeline (CLI_LOAD_EVENTS, traced) */
    struct trace_events events;
};

/* The processes read from one DIR argument, sorted by rank (ranked ones first), then pid. */
struct cli_set {
    struct cli_proc *items;
    struct rep_process *procs; /* items[i].rep side by side, for the renderers */
    size_t n;
};

#define CLI_LOAD_EVENTS 1u     /* keep the per-event timeline of traced processes */

/* Reads DIR: a process folder (its trace.bin when it has one, also after kill -9, else its
 * summary.json), a SYNCSPY_OUT root (DIR/pid<P>/ and DIR/rank<R>-pid<P>/, each read the same
 * way), or a trace.bin or summary.json file itself. Each file that cannot be read gets one line
 * on stderr. Returns the number of such problems; set->n may be 0. */
size_t cli_load(const char *dir, unsigned flags, struct cli_set *set);
void cli_set_free(struct cli_set *set);

/* Progress lines on stderr for long inputs: one per CLI_PROGRESS_EVERY records or events, once
 * stderr is a terminal or the command has run for a second (so tests stay quiet). */
#define CLI_PROGRESS_EVERY 1000000
void cli_progress_start(void);
bool cli_progress_wanted(void);

/* Exports (output/cli_export.c). Each writes the whole document to fd: 0, or -1 with errno. */
int cli_export_folded(const struct cli_set *set, int fd);
int cli_export_chrome(const struct cli_set *set, int fd);

#endif
