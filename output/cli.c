/* output/cli.c: the `syncspy` command: `report` renders the exit report again from trace.bin or
 * summary.json files (one process, or a SYNCSPY_OUT root merged), `export` turns them into
 * folded stacks or Chrome trace events. A program of its own: it may use stdio, but bad input only ever gets a
 * message and an exit status, never a crash. */
#include "output/cli.h"
#include "output/trace_format.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

#define CLI_MAX_PROCESSES 65536
#define CLI_TOP_MAX 100000

static const char usage_text[] =
    "usage: syncspy report [--top N] DIR\n"
    "       syncspy export --folded OUT DIR\n"
    "       syncspy export --chrome OUT DIR\n"
    "       syncspy --help | --version\n";

static const char help_text[] =
    "syncspy " SYNCSPY_VERSION ": where a CUDA training job makes the host wait for the GPU.\n"
    "\n"
    "Record (no change to the program):\n"
    "    LD_PRELOAD=/path/to/libsyncspy.so python train.py\n"
    "Each process writes SYNCSPY_OUT/pid<P>/ (or rank<R>-pid<P>/ when RANK is set), default\n"
    "./syncspy-out: trace.bin as it runs (every sync and launch, the steps and the exact\n"
    "per-site counts, appended at each flush, so it survives kill -9 up to the last flush),\n"
    "and summary.json with the sync-hotspot report at exit.\n"
    "\n"
    "Commands (DIR is a process folder, a SYNCSPY_OUT root whose processes and ranks are\n"
    "merged, or a trace.bin or summary.json file; a process folder is read from its trace.bin\n"
    "when it has one, else from its summary.json):\n"
    "  report [--top N] DIR      the report again. Merged processes get one hotspot table:\n"
    "                            per-step numbers are sums over processes divided by the sum\n"
    "                            of their active steps (the mean process-step). A trace.bin\n"
    "                            cut by a crash is read up to its last complete record and\n"
    "                            its header says so. --top N groups (default SYNCSPY_TOP,\n"
    "                            else 10).\n"
    "  export --folded OUT DIR   folded stacks weighted by blocked ns, one line per sync site\n"
    "                            (flamegraph.pl, speedscope, inferno); OUT - is stdout.\n"
    "  export --chrome OUT DIR   Chrome trace events (Perfetto, chrome://tracing): from a\n"
    "                            trace.bin, a track per thread with each sync as a slice (its\n"
    "                            API, bytes, stream, step and top frames) and each launch as\n"
    "                            an instant, and a steps track; from a summary.json alone,\n"
    "                            only its active steps, laid end to end.\n"
    "\n"
    "Exit status: 0 when every file was read; 1 when one could not be read (a bad header, a\n"
    "newer format, corruption before the last record: each is named on stderr with its byte\n"
    "offset, and the other processes are still reported) or an output could not be written;\n"
    "2 for a usage error.\n";

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

/* ---- loading ------------------------------------------------------------------------------ */

static char *join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (s) {
        memcpy(s, a, la);
        s[la] = '/';
        memcpy(s + la + 1, b, lb + 1);
    }
    return s;
}

/* Digits only, no sign, fits an int. */
static bool parse_id(const char *s, size_t n, int *out)
{
    long v = 0;
    if (n == 0 || n > 9)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = (int)v;
    return true;
}

/* "pid<P>" or "rank<R>-pid<P>" (rank -1 for the first). */
static bool process_folder_name(const char *name, int *rank, int *pid)
{
    *rank = -1;
    if (strncmp(name, "pid", 3) == 0)
        return parse_id(name + 3, strlen(name + 3), pid);
    if (strncmp(name, "rank", 4) != 0)
        return false;
    const char *dash = strstr(name, "-pid");
    return dash && parse_id(name + 4, (size_t)(dash - name - 4), rank) &&
           parse_id(dash + 4, strlen(dash + 4), pid);
}

struct folder {
    char *name;
    int rank, pid;
};

static int rank_pid_cmp(int ra, int pa, int rb, int pb)
{
    if ((ra < 0) != (rb < 0))
        return ra < 0 ? 1 : -1; /* ranked processes first */
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return (pa > pb) - (pa < pb);
}

