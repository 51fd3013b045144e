/* output/report.h: the human sync-hotspot report, for one process (at exit, inside the target)
 * or many (the CLI merges processes and ranks). Never called on a recording path: it may
 * allocate, but writes only to the fd it is given (never to stdout/stderr directly). */
#ifndef SYNCSPY_REPORT_H
#define SYNCSPY_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    int top;                  /* sites (groups) shown, 1..REPORT_TOP_MAX; 0: REPORT_TOP_DEFAULT */
    const char *summary_path; /* shown at the end when not NULL */
    int write_timeout_ms;     /* > 0: a pipe, fifo or socket that takes no more for this long fails
                           * the report (ETIMEDOUT) instead of blocking (fdw_set_deadline) */
    bool color;               /* ANSI colours (report_color_wanted) */
    bool own_line; /* begin with a newline: the report shares the program's stdout/stderr,
                         * whose last output may not have ended its line (a terminal's "^C") */
};

/* Past this many processes, a merged report leaves out each one's own header (1,024 ranks'
 * headers would bury the hotspots; `syncspy report` adds a per-rank section, cli/ranks.h). */
#define REPORT_HEADERS_MAX 16

/* The human report for one or more processes (the CLI merges ranks/processes; each process
 * gets its header, up to REPORT_HEADERS_MAX of them, then a merged hotspot table when
 * nprocs > 1). Returns 0, or -1 on a write
 * error (errno set). */
int report_render_text(const struct rep_process *procs, size_t nprocs,
                       const struct report_opts *opts, int fd);

/* One row of a process's syncs, grouped exactly as the report's table groups them (one key,
 * output/report.c group_key_cmp): the sites whose user line is the same, whatever their API (a
 * copy and the synchronize after it are one row, issue 35 item 6). Every view of the CLI (check,
 * diff, html, top) shows these rows, so their numbers and figures are the report's. */
enum rep_line_kind {
    REP_LINE_PLAIN = 0,    /* where: the innermost user frame of the sync's own stack */
    REP_LINE_BACKWARD = 1, /* a backward-pass sync; where: the forward line that created its node */
    REP_LINE_NODE = 2,     /* a backward-pass sync whose forward line was not recorded: where is
                            * its own user frame, NULL when it has none (autograd ran it alone) */
};

/* An API and the syncs a row made through it in the training steps. */
struct rep_api_count {
    const char *api;
    uint64_t count;
};
#define REP_LINE_APIS_MAX 16 /* the APIs a row counts (the report names 4: "cudaMemcpy x10, ...") */
/* The row's APIs as the report's table prints them: "cudaStreamSynchronize" alone, else each
 * with its syncs, most first ("cudaMemcpyAsync x19, cudaStreamSynchronize x19", ", +N more" for
 * `others` not in a[]), into buf (cut to size, NUL-terminated). a[0..n) sorted most first. */
void report_apis_text(const struct rep_api_count *a, size_t n, size_t others, char *buf,
                      size_t size);
/* api's syncs added to a[0..*n): a new entry while *n < max, else one more in *others. */
void report_api_count_add(struct rep_api_count *a, size_t *n, size_t max, const char *api,
                          uint64_t count, size_t *others);
/* Most syncs first; ties keep their order (the heavier site's API first). */
void report_api_counts_sort(struct rep_api_count *a, size_t n);

#define REP_LINE_CAUSES_MAX 10
struct rep_line {
    const struct rep_frame *where; /* NULL: no stack (or none of the user's, REP_LINE_NODE) */
    /* its site with the most blocked time in the training steps, else in all (hint, stack): a
     * start-up wait of another op at the same line does not name a line the steps blame */
    const struct rep_site *heaviest;
    uint64_t heaviest_ns; /* that site's blocked time in the training steps */
    const char *api;      /* apis[0]: the API of most of its syncs */
    struct rep_api_count apis[REP_LINE_APIS_MAX]; /* every API of its sites, most syncs first */
    size_t napis, other_apis;   /* other_apis: its sites past REP_LINE_APIS_MAX APIs */
    uint8_t kind;               /* enum rep_line_kind */
    char node[64];              /* a backward-pass sync's node type ("IndexBackward0") */
    uint64_t count, blocked_ns; /* in the training steps (the report's rates) */
    uint64_t startup_count,
        startup_ns; /* before the first step mark, when the rates leave it out */
    uint64_t max_ns;
    /* REP_LINE_BACKWARD: the part of count and blocked_ns estimated (the node's syncs in steps
     * without attribution, split between the forward lines seen making it, as in the process's
     * attribution_steps); the rest is exact */
    uint64_t estimated_count, estimated_ns;
    uint32_t split_lines; /* the lines that estimate was split between (1: this alone) */
    /* REP_LINE_NODE: why its syncs have no forward line, each cause (a key of output/backward.h,
     * NULL: not recorded) with its syncs in the training steps */
    struct rep_line_cause {
        const char *cause;
        uint64_t count;
    } causes[REP_LINE_CAUSES_MAX];
    uint32_t ncauses;
};

