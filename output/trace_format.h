/* output/trace_format.h: the trace file each process appends to (<process folder>/trace.bin),
 * shared by the writer (the agent's flusher thread) and the reader (the syncspy CLI).
 *
 * A file is a header, then records. Every record starts with a record header (type, total
 * length in bytes, a multiple of 8) so a reader can skip a type it does not know and a crash
 * only cuts the tail: a reader stops at the first record that does not fit in the file.
 * Strings, frames and stacks are written once, before the first record that refers to them, and
 * referred to by id. All integers are little-endian; records are 8-byte aligned.
 *
 * Counts: sync and launch records are per-event and may be dropped when a ring is full (DROPS
 * records count them); SITE_TOTALS and STEP records carry exact counts, so a report rebuilt
 * from the file is exact up to the last flush. A STEP record is lost only when the agent's step
 * queue is at its cap (a flusher stalled for ~10^6 steps): STEPS_LOST then counts the lost
 * steps and sums their figures, so the totals stay exact; a reader that finds step numbers
 * with neither a record nor such a count knows the file is incomplete. The flusher writes SITE_TOTALS of every site
 * that changed after each drain, so the last SITE_TOTALS of a site is its count at that flush.
 *
 * Compatibility: a reader refuses a file whose major version it does not know, with a sentence;
 * it ignores record types it does not know (forward compatible minor additions) and
 * feature bits it does not know, except bits in TRACE_FEATURES_REQUIRED_MASK.
 *
 * The bound (1.4, SYNCSPY_TRACE_MB, output/trace_writer.h): a file reaching half of it goes on
 * with exact counts in less room. Every STEP of a step is still written until the steps' share
 * (a quarter of the bound) is half spent; then consecutive steps are folded into STEP_RUN
 * records, each with its steps' counts (syncs and launches of each active step, in order: a
 * few bytes for a change of count, none for a run of alike steps) while the share has room;
 * past that, runs keep the sums alone, which readers say. SYNC and LAUNCH records are kept only for a sample of steps (every 2^k-th, k
 * growing as their share fills); SITE_TOTALS, THREAD_TOTALS, DROPS and STEPS_LOST are rewritten
 * at doubling intervals (1 s, 2 s, 4 s, ...). A BOUND record, cumulative (the last counts),
 * says what was sampled. A reader that knows neither (1.3) skips them: its totals miss the
 * folded steps. */
#ifndef SYNCSPY_TRACE_FORMAT_H
#define SYNCSPY_TRACE_FORMAT_H

#include <stdint.h>

#define TRACE_MAGIC "SYNCSPY\x01" /* 8 bytes */
#define TRACE_VERSION_MAJOR 1
#define TRACE_VERSION_MINOR \
    7 /* 1.1: backward-section frames (kinds 2 and 3);
                                           1.2: SITE_TOTALS' and STEP's longer forms, THREAD_TOTALS;
                                           1.3: the header's identity part (trace_identity),
                                                STEPS_LOST, END's steps_seen;
                                           1.4: frame kind 4 (why a backward sync has no forward
                                                line), STEP's attributed,
                                                STEP_RUN and BOUND (SYNCSPY_TRACE_MB);
                                           1.5: STEP's optimizers;
                                           1.6: FRAME_NAME;
                                           1.7: SITE_TOTALS' pinned */
#define TRACE_FEATURES_REQUIRED_MASK 0xffffffff00000000ull /* unknown bits here: refuse */
#define TRACE_FEATURE_PYTHON (1ull << 0)                   /* Python frames may appear */
#define TRACE_FEATURE_LAUNCHES (1ull << 1)                 /* launch records were written */
#define TRACE_FEATURE_BACKWARD (1ull << 2)                 /* backward-section frames may appear */
#define TRACE_FEATURE_IDENTITY (1ull << 3) /* struct trace_identity follows the header (1.3) */

#define TRACE_FILE_NAME "trace.bin"
#define TRACE_MAX_RECORD_BYTES (1u << 20) /* a record longer than this is corrupt */
#define TRACE_MAX_STRING_BYTES 4096
#define TRACE_MAX_FRAMES 512 /* frames in one stack */