static int folder_cmp(const void *pa, const void *pb)
{
    const struct folder *a = pa, *b = pb;
    int c = rank_pid_cmp(a->rank, a->pid, b->rank, b->pid);
    return c ? c : strcmp(a->name, b->name);
}

/* The process folders under root, sorted; NULL with *n = 0 when none (or on error). */
static struct folder *scan_root(const char *root, size_t *n, size_t *problems)
{
    *n = 0;
    DIR *d = opendir(root);
    if (!d) {
        fprintf(stderr, "syncspy: cannot read %s: %s\n", root, strerror(errno));
        (*problems)++;
        return NULL;
    }
    struct folder *f = NULL;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int rank, pid;
        if (!process_folder_name(de->d_name, &rank, &pid))
            continue;
        if (*n == CLI_MAX_PROCESSES) {
            fprintf(stderr, "syncspy: %s has more than %d process folders; reading %d of them\n",
                    root, CLI_MAX_PROCESSES, CLI_MAX_PROCESSES);
            (*problems)++;
            break;
        }
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct folder *nf = realloc(f, ncap * sizeof *nf);
            if (!nf)
                break;
            f = nf;
            cap = ncap;
        }
        f[*n].name = strdup(de->d_name);
        if (!f[*n].name)
            break;
        f[*n].rank = rank;
        f[*n].pid = pid;
        (*n)++;
    }
    closedir(d);
    if (f)
        qsort(f, *n, sizeof *f, folder_cmp);
    return f;
}

/* ---- one process -------------------------------------------------------------------------- */

/* Progress of a long read on stderr (cli_progress_wanted says when). */
static void progress_line(void *ctx, uint64_t records, uint64_t offset, uint64_t file_bytes)
{
    const char *path = ctx;
    if (!cli_progress_wanted())
        return;
    if (file_bytes >= offset && file_bytes > 0)
        fprintf(stderr, "syncspy: reading %s: %llu M records (%.0f%%)\n", path,
                (unsigned long long)(records / 1000000), 100.0 * (double)offset / (double)file_bytes);
    else
        fprintf(stderr, "syncspy: reading %s: %llu M records\n", path,
                (unsigned long long)(records / 1000000));
}

static uint64_t events_left = TRACE_READ_MAX_EVENTS; /* shared by every process of one command */

static bool load_trace(const char *path, unsigned flags, struct cli_proc *item, size_t *problems)
{
    char err[PATH_MAX + 512];
    struct trace_read_opts opts = {.max_events = events_left ? events_left : 1,
                                   .progress_every = CLI_PROGRESS_EVERY,
                                   .progress = progress_line, .ctx = (void *)path};
    bool events = flags & CLI_LOAD_EVENTS;
    memset(item, 0, sizeof *item);
    if (trace_read_with(path, &opts, &item->rep, events ? &item->events : NULL, err,
                        sizeof err) != 0) {
        fprintf(stderr, "syncspy: %s\n", err);
        (*problems)++;
        return false;
    }
    item->traced = true;
    item->has_events = events;
    if (events) {
        uint64_t kept = item->events.nsyncs + item->events.nlaunches;
        events_left = kept < events_left ? events_left - kept : 0;
    }
    return true;
}

static bool load_summary(const char *path, struct cli_proc *item, size_t *problems)
{
    char err[PATH_MAX + 512];
    memset(item, 0, sizeof *item);
    if (summary_read_json(path, &item->rep, err, sizeof err) != 0) {
        fprintf(stderr, "syncspy: %s\n", err);
        (*problems)++;
        return false;
    }
    return true;
}

/* stat() says it is there, or cannot say it is not (the reader will name the problem). */
static bool present(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 || errno != ENOENT;
}

/* A process folder: its trace.bin when it has one (it is written as the process runs, so it
 * survives kill -9), else its summary.json; a bad trace.bin falls back to summary.json. */