struct rep_lines {
    struct rep_line *lines; /* heaviest (blocked time in the training steps) first */
    size_t n;
    double steps;                       /* the training steps the rates divide by (at least 1) */
    double wall_ns;                     /* their wall time */
    bool startup_left_out;              /* start-up is apart (its counts are in startup_*) */
    bool partial_left_out;              /* the step still open at exit is left out */
    struct rep_site_line *of_site;      /* per p->sites[i]: its line and its counts in the rates (a
                                      * site split between lines: the line of its largest share,
                                      * the counts of all its shares) */
    uint64_t attribution_steps;         /* the process's (rep_process.attribution_steps) */
    uint64_t compile_count, compile_ns; /* torch.compile's own syncs in the training steps, in no
                                         * line (hints_compile_work) */
    struct rep_line_share *shares;      /* the estimated parts of the lines (issue 24 item 2) */
    size_t nshares;
};

/* An unseen backward site's syncs in the training steps estimated for a line (the report's
 * split): the parts of one site add up to its figure in the rates. */
struct rep_line_share {
    uint32_t line; /* index into lines */
    uint32_t from; /* index into p->sites: the unseen site */
    uint64_t count, blocked_ns;
};

/* A site's place among its process's lines (syncspy html draws sites by the report's lines). */
struct rep_site_line {
    uint32_t line;              /* index into lines; REP_NO_LINE: in none of them */
    uint64_t count, blocked_ns; /* in the training steps, as the line counts them */
};
#define REP_NO_LINE UINT32_MAX

/* An unseen backward site's syncs estimated for a forward site's line (the report's split, issue
 * 24 item 2): from, to index p->sites; count and blocked_ns out of the site's whole count (start-up
 * and the open step in). The shares of one `from` add up to its count and blocked_ns. */
struct rep_estimate_share {
    uint32_t from, to;
    uint64_t count, blocked_ns;
};
/* The shares of process p (*out malloc'd, NULL when none). Returns their number, or -1 (ENOMEM). */
long report_estimate_shares(const struct rep_process *p, struct rep_estimate_share **out);

/* A line the estimate of another was split with: where it is, its share per step. */
struct rep_estimate_other {
    const struct rep_frame *where; /* NULL: no stack */
    double per_step;
};
/* The report's words on the estimated part of a forward line's figure (issue 24 item 2), as its
 * table prints them under the line: "~11.7/step of these estimated: the same node's syncs at the
 * same native stack in steps without attribution, split as in the 1 attribution step: ~11.7/step
 * here, ~5.85/step from .../train.py:12" (others: the n lines shown, `more` not shown), into buf
 * (cut to size, NUL-terminated; no newline). */
#define REPORT_ESTIMATE_SHOWN 6        /* other lines named (the rest: "and N more") */
#define REPORT_ESTIMATE_WORDS_MAX 1280 /* the words with every name shown (at most ~1000) */
void report_estimate_words(char *buf, size_t size, double here_per_step, uint64_t attribution_steps,
                           const struct rep_estimate_other *others, size_t n, size_t more);
/* A frame's place as the report's table prints it ("f.py:12", long paths cut at the front). */
void report_frame_loc(const struct rep_frame *f, char *buf, size_t size);

/* The lines of one process. Returns 0, or -1 (errno ENOMEM). */
int report_lines(const struct rep_process *p, struct rep_lines *out);
void report_lines_free(struct rep_lines *l);

/* A site's syncs and blocked time as the report's rates count them (start-up and the step still
 * open at exit left out when the report leaves them out), with start-up's part added back when
 * with_startup (`export --folded --include-startup`). */
void report_site_counts(const struct rep_process *p, const struct rep_site *s, bool with_startup,
                        uint64_t *count, uint64_t *blocked_ns);
/* When trace.bin lost data (a failed write, p->trace_lost_errno): the sentence that says so, and
 * whether p's figures are a lower bound (read from the trace) or exact (summary.json, the exit
 * report); never a kill's. False when nothing was lost. */
bool report_lost_note(const struct rep_process *p, char *buf, size_t n);

/* What a process's step figures lack when its trace.bin misses step records (rep_process's
 * steps_basis, steps_lost): one sentence into buf, or false when they lack nothing. The
 * report's header says it; so do the CLI's check, diff and export. */
bool report_steps_note(const struct rep_process *p, char *buf, size_t n);

/* Numbers as the report shows them: a duration ("412 us", "4.10 ms"), a rate ("0.18", "41.3"). */
void report_format_ns(char *buf, size_t n, double ns);
/* A process as the report's title names it: "rank 3 pid 1234 (node-a)", "rank 3 pid 1234",
 * "pid 1234". */
void report_process_label(const struct rep_process *p, char *buf, size_t n);
void report_format_rate(char *buf, size_t n, double v);

/* A function name as the report shows it: a C++ name without its parameter list, cut to 80
 * characters keeping its tail. Writes into buf (always NUL-terminated). */
void report_display_name(const char *function, char *buf, size_t buflen);

#endif
