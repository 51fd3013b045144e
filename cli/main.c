/* cli/main.c: the `syncspy` command: `run` starts a program with the agent (cli/run.c), `report`
 * renders the exit report again from trace.bin or summary.json files (one process, or a
 * SYNCSPY_OUT root merged), `export` turns them into folded stacks or Chrome trace events,
 * `check` holds a run to a sync budget, `diff` compares two runs. A program of its own that
 * reads files only (never linked into the preloaded library): it may use stdio, but bad input
 * only ever gets a message and an exit status, never a crash. */
#include "cli/check.h"
#include "cli/chrome.h"
#include "cli/diff.h"
#include "cli/folded.h"
#include "cli/html.h"
#include "agent/config.h"
#include "cli/load.h"
#include "cli/ranks.h"
#include "cli/run.h"
#include "cli/top.h"
#include "output/io.h"
#include "cli/version.h"
#include "output/report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: syncspy report [--top N] DIR\n"
    "       syncspy export --folded OUT [--include-startup] DIR\n"
    "       syncspy export --chrome OUT DIR\n"
    "       syncspy run [OPTIONS] [--] CMD [ARGS...]\n"
    "       syncspy check --max-syncs-per-step N [--max-blocked-share P] [--allow FILE:LINE]...\n"
    "                     [--include-startup] [--json] DIR\n"
    "       syncspy diff [--json] BASE NEW\n"
    "       syncspy html [-o FILE] [--top N] DIR | BASE NEW\n"
    "       syncspy top [--interval SECONDS] [--once] DIR\n"
    "       syncspy --help | --version\n";

static const char help_head[] =
    "syncspy " SYNCSPY_VERSION ": where a CUDA training job makes the host wait for the GPU.\n"
    "\n"
    "Record (no change to the program):\n"
    "    syncspy run -- python train.py\n"
    "or, without this program:\n"
    "    LD_PRELOAD=/path/to/libsyncspy.so python train.py\n"
    "Each process writes SYNCSPY_OUT/pid<P>/ (rank<R>-<host>-pid<P>/ under a launcher), default\n"
    "./syncspy-out: trace.bin as it runs (every sync and launch, the steps and the exact\n"
    "per-site counts, appended at each flush, so it survives kill -9 up to the last flush),\n"
    "and summary.json with the sync-hotspot report at exit.\n"
    "\n"
    "Commands:\n";

/* After cli_run_help: the commands that read files, one section each (`syncspy CMD --help`
 * prints its own, `syncspy --help` all of them). */
static const char files_intro[] =
    "The commands that read files take a DIR: a process folder, a SYNCSPY_OUT root whose\n"
    "processes and ranks are merged, or a trace.bin or summary.json file; a process folder is\n"
    "read from its trace.bin when it has one, else from its summary.json.\n";

