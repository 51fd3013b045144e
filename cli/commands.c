/* cli/commands.c: the table of the `syncspy` subcommands (cli/commands.h) and everything made
 * from it: the option parsing (getopt_long), --help, usage errors, the bash and zsh completion
 * scripts, the manual page. A new option is one row here. Prints only: it reads no file and
 * never runs inside a target process. */
#include "cli/commands.h"
#include "cli/load.h"
#include "cli/version.h"

#include <getopt.h>
#include <stdarg.h>
#include <string.h>

/* ---- the table ----------------------------------------------------------------------------- */

#define HELP_ROW                                                       \
    {                                                                  \
        "help", 'h', NULL, false, CLI_COMPLETE_NONE, NULL, "this help" \
    }
#define END_ROW                                             \
    {                                                       \
        NULL, 0, NULL, false, CLI_COMPLETE_NONE, NULL, NULL \
    }

#define DIR_PARAGRAPH                                                                             \
    "DIR is a process folder, a SYNCSPY_OUT root whose processes and ranks are merged, or a "     \
    "trace.bin or summary.json file; a process folder is read from its trace.bin when it has "    \
    "one, else from its summary.json. Anything else (a program, train.py) is refused: it is not " \
    "a run folder."

#define TOP_HELP "groups (lines) shown, 1 to 1000 (default SYNCSPY_TOP, else 10)"

static const struct cli_option report_options[] = {
    {"top", CLI_KEY_TOP, "N", false, CLI_COMPLETE_NONE, NULL, TOP_HELP},
    {"color", CLI_KEY_COLOR, "WHEN", false, CLI_COMPLETE_WORDS, "auto always never",
     "colour: auto (when stdout is a terminal, unless NO_COLOR is set or TERM=dumb), always or "
     "never (default SYNCSPY_COLOR, else auto)"},
    HELP_ROW,
    END_ROW,
};

static const struct cli_option export_options[] = {
    {"folded", CLI_KEY_FOLDED, "OUT", false, CLI_COMPLETE_FILE, NULL,
     "folded stacks into OUT (- for stdout)"},
    {"chrome", CLI_KEY_CHROME, "OUT", false, CLI_COMPLETE_FILE, NULL,
     "Chrome trace events into OUT (- for stdout)"},
    {"include-startup", CLI_KEY_INCLUDE_STARTUP, NULL, false, CLI_COMPLETE_NONE, NULL,
     "with --folded: keep start-up (before the first step)"},
    HELP_ROW,
    END_ROW,
};

static const struct cli_option check_options[] = {
    {"max-syncs-per-step", CLI_KEY_MAX_SYNCS, "N", false, CLI_COMPLETE_NONE, NULL,
     "at most N syncs per training step (N may be fractional)"},
    {"max-blocked-share", CLI_KEY_MAX_SHARE, "P", false, CLI_COMPLETE_NONE, NULL,
     "at most P% of the steps' wall time blocked in syncs"},
    {"allow", CLI_KEY_ALLOW, "FILE:LINE", false, CLI_COMPLETE_NONE, NULL,
     "syncs at this line do not count (FILE a path or its tail; the line the report shows: a "
     "sync's innermost user frame, or for a backward-pass sync the forward line); repeatable"},
    {"include-startup", CLI_KEY_INCLUDE_STARTUP, NULL, false, CLI_COMPLETE_NONE, NULL,
     "start-up (before the first step) must stay within the budget too, as one step"},
    {"json", CLI_KEY_JSON, NULL, false, CLI_COMPLETE_NONE, NULL, "the verdict as JSON on stdout"},
    HELP_ROW,
    END_ROW,
};

static const struct cli_option diff_options[] = {
    {"json", CLI_KEY_JSON, NULL, false, CLI_COMPLETE_NONE, NULL,
     "the comparison as JSON on stdout"},
    HELP_ROW,
    END_ROW,
};

static const struct cli_option html_options[] = {
    {"output", 'o', "FILE", false, CLI_COMPLETE_FILE, NULL,
     "the page's file (default syncspy.html; - for stdout)"},
    {"top", CLI_KEY_TOP, "N", false, CLI_COMPLETE_NONE, NULL, TOP_HELP},
    HELP_ROW,
    END_ROW,
};

static const struct cli_option top_options[] = {
    {"interval", CLI_KEY_INTERVAL, "SECONDS", false, CLI_COMPLETE_NONE, NULL,
     "seconds between two screens, 0.1 to 3600 (default 1)"},
    {"once", CLI_KEY_ONCE, NULL, false, CLI_COMPLETE_NONE, NULL,
     "print one screen (no terminal codes) and exit"},
    HELP_ROW,
    END_ROW,
};

/* run: one option per variable of the agent (output/config.c config_variables, checked by its
 * parser; tests/e2e/test_cli_usage.py checks that every variable has its row), each named after
 * its variable, then run's own. */
#define VAR_ROW(name, arg, complete, values, help)                 \
    {                                                              \
        name, CLI_KEY_VARIABLE, arg, false, complete, values, help \
    }
