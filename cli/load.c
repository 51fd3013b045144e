/* cli/load.c: the files one DIR argument names (see load.h): a process folder, a SYNCSPY_OUT
 * root, or a trace.bin or summary.json file, read through the CLI's two readers. A program of
 * its own: it may use stdio; each file that cannot be read gets one line on stderr. */
#include "cli/load.h"
#include "cli/progress.h"
#include "cli/summary_read.h"
#include "cli/validate.h"
#include "output/fd_writer.h"
#include "output/summary_json.h"
#include "output/trace_format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_MAX_PROCESSES 65536

const char *cli_shown(const char *s)
{
    static char bufs[4][4 * PATH_MAX];
    static unsigned next;
    char *b = bufs[next++ % 4];
    text_escape(b, sizeof bufs[0], s);
    return b;
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

/* The pid of "<P>" or "<P>.<N>" (N >= 2: a second process with that pid wrote to the same
 * SYNCSPY_OUT: an exec'd image of it, or one in another pid namespace). */
static bool parse_pid_part(const char *s, int *pid)
{
    const char *dot = strchr(s, '.');
    int n;
    if (!dot)
        return parse_id(s, strlen(s), pid);
    return parse_id(s, (size_t)(dot - s), pid) && parse_id(dot + 1, strlen(dot + 1), &n) && n >= 2;
}

bool cli_process_folder_name(const char *name, int *rank, int *pid)
{
    *rank = -1;
    if (strncmp(name, "pid", 3) == 0)
        return parse_pid_part(name + 3, pid);
    if (strncmp(name, "rank", 4) != 0)
        return false;
    /* rank<R>-pid<P> or rank<R>-<host>-pid<P>: the host (which may hold '-' or even "-pid")
     * runs from the rank's dash to the last "-pid" */
    const char *dash = strchr(name + 4, '-'), *last = NULL;
    for (const char *p = dash; p && (p = strstr(p, "-pid")); p++)
        last = p;
    return dash && last && parse_id(name + 4, (size_t)(dash - name - 4), rank) &&
           parse_pid_part(last + 4, pid);
}

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
    const struct cli_folder *a = pa, *b = pb;
    int c = rank_pid_cmp(a->rank, a->pid, b->rank, b->pid);
    return c ? c : strcmp(a->name, b->name);
}

long cli_process_folders(const char *root, size_t max, struct cli_folder **out, bool *more)
{
    *out = NULL;
    *more = false;
    DIR *d = opendir(root);
    if (!d)
        return -1;
    struct cli_folder *f = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int rank, pid;
        if (!cli_process_folder_name(de->d_name, &rank, &pid))
            continue;
        if (n == max) {
            *more = true;
            break;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct cli_folder *nf = realloc(f, ncap * sizeof *nf);
            if (!nf)
                break;
            f = nf;
            cap = ncap;
        }
        f[n].name = strdup(de->d_name);
        if (!f[n].name)
            break;
        f[n].rank = rank;
        f[n].pid = pid;
        n++;
    }
    closedir(d);
    if (f)
        qsort(f, n, sizeof *f, folder_cmp);
    *out = f;
    return (long)n;
}

void cli_folders_free(struct cli_folder *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i].name);
    free(f);
}

/* The process folders under root, sorted; NULL with *n = 0 when none (or on error, said). */
static struct cli_folder *scan_root(const char *root, size_t *n, size_t *problems)
{
    struct cli_folder *f;
    bool more;
    long got = cli_process_folders(root, CLI_MAX_PROCESSES, &f, &more);
    *n = got > 0 ? (size_t)got : 0;
    if (got < 0) {
        fprintf(stderr, "syncspy: cannot read %s: %s\n", cli_shown(root), strerror(errno));
        (*problems)++;
    } else if (more) {
        fprintf(stderr, "syncspy: %s has more than %d process folders; reading %d of them\n",
                cli_shown(root), CLI_MAX_PROCESSES, CLI_MAX_PROCESSES);
        (*problems)++;
    }
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
        cli_progress_say("syncspy: reading %s: %llu M records (%.0f%%)", cli_shown(path),
                         (unsigned long long)(records / 1000000),
                         100.0 * (double)offset / (double)file_bytes);
    else
        cli_progress_say("syncspy: reading %s: %llu M records", cli_shown(path),
                         (unsigned long long)(records / 1000000));
}

static uint64_t events_left = TRACE_READ_MAX_EVENTS; /* shared by every process of one command */

/* stat() says it is there, or cannot say it is not (the reader will name the problem). */
static bool present(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 || errno != ENOENT;
}