static const struct command_help {
    const char *cmd, *usage, *text;
} command_helps[] = {
    {"report", "usage: syncspy report [--top N] DIR\n",
     "  report [--top N] DIR      the report again. Merged processes get one hotspot table:\n"
    "                            per-step numbers are sums over processes divided by the sum\n"
    "                            of their active steps (the mean process-step). A trace.bin\n"
    "                            cut by a crash is read up to its last complete record and\n"
    "                            its header says so. --top N groups (default SYNCSPY_TOP,\n"
    "                            else 10). Several processes end with a per-rank section:\n"
    "                            syncs/step and blocked share per rank (min, median, max),\n"
    "                            the ranks that wait most (stragglers), lines that sync on\n"
    "                            some ranks only, ranks with no step mark.\n"},
    {"export", "usage: syncspy export --folded OUT [--include-startup] DIR\n"
               "       syncspy export --chrome OUT DIR\n",
     "  export --folded OUT DIR   folded stacks weighted by blocked ns, one line per sync site\n"
    "                            (flamegraph.pl, speedscope, inferno); OUT - is stdout. As in\n"
    "                            the report, start-up and the step still open at exit are\n"
    "                            left out; --include-startup keeps start-up.\n"
    "  export --chrome OUT DIR   Chrome trace events (Perfetto, chrome://tracing): from a\n"
    "                            trace.bin, a track per thread with each sync as a slice (its\n"
    "                            API, bytes, stream, step and top frames) and each launch as\n"
    "                            an instant, and a steps track; from a summary.json alone,\n"
    "                            only its active steps, laid end to end.\n"},
    {"check", "usage: syncspy check --max-syncs-per-step N [--max-blocked-share P] [--allow FILE:LINE]...\n"
              "                     [--include-startup] [--json] DIR\n",
     "  check DIR                 a sync budget for CI: every process of DIR must stay within\n"
    "                            it in its training steps (start-up and the step still open at\n"
    "                            exit left out, as in the report; all threads' syncs counted):\n"
    "    --max-syncs-per-step N  at most N syncs per training step (N may be fractional)\n"
    "    --max-blocked-share P   at most P% of the steps' wall time blocked in syncs\n"
    "    --allow FILE:LINE       syncs at this line do not count (FILE a path or its tail;\n"
    "                            the line the report shows: a sync's innermost user frame, or\n"
    "                            for a backward-pass sync the forward line); repeatable\n"
    "    --include-startup       start-up (before the first step) must stay within the\n"
    "                            budget too, as one step\n"
    "    --json                  the verdict as JSON on stdout\n"
    "                            Exit 0 within budget, 1 over it (the lines over it are named:\n"
    "                            syncs and blocked time per step), 2 for bad input or usage,\n"
    "                            or a trace.bin that lost data to a failed write (its figures\n"
    "                            are a lower bound: no budget is judged from them).\n"},
    {"diff", "usage: syncspy diff [--json] BASE NEW\n",
     "  diff BASE NEW             per line and API, the syncs and blocked time per training\n"
    "                            step of two runs (folders as for report), each marked gone,\n"
    "                            new, more, fewer or the same; --json for JSON. Exit 0, or 2\n"
    "                            when a file cannot be read or for a usage error.\n"},
    {"html", "usage: syncspy html [-o FILE] [--top N] DIR | BASE NEW\n",
     "  html DIR [-o FILE]        one offline HTML page (script, style and data inline, no\n"
    "                            network request): the report's header, a chart per step,\n"
    "                            the sites table with stacks and source, a flame graph of\n"
    "                            blocked time, a step's timeline per thread (from trace.bin);\n"
    "                            BASE NEW: the diff's page. FILE defaults to syncspy.html\n"
    "                            (- for stdout). Exit 0, 2 for bad input or usage, 1 when\n"
    "                            FILE could not be written.\n"},
    {"top", "usage: syncspy top [--interval SECONDS] [--once] DIR\n",
     "  top DIR                   a live view of a running job, read every second from the\n"
    "                            files its processes append (also from another node over a\n"
    "                            shared filesystem; it never writes into DIR): steps/s,\n"
    "                            syncs/step and blocked share over the last 10 s of steps and\n"
    "                            since start, one row per process of a root, the threads, the\n"
    "                            top lines with their rates. Keys: q quits, s sorts, t picks\n"
    "                            a thread. --once prints one screen and exits; --interval S.\n"},
};

static const char exit_status_text[] =
    "Exit status (report, export): 0 when every file was read; 1 when one could not be read (a\n"
    "bad header, a newer format, corruption before the last record: each is named on stderr\n"
    "with its byte offset, and the other processes are still reported) or an output could not\n"
    "be written; 2 for a usage error or when nothing could be read (DIR missing, empty, or\n"
    "none of its files readable), as for check, diff and html.\n";

static void print_help(void)
{
    fputs(help_head, stdout);
    fputs(cli_run_help, stdout);
    fputs("\n", stdout);
    fputs(files_intro, stdout);
    for (size_t i = 0; i < sizeof command_helps / sizeof command_helps[0]; i++)
        fputs(command_helps[i].text, stdout);
    fputs("\n", stdout);
    fputs(exit_status_text, stdout);
}

/* `syncspy CMD --help`: that command's usage and section only. */
static void print_command_help(const char *cmd)
{
    for (size_t i = 0; i < sizeof command_helps / sizeof command_helps[0]; i++)
        if (strcmp(command_helps[i].cmd, cmd) == 0) {
            fputs(command_helps[i].usage, stdout);
            fputs("\n", stdout);
            fputs(command_helps[i].text, stdout);
            fputs("\n", stdout);
            fputs(files_intro, stdout);
            return;
        }
    print_help();
}

/* "syncspy: MESSAGE" (when fmt is not NULL) and the usage; the status to exit with. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs("syncspy: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    fputs(usage_text, stderr);
    return 2;
}

/* ---- commands ----------------------------------------------------------------------------- */