static const struct cli_option run_options[] = {
    VAR_ROW("out", "DIR", CLI_COMPLETE_DIR, NULL,
            "SYNCSPY_OUT: the folder of the process folders (default ./syncspy-out)"),
    VAR_ROW("schedule", "SPEC", CLI_COMPLETE_NONE, NULL,
            "SYNCSPY_SCHEDULE: the steps recorded, as torch.profiler.schedule: skip_first=N, "
            "skip_first_wait=N, wait=N, warmup=N, active=N, repeat=N joined by commas, no spaces, "
            "or off (none until `syncspy start`; default every step)"),
    VAR_ROW("step", "MODE", CLI_COMPLETE_WORDS, "auto manual",
            "SYNCSPY_STEP: auto (explicit step marks, else detected) or manual (marks only)"),
    VAR_ROW("report", "WHERE", CLI_COMPLETE_FILE, NULL,
            "SYNCSPY_REPORT: the exit report to stderr (the default), stdout, off, or a file PATH"),
    VAR_ROW("top", "N", CLI_COMPLETE_NONE, NULL,
            "SYNCSPY_TOP: groups (lines) in the exit report, 1 to 1000 (default 10); as "
            "report --top N"),
    VAR_ROW("max-depth", "N", CLI_COMPLETE_NONE, NULL,
            "SYNCSPY_MAX_DEPTH: native frames kept per stack, 4 to 256 (default 64)"),
    VAR_ROW("buffer-mb", "N", CLI_COMPLETE_NONE, NULL,
            "SYNCSPY_BUFFER_MB: MiB for all threads' event rings, 1 to 1024 (default 8)"),
    VAR_ROW("launches", "MODE", CLI_COMPLETE_WORDS, "count trace",
            "SYNCSPY_LAUNCHES: count (launches counted per step, the default) or trace (a record "
            "per launch too)"),
    VAR_ROW("backward", "MODE", CLI_COMPLETE_WORDS, "auto all sampled off",
            "SYNCSPY_BACKWARD: backward-pass syncs attributed to their forward line: auto (the "
            "default), all, sampled or off"),
    VAR_ROW("cupti", "WHICH", CLI_COMPLETE_WORDS, "auto off eager",
            "SYNCSPY_CUPTI: auto (the default), off, eager, or the absolute PATH of a libcupti"),
    VAR_ROW("gpu", "0|1", CLI_COMPLETE_WORDS, "0 1",
            "SYNCSPY_GPU: 1 for CUPTI's activity records and the GPU idle time after each sync "
            "site (default 0)"),
    VAR_ROW("color", "WHEN", CLI_COMPLETE_WORDS, "auto always never",
            "SYNCSPY_COLOR: colour in the exit report: auto (on a terminal, unless NO_COLOR or "
            "TERM=dumb; the default), always or never"),
    VAR_ROW("debug", "0|1|2", CLI_COMPLETE_WORDS, "0 1 2",
            "SYNCSPY_DEBUG: the agent's notices on stderr: 0 (the default), 1, 2 (verbose)"),
    VAR_ROW("stack-cache", "on|off", CLI_COMPLETE_WORDS, "on off",
            "SYNCSPY_STACK_CACHE: on (the default): a stack seen before is checked, not unwound "
            "again; off: every capture unwinds"),
    VAR_ROW("trace-mb", "N", CLI_COMPLETE_NONE, NULL,
            "SYNCSPY_TRACE_MB: the bound on a process's trace.bin in MiB, 0 (none) to 1048576 "
            "(default 1024)"),
    {"sim", CLI_KEY_SIM, "13|12", true, CLI_COMPLETE_WORDS, "13 12",
     "runs CMD on the simulated CUDA device shipped with syncspy (no GPU needed; "
     "kernels compute nothing, syncs wait) of CMD's CUDA version: --sim (or --sim=13) for CUDA 13 "
     "programs (PyPI's torch 2.12 and later), --sim=12 for CUDA 12 ones (PyPI's torch 2.10 and "
     "earlier); a torch's own is its torch.version.cuda. Its libraries (sim/ or sim12/ beside this "
     "program) are preloaded after the agent, ahead of any CUDA library CMD loads (torch's own "
     "CUDA wheels too), and their folder is put first on LD_LIBRARY_PATH; every process CMD "
     "starts inherits both."},
    {"live", CLI_KEY_LIVE, NULL, false, CLI_COMPLETE_NONE, NULL,
     "the live view of `syncspy top` on this terminal while CMD runs, CMD's output (and its "
     "report) going to SYNCSPY_OUT/run.log; q closes the view, CMD runs on"},
    HELP_ROW,
    END_ROW,
};

#define WAIT_ROW                                                                  \
    {                                                                             \
        "wait", CLI_KEY_WAIT, "SECONDS", false, CLI_COMPLETE_NONE, NULL,          \
            "how long to wait for each process's answer, 0.1 to 3600 (default 5)" \
    }
static const struct cli_option start_options[] = {
    {"steps", CLI_KEY_STEPS, "N", false, CLI_COMPLETE_NONE, NULL,
     "record N steps, 1 to 1000000000 (default: until `syncspy stop`)"},
    WAIT_ROW,
    HELP_ROW,
    END_ROW,
};

static const struct cli_option stop_options[] = {WAIT_ROW, HELP_ROW, END_ROW};

static const struct cli_option completion_options[] = {HELP_ROW, END_ROW};

static const struct cli_option help_options[] = {
    {"man", CLI_KEY_MAN, NULL, false, CLI_COMPLETE_NONE, NULL,
     "the manual page syncspy(1) in roff (make man writes it to build/syncspy.1)"},
    HELP_ROW,
    END_ROW,
};