struct trace_file_header {
    char magic[8];
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_bytes; /* sizeof(struct trace_file_header) when written; readers skip to it */
    uint64_t features;
    int32_t pid;
    int32_t rank;           /* -1 when RANK was not set */
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC when the agent started (step 0 begins) */
    uint64_t start_real_ns; /* CLOCK_REALTIME at the same moment */
    char schedule[64];      /* SYNCSPY_SCHEDULE as parsed, NUL-terminated */
};

/* 1.3: the process's place in its job (agent/background/identity.h), right after struct trace_file_header
 * and counted in its header_bytes, so a 1.2 reader skips it as it skips any longer header; a
 * reader reads it only when TRACE_FEATURE_IDENTITY is set and header_bytes holds it. Strings
 * NUL-terminated ("" unknown). */
struct trace_identity {
    int32_t local_rank;  /* -1: not known */
    int32_t world_size;  /* 0: not known */
    int32_t node;        /* the node's index in the job; -1: not known */
    int32_t write_errno; /* 0, or the errno of the first write of this file that failed
                                * (EFBIG, ENOSPC, EIO, a short write's): the agent puts it here
                                * in place (pwrite) once, so the file says it lost data and why;
                                * a reader older than it saw 0 padding */
    char host[72];
    char job_id[64];
    char launcher
        [24]; /* the launcher whose variables named the rank (agent/background/identity.c) */
};

/* A 1.3 header as the agent writes it (header_bytes = sizeof). */
struct trace_file_header_v13 {
    struct trace_file_header h;
    struct trace_identity id;
};

enum trace_record_type {
    TREC_STRING = 1,         /* struct trace_string + bytes (not NUL-terminated), padded */
    TREC_FRAME = 2,          /* struct trace_frame */
    TREC_STACK = 3,          /* struct trace_stack + uint32_t frame_ids[nframes], padded */
    TREC_SYNC = 4,           /* struct trace_sync */
    TREC_LAUNCH = 5,         /* struct trace_launch */
    TREC_STEP = 6,           /* struct trace_step: one per step that ended (active or not) */
    TREC_SITE_TOTALS = 7,    /* struct trace_site_totals */
    TREC_THREAD = 8,         /* struct trace_thread */
    TREC_DROPS = 9,          /* struct trace_drops */
    TREC_END = 10,           /* struct trace_end: the process finished writing (clean exit) */
    TREC_THREAD_TOTALS = 11, /* struct trace_thread_totals (1.2) */
    TREC_STEPS_LOST = 12,    /* struct trace_steps_lost (1.3) */
    TREC_STEP_RUN = 13,      /* struct trace_step_run (1.4) */
    TREC_BOUND = 14,         /* struct trace_bound (1.4) */
    TREC_FRAME_NAME = 15,    /* struct trace_frame (1.6): a Python frame of torch.compile's
                           * generated code written before its user line was known, now named:
                           * its function, module, file and line replace the frame's */
};

struct trace_record_header {
    uint32_t type;
    uint32_t bytes; /* whole record including this header; multiple of 8, >= 8 */
};

struct trace_string {
    struct trace_record_header h;
    uint32_t id;     /* >= 1; 0 means "no string" wherever a string id is used */
    uint32_t length; /* bytes that follow, <= TRACE_MAX_STRING_BYTES, UTF-8 */
};

/* A backward-pass sync's stack (agent/record/autograd.h) holds section markers among its frames:
 * TRACE_FRAME_BACKWARD (function: the autograd node's type) is followed by the forward stack that
 * created the node, TRACE_FRAME_CALLER by the stack of the thread that called backward. */
enum trace_frame_kind {
    TRACE_FRAME_NATIVE = 0,
    TRACE_FRAME_PYTHON = 1,
    TRACE_FRAME_BACKWARD = 2,
    TRACE_FRAME_CALLER = 3,
    TRACE_FRAME_UNSEEN = 4 /* (1.4) a backward sync without its forward line:
                                                * function is why (output/backward.h) */
};

