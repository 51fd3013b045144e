/* output/config.h: every SYNCSPY_* variable goes through config_parse, one validating parser:
 * the whole value is parsed, ranges are checked, and a bad value yields one line naming the
 * variable and the default used instead. Runs once at load time; pure (getenv is a parameter
 * so tests can feed any environment). */
#ifndef SYNCSPY_CONFIG_H
#define SYNCSPY_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "output/schedule.h"
#include "output/report.h" /* enum report_color */

/* SYNCSPY_BACKWARD: auto (default: every active step when node creation is watched from the
 * interposed sequence number, agent/record/autograd_nodes.h nodes_hooked, about 0.2 us per node; where
 * it is not, sampled after the first active step), all (every node type in every active step,
 * whatever it costs), sampled (the node types seen syncing are attributed in the step after one
 * is first seen, then every AUTOGRAD_EVERY_STEPS active steps; the other steps' backward syncs
 * are estimated), off. */
enum backward_mode { BACKWARD_AUTO, BACKWARD_ALL, BACKWARD_SAMPLED, BACKWARD_OFF };

enum step_mode { STEP_AUTO, STEP_MANUAL };
enum report_dest { REPORT_STDERR, REPORT_STDOUT, REPORT_OFF, REPORT_FILE };
/* CUPTI_EAGER: auto, but subscribed when the agent loads, for programs whose CUDA calls all
 * bypass the shim (libcudart_static, driver API only): the shim never sees a first call there. */
enum cupti_mode { CUPTI_AUTO, CUPTI_OFF, CUPTI_PATH, CUPTI_EAGER };

#define CONFIG_WARNINGS_MAX 1024

/* SYNCSPY_TRACE_MB: past half of it per-event detail is kept for a sample of steps
 * (output/trace_writer.h); 1 GiB holds a week of 100 ms steps with every step's record. */
#define CONFIG_TRACE_MB_DEFAULT 1024
#define CONFIG_TRACE_MB_MAX 1048576

struct config {
    char out_dir[PATH_MAX];   /* SYNCSPY_OUT, default ./syncspy-out */
    struct schedule schedule; /* SYNCSPY_SCHEDULE, default every step */
    enum step_mode step_mode; /* SYNCSPY_STEP auto|manual */
    enum report_dest report;  /* SYNCSPY_REPORT stderr|stdout|off|PATH */
    char report_path[PATH_MAX];
    int top;               /* SYNCSPY_TOP, default 10, 1..1000 (output/report.h) */
    enum cupti_mode cupti; /* SYNCSPY_CUPTI auto|off|eager|/abs/path */
    char cupti_path[PATH_MAX];
    bool gpu;            /* SYNCSPY_GPU=1: CUPTI activity records, GPU idle time after syncs */
    int max_depth;       /* SYNCSPY_MAX_DEPTH native frames kept, default 64, 4..256 */
    int buffer_mb;       /* SYNCSPY_BUFFER_MB: all threads' rings together, default 8, 1..1024 */
    int trace_mb;        /* SYNCSPY_TRACE_MB: trace.bin's bound (0: none), default 1024 */
    bool trace_launches; /* SYNCSPY_LAUNCHES=trace: a record per launch (default count) */
    enum backward_mode
        backward;     /* SYNCSPY_BACKWARD auto|all|sampled|off: forward lines of backward syncs */
    unsigned debug;   /* SYNCSPY_DEBUG: 0 off, 1 info, 2 verbose */
    bool stack_cache; /* SYNCSPY_STACK_CACHE on|off: validated stacks seen before (default on) */
    enum report_color color; /* SYNCSPY_COLOR auto|always|never; auto with NO_COLOR set: never */
    char warnings[CONFIG_WARNINGS_MAX]; /* one line per bad variable, printed at first CUDA use */
    /* The first bad variable and why, without the value or the default ("is not an integer in
     * 1..1000"): what `syncspy run` says of a bad option. */
    const char *first_bad;
    char first_why[200];
};

typedef const char *(*config_getenv_fn)(const char *name);

void config_parse(struct config *cfg, config_getenv_fn get);

/* Whole string an integer in [lo, hi] (no sign, no space): *out, true. */
bool config_parse_int(const char *s, long lo, long hi, long *out);

/* One warning line in cfg->warnings: "syncspy: VAR='value' WHY; using DFLT" (the value shown
 * escaped and cut), for config_parse and the launchers' variables (agent/background/identity.c). */
void config_warn(struct config *cfg, const char *var, const char *value, const char *why,
                 const char *dflt);

/* Every variable config_parse reads that is syncspy's own (SYNCSPY_*), NULL-terminated: the
 * options of `syncspy run` are these names (--out for SYNCSPY_OUT, --max-depth for
 * SYNCSPY_MAX_DEPTH), so a variable added here is an option there too. */
extern const char *const config_variables[];

/* src into dst (cap bytes, always NUL-terminated) with its control characters shown as \n, \r,
 * \t or \xNN, as the warnings show a value. */
void config_escape(char *dst, size_t cap, const char *src);

#endif
