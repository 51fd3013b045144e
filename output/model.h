/* output/model.h: the report model: what one process recorded, as the agent builds it from its
 * tables at exit and as the CLI rebuilds it from trace.bin or summary.json. Shared by both; plain
 * data, no functions but one inline helper. */
#ifndef SYNCSPY_MODEL_H
#define SYNCSPY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A section marker among a site's frames (a backward-pass sync, agent/record/autograd.h): no frame of
 * code but where a section begins. A sync's own frames come first; after REP_MARK_BACKWARD
 * (function: the autograd node's type, e.g. "IndexBackward0") the forward stack that created
 * the node, innermost first; after REP_MARK_CALLER the stack of the thread that called
 * backward; REP_MARK_UNSEEN (function: why, output/backward.h backward_cause_key) ends the own
 * frames of a backward sync that has no forward line. */
enum rep_mark {
    REP_MARK_NONE = 0,
    REP_MARK_BACKWARD = 1,
    REP_MARK_CALLER = 2,
    REP_MARK_UNSEEN = 3
};

/* One frame, already symbolized. Any string may be NULL or "" when unknown. */
struct rep_frame {
    const char *function; /* demangled C++/C name, or Python qualified name */
    const char *module;   /* path of the ELF object ("" for Python frames) */
    const char *file;     /* source file, when known */
    uint32_t line;        /* 0 when unknown */
    uint64_t offset;      /* module-relative address of the frame (native frames) */
    bool python;          /* a Python frame */
    uint8_t mark;         /* enum rep_mark: a section marker, not a frame */
};

/* The sections of a site's frames: its own [0, own), and, for a backward-pass sync, the node's
 * name and the forward [forward, forward + nforward) and caller [caller, caller + ncaller)
 * frames (n* 0 when absent). */
struct rep_sections {
    uint32_t own;
    const char *node;
    const char *unseen; /* a backward sync without its forward line: why (cause key), else NULL */
    uint32_t forward, nforward;
    uint32_t caller, ncaller;
};

static inline struct rep_sections rep_site_sections(const struct rep_frame *f, uint32_t n)
{
    struct rep_sections s = {n, NULL, NULL, 0, 0, 0, 0};
    uint32_t *open = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (f[i].mark == REP_MARK_NONE) {
            if (open)
                (*open)++;
            continue;
        }
        if (s.own == n)
            s.own = i;
        if (f[i].mark == REP_MARK_UNSEEN) {
            s.unseen = f[i].function ? f[i].function : "";
            open = NULL;
        } else if (f[i].mark == REP_MARK_BACKWARD) {
            s.node = f[i].function;
            s.forward = i + 1;
            open = &s.nforward;
        } else {
            s.caller = i + 1;
            open = &s.ncaller;
        }
    }
    return s;
}

/* The parts of a count (a site's, a thread's) that per-step rates leave out: start-up (step 0,
 * from the process's start to the first step mark) and the step still open at exit. */
struct rep_split {
    uint64_t startup_count, startup_ns;
    uint64_t partial_count, partial_ns;
};

/* The split of a count from what a counter kept (output/phase_counter.h, trace.bin's SITE_TOTALS): its
 * start-up part, and the step of its latest sync (+1; 0: none) with the count and ns when that
 * step began there. last_step: the run's last step, still open at exit when partial. */
struct rep_phase_raw {
    uint64_t count, ns, startup_count, startup_ns, seen_step, base_count, base_ns;
};

static inline struct rep_split rep_split_of(const struct rep_phase_raw *r, uint64_t last_step,
                                            bool partial)
{
    /* a live snapshot of racing counters may read a part just added before its total: a part
     * is never more than its total */
    struct rep_split s = {r->startup_count < r->count ? r->startup_count : r->count,
                          r->startup_ns < r->ns ? r->startup_ns : r->ns, 0, 0};
    /* no step mark came: step 0 is the step still open at exit, not a start-up that ended (the
     * parts stay a partition of the count: start-up none, all of it the open step's) */
    if (partial && last_step == 0)
        s.startup_count = s.startup_ns = 0;
    if (partial && r->seen_step == last_step + 1 && r->count >= r->base_count &&
        r->ns >= r->base_ns) {
        s.partial_count = r->count - r->base_count;
        s.partial_ns = r->ns - r->base_ns;
    }
    return s;
}

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
    struct rep_split split; /* of count and blocked_ns */
    uint32_t threads;       /* how many threads synced here (0: not known; at most 16 counted) */
    uint64_t pinned;        /* of count, the syncs right after a copy from or to pinned host
                             * memory (0: none, or not known before trace format 1.7) */
};