#define EXIT_FILES                                                                               \
    "0 when every file was read; 1 when one could not be read (a bad header, a "                 \
    "newer format, corruption before the last record: each is named on stderr with its byte "    \
    "offset, and the other processes are still reported) or an output could not be written; 2 "  \
    "for a usage error or when nothing could be read (DIR missing, empty, not a run folder, or " \
    "none of its files readable)."

const struct cli_command cli_commands[] = {
    {"run", "run [OPTIONS] [--] CMD [ARGS...]",
     "run CMD with the agent, then say where its files are",
     "Runs CMD with the agent (the libsyncspy.so beside this program) first in LD_PRELOAD, so every "
     "process it starts (torchrun's ranks too) is recorded; then says where the files are. Each "
     "option named after a variable of the agent (the table of README.md) sets it, and is checked "
     "as the agent checks it before CMD starts. --name=VALUE works too.\n\n"
     "    syncspy run -- python train.py\n"
     "    syncspy run --out runs/a --schedule wait=5,active=20 -- torchrun train.py",
     "CMD's; when CMD dies of a signal, syncspy run dies of the same one (a shell "
     "shows 128+N); 125 for a usage error, a bad option value or a missing agent or simulated "
     "device (not 2: that could be CMD's), 126 when CMD cannot be executed, 127 when it is not "
     "found.",
     run_options, CLI_COMPLETE_COMMAND, NULL, true, RUN_FAILED},
    {"report", "report [--top N] [--color WHEN] DIR", "the report again, from a run's files",
     "The report again. Merged processes get one hotspot table: per-step numbers are sums over "
     "processes divided by the sum of their active steps (the mean process-step). A trace.bin cut "
     "by a crash is read up to its last complete record and its header says so. Several processes "
     "end with a per-rank section: syncs/step and blocked share per rank (min, median, max), the "
     "ranks that wait most (stragglers), lines that sync on some ranks only, ranks with no step "
     "mark.\n\n" DIR_PARAGRAPH,
     EXIT_FILES, report_options, CLI_COMPLETE_FILE, NULL, false, 2},
    {"export", "export --folded OUT [--include-startup] DIR\nexport --chrome OUT DIR",
     "folded stacks or Chrome trace events",
     "--folded: folded stacks weighted by blocked ns, one line per sync site (flamegraph.pl, "
     "speedscope, inferno). As in the report, start-up and the step still open at exit are left "
     "out; --include-startup keeps start-up.\n\n"
     "--chrome: Chrome trace events (Perfetto, chrome://tracing): from a trace.bin, a track per "
     "thread with each sync as a slice (its API, bytes, stream, step and top frames) and each "
     "launch as an instant, and a steps track; from a summary.json alone, only its active steps, "
     "laid end to end.\n\n" DIR_PARAGRAPH,
     EXIT_FILES, export_options, CLI_COMPLETE_FILE, NULL, false, 2},
    {"check",
     "check --max-syncs-per-step N [--max-blocked-share P] [--allow FILE:LINE]...\n"
     " [--include-startup] [--json] DIR",
     "hold a run to a sync budget (CI)",
     "A sync budget for CI: every process of DIR must stay within it in its training steps "
     "(start-up and the step still open at exit left out, as in the report; all threads' syncs "
     "counted). It needs --max-syncs-per-step or --max-blocked-share.\n\n" DIR_PARAGRAPH,
     "0 within budget, 1 over it (the lines over it are named: syncs and blocked time "
     "per step), 2 for bad input or usage, or a trace.bin that lost data to a failed write (its "
     "figures are a lower bound: no budget is judged from them).",
     check_options, CLI_COMPLETE_FILE, NULL, false, 2},
    {"diff", "diff [--json] BASE NEW", "compare two runs line by line",
     "Per line and API, the syncs and blocked time per training step of two runs (each read as "
     "DIR is for report), each marked gone, new, more, fewer or the same.\n\n" DIR_PARAGRAPH,
     "0, or 2 when a file cannot be read or for a usage error.", diff_options, CLI_COMPLETE_FILE,
     NULL, false, 2},
    {"html", "html [-o FILE] [--top N] DIR\nhtml [-o FILE] [--top N] BASE NEW",
     "one offline HTML page of a run, or of a diff",
     "One offline HTML page (script, style and data inline, no network request): the report's "
     "header, a chart per step, the sites table with stacks and source, a flame graph of blocked "
     "time, a step's timeline per thread (from trace.bin); with BASE NEW: the diff's page.\n\n" DIR_PARAGRAPH,
     "0, 2 for bad input or usage, 1 when FILE could not be written.", html_options,
     CLI_COMPLETE_FILE, NULL, false, 2},
    {"top", "top [--interval SECONDS] [--once] DIR", "a live view of a running job",
     "A live view of a running job, read every second from the files its processes append (also "
     "from another node over a shared filesystem; it never writes into DIR): steps/s, syncs/step "
     "and blocked share over the last 10 s of steps and since start, one row per process of a "
     "root, the threads, the top lines with their rates. Keys: q quits, s sorts, t picks a thread. "
     "`syncspy run --live -- CMD` shows it beside CMD.\n\n" DIR_PARAGRAPH,
     "0, 1 when the screen could not be written, 2 for a usage error or a DIR that "
     "cannot be read.",
     top_options, CLI_COMPLETE_FILE, NULL, false, 2},
    {"start", "start [--steps N] [--wait SECONDS] PID|DIR", "record steps of a running job now",
     "Asks a running process (or every running process of a SYNCSPY_OUT folder) to record steps "
     "from the end of its current step on: N of them, or until `syncspy stop`; besides those its "
     "schedule records (SYNCSPY_SCHEDULE=off: none but these). It works from another terminal, and "
     "from another node through a shared filesystem: a request file goes into the process folder "
     "(DIR/control), which the agent reads within 100 ms and applies at the next step boundary; "
     "no signal is sent. Then it says which steps are recorded, or that the process is gone or "
     "has no agent. PID finds the folder through the process's SYNCSPY_OUT (the same node only). "
     "summary.json (\"recorded\") and the report say which steps were recorded and why.\n\n"
     "    SYNCSPY_SCHEDULE=off syncspy run -- python train.py &\n"
     "    syncspy start --steps 100 syncspy-out      # every running process in it\n"
     "    syncspy start syncspy-out/pid4242 && sleep 60 && syncspy stop syncspy-out/pid4242",
     "0 when every process answered, 1 when one did not (gone, ended, no agent, no answer in "
     "SECONDS), 2 for a usage error or bad input (a folder of another user, not a run folder).",
     start_options, CLI_COMPLETE_FILE, NULL, false, 2},
    {"stop", "stop [--wait SECONDS] PID|DIR", "stop recording what `syncspy start` asked for",
     "Ends, at the next step boundary, the recording `syncspy start` (or syncspy.start()) began; "
     "the steps its schedule records are still recorded. Says which steps were recorded. PID and "
     "DIR as for start.",
     "0 when every process answered, 1 when one did not, 2 for a usage error or bad input.",
     stop_options, CLI_COMPLETE_FILE, NULL, false, 2},
    {"completion", "completion bash|zsh", "a shell completion script",
     "Prints a completion script for bash or zsh, made from the same option tables as this help.\n\n"
     "    source <(syncspy completion bash)      # in ~/.bashrc\n"
     "    syncspy completion zsh > ~/.zfunc/_syncspy   # a folder of $fpath, before compinit",
     "0, or 2 for a usage error (a shell it has no script for).", completion_options,
     CLI_COMPLETE_WORDS, "bash zsh", false, 2},
    {"help", "help [CMD]\nhelp --man", "the help of syncspy or of one command",
     "The help of syncspy, or of CMD (as `syncspy CMD --help`); --man prints the manual page.",
     "0, or 2 for a usage error.", help_options, CLI_COMPLETE_SUBCOMMAND, NULL, false, 2},
    {NULL, NULL, NULL, NULL, NULL, NULL, CLI_COMPLETE_NONE, NULL, false, 0},
};