/* A whole positive integer no larger than REPORT_TOP_MAX, or -1. */
static int parse_top(const char *s)
{
    if (!s || !*s)
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > REPORT_TOP_MAX)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v >= 1 && v <= REPORT_TOP_MAX ? (int)v : -1;
}

static int default_top(void)
{
    const char *env = getenv("SYNCSPY_TOP");
    if (!env)
        return REPORT_TOP_DEFAULT;
    int top = parse_top(env);
    if (top < 0) {
        fprintf(stderr, "syncspy: SYNCSPY_TOP='%.40s' is not a whole number from 1 to %d; "
                "using %d\n", env, REPORT_TOP_MAX, REPORT_TOP_DEFAULT);
        return REPORT_TOP_DEFAULT;
    }
    return top;
}

/* SYNCSPY_COLOR and NO_COLOR, read by the agent's own parser (a bad value: its warning). */
static const char *color_getenv(const char *name)
{
    return strcmp(name, "SYNCSPY_COLOR") == 0 || strcmp(name, "NO_COLOR") == 0 ? getenv(name) : NULL;
}

static enum report_color cli_color(void)
{
    static struct config cfg;
    config_parse(&cfg, color_getenv);
    fputs(cfg.warnings, stderr);
    return cfg.color;
}

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* An argument of cmd that is none of its own options: -h/--help prints the help, "--" ends the
 * options, another option is unknown, and the rest is one of its (at most max) folders,
 * paths[0..*n); takes says what it takes. Returns -1 when a is taken, else the status cmd
 * exits with. */
static int paths_arg(const char *cmd, const char *a, bool *options, const char **paths, int *n,
                     int max, const char *takes)
{
    if (*options && is_help(a)) {
        print_command_help(cmd);
        return 0;
    }
    if (*options && strcmp(a, "--") == 0) {
        *options = false;
        return -1;
    }
    if (*options && a[0] == '-' && a[1] != '\0')
        return usage_error("%s: unknown option '%s'", cmd, a);
    if (*n == max)
        return usage_error("%s takes %s; '%s' is one more", cmd, takes, a);
    paths[(*n)++] = a;
    return -1;
}

/* The same for a command of one DIR. */
static int common_arg(const char *cmd, const char *a, bool *options, const char **dir)
{
    int n = *dir ? 1 : 0;
    return paths_arg(cmd, a, options, dir, &n, 1, "one DIR");
}

static int cmd_report(int argc, char **argv)
{
    const char *dir = NULL;
    int top = -1;
    bool options = true;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (options && (strcmp(a, "--top") == 0 || strncmp(a, "--top=", 6) == 0)) {
            const char *v = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : NULL);
            if ((top = parse_top(v)) < 0)
                return usage_error("--top wants a whole number from 1 to %d, not '%s'",
                                   REPORT_TOP_MAX, v ? v : "");
        } else if ((rc = common_arg("report", a, &options, &dir)) >= 0) {
            return rc;
        }
    }
    if (!dir)
        return usage_error("report needs a DIR (a process folder or the SYNCSPY_OUT root)");
    struct cli_set set;
    size_t problems = cli_load(dir, 0, &set);
    int rc = set.n == 0 ? 2 : problems ? 1 : 0; /* nothing could be read: bad input */
    if (set.n > 0) {
        struct report_opts opts = {.top = top > 0 ? top : default_top(),
                                   .color = report_color_wanted(cli_color(), STDOUT_FILENO)};
        if (report_render_text(set.procs, set.n, &opts, STDOUT_FILENO) != 0 ||
            cli_ranks_render(set.procs, set.n, STDOUT_FILENO) != 0) {
            fprintf(stderr, "syncspy: writing the report: %s\n", strerror(errno));
            rc = 1;
        }
        if (problems)
            fprintf(stderr, "syncspy: warning: %zu problem%s reading %s (named above); the "
                    "report covers the %zu process%s that could be read\n", problems,
                    problems == 1 ? "" : "s", cli_shown(dir), set.n, set.n == 1 ? "" : "es");
    }
    cli_set_free(&set);
    return rc;
}

/* Writes to an fd the caller owns (stdout, or an existing file that is not a regular file). */
static int write_to_fd(const char *what, int fd, int (*fn)(const struct cli_set *, int),
                       const struct cli_set *set)
{
    if (fn(set, fd) != 0) {
        fprintf(stderr, "syncspy: writing to %s: %s\n", what, strerror(errno));
        return 1;
    }
    return 0;
}