static void load_folder(const char *dir, unsigned flags, struct cli_set *set, size_t *problems)
{
    char *trace = join(dir, TRACE_FILE_NAME), *summary = join(dir, "summary.json");
    struct cli_proc *item = &set->items[set->n];
    if (!trace || !summary) {
        fprintf(stderr, "syncspy: out of memory reading %s\n", dir);
        (*problems)++;
    } else if (present(trace)) {
        if (load_trace(trace, flags, item, problems)) {
            set->n++;
        } else if (present(summary)) {
            fprintf(stderr, "syncspy: reading %s instead\n", summary);
            if (load_summary(summary, item, problems))
                set->n++;
        }
    } else if (present(summary)) {
        if (load_summary(summary, item, problems))
            set->n++;
    } else {
        fprintf(stderr, "syncspy: %s has no " TRACE_FILE_NAME " and no summary.json (the process "
                "ended before its first flush, or made no CUDA call)\n", dir);
        (*problems)++;
    }
    free(trace);
    free(summary);
}

/* A file named on the command line: a trace by its magic, else summary.json. */
static void load_file(const char *path, unsigned flags, struct cli_set *set, size_t *problems)
{
    char head[8];
    ssize_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no hang */
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
        n = read(fd, head, sizeof head);
    if (fd >= 0)
        close(fd);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    bool trace = (n > 0 && trace_looks_like(head, (size_t)n)) ||
                 (strlen(base) > 4 && strcmp(base + strlen(base) - 4, ".bin") == 0);
    if (trace ? load_trace(path, flags, &set->items[0], problems)
              : load_summary(path, &set->items[0], problems))
        set->n = 1;
}

static void load_root(const char *root, unsigned flags, struct cli_set *set, size_t *problems)
{
    size_t n;
    struct folder *f = scan_root(root, &n, problems);
    if (n == 0) {
        if (*problems == 0)
            fprintf(stderr, "syncspy: %s has no " TRACE_FILE_NAME ", no summary.json and no "
                    "pid<P> or rank<R>-pid<P> folders: is it a SYNCSPY_OUT folder?\n", root);
        (*problems)++;
        free(f);
        return;
    }
    set->items = calloc(n, sizeof *set->items);
    if (!set->items) {
        fprintf(stderr, "syncspy: out of memory reading %s\n", root);
        (*problems)++;
    }
    for (size_t i = 0; i < n; i++) {
        char *dir = set->items ? join(root, f[i].name) : NULL;
        if (dir)
            load_folder(dir, flags, set, problems);
        else if (set->items) {
            fprintf(stderr, "syncspy: out of memory reading %s\n", root);
            (*problems)++;
        }
        free(dir);
        free(f[i].name);
    }
    free(f);
}

static int item_cmp(const void *pa, const void *pb)
{
    const struct cli_proc *a = pa, *b = pb;
    return rank_pid_cmp(a->rep.rank, a->rep.pid, b->rep.rank, b->rep.pid);
}

size_t cli_load(const char *dir, unsigned flags, struct cli_set *set)
{
    size_t problems = 0;
    memset(set, 0, sizeof *set);
    cli_progress_start();
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        fprintf(stderr, "syncspy: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char *trace = join(dir, TRACE_FILE_NAME), *summary = join(dir, "summary.json");
    if (!trace || !summary) {
        fprintf(stderr, "syncspy: out of memory\n");
        problems++;
    } else if (!S_ISDIR(sb.st_mode) || present(trace) || present(summary)) {
        if (!(set->items = calloc(1, sizeof *set->items))) {
            fprintf(stderr, "syncspy: out of memory\n");
            problems++;
        } else if (S_ISDIR(sb.st_mode)) {
            load_folder(dir, flags, set, &problems);
        } else {
            load_file(dir, flags, set, &problems);
        }
    } else {
        load_root(dir, flags, set, &problems);
    }
    free(trace);
    free(summary);
    if (set->n > 1)
        qsort(set->items, set->n, sizeof *set->items, item_cmp);
    if (set->n) {
        set->procs = calloc(set->n, sizeof *set->procs);
        if (!set->procs) {
            fprintf(stderr, "syncspy: out of memory\n");
            cli_set_free(set);
            return problems + 1;
        }
        for (size_t i = 0; i < set->n; i++)
            set->procs[i] = set->items[i].rep;
    }
    return problems;
}

void cli_set_free(struct cli_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        struct cli_proc *it = &set->items[i];
        if (it->traced)
            trace_free(&it->rep, it->has_events ? &it->events : NULL);
        else
            summary_free(&it->rep);
    }
    free(set->items);
    free(set->procs);
    memset(set, 0, sizeof *set);
}