/* The manual page's date (.TH): when its text last changed. */
#define MAN_DATE "2026-12-07"

static const char program_summary[] = "where a CUDA training job makes the host wait for the GPU";

static const char program_text[] =
    "syncspy finds the host-device syncs of a CUDA training job (the calls that make the host "
    "wait for the GPU), the lines that make them and what they cost, without a change to the "
    "program.\n\n"
    "    syncspy run -- python train.py\n\n"
    "or, without this program: LD_PRELOAD=/path/to/libsyncspy.so python train.py. Each process "
    "writes SYNCSPY_OUT/pid<P>/ (rank<R>-<host>-pid<P>/ under a launcher), default ./syncspy-out: "
    "trace.bin as it runs (every sync and launch, the steps and the exact per-site counts, "
    "appended at each flush, so it survives kill -9 up to the last flush), and summary.json with "
    "the sync-hotspot report at exit. The other commands read these files.";

/* ---- lookups ------------------------------------------------------------------------------- */

const struct cli_command *cli_command(const char *name)
{
    for (const struct cli_command *c = cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static bool has_short(const struct cli_option *o)
{
    return o->key > 0 && o->key < 128;
}

/* ---- parsing ------------------------------------------------------------------------------- */

#define OPTIONS_MAX 40

/* The option's word as written, up to its '=' (escaped for stderr). */
static const char *option_word(const char *word)
{
    char buf[128];
    size_t n = strcspn(word, "=");
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), word);
    return cli_shown(buf);
}

/* The row getopt_long matched: by its index, else (a missing value) by the short letter, else
 * by the word's long name (as getopt_long, a unique prefix of one). */
static const struct cli_option *row_of(const struct cli_command *c, int index, int key,
                                       const char *word)
{
    if (index >= 0)
        return &c->options[index];
    const struct cli_option *found = NULL;
    size_t n = word[0] == '-' && word[1] == '-' ? strcspn(word + 2, "=") : 0;
    for (const struct cli_option *o = c->options; o->name; o++) {
        if (!n && has_short(o) && o->key == key)
            return o;
        if (n && strncmp(o->name, word + 2, n) == 0) {
            if (strlen(o->name) == n)
                return o;
            found = found ? found : o;
        }
    }
    return found;
}

