/* output/model.h: the report model: what one process recorded, as the agent builds it from its
 * tables at exit and as the CLI rebuilds it from trace.bin or summary.json. Shared by both; plain
 * data, no functions but one inline helper. */
#ifndef SYNCSPY_MODEL_H
#define SYNCSPY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
    /* of count and blocked_ns: those in the step still open at exit (rep_step.partial), which
     * per-step rates leave out with that step */
    uint64_t partial_count;
    uint64_t partial_blocked_ns;
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
    /* only when rebuilt from a trace.bin (cli/trace_read.h); zero otherwise: */
    bool trace_unfinished;    /* no END record: killed (or still running); counts of the last flush */
    bool trace_truncated;     /* and its last record was cut (killed while writing it) */
    /* the exit report's and a trace.bin's: */
    uint64_t syncs_dropped;   /* sync events the trace buffers had no room for (counts stay exact) */
    uint64_t launches_dropped;
    void *owned;              /* storage of a CLI reader (cli/summary_read.h, cli/trace_read.h),
                               * freed by it; else NULL */
};

/* The last component of a path (a module's or a source file's); "" for NULL. */
static inline const char *rep_base_name(const char *path)
{
    const char *s = path ? path : "", *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

#endif