/* A function torch.compile compiled again because a guard of its compiled code failed (Dynamo's
 * guard_failures, read at the end of each compilation: agent/step/recompiles.h). */
struct rep_recompile {
    const char *function, *file;
    uint32_t line;      /* the function's first line */
    uint64_t count;     /* its recompilations */
    uint64_t in_steps;  /* of them after start-up (step 1 on) */
    const char *reason; /* the last one's first guard failure, in Dynamo's words */
};

/* One thread that synced: its syncs and blocked time (with their split). ends_steps: the thread
 * that marked the steps (the training loop's: the optimizer hook's or syncspy.step()'s caller);
 * tid 0: threads that exited, together (beyond the ones the agent keeps by name). */
struct rep_thread {
    uint32_t tid;
    const char *name;
    uint64_t syncs, blocked_ns;
    struct rep_split split;
    bool ends_steps;
};

/* One active step (a step the schedule records). */
struct rep_step {
    uint64_t step;
    uint64_t wall_ns;
    uint64_t syncs;
    uint64_t blocked_ns;
    uint64_t launches;
    bool partial; /* the step still open at exit (no closing mark) */
    bool
        attributed; /* backward syncs were attributed to their forward lines (agent/record/autograd.h) */
};

/* Why a step was recorded: its schedule (SYNCSPY_SCHEDULE), `syncspy start` from outside the
 * process, or syncspy.start() (syncspy_start) inside it (agent/background/control.h). */
enum rep_cause { REP_CAUSE_SCHEDULE = 0, REP_CAUSE_START = 1, REP_CAUSE_PY_START = 2, REP_CAUSES };
static inline const char *rep_cause_name(unsigned cause)
{
    return cause == REP_CAUSE_START      ? "syncspy start"
           : cause == REP_CAUSE_PY_START ? "syncspy.start()"
                                         : "schedule";
}

/* Steps first..last (inclusive), recorded for one cause. */
struct rep_range {
    uint64_t first, last;
    uint8_t cause; /* enum rep_cause */
};

/* Where a process's step figures come from when its trace misses step records. */
enum rep_steps_basis {
    REP_STEPS_RECORDED = 0,     /* the records (and the trace's counts of the lost ones): exact */
    REP_STEPS_FROM_SUMMARY = 1, /* summary.json's, exact; the trace's timeline lacks some steps */
    REP_STEPS_ESTIMATED = 2,    /* no summary.json: the missing steps counted as active, their
                                * syncs, blocked and wall time unknown (not in the step totals) */
};

struct step_list;