/* Writes OUT through OUT.tmp and a rename, so a reader never sees half a file. An OUT that
 * exists and is not a regular file (a pipe, /dev/null, a terminal) is written in place: a
 * rename would replace the device or the pipe with a file. */
static int write_output(const char *out, int (*fn)(const struct cli_set *, int),
                        const struct cli_set *set)
{
    if (strcmp(out, "-") == 0)
        return write_to_fd("stdout", STDOUT_FILENO, fn, set);
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        int fd = open(out, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "syncspy: cannot open %s: %s\n", out, strerror(errno));
            return 1;
        }
        int rc = write_to_fd(out, fd, fn, set);
        close(fd);
        return rc;
    }
    size_t n = strlen(out);
    char *tmp = malloc(n + 5);
    if (!tmp) {
        fprintf(stderr, "syncspy: out of memory\n");
        return 1;
    }
    memcpy(tmp, out, n);
    memcpy(tmp + n, ".tmp", 5);
    /* private as the agent's files (OUTPUT_FILE_MODE: the page and the exports hold the source
     * lines and paths); made new, never through a link planted as OUT.tmp */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, OUTPUT_FILE_MODE);
    int rc = 0;
    if (fd < 0) {
        fprintf(stderr, "syncspy: cannot create %s: %s\n", tmp, strerror(errno));
        rc = 1;
    } else {
        int failed = fn(set, fd);
        int saved = errno;
        if (close(fd) != 0 && !failed) {
            failed = -1;
            saved = errno;
        }
        if (!failed && rename(tmp, out) != 0) {
            failed = -1;
            saved = errno;
        }
        if (failed) {
            fprintf(stderr, "syncspy: cannot write %s: %s\n", out, strerror(saved));
            unlink(tmp);
            rc = 1;
        }
    }
    free(tmp);
    return rc;
}

/* export --folded's writer for write_output, with its option */
static bool folded_startup;
static int write_folded(const struct cli_set *set, int fd)
{
    return cli_export_folded(set, folded_startup, fd);
}

static int cmd_export(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *format = NULL;
    bool options = true;
    folded_startup = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (options && (strncmp(a, "--folded", 8) == 0 || strncmp(a, "--chrome", 8) == 0) &&
                   (a[8] == '\0' || a[8] == '=')) {
            if (format)
                return usage_error("export takes one of --folded and --chrome");
            format = a[2] == 'f' ? "folded" : "chrome";
            out = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!out || !*out)
                return usage_error("--%s needs an output file (OUT, or - for stdout)", format);
        } else if (options && strcmp(a, "--include-startup") == 0) {
            folded_startup = true;
        } else if ((rc = common_arg("export", a, &options, &dir)) >= 0) {
            return rc;
        }
    }
    if (!format)
        return usage_error("export needs --folded OUT or --chrome OUT");
    if (folded_startup && format[0] != 'f')
        return usage_error("--include-startup goes with --folded (the Chrome trace has every step)");
    if (!dir)
        return usage_error("export needs a DIR (a process folder or the SYNCSPY_OUT root)");
    struct cli_set set;
    size_t problems = cli_load(dir, format[0] == 'c' ? CLI_LOAD_EVENTS : 0, &set);
    int rc = set.n == 0 ? 2 : problems ? 1 : 0; /* nothing could be read: bad input */
    if (set.n > 0) {
        int wrc = write_output(out, format[0] == 'f' ? write_folded : cli_export_chrome,
                               &set);
        rc = rc || wrc;
    }
    cli_set_free(&set);
    return rc;
}

/* A whole decimal number >= 0 (digits, at most one point; "1e3", "inf", "-0" refused), or -1. */
static double parse_amount(const char *s, double max)
{
    if (!s || !*s)
        return -1;
    bool dot = false, digit = false;
    for (const char *p = s; *p; p++) {
        if (*p == '.' && !dot)
            dot = true;
        else if (*p >= '0' && *p <= '9')
            digit = true;
        else
            return -1;
    }
    double v = strtod(s, NULL);
    return digit && isfinite(v) && v <= max ? v : -1;
}