/* One line and a problem when what path holds contradicts itself; then it is not used. */
static bool consistent(const char *path, const struct rep_process *p, size_t *problems)
{
    char why[512];
    if (!cli_contradiction(p, why, sizeof why))
        return true;
    fprintf(stderr, "syncspy: %s contradicts itself: %s\n", cli_shown(path), cli_shown(why));
    (*problems)++;
    return false;
}

static bool load_trace(const char *path, unsigned flags, struct cli_proc *item, size_t *problems)
{
    char err[PATH_MAX + 512];
    struct trace_read_opts opts = {.max_events = events_left ? events_left : 1,
                                   .progress_every = CLI_PROGRESS_EVERY,
                                   .progress = progress_line,
                                   .ctx = (void *)path};
    bool events = flags & CLI_LOAD_EVENTS;
    memset(item, 0, sizeof *item);
    int failed =
        trace_read_with(path, &opts, &item->rep, events ? &item->events : NULL, err, sizeof err);
    cli_progress_end();
    if (failed != 0) {
        fprintf(stderr, "syncspy: %s\n", cli_shown(err));
        (*problems)++;
        return false;
    }
    if (!consistent(path, &item->rep, problems)) {
        trace_free(&item->rep, events ? &item->events : NULL);
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
        fprintf(stderr, "syncspy: %s\n", cli_shown(err));
        (*problems)++;
        return false;
    }
    if (!consistent(path, &item->rep, problems)) {
        summary_free(&item->rep);
        return false;
    }
    return true;
}

/* The folder's summary.json beside a traced process's trace.bin, read at most once (cli_proc
 * beside), when it is the same process's; NULL when there is none or it cannot be read. */
static const struct rep_process *summary_beside(const char *summary, struct cli_proc *item)
{
    if (!item->beside_read) {
        item->beside_read = true;
        struct rep_process s;
        char err[PATH_MAX + 512];
        if (present(summary) && summary_read_json(summary, &s, err, sizeof err) == 0) {
            if (s.pid == item->rep.pid)
                item->beside = s;
            else
                summary_free(&s);
        }
    }
    return item->beside.owned ? &item->beside : NULL;
}

/* A trace that misses step records it has no count of: the step figures of the folder's
 * summary.json (the same process's, exact), else the missing steps counted as active
 * steps whose figures are unknown (estimates, said). Every command reads through here. */
static void fill_missing_steps(const char *summary, struct cli_proc *item)
{
    struct rep_process *p = &item->rep;
    if (!p->step_records_missing)
        return;
    const struct rep_process *s = summary_beside(summary, item);
    char why[512];
    if (s && !cli_contradiction(s, why, sizeof why)) {
        p->steps = s->steps;
        p->nsteps = s->nsteps;
        p->steps_omitted = s->steps_omitted;
        p->steps_seen = s->steps_seen;
        p->active_steps = s->active_steps;
        p->syncs = s->syncs;
        p->blocked_ns = s->blocked_ns;
        p->launches = s->launches;
        p->wall_ns = s->wall_ns;
        p->startup_closed = s->startup_closed;
        p->startup = s->startup;
        p->steps_lost = 0;
        p->steps_basis = REP_STEPS_FROM_SUMMARY;
        return;
    }
    p->steps_basis = REP_STEPS_ESTIMATED;
    p->steps_lost += p->steps_missing_active;
    p->active_steps += p->steps_missing_active;
}

/* A trace with no END whose header does not say it lost data: the folder's summary.json may
 * (the header's mark could not be written), when it is the same process's. Then its figures
 * are a lower bound (the report says so), never a kill's. */
static void fill_trace_lost(const char *summary, struct cli_proc *item)
{
    struct rep_process *p = &item->rep;
    if (!p->trace_unfinished || p->trace_lost_errno)
        return;
    const struct rep_process *s = summary_beside(summary, item);
    if (s)
        p->trace_lost_errno = s->trace_lost_errno;
}

/* Whether the summary.json at path lists recompilations: they come before the steps and sites,
 * so its first 64 KiB say (a run that never recompiled costs no read of its whole file). */
static bool lists_recompiles(const char *path)
{
    static const char mark[] = "\"recompiles\": [\n{";
    char head[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n <= 0)
        return false;
    head[n] = 0;
    return memmem(head, (size_t)n, mark, sizeof mark - 1) != NULL;
}

/* A trace holds no recompilations (output/model.h): the folder's summary.json's, when it is the
 * same process's (read for them only when its head lists some). */
