/* output/report.h: the report model shared by the agent (built from its tables at exit) and by
 * the CLI (rebuilt from summary.json files), and its renderings: the human sync-hotspot report
 * and summary.json. Never called on a recording path: may allocate, may use stdio on its own
 * buffers, but writes only to the fd it is given (never to stdout/stderr directly). */
#ifndef SYNCSPY_REPORT_H
#define SYNCSPY_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One frame, already symbolized. Any string may be NULL or "" when unknown. */
struct rep_frame {
    const char *function; /* demangled C++/C name, or Python qualified name */
    const char *module;   /* path of the ELF object ("" for Python frames) */
    const char *file;     /* source file, when known */
    uint32_t line;        /* 0 when unknown */
    uint64_t offset;      /* module-relative address of the frame (native frames) */
    bool python;          /* a Python frame */
};

/* One sync site: (api, full stack). frames are innermost first, starting at the caller of
 * the CUDA API. */
struct rep_site {
    const char *api;
    uint64_t count;
    uint64_t blocked_ns;
    uint64_t max_ns;
    uint32_t nframes;
    const struct rep_frame *frames;
    /* SYNCSPY_GPU=1 (CUPTI activity records): after gpu_idle_syncs of its syncs (those whose next
     * device work was seen) the GPU sat idle gpu_idle_ns in total, from the sync's end until new
     * work began; gpu_next_work names that work (last seen, may be NULL). 0 syncs: not measured. */
    uint64_t gpu_idle_ns;
    uint64_t gpu_idle_syncs;
    const char *gpu_next_work;
};

/* One active step (a step the schedule records). */
struct rep_step {
    uint64_t step;
    uint64_t wall_ns;
    uint64_t syncs;
    uint64_t blocked_ns;
    uint64_t launches;
    bool partial; /* the step still open at exit (no closing mark) */
};

/* Everything one process recorded. */
struct rep_process {
    int pid;
    int rank;                 /* -1 when RANK was not set */
    const char *schedule;     /* SYNCSPY_SCHEDULE as parsed, e.g. "all steps", or "skip_first=..." */
    uint64_t steps_seen;      /* steps begun, active or not (last step number + 1) */
    const struct rep_step *steps;
    size_t nsteps;            /* active steps listed in steps[] */
    uint64_t steps_omitted;   /* active steps recorded in totals but not listed (memory cap) */
    const struct rep_site *sites;
    size_t nsites;
    /* totals over all active steps, listed or omitted: */
    uint64_t active_steps;
    uint64_t syncs;
    uint64_t blocked_ns;
    uint64_t launches;
    uint64_t wall_ns;
    uint64_t unattributed_syncs; /* syncs whose stack could not be kept (table full): still in totals */
    /* only when rebuilt from a trace.bin (output/trace_read.h); zero otherwise: */
    bool trace_unfinished;    /* no END record: killed (or still running); counts of the last flush */
    bool trace_truncated;     /* and its last record was cut (killed while writing it) */
    uint64_t syncs_dropped;   /* sync events the trace buffers had no room for (counts stay exact) */
    uint64_t launches_dropped;
    void *owned;              /* storage of summary_read_json (freed by summary_free) or of
                               * trace_read (freed by trace_free); else NULL */
};

struct report_opts {
    int top;            /* sites (groups) shown, SYNCSPY_TOP; default 10 */
    const char *summary_path; /* shown at the end when not NULL */
};

/* The human report for one or more processes (the CLI merges ranks/processes; each process
 * gets its header, then a merged hotspot table when nprocs > 1). Returns 0, or -1 on a write
 * error (errno set). */
int report_render_text(const struct rep_process *procs, size_t nprocs,
                       const struct report_opts *opts, int fd);

/* Index of the site's innermost user frame: the first frame, innermost first, that is neither
 * the CUDA runtime, PyTorch, CPython, the C/C++ runtime nor syncspy (by module basename), nor a
 * Python frame of the standard library or of torch itself; 0 when every frame is such. The
 * report groups sites by this frame. */
uint32_t report_user_frame(const struct rep_site *site);

/* The advice for a site, from report.c's hint table (first matching rule: frame function names
 * from the CUDA call up to the user frame, or the API name), with *matched set to the function
 * or API that matched; NULL when no rule applies. */
const char *report_hint(const struct rep_site *site, const char **matched);

/* A function name as the report shows it: a C++ name without its parameter list, cut to 80
 * characters keeping its tail. Writes into buf (always NUL-terminated). */
void report_display_name(const char *function, char *buf, size_t buflen);

/* summary.json exactly as DESIGN.md describes. Returns 0 or -1 on a write error. */
int summary_write_json(const struct rep_process *proc, int fd);

/* Reads a summary.json written by summary_write_json (or a compatible later version).
 * On success returns 0 and fills *out with storage owned by *out (free with
 * summary_free). On a bad, truncated or foreign file returns -1 and writes one sentence into
 * err. Never crashes and never allocates without bound on hostile input. */
int summary_read_json(const char *path, struct rep_process *out, char *err, size_t errlen);
void summary_free(struct rep_process *proc);

#endif