/* "--name VALUE" or "--name=VALUE" at argv[*i]: the value (NULL when missing), else no match. */
static bool option_value(const char *name, int argc, char **argv, int *i, const char **value)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '='))
        return false;
    *value = a[n] == '=' ? a + n + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
    return true;
}

/* Loads a DIR for check or diff: any file that cannot be read is bad input (exit 2). */
static bool load_all(const char *cmd, const char *dir, struct cli_set *set)
{
    size_t problems = cli_load(dir, 0, set);
    if (problems || set->n == 0) {
        fprintf(stderr, "syncspy %s: cannot read %s whole (%zu problem%s, named above)\n", cmd,
                cli_shown(dir), problems ? problems : 1, problems == 1 || !problems ? "" : "s");
        cli_set_free(set);
        return false;
    }
    for (size_t i = 0; i < set->n; i++) {
        const struct rep_process *p = &set->procs[i];
        char note[512];
        if (!p->trace_unfinished || !report_lost_note(p, note, sizeof note))
            continue;
        /* a lower bound: check cannot say a run is within its budget from it */
        fprintf(stderr, "syncspy %s: pid %d in %s: %s%s\n", cmd, p->pid, cli_shown(dir), note,
                strcmp(cmd, "check") == 0 ? "; no budget is judged from a lower bound" : "");
        if (strcmp(cmd, "check") == 0) {
            cli_set_free(set);
            return false;
        }
    }
    for (size_t i = 0; i < set->n; i++)
        if (!set->procs[i].active_steps) {
            fprintf(stderr, "syncspy %s: pid %d in %s recorded no step (did SYNCSPY_SCHEDULE record "
                    "none?): nothing to count\n", cmd, set->procs[i].pid, cli_shown(dir));
            cli_set_free(set);
            return false;
        }
    return true;
}

static int cmd_check(int argc, char **argv)
{
    const char *dir = NULL, *v;
    struct check_opts o = {0};
    struct cli_allow *allow = calloc((size_t)argc + 1, sizeof *allow);
    char budget[256] = "";
    bool options = true;
    int rc = -1;
    if (!allow) {
        fprintf(stderr, "syncspy: out of memory\n");
        return 2;
    }
    for (int i = 0; i < argc && rc < 0; i++) {
        const char *a = argv[i];
        if (options && option_value("--max-syncs-per-step", argc, argv, &i, &v)) {
            if ((o.max_syncs = parse_amount(v, 1e12)) < 0)
                rc = usage_error("--max-syncs-per-step wants a number >= 0 (syncs per training "
                                 "step), not '%s'", v ? v : "");
            o.has_max_syncs = true;
        } else if (options && option_value("--max-blocked-share", argc, argv, &i, &v)) {
            char num[64];
            size_t n = v ? strlen(v) : 0;
            snprintf(num, sizeof num, "%.*s", (int)(n && v[n - 1] == '%' ? n - 1 : n), v ? v : "");
            if (n >= sizeof num || (o.max_share = parse_amount(num, 100)) < 0)
                rc = usage_error("--max-blocked-share wants a percentage from 0 to 100 (e.g. 5 or "
                                 "2.5%%), not '%s'", v ? v : "");
            o.has_max_share = true;
        } else if (options && option_value("--allow", argc, argv, &i, &v)) {
            if (cli_allow_parse(v, &allow[o.nallow]) != 0)
                rc = usage_error("--allow wants FILE:LINE (e.g. train.py:88), not '%s'", v ? v : "");
            o.nallow++;
        } else if (options && strcmp(a, "--include-startup") == 0) {
            o.include_startup = true;
        } else if (options && strcmp(a, "--json") == 0) {
            o.json = true;
        } else {
            rc = common_arg("check", a, &options, &dir);
        }
    }
    if (rc < 0 && !o.has_max_syncs && !o.has_max_share)
        rc = usage_error("check needs a budget: --max-syncs-per-step N (and/or --max-blocked-share P)");
    if (rc < 0 && !dir)
        rc = usage_error("check needs a DIR (a process folder or the SYNCSPY_OUT root)");
    struct cli_set set;
    if (rc < 0 && !load_all("check", dir, &set))
        rc = 2;
    if (rc < 0) {
        if (o.has_max_syncs)
            snprintf(budget, sizeof budget, "--max-syncs-per-step %g", o.max_syncs);
        if (o.has_max_share)
            snprintf(budget + strlen(budget), sizeof budget - strlen(budget), "%s--max-blocked-share %g%%",
                     *budget ? ", " : "", o.max_share);
        o.allow = allow;
        o.budget_text = budget;
        rc = cli_check(&set, &o, STDOUT_FILENO);
        cli_set_free(&set);
    }
    free(allow);
    return rc;
}