struct trace_frame {
    struct trace_record_header h;
    uint32_t id;       /* >= 1 */
    uint32_t kind;     /* enum trace_frame_kind */
    uint32_t function; /* string id (0: unknown) */
    uint32_t module;   /* string id: object path (native); a Python frame of torch.compile's
                                * generated code named by its user line: that code ("<eval_with_key>.3",
                                * " backward" after a backward graph's), else 0 */
    uint32_t file;     /* string id: source file (0: unknown) */
    uint32_t line;     /* 0: unknown */
    uint64_t offset;   /* module-relative address (native) */
};

struct trace_stack {
    struct trace_record_header h;
    uint32_t id;      /* >= 1, the agent's stack id */
    uint32_t nframes; /* <= TRACE_MAX_FRAMES; frame ids follow, innermost first */
};

enum trace_dir { TRACE_DIR_NONE = 0, TRACE_DIR_H2D, TRACE_DIR_D2H, TRACE_DIR_D2D, TRACE_DIR_H2H };

struct trace_sync {
    struct trace_record_header h;
    uint64_t start_ns; /* CLOCK_MONOTONIC */
    uint64_t end_ns;
    uint64_t stream;
    uint64_t bytes;
    uint64_t step;
    uint32_t tid;
    uint32_t stack_id; /* 0: no stack kept (tables full) */
    uint32_t dir;      /* enum trace_dir */
    uint32_t api_name; /* string id */
};

struct trace_launch {
    struct trace_record_header h;
    uint64_t time_ns;
    uint64_t stream;
    uint64_t step;
    uint32_t tid;
    uint32_t api_name;    /* string id */
    uint32_t kernel_name; /* string id, 0 when unknown */
    uint32_t pad;
};

struct trace_step {
    struct trace_record_header h;
    uint64_t step;
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t syncs;
    uint64_t blocked_ns;
    uint64_t launches;
    uint32_t active;  /* recorded by the schedule */
    uint32_t partial; /* ended by the process exit, not by a mark */
    /* 1.2 (a 1.0/1.1 record is 64 bytes: these read as 0) */
    uint32_t tid;    /* the thread whose mark ended it (0: none, or the exit) */
    uint32_t source; /* enum trace_step_source */
    /* 1.4 (a 1.2/1.3 record is 72 bytes: these read as 0) */
    uint32_t attributed; /* backward syncs attributed to their forward lines (auto: some steps) */
    /* 1.5 (0 in a 1.4 record, where it was padding) */
    uint32_t optimizers; /* optimizers whose step() ran in this step (an automatic mark's:
                                * several when a training iteration steps several, a GAN's D and
                                * G; 0: not known, or not an optimizer's mark) */
};
#define TRACE_STEP_V10_BYTES 64

/* What ended a step (trace_step.source). */
enum trace_step_source {
    TRACE_STEP_SOURCE_NONE = 0,
    TRACE_STEP_SOURCE_AUTO = 1,
    TRACE_STEP_SOURCE_EXPLICIT = 2
};

struct trace_site_totals {
    struct trace_record_header h;
    uint32_t site_id; /* >= 1 */
    uint32_t stack_id;
    uint32_t api_name; /* string id */
    uint32_t threads;  /* how many threads synced here (at most 16 counted; 0: not known,
                                * as written before 1.2's thread counts) */
    uint64_t count;    /* exact, cumulative */
    uint64_t blocked_ns;
    uint64_t max_ns;
    /* 1.2 (a 1.0/1.1 record is 48 bytes: these read as 0): the parts of count and blocked_ns
     * that per-step rates leave out (output/model.h rep_phase_raw): start-up's, and the step
     * of the site's latest sync (+1) with the count and ns when that step began there */
    uint64_t startup_count, startup_ns, seen_step, base_count, base_ns;
    /* 1.7 (an older record is 88 bytes: reads as 0): of count, the syncs right after a copy
     * from or to pinned host memory on the same thread (a copy that need not have waited) */
    uint64_t pinned;
};
#define TRACE_SITE_TOTALS_V10_BYTES 48

/* One thread's syncs now (exact, cumulative; tid 0: the threads that exited, together). */
struct trace_thread_totals {
    struct trace_record_header h;
    uint32_t tid;
    uint32_t pad;
    uint64_t count, blocked_ns, startup_count, startup_ns, seen_step, base_count, base_ns;
};

struct trace_thread {
    struct trace_record_header h;
    uint32_t tid;
    uint32_t name; /* string id (the thread's name at its first CUDA call) */
};