static void fill_recompiles(const char *summary, struct cli_proc *item)
{
    if (!item->beside_read && !lists_recompiles(summary))
        return;
    const struct rep_process *s = summary_beside(summary, item);
    if (s) {
        item->rep.recompiles = s->recompiles;
        item->rep.nrecompiles = s->nrecompiles;
    }
}

/* A trace holds no causes of its recorded steps: the folder's summary.json's, when the schedule
 * alone did not record them ("syncspy start" in its head: they come before the steps). */
static void fill_ranges(const char *summary, struct cli_proc *item)
{
    static const char mark[] = "\"cause\": \"syncspy";
    char head[8192];
    int fd = open(summary, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n <= 0 || (!item->beside_read && !memmem(head, (size_t)n, mark, sizeof mark - 1)))
        return;
    const struct rep_process *s = summary_beside(summary, item);
    if (s) {
        item->rep.ranges = s->ranges;
        item->rep.nranges = s->nranges;
        item->rep.ranges_omitted = s->ranges_omitted;
    }
}

/* A process folder: its trace.bin when it has one (it is written as the process runs, so it
 * survives kill -9), else its summary.json; a bad trace.bin falls back to summary.json. */
static void load_folder(const char *dir, unsigned flags, struct cli_set *set, size_t *problems)
{
    char *trace = join(dir, TRACE_FILE_NAME), *summary = join(dir, SUMMARY_FILE_NAME);
    struct cli_proc *item = &set->items[set->n];
    if (!trace || !summary) {
        fprintf(stderr, "syncspy: out of memory reading %s\n", dir);
        (*problems)++;
    } else if (present(trace)) {
        if (load_trace(trace, flags, item, problems)) {
            fill_missing_steps(summary, item);
            fill_recompiles(summary, item);
            fill_ranges(summary, item);
            fill_trace_lost(summary, item);
            set->n++;
        } else if (present(summary)) {
            fprintf(stderr, "syncspy: reading %s instead\n", cli_shown(summary));
            if (load_summary(summary, item, problems))
                set->n++;
        }
    } else if (present(summary)) {
        if (load_summary(summary, item, problems))
            set->n++;
    } else {
        fprintf(stderr,
                "syncspy: %s has no " TRACE_FILE_NAME " and no summary.json (the process "
                "ended before its first flush, or made no CUDA call)\n",
                cli_shown(dir));
        (*problems)++;
    }
    free(trace);
    free(summary);
}

/* Whether a file that is no trace may be a summary.json: its name ends in .json, or its first
 * byte that is not white space is '{' (all white space, or empty: the reader says why not). */
static bool looks_like_json(const char *head, ssize_t n, const char *base)
{
    size_t len = strlen(base);
    if (len >= 5 && strcmp(base + len - 5, ".json") == 0)
        return true;
    for (ssize_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", head[i]))
            return head[i] == '{';
    return true;
}

/* A file named on the command line: a trace by its magic, a summary.json by its name or its
 * '{', else not a run's file at all. */
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
    if (!trace && !looks_like_json(head, n, base)) {
        /* `syncspy report train.py`: say what DIR is, not how a summary.json parser fails */
        fprintf(stderr,
                "syncspy: %s is not a run folder: not a process folder or SYNCSPY_OUT "
                "root, nor a trace.bin or summary.json%s\n",
                cli_shown(path),
                strlen(base) > 3 && strcmp(base + strlen(base) - 3, ".py") == 0
                    ? " (to record the program: syncspy run -- python ...)"
                    : "");
        (*problems)++;
        return;
    }
    if (trace ? load_trace(path, flags, &set->items[0], problems)
              : load_summary(path, &set->items[0], problems))
        set->n = 1;
}

static void load_root(const char *root, unsigned flags, struct cli_set *set, size_t *problems)
{
    size_t n;
    struct cli_folder *f = scan_root(root, &n, problems);
    if (n == 0) {
        if (*problems == 0)
            fprintf(stderr,
                    "syncspy: %s has no " TRACE_FILE_NAME ", no summary.json and no "
                    "pid<P> or rank<R>-<host>-pid<P> folders: is it a SYNCSPY_OUT folder?\n",
                    cli_shown(root));
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
        fprintf(stderr, "syncspy: %s: %s\n", cli_shown(dir), strerror(errno));
        return 1;
    }
    char *trace = join(dir, TRACE_FILE_NAME), *summary = join(dir, SUMMARY_FILE_NAME);
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
        if (it->beside.owned)
            summary_free(&it->beside);
    }
    free(set->items);
    free(set->procs);
    memset(set, 0, sizeof *set);
}