int cli_next_option(struct cli_args *a)
{
    const struct cli_command *c = a->cmd;
    struct option longs[OPTIONS_MAX + 1];
    char shorts[2 * OPTIONS_MAX + 3];
    size_t n = 0, k = 0;
    if (c->options_first)
        shorts[k++] = '+'; /* stop at CMD: its own options are its own */
    shorts[k++] = ':';     /* a missing value returns ':', said here, not by getopt */
    for (const struct cli_option *o = c->options; o->name && n < OPTIONS_MAX; o++, n++) {
        longs[n] = (struct option){o->name,
                                   !o->arg           ? no_argument
                                   : o->arg_optional ? optional_argument
                                                     : required_argument,
                                   NULL, o->key};
        if (has_short(o)) {
            shorts[k++] = (char)o->key;
            if (o->arg)
                shorts[k++] = ':';
        }
    }
    longs[n] = (struct option){NULL, 0, NULL, 0};
    shorts[k] = '\0';
    if (!a->started) {
        optind = 0; /* glibc: start again from argv[1] */
        a->started = true;
    }
    opterr = 0;
    int index = -1, before = optind ? optind : 1;
    int key = getopt_long(a->argc, a->argv, shorts, longs, &index);
    a->operands = optind;
    a->value = optarg;
    a->opt = NULL;
    a->word = before < a->argc ? a->argv[before] : "";
    if (key == -1)
        return -1;
    if (key == '?') {
        const char *word = optopt ? NULL : a->argv[optind - 1];
        char shown[3] = {'-', (char)optopt, '\0'};
        a->status = cli_usage_error(c, "unknown option '%s'", word ? option_word(word) : shown);
        return 0;
    }
    a->opt = row_of(c, index, key == ':' ? optopt : key, a->argv[optind - 1]);
    if (key == ':' || (a->value && a->opt && a->opt->arg && !a->opt->arg_optional &&
                       strcmp(a->value, "--") == 0 && a->value == a->argv[optind - 1])) {
        /* "--top" last, or "--top -- CMD": no value (getopt would take the "--") */
        a->status = cli_usage_error(c, "%s needs a value (%s)",
                                    option_word(a->argv[optind - 1 - (key != ':')]),
                                    a->opt ? a->opt->arg : "?");
        return 0;
    }
    if (key == 'h') {
        cli_print_help(c, stdout);
        a->status = 0;
        return 0;
    }
    return key;
}

int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "syncspy %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    cli_print_usage(cmd, stderr);
    fprintf(stderr, "Try 'syncspy %s --help' for its options.\n", cmd->name);
    return cmd->usage_status;
}

/* ---- help ---------------------------------------------------------------------------------- */

#define WIDTH 80
#define HELP_COLUMN 26

/* The words of text[0..len) from column col, the next lines indented by indent, wrapped at WIDTH. */
static void wrap(FILE *out, const char *text, size_t len, int col, int indent)
{
    const char *p = text, *end = text + len;
    bool first = true;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\n'))
            p++;
        const char *w = p;
        while (p < end && *p != ' ' && *p != '\n')
            p++;
        int n = (int)(p - w);
        if (n == 0)
            break;
        if (!first && col + 1 + n > WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', out);
            col++;
        }
        fwrite(w, 1, (size_t)n, out);
        col += n;
        first = false;
    }
    fputc('\n', out);
}

/* Whether text[0..len) is an example: each of its lines starts with 4 spaces. */
static bool verbatim(const char *text, size_t len)
{
    for (const char *p = text; p < text + len;) {
        if (strncmp(p, "    ", 4) != 0)
            return false;
        const char *nl = memchr(p, '\n', (size_t)(text + len - p));
        p = nl ? nl + 1 : text + len;
    }
    return true;
}

/* Each paragraph of text to fn(out, paragraph, its length). */
static void paragraphs(FILE *out, const char *text, void (*fn)(FILE *, const char *, size_t))
{
    for (const char *p = text; *p;) {
        const char *e = strstr(p, "\n\n");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        fn(out, p, len);
        p += len;
        while (*p == '\n')
            p++;
    }
}

static void help_paragraph(FILE *out, const char *p, size_t len)
{
    fputc('\n', out);
    if (verbatim(p, len))
        fprintf(out, "%.*s\n", (int)len, p);
    else
        wrap(out, p, len, 0, 0);
}

/* "-o, --output FILE", "--sim[=13|12]", "--top N" */
static void option_label(const struct cli_option *o, char *buf, size_t cap)
{
    char letter[8] = "";
    if (has_short(o))
        snprintf(letter, sizeof letter, "-%c, ", (char)o->key);
    snprintf(buf, cap, "%s--%s%s%s%s", letter, o->name,
             o->arg ? (o->arg_optional ? "[=" : " ") : "", o->arg ? o->arg : "",
             o->arg && o->arg_optional ? "]" : "");
}

static void print_options(const struct cli_command *c, FILE *out)
{
    fputs("\nOptions:\n", out);
    for (const struct cli_option *o = c->options; o->name; o++) {
        char label[128];
        option_label(o, label, sizeof label);
        int col = fprintf(out, "  %s", label);
        if (col + 2 > HELP_COLUMN) {
            fprintf(out, "\n%*s", HELP_COLUMN, "");
            col = HELP_COLUMN;
        } else {
            col += fprintf(out, "%*s", HELP_COLUMN - col, "");
        }
        wrap(out, o->help, strlen(o->help), col, HELP_COLUMN);
    }
}