/* ---- commands ----------------------------------------------------------------------------- */

/* A whole positive integer no larger than CLI_TOP_MAX, or -1. */
static int parse_top(const char *s)
{
    if (!s || !*s)
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > CLI_TOP_MAX)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v >= 1 && v <= CLI_TOP_MAX ? (int)v : -1;
}

static int default_top(void)
{
    const char *env = getenv("SYNCSPY_TOP");
    if (!env)
        return 10;
    int top = parse_top(env);
    if (top < 0) {
        fprintf(stderr, "syncspy: SYNCSPY_TOP='%.40s' is not a whole number from 1 to %d; "
                "using 10\n", env, CLI_TOP_MAX);
        return 10;
    }
    return top;
}

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* An argument of cmd that is none of its own options: -h/--help prints the help, "--" ends the
 * options, another option is unknown, and the rest is the one DIR. Returns -1 when a is taken,
 * else the status cmd exits with. */
static int common_arg(const char *cmd, const char *a, bool *options, const char **dir)
{
    if (*options && is_help(a)) {
        fputs(help_text, stdout);
        return 0;
    }
    if (*options && strcmp(a, "--") == 0) {
        *options = false;
        return -1;
    }
    if (*options && a[0] == '-' && a[1] != '\0')
        return usage_error("%s: unknown option '%s'", cmd, a);
    if (*dir)
        return usage_error("%s takes one DIR; '%s' is one more", cmd, a);
    *dir = a;
    return -1;
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
                return usage_error("--top wants a whole number from 1 to 100000, not '%s'",
                                   v ? v : "");
        } else if ((rc = common_arg("report", a, &options, &dir)) >= 0) {
            return rc;
        }
    }
    if (!dir)
        return usage_error("report needs a DIR (a process folder or the SYNCSPY_OUT root)");
    struct cli_set set;
    size_t problems = cli_load(dir, 0, &set);
    int rc = problems ? 1 : 0;
    if (set.n > 0) {
        struct report_opts opts = {.top = top > 0 ? top : default_top()};
        if (report_render_text(set.procs, set.n, &opts, STDOUT_FILENO) != 0) {
            fprintf(stderr, "syncspy: writing the report: %s\n", strerror(errno));
            rc = 1;
        }
        if (problems)
            fprintf(stderr, "syncspy: warning: %zu problem%s reading %s (named above); the "
                    "report covers the %zu process%s that could be read\n", problems,
                    problems == 1 ? "" : "s", dir, set.n, set.n == 1 ? "" : "es");
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
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

static int cmd_export(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *format = NULL;
    bool options = true;
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
        } else if ((rc = common_arg("export", a, &options, &dir)) >= 0) {
            return rc;
        }
    }
    if (!format)
        return usage_error("export needs --folded OUT or --chrome OUT");
    if (!dir)
        return usage_error("export needs a DIR (a process folder or the SYNCSPY_OUT root)");
    struct cli_set set;
    size_t problems = cli_load(dir, format[0] == 'c' ? CLI_LOAD_EVENTS : 0, &set);
    int rc = problems ? 1 : 0;
    if (set.n > 0) {
        int wrc = write_output(out, format[0] == 'f' ? cli_export_folded : cli_export_chrome,
                               &set);
        rc = rc || wrc;
    }
    cli_set_free(&set);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error(NULL);
    const char *cmd = argv[1];
    if (is_help(cmd) || strcmp(cmd, "help") == 0) {
        fputs(help_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        puts("syncspy " SYNCSPY_VERSION);
        return 0;
    }
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0)
        return cmd_export(argc - 2, argv + 2);
    return usage_error("unknown command '%s'", cmd);
}