struct trace_drops {
    struct trace_record_header h;
    uint32_t tid;
    uint32_t pad;
    uint64_t syncs_dropped; /* cumulative for this thread */
    uint64_t launches_dropped;
};

/* Step records the agent had no room for (cumulative: the last one counts): how many, and the
 * totals of the active ones among them. */
struct trace_steps_lost {
    struct trace_record_header h;
    uint64_t records;                                      /* STEP records lost, active or not */
    uint64_t active, syncs, blocked_ns, launches, wall_ns; /* of the active ones */
};

/* Steps folded into one record past half the bound (1.4): the STEP records of steps numbered
 * first_step .. last_step (steps of them: fewer when the agent lost some, which STEPS_LOST
 * counts), each ended by a mark (the exit's partial step keeps its STEP record). The sums are of
 * the active ones, as the report counts them; syncs_min and syncs_max are an active step's
 * fewest and most syncs (both 0 when none is active).
 * The counts: a record longer than the struct holds each active step's counts, in step order, as
 * groups of three LEB128 varints (repeat >= 1, syncs, launches: the next repeat active steps had
 * those counts), zero-padded to 8; the groups' repeats add up to active and their counts to
 * syncs and launches. A record of just the struct: every active step had syncs_min syncs (and
 * launches / active launches) when syncs_min == syncs_max; else (the steps' share was full) only
 * the sums are known. */
struct trace_step_run {
    struct trace_record_header h;
    uint64_t first_step, last_step;
    uint64_t steps;  /* 1 .. last_step - first_step + 1 */
    uint64_t active; /* <= steps */
    uint64_t syncs_min, syncs_max;
    uint64_t syncs, blocked_ns, launches, wall_ns;
};

/* What the bound kept (1.4; cumulative: the last one counts). Written once the file reached half
 * of bound_bytes, with every rewrite of the totals. */
struct trace_bound {
    struct trace_record_header h;
    uint64_t bound_bytes;  /* SYNCSPY_TRACE_MB in bytes */
    uint64_t sampled_from; /* steps before it: every event kept; from it on: a sample */
    uint64_t detail_steps; /* steps (of steps_seen) whose every SYNC and LAUNCH is in the file */
    uint64_t steps_seen;   /* steps begun when this record was written */
    uint64_t steps_folded; /* steps in STEP_RUN records */
};

struct trace_end {
    struct trace_record_header h;
    uint64_t end_mono_ns;
    uint64_t unattributed_syncs;
    /* steps begun (the last step's number + 1, the one still open at exit counted even when it
     * had nothing to record); a record of 24 bytes (written before 0.1.1) has none: 0 */
    uint64_t steps_seen;
};

_Static_assert(sizeof(struct trace_file_header) == 112, "trace header layout");
_Static_assert(sizeof(struct trace_identity) == 176, "trace identity layout");
_Static_assert(sizeof(struct trace_file_header_v13) == 288, "trace 1.3 header layout");
_Static_assert(sizeof(struct trace_string) == 16, "trace_string layout");
_Static_assert(sizeof(struct trace_frame) == 40, "trace_frame layout");
_Static_assert(sizeof(struct trace_stack) == 16, "trace_stack layout");
_Static_assert(sizeof(struct trace_sync) == 64, "trace_sync layout");
_Static_assert(sizeof(struct trace_launch) == 48, "trace_launch layout");
_Static_assert(sizeof(struct trace_step) == 80, "trace_step layout");
_Static_assert(sizeof(struct trace_site_totals) == 96, "trace_site_totals layout");
_Static_assert(sizeof(struct trace_thread_totals) == 72, "trace_thread_totals layout");
_Static_assert(sizeof(struct trace_thread) == 16, "trace_thread layout");
_Static_assert(sizeof(struct trace_drops) == 32, "trace_drops layout");
_Static_assert(sizeof(struct trace_end) == 32, "trace_end layout");
_Static_assert(sizeof(struct trace_steps_lost) == 56, "trace_steps_lost layout");
_Static_assert(sizeof(struct trace_step_run) == 88, "trace_step_run layout");
_Static_assert(sizeof(struct trace_bound) == 48, "trace_bound layout");

#endif