void cli_print_usage(const struct cli_command *cmd, FILE *out)
{
    const char *lead = "usage: ";
    for (const struct cli_command *c = cmd ? cmd : cli_commands; c->name; c++) {
        for (const char *p = c->synopsis; *p;) {
            size_t len = strcspn(p, "\n");
            if (*p == ' ') /* a line continued: under the command's first option */
                fprintf(out, "%*s%.*s\n",
                        (int)(strlen("usage: syncspy ") + strcspn(c->synopsis, " ") + 1), "",
                        (int)len - 1, p + 1);
            else
                fprintf(out, "%ssyncspy %.*s\n", lead, (int)len, p);
            lead = "       ";
            p += len + (p[len] == '\n');
        }
        if (cmd)
            return;
    }
    fprintf(out, "%ssyncspy --help | --version\n", lead);
}

void cli_print_help(const struct cli_command *cmd, FILE *out)
{
    if (cmd) {
        cli_print_usage(cmd, out);
        paragraphs(out, cmd->text, help_paragraph);
        print_options(cmd, out);
        fputc('\n', out);
        fputs("Exit status:\n  ", out);
        wrap(out, cmd->exit_status, strlen(cmd->exit_status), 2, 2);
        return;
    }
    fprintf(out, "syncspy %s: %s.\n", SYNCSPY_VERSION, program_summary);
    paragraphs(out, program_text, help_paragraph);
    fputs("\nCommands:\n", out);
    for (const struct cli_command *c = cli_commands; c->name; c++) {
        int col = fprintf(out, "  %s", c->name);
        fprintf(out, "%*s", HELP_COLUMN - col, "");
        wrap(out, c->summary, strlen(c->summary), HELP_COLUMN, HELP_COLUMN);
    }
    fputc('\n', out);
    cli_print_usage(NULL, out);
    fputs("\n`syncspy CMD --help` gives a command's options and exit status (2 for a usage "
          "error; run: 125); `syncspy help --man | man -l -` the manual page of them all.\n",
          out);
}

/* ---- the manual page ----------------------------------------------------------------------- */

/* text[0..len) in roff: backslash and hyphen escaped, a line never starting with a control
 * character; unless keep_lines, lines are joined and cut again at a space past column 60 (man
 * fills them itself; short source lines are mandoc's style). */
static void roff(FILE *out, const char *text, size_t len, bool keep_lines)
{
    bool line_start = true;
    int col = 0;
    for (const char *p = text; p < text + len; p++) {
        char ch = *p;
        if (ch == '\n' && !keep_lines)
            ch = ' ';
        if (ch == ' ' && !keep_lines && col >= 60) /* source lines of at most 80 bytes */
            ch = '\n';
        col = ch == '\n' ? 0 : col + (ch == '\\' || ch == '-' ? 2 : ch == '`' ? 4 : 1);
        if (line_start && (ch == '.' || ch == '\''))
            fputs("\\&", out);
        if (ch == '\\')
            fputs("\\e", out);
        else if (ch == '-')
            fputs("\\-", out);
        else if (ch == '`')
            fputs("\\(ga", out);
        else
            fputc(ch, out);
        line_start = ch == '\n';
    }
}

static bool man_after_heading; /* a paragraph right after .SH needs no .PP */

static void man_paragraph(FILE *out, const char *p, size_t len)
{
    const char *pp = man_after_heading ? "" : ".PP\n";
    man_after_heading = false;
    if (verbatim(p, len)) {
        fprintf(out, "%s.RS 4\n.nf\n", pp);
        for (const char *q = p; q < p + len;) {
            const char *nl = memchr(q, '\n', (size_t)(p + len - q));
            size_t n = nl ? (size_t)(nl - q) : (size_t)(p + len - q);
            roff(out, q + 4, n - 4, true);
            fputc('\n', out);
            q += n + 1;
        }
        fputs(".fi\n.RE\n", out);
        return;
    }
    fputs(pp, out);
    roff(out, p, len, false);
    fputc('\n', out);
}

static void man_synopsis(FILE *out, const struct cli_command *c)
{
    fputs(".nf\n", out);
    for (const char *p = c->synopsis; *p;) {
        size_t len = strcspn(p, "\n");
        if (*p != ' ')
            fputs("\\fBsyncspy\\fR ", out);
        else /* a line continued */
            fprintf(out, "%*s", (int)(strlen("syncspy ") + strcspn(c->synopsis, " ") + 1), "");
        roff(out, p + (*p == ' '), len - (*p == ' '), true);
        fputc('\n', out);
        p += len + (p[len] == '\n');
    }
    fputs(".fi\n", out);
}

