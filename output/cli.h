/* output/cli.h: shared by the files of the `syncspy` command (output/cli*.c), which is a program
 * of its own: it reads summary.json files and never runs inside a target process. */
#ifndef SYNCSPY_CLI_H
#define SYNCSPY_CLI_H

#include <stddef.h>

#include "output/report.h"

#define SYNCSPY_VERSION "0.1.0"

/* The processes read from one DIR argument. */
struct cli_set {
    struct rep_process *procs;
    size_t n;
};

/* Reads DIR: a process folder (DIR/summary.json), a SYNCSPY_OUT root (DIR/pid<P>/ and
 * DIR/rank<R>-pid<P>/, each with a summary.json), or a summary.json file itself. Processes come
 * sorted by rank (ranked ones first), then pid. Each file that cannot be read gets one line on
 * stderr. Returns the number of such problems; set->n may be 0. */
size_t cli_load(const char *dir, struct cli_set *set);
void cli_set_free(struct cli_set *set);

/* Exports (output/cli_export.c). Each writes the whole document to fd: 0, or -1 with errno. */
int cli_export_folded(const struct rep_process *procs, size_t n, int fd);
int cli_export_chrome(const struct rep_process *procs, size_t n, int fd);

#endif