static int cmd_diff(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    struct diff_opts o = {0};
    bool options = true;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (options && strcmp(a, "--json") == 0)
            o.json = true;
        else if ((rc = paths_arg("diff", a, &options, paths, &n, 2, "two folders, BASE and NEW")) >= 0)
            return rc;
    }
    if (n < 2)
        return usage_error("diff needs BASE and NEW (two process folders or SYNCSPY_OUT roots)");
    struct cli_set base, neu;
    if (!load_all("diff", paths[0], &base))
        return 2;
    if (!load_all("diff", paths[1], &neu)) {
        cli_set_free(&base);
        return 2;
    }
    o.base_path = paths[0];
    o.new_path = paths[1];
    int rc = cli_diff(&base, &neu, &o, STDOUT_FILENO);
    cli_set_free(&base);
    cli_set_free(&neu);
    return rc;
}

/* The page's writer for write_output (one argument: the set; the rest through these). */
static const struct cli_set *html_new;
static const struct html_opts *html_options;

static int write_html(const struct cli_set *set, int fd)
{
    return cli_html(set, html_new, html_options, fd);
}

static int cmd_html(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *out = "syncspy.html", *v;
    int top = -1, n = 0;
    bool options = true;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc;
        if (options && (option_value("-o", argc, argv, &i, &v) || option_value("--output", argc, argv, &i, &v))) {
            if (!v || !*v)
                return usage_error("html: -o needs a FILE (or - for stdout)");
            out = v;
        } else if (options && option_value("--top", argc, argv, &i, &v)) {
            if ((top = parse_top(v)) < 0)
                return usage_error("--top wants a whole number from 1 to %d, not '%s'", REPORT_TOP_MAX,
                                   v ? v : "");
        } else if ((rc = paths_arg("html", a, &options, paths, &n, 2, "DIR, or BASE and NEW for a diff")) >= 0) {
            return rc;
        }
    }
    if (n == 0)
        return usage_error("html needs a DIR (a process folder or the SYNCSPY_OUT root), or BASE NEW");
    struct cli_set base, neu;
    size_t problems = cli_load(paths[0], CLI_LOAD_EVENTS, &base);
    if (problems || base.n == 0) {
        fprintf(stderr, "syncspy html: cannot read %s whole (%zu problem%s, named above)\n",
                cli_shown(paths[0]), problems ? problems : 1, problems == 1 || !problems ? "" : "s");
        cli_set_free(&base);
        return 2;
    }
    if (n == 2) {
        problems = cli_load(paths[1], CLI_LOAD_EVENTS, &neu);
        if (problems || neu.n == 0) {
            fprintf(stderr, "syncspy html: cannot read %s whole (%zu problem%s, named above)\n",
                    cli_shown(paths[1]), problems ? problems : 1, problems == 1 || !problems ? "" : "s");
            cli_set_free(&base);
            cli_set_free(&neu);
            return 2;
        }
    }
    struct html_opts o = {.path = paths[0], .new_path = n == 2 ? paths[1] : NULL,
                          .top = top > 0 ? top : default_top()};
    html_new = n == 2 ? &neu : NULL;
    html_options = &o;
    int rc = write_output(out, write_html, &base);
    if (rc == 0 && strcmp(out, "-") != 0)
        fprintf(stderr, "syncspy html: wrote %s\n", out);
    cli_set_free(&base);
    if (n == 2)
        cli_set_free(&neu);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error(NULL);
    const char *cmd = argv[1];
    if (is_help(cmd) || strcmp(cmd, "help") == 0) {
        print_help();
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        puts("syncspy " SYNCSPY_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return cli_run(argc - 2, argv + 2);
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0)
        return cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 2, argv + 2);
    if (strcmp(cmd, "diff") == 0)
        return cmd_diff(argc - 2, argv + 2);
    if (strcmp(cmd, "html") == 0)
        return cmd_html(argc - 2, argv + 2);
    if (strcmp(cmd, "top") == 0)
        return cli_top(argc - 2, argv + 2);
    return usage_error("unknown command '%s'", cmd);
}
