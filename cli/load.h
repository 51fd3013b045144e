/* cli/load.h: what one DIR argument of the `syncspy` command names, read into the report model
 * (and on request the timeline): a process folder, a SYNCSPY_OUT root whose processes are
 * merged, or a trace.bin or summary.json file. CLI only: it reads files, never runs inside a
 * target process. */
#ifndef SYNCSPY_CLI_LOAD_H
#define SYNCSPY_CLI_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/trace_read.h"
#include "output/model.h"

/* One process as read from its folder. */
struct cli_proc {
    struct rep_process rep;
    bool traced;     /* read from trace.bin (else from summary.json) */
    bool has_events; /* events holds its timeline (CLI_LOAD_EVENTS, traced) */
    struct trace_events events;
    /* a traced process's summary.json beside its trace.bin (the same process's), read at most
     * once when the trace lacks what it has: step records (rep.steps_basis
     * REP_STEPS_FROM_SUMMARY), torch.compile's recompilations, the mark of a failed write; rep
     * points into it (owned: read) */
    struct rep_process beside;
    bool beside_read; /* it was looked for (read or not there) */
};

/* The processes read from one DIR argument, sorted by rank (ranked ones first), then pid. */
struct cli_set {
    struct cli_proc *items;
    struct rep_process *procs; /* items[i].rep side by side, for the renderers */
    size_t n;
};

#define CLI_LOAD_EVENTS 1u /* keep the per-event timeline of traced processes */

/* Reads DIR: a process folder (its trace.bin when it has one, also after kill -9, else its
 * summary.json), a SYNCSPY_OUT root (DIR/pid<P>/ and DIR/rank<R>-<host>-pid<P>/, each read the same
 * way), or a trace.bin or summary.json file itself. Each file that cannot be read, or that
 * contradicts itself (cli/validate.h), gets one line on stderr. A trace.bin that misses step
 * records without a count of them takes its step figures from the folder's summary.json (else
 * they are estimates: rep.steps_basis). Returns the number of problems; set->n may be 0. */
size_t cli_load(const char *dir, unsigned flags, struct cli_set *set);
/* A process folder's name: "pid<P>", "rank<R>-<host>-pid<P>" or (no host, or an older
 * syncspy's) "rank<R>-pid<P>" (*rank -1 for the first), each with a ".<N>" suffix or not (the
 * agent's naming, agent/process/lifecycle.c). */
bool cli_process_folder_name(const char *name, int *rank, int *pid);
void cli_set_free(struct cli_set *set);

/* A process folder found under a SYNCSPY_OUT root. */
struct cli_folder {
    char *name;
    int rank, pid;
};
/* The process folders under root (at most max: *more is set when there were others), sorted as
 * a merged report orders its processes: ranked first by rank, then by pid, then by name.
 * Returns how many, or -1 when root cannot be read (errno from opendir); *out is NULL when
 * there are none. Free with cli_folders_free. */
long cli_process_folders(const char *root, size_t max, struct cli_folder **out, bool *more);
void cli_folders_free(struct cli_folder *f, size_t n);

/* s (a path, a reader's message naming one) as stderr may show it: control characters and bytes
 * that are not UTF-8 escaped as the report escapes names (text_escape, output/fd_writer.h), so
 * a folder named with ESC or BEL moves no cursor in an error line. In one of 4 static buffers
 * used in turn (at most 4 in one printf; long text is cut). */
const char *cli_shown(const char *s);

#endif