/* Everything one process recorded. */
struct rep_process {
    int pid;
    int rank;             /* -1 when RANK was not set */
    const char *schedule; /* SYNCSPY_SCHEDULE as parsed, e.g. "all steps", or "skip_first=..." */
    uint64_t steps_seen;  /* steps begun, active or not (last step number + 1) */
    const struct rep_step *steps;
    size_t nsteps; /* active steps listed in steps[] (or in step_list) */
    /* the agent's list of them, packed, when steps is NULL (agent/step/steps.c): read either
     * through output/step_list.h */
    const struct step_list *step_list;
    uint64_t steps_omitted; /* active steps recorded in totals but not listed (memory cap) */
    /* the recorded steps as ranges with their cause, in step order (summary.json's "recorded";
     * NULL when not known: a trace.bin read without its summary.json); ranges_omitted: more
     * ranges than the agent keeps, their steps in the totals */
    const struct rep_range *ranges;
    size_t nranges;
    uint64_t ranges_omitted;
    const struct rep_site *sites;
    size_t nsites;
    /* totals over all active steps, listed or omitted: */
    uint64_t active_steps;
    uint64_t syncs;
    uint64_t blocked_ns;
    uint64_t launches;
    uint64_t wall_ns;
    uint64_t
        unattributed_syncs; /* syncs whose stack could not be kept (table full): still in totals */
    uint64_t attribution_steps; /* active steps whose backward syncs were attributed to their
                                  * forward lines (rep_step.attributed; listed or not) */
    /* start-up: step 0, from the process's start to the first step mark, kept out of per-step
     * rates; startup_closed false when no step mark came (the run is one step) */
    bool startup_closed;
    struct rep_step startup; /* its wall time, syncs, blocked time, launches (0 if not recorded) */
    const struct rep_thread *threads; /* may be NULL */
    size_t nthreads;
    /* how steps were found: "optimizer.step()", "syncspy.step()", or NULL (no mark came); and
     * no_step_hook: a Python process whose optimizer step hook could not be registered */
    const char *step_source;
    bool no_step_hook;
    /* how many optimizers step in a training step, the most usual count over the steps (start-up
     * aside; several: every step ends at the last of them, agent/step/pyhook.c); 0 when not known or
     * no optimizer marked the steps */
    uint32_t optimizers;
    /* the most optimizers that stepped in one training step (start-up aside): more than
     * optimizers when some step in a few steps only (B every 4th iteration beside A) */
    uint32_t optimizers_max;
    /* the variables `syncspy run` took from pyproject.toml ("VAR=FILE:LINE;..."), or NULL */
    const char *settings_from;
    /* only when rebuilt from a trace.bin (cli/trace_read.h); zero otherwise: */
    bool trace_unfinished; /* no END record: killed (or still running); counts of the last flush */
    bool trace_truncated;  /* and its last record was cut (killed while writing it) */
    /* trace.bin lost data: the errno of the write that failed (0: none); from the trace's header
     * or summary.json, and in the agent's own exit report */
    int trace_lost_errno;
    /* its place in the job (agent/background/identity.h): local rank and node -1, world size 0, strings
     * NULL when not known (a reader sets the -1s; a file older than these fields has none) */
    int local_rank, world_size, node;
    const char *host, *job_id, *launcher;
    /* step records a trace.bin misses (the agent's step queue was full; cli/load.c):
     * steps_lost active steps are in the totals (the trace counted them) but not listed;
     * step_records_missing steps have neither a record nor a count (steps_missing_active of
     * them active, estimated in the proportion of the records there are), and steps_basis says
     * what the step figures are then */
    uint64_t steps_lost;
    uint64_t step_records_missing, steps_missing_active;
    uint8_t steps_basis; /* enum rep_steps_basis */
    /* a trace.bin that reached half of its bound (SYNCSPY_TRACE_MB, 1.4's BOUND record; 0 when
     * not): every event of the steps before sampled_from is in it, then those of a sample;
     * detail_steps of steps_seen have all their events; steps_folded steps are in STEP_RUN
     * records (their figures in the totals, not listed one by one: steps_omitted) */
    uint64_t trace_bound_bytes, sampled_from, detail_steps, steps_folded;
    /* a trace.bin past its half that ends without END (killed): the step records written after
     * the totals' last rewrite, left out of every figure (its site totals do not count them) */
    uint64_t steps_after_totals;
    /* of the folded steps: active ones whose runs keep only their sums (the steps' share was
     * full), so their per-step counts are not known one by one */
    uint64_t steps_summed;
    /* the exit report's and a trace.bin's: */
    uint64_t syncs_dropped; /* sync events the trace buffers had no room for (counts stay exact) */
    uint64_t launches_dropped;
    void *owned; /* storage of a CLI reader (cli/summary_read.h, cli/trace_read.h),
                               * freed by it; else NULL */
    void
        *owned_names; /* the agent's copy of the threads' names (agent/background/report_model.c) */
    /* torch.compile's recompilations (summary.json and the exit report only: a trace.bin read
     * alone has none; cli/load.c takes them from the folder's summary.json) */
    const struct rep_recompile *recompiles;
    size_t nrecompiles;
    void *owned_recompiles; /* the agent's copy of their strings (agent/step/recompiles.c) */
};

/* A process of which nothing says its place in the job (rank, local rank, node: -1). */
static inline void rep_identity_unknown(struct rep_process *p)
{
    p->rank = p->local_rank = p->node = -1;
}

/* Steps by the optimizers that stepped in them: counts[n] for n optimizers, up to this many. */
#define REP_OPTIMIZERS_KEPT 8
/* The most usual count of counts[0..REP_OPTIMIZERS_KEPT] (the smaller on a tie; 0: none). */
static inline uint32_t rep_optimizers_usual(const uint64_t *counts)
{
    uint32_t best = 0;
    for (uint32_t n = 1; n <= REP_OPTIMIZERS_KEPT; n++)
        if (counts[n] > counts[best])
            best = n;
    return best;
}

/* The largest count of counts[0..REP_OPTIMIZERS_KEPT] that some step had (0: none). */
static inline uint32_t rep_optimizers_most(const uint64_t *counts)
{
    uint32_t most = 0;
    for (uint32_t n = 1; n <= REP_OPTIMIZERS_KEPT; n++)
        if (counts[n])
            most = n;
    return most;
}

/* The last component of a path (a module's or a source file's); "" for NULL. */
static inline const char *rep_base_name(const char *path)
{
    const char *s = path ? path : "", *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

#endif