void cli_print_man(FILE *out)
{
    fprintf(out,
            ".\\\" syncspy(1), made by `syncspy help --man` from cli/commands.c: edit that\n"
            ".TH SYNCSPY 1 %s \"syncspy %s\" \"User Commands\"\n.SH NAME\nsyncspy \\- ",
            MAN_DATE, SYNCSPY_VERSION);
    roff(out, program_summary, strlen(program_summary), false);
    fputs("\n.SH SYNOPSIS\n", out);
    for (const struct cli_command *c = cli_commands; c->name; c++)
        man_synopsis(out, c);
    fputs(".nf\n\\fBsyncspy\\fR \\-\\-help | \\-\\-version\n.fi\n.SH DESCRIPTION\n", out);
    man_after_heading = true;
    paragraphs(out, program_text, man_paragraph);
    fputs(".SH COMMANDS\n", out);
    for (const struct cli_command *c = cli_commands; c->name; c++) {
        fprintf(out, ".SS %s\n", c->name);
        man_synopsis(out, c);
        paragraphs(out, c->text, man_paragraph);
        for (const struct cli_option *o = c->options; o->name; o++) {
            fputs(".TP\n", out);
            if (has_short(o))
                fprintf(out, "\\fB\\-%c\\fR, ", (char)o->key);
            fputs("\\fB", out);
            roff(out, "--", 2, false);
            roff(out, o->name, strlen(o->name), false);
            fputs("\\fR", out);
            if (o->arg) {
                fputs(o->arg_optional ? "[=\\fI" : " \\fI", out);
                roff(out, o->arg, strlen(o->arg), false);
                fputs(o->arg_optional ? "\\fR]" : "\\fR", out);
            }
            fputc('\n', out);
            roff(out, o->help, strlen(o->help), false);
            fputc('\n', out);
        }
        fputs(".PP\nExit status:\n", out);
        roff(out, c->exit_status, strlen(c->exit_status), false);
        fputc('\n', out);
    }
    static const char environment[] =
        "The agent reads the SYNCSPY_* variables that `syncspy run`'s options set (the table of "
        "README.md); the CLI reads SYNCSPY_TOP, SYNCSPY_COLOR and NO_COLOR.";
    fputs(".SH ENVIRONMENT\n", out);
    roff(out, environment, strlen(environment), false);
    fputs("\n.SH \"SEE ALSO\"\nREADME.md and docs/ of syncspy's sources.\n", out);
}

/* ---- completion scripts -------------------------------------------------------------------- */

/* Every option of c, as words: "--top --color -h --help". */
static void option_words(FILE *out, const struct cli_command *c, bool with_value_only)
{
    const char *sep = "";
    for (const struct cli_option *o = c->options; o->name; o++) {
        if (with_value_only && (!o->arg || o->arg_optional))
            continue;
        if (has_short(o)) {
            fprintf(out, "%s-%c", sep, (char)o->key);
            sep = " ";
        }
        fprintf(out, "%s--%s", sep, o->name);
        sep = " ";
    }
}

/* The bash words that complete a value or operand of that kind into COMPREPLY. */
static const char *bash_compgen(enum cli_complete k)
{
    switch (k) {
    case CLI_COMPLETE_FILE:
        return "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))";
    case CLI_COMPLETE_DIR:
        return "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\"))";
    case CLI_COMPLETE_COMMAND: return "COMPREPLY=($(compgen -c -- \"$cur\"))";
    default: return "COMPREPLY=()";
    }
}

/* The names of the commands, space-separated. */
static const char *command_names(void)
{
    static char names[256];
    size_t n = 0;
    for (const struct cli_command *c = cli_commands; c->name && n < sizeof names; c++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? " " : "", c->name);
    return names;
}

static void print_bash(FILE *out)
{
    fputs(
        "# bash completion for syncspy, made by `syncspy completion bash` from its option "
        "tables\n# (cli/commands.c). Load it with: source <(syncspy completion bash)\n"
        "_syncspy() {\n"
        "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
        "    local cmd=${COMP_WORDS[1]} takes= i w\n"
        "    COMPREPLY=()\n"
        "    # --name=VALUE: bash splits it at '=' (COMP_WORDBREAKS)\n"
        "    if [[ $cur == = ]]; then cur=; elif [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi\n"
        "    if ((COMP_CWORD == 1)); then\n"
        "        COMPREPLY=($(compgen -W \"",
        out);
    fprintf(out, "%s ", command_names());
    fputs("--help --version\" -- \"$cur\"))\n        return 0\n    fi\n    case $cmd in\n", out);
    for (const struct cli_command *c = cli_commands; c->name; c++) {
        fprintf(out, "    %s) takes=' ", c->name);
        option_words(out, c, true);
        fputs(" ';;\n", out);
    }
    fputs("    *) return 0;;\n    esac\n", out);
    /* run: after CMD, CMD's own arguments (files) */
    fputs(
        "    for ((i = 2; i < COMP_CWORD; i++)); do\n"
        "        w=${COMP_WORDS[i]}\n"
        "        case $cmd in run) ;; *) break;; esac\n"
        "        if [[ $w == -- ]]; then\n"
        "            if ((COMP_CWORD == i + 1)); then COMPREPLY=($(compgen -c -- \"$cur\"));\n"
        "            else compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
        "            return 0\n"
        "        elif [[ $takes == *\" $w \"* ]]; then ((i++))\n"
        "        elif [[ $w == = ]]; then ((i++))\n"
        "        elif [[ $w != -* ]]; then\n"
        "            compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))\n"
        "            return 0\n"
        "        fi\n"
        "    done\n"
        "    if [[ $takes == *\" $prev \"* || ${COMP_WORDS[COMP_CWORD-1]} == = ]]; then\n"
        "        case \"$cmd $prev\" in\n",
        out);
    for (const struct cli_command *c = cli_commands; c->name; c++)
        for (const struct cli_option *o = c->options; o->name; o++) {
            if (!o->arg || (o->complete == CLI_COMPLETE_NONE))
                continue;
            fprintf(out, "        \"%s --%s\"", c->name, o->name);
            if (has_short(o))
                fprintf(out, "|\"%s -%c\"", c->name, (char)o->key);
            if (o->complete == CLI_COMPLETE_WORDS)
                fprintf(out, ") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"));;\n", o->values);
            else
                fprintf(out, ") %s;;\n", bash_compgen(o->complete));
        }
    fputs("        esac\n        return 0\n    fi\n"
          "    if [[ $cur == -* ]]; then\n"
          "        case $cmd in\n",
          out);
    for (const struct cli_command *c = cli_commands; c->name; c++) {
        fprintf(out, "        %s) COMPREPLY=($(compgen -W \"", c->name);
        option_words(out, c, false);
        fputs("\" -- \"$cur\"));;\n", out);
    }
    fputs("        esac\n        return 0\n    fi\n    case $cmd in\n", out);
    for (const struct cli_command *c = cli_commands; c->name; c++) {
        if (c->operands == CLI_COMPLETE_SUBCOMMAND)
            fprintf(out, "    %s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"));;\n", c->name,
                    command_names());
        else if (c->operands == CLI_COMPLETE_WORDS)
            fprintf(out, "    %s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"));;\n", c->name,
                    c->operand_words);
        else
            fprintf(out, "    %s) %s;;\n", c->name, bash_compgen(c->operands));
    }
    fputs("    esac\n    return 0\n}\ncomplete -F _syncspy syncspy\n", out);
}

/* s for a zsh _arguments spec in single quotes, short: up to its first ';' or ". ", without
 * what is in parentheses, with ' [ ] : and \ escaped. */
static void zsh_brief(FILE *out, const char *s)
{
    int depth = 0;
    bool space = false;
    for (const char *p = s; *p && *p != ';' && strncmp(p, ". ", 2) != 0; p++) {
        depth += *p == '(' ? 1 : *p == ')' && depth > 0 ? -1 : 0;
        if (depth > 0 || *p == ')')
            continue;
        if (*p == ' ') {
            space = true;
            continue;
        }
        if (space && *p != ',')
            fputc(' ', out);
        space = false;
        if (*p == '\'')
            fputs("'\\''", out);
        else if (*p == '[' || *p == ']' || *p == ':' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else
            fputc(*p, out);
    }
}

static const char *zsh_action(enum cli_complete k)
{
    switch (k) {
    case CLI_COMPLETE_FILE: return "_files";
    case CLI_COMPLETE_DIR: return "_files -/";
    case CLI_COMPLETE_COMMAND: return "_command_names -e";
    default: return " ";
    }
}

static void zsh_value(FILE *out, const char *arg, enum cli_complete k, const char *values,
                      bool optional)
{
    fprintf(out, ":%s%s:", optional ? ":" : "", arg);
    if (k == CLI_COMPLETE_WORDS)
        fprintf(out, "(%s)", values);
    else
        fputs(zsh_action(k), out);
}

static void print_zsh(FILE *out)
{
    fputs("#compdef syncspy\n# zsh completion for syncspy, made by `syncspy completion zsh` from "
          "its option tables\n# (cli/commands.c). Put it in a folder of $fpath as _syncspy.\n"
          "_syncspy() {\n  local -a commands\n  commands=(\n",
          out);
    for (const struct cli_command *c = cli_commands; c->name; c++) {
        fprintf(out, "    '%s:", c->name);
        zsh_brief(out, c->summary);
        fputs("'\n", out);
    }
    fputs("  )\n  if (( CURRENT == 2 )); then\n"
          "    _describe -t commands 'syncspy command' commands\n    return\n  fi\n"
          "  local cmd=${words[2]}\n  shift words\n  (( CURRENT-- ))\n  case $cmd in\n",
          out);
    for (const struct cli_command *c = cli_commands; c->name; c++) {
        fprintf(out, "    %s)\n      _arguments -s -S", c->name);
        for (const struct cli_option *o = c->options; o->name; o++) {
            fputs(" \\\n        ", out);
            if (has_short(o))
                fprintf(out, "'(-%c --%s)'{-%c,--%s}'", (char)o->key, o->name, (char)o->key,
                        o->name);
            else
                fprintf(out, "'--%s%s", o->name, !o->arg ? "" : o->arg_optional ? "=-" : "=");
            fputc('[', out);
            zsh_brief(out, o->help);
            fputc(']', out);
            if (o->arg)
                zsh_value(out, o->arg, o->complete, o->values, o->arg_optional);
            fputc('\'', out);
        }
        if (c->operands == CLI_COMPLETE_COMMAND)
            fputs(" \\\n        '(-):command:_command_names -e' \\\n        '*::arguments:_normal'",
                  out);
        else if (c->operands == CLI_COMPLETE_WORDS || c->operands == CLI_COMPLETE_SUBCOMMAND)
            fprintf(out, " \\\n        '1:word:(%s)'",
                    c->operands == CLI_COMPLETE_WORDS ? c->operand_words : command_names());
        else
            fprintf(out, " \\\n        '*:file:%s'", zsh_action(c->operands));
        fputs("\n      ;;\n", out);
    }
    fputs("  esac\n}\n_syncspy \"$@\"\n", out);
}

bool cli_print_completion(const char *shell, FILE *out)
{
    if (strcmp(shell, "bash") == 0)
        print_bash(out);
    else if (strcmp(shell, "zsh") == 0)
        print_zsh(out);
    else
        return false;
    return true;
}
