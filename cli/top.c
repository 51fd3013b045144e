/* cli/top.c: `syncspy top DIR` (see top.h): a live view of a running job, refreshed every
 * interval from the files its processes' flushers append (trace.bin: steps, sync records, site
 * totals and thread totals at every flush, about every 100 ms), each refresh reading only what
 * was appended (cli/top_feed.h), so it works from another node over a shared filesystem.
 * "Last 10 s" is the run's own last 10 s of steps (their wall times summed from the newest
 * back), never this machine's clock against theirs. It only reads DIR. CLI only: stdio,
 * termios, malloc. */
#include "cli/top.h"
#include "cli/commands.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "cli/lines.h"
#include "cli/load.h"
#include "cli/merge.h"
#include "cli/summary_read.h"
#include "cli/top_feed.h"
#include "output/fd_writer.h"
#include "output/report.h"
#include "output/trace_format.h"

#define LINES_SHOWN_MAX 50
#define WATCHED_MAX 65536 /* process folders of a root (cli/load.c's cap) */

enum sort_key {
    SORT_BLOCKED_WINDOW,
    SORT_SYNCS_WINDOW,
    SORT_BLOCKED,
    SORT_SYNCS,
    SORT_WHERE,
    SORT_KEYS
};
static const char *const sort_names[SORT_KEYS] = {
    "blocked/step, last 10 s", "syncs/step, last 10 s", "blocked/step", "syncs/step", "where"};

/* A process top watches: its trace, followed from where the last refresh stopped. */
struct watched {
    char *path;   /* its trace.bin */
    char *folder; /* its folder's name under a root ("" for a folder or file named itself) */
    int rank, pid;
    struct top_feed *feed;   /* NULL until its trace could be opened */
    char *summary;           /* its folder's summary.json (NULL: a trace file named itself) */
    struct rep_process done; /* with ended: summary.json read, no trace.bin (the process ended
                              * without one, SYNCSPY_TRACE_MB=0 or the trace removed) */
    bool ended;
    char err[512]; /* why it cannot be read (opened or polled) */
};

struct top_state {
    const char *dir;
    int interval_ms;
    bool once;
    enum sort_key sort;
    char thread[96];  /* the thread whose lines are shown ('t'); "" all threads */
    bool next_thread; /* 't' was pressed: the next thread at the next frame */
    int cols, rows;
    int kind; /* what dir is: 0 not known yet, 1 a trace file, 2 a process folder, 3 a root */
    struct watched *w;
    size_t nw;
};

/* ---- the screen ------------------------------------------------------------------------------ */

struct screen {
    char *buf;
    size_t len, cap;
    int rows_left, cols;
    bool tty; /* rows end by clearing the rest of the terminal's row */
};

static void out(struct screen *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct screen *s, const char *fmt, ...)
{
    if (s->rows_left <= 0)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t k = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (s->cols > 0 && k > (size_t)s->cols) /* one screen row each: cut to the terminal's width */
        k = (size_t)s->cols;
    /* names from a file: none of them moves the cursor (text_char: C0, DEL, C1, not UTF-8) */
    for (size_t i = 0, c; i < k; i += c) {
        bool plain;
        c = text_char((const unsigned char *)line + i, k - i, &plain);
        if (!plain)
            memset(line + i, '?', c);
    }
    if (s->len + k + 8 > s->cap) {
        size_t ncap = (s->cap ? s->cap * 2 : 8192) + k;
        char *nb = realloc(s->buf, ncap);
        if (!nb)
            return;
        s->buf = nb;
        s->cap = ncap;
    }
    memcpy(s->buf + s->len, line, k);
    s->len += k;
    if (s->tty) {
        memcpy(s->buf + s->len, "\x1b[K", 3); /* clear the rest of the row */
        s->len += 3;
    }
    s->buf[s->len++] = '\n';
    s->rows_left--;
}

static void rate_text(char *buf, size_t n, double v)
{
    report_format_rate(buf, n, v);
}

static void share_text(char *buf, size_t n, double part, double whole)
{
    if (whole > 0)
        snprintf(buf, n, "%.1f%%", 100.0 * part / whole);
    else
        snprintf(buf, n, "-");
}

static void proc_name(char *buf, size_t n, const struct rep_process *p)
{
    if (p->rank >= 0)
        snprintf(buf, n, "rank %d pid %d", p->rank, p->pid);
    else
        snprintf(buf, n, "pid %d", p->pid);
}

/* ---- the processes watched ------------------------------------------------------------------- */

static char *join_path(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* A process to watch: its trace at path, under a root its folder's name (rank, pid), and the
 * summary.json shown while there is no trace (dir: its folder; NULL for a trace named itself). */
static bool add_watched(struct top_state *st, const char *path, const char *folder, int rank,
                        int pid, const char *dir)
{
    struct watched *nw = realloc(st->w, (st->nw + 1) * sizeof *nw);
    if (!nw)
        return false;
    st->w = nw;
    struct watched *w = &st->w[st->nw];
    memset(w, 0, sizeof *w);
    w->path = strdup(path);
    w->folder = strdup(folder);
    w->rank = rank;
    w->pid = pid;
    w->summary = dir ? join_path(dir, "summary.json") : NULL;
    if (!w->path || !w->folder || (dir && !w->summary)) {
        free(w->path);
        free(w->folder);
        free(w->summary);
        return false;
    }
    st->nw++;
    return true;
}

static int watched_cmp(const void *pa, const void *pb)
{
    const struct watched *a = pa, *b = pb; /* as a merged report: ranked first by rank, then pid */
    if ((a->rank >= 0) != (b->rank >= 0))
        return a->rank >= 0 ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return strcmp(a->folder, b->folder);
}

static bool present(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* What dir names (once), and under a root the process folders that appeared since. */
static void find_processes(struct top_state *st)
{
    if (!st->kind) {
        struct stat sb;
        char *trace = join_path(st->dir, TRACE_FILE_NAME);
        char *summary = join_path(st->dir, "summary.json");
        if (stat(st->dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
            st->kind = 1;
        else if (trace && summary && (present(trace) || present(summary)))
            st->kind = 2;
        else
            st->kind = 3;
        if (st->kind == 1)
            add_watched(st, st->dir, "", -1, 0, NULL);
        if (st->kind == 2 && trace)
            add_watched(st, trace, "", -1, 0, st->dir);
        free(trace);
        free(summary);
    }
    if (st->kind != 3)
        return;
    struct cli_folder *f = NULL;
    bool more = false;
    long n = cli_process_folders(st->dir, WATCHED_MAX, &f, &more);
    bool added = false;
    for (long i = 0; i < n; i++) {
        bool known = false;
        for (size_t k = 0; k < st->nw && !known; k++)
            known = strcmp(st->w[k].folder, f[i].name) == 0;
        char *dir = known ? NULL : join_path(st->dir, f[i].name);
        char *trace = dir ? join_path(dir, TRACE_FILE_NAME) : NULL;
        if (trace)
            added |= add_watched(st, trace, f[i].name, f[i].rank, f[i].pid, dir);
        free(dir);
        free(trace);
    }
    if (n > 0)
        cli_folders_free(f, (size_t)n);
    if (added && st->nw > 1)
        qsort(st->w, st->nw, sizeof *st->w, watched_cmp);
}

/* A process with no trace (yet): its summary.json, when it has one, says what it did (its
 * trace, should one appear, is followed instead). A summary still being written reads as bad:
 * the next refresh tries again. */
static void read_ended(struct watched *w)
{
    if (w->ended)
        w->err[0] = '\0'; /* read already: the trace's absence is no problem */
    if (w->ended || !w->summary || !present(w->summary))
        return;
    char err[512];
    if (summary_read_json(w->summary, &w->done, err, sizeof err) == 0) {
        w->ended = true;
        w->err[0] = '\0';
    } else {
        snprintf(w->err, sizeof w->err, "%s", err);
    }
}

static void forget_ended(struct watched *w)
{
    if (w->ended)
        summary_free(&w->done);
    w->ended = false;
}

/* Opens the traces that can be opened now and reads what each one's process appended since the
 * last refresh. Returns how many could not be read. */
static size_t refresh(struct top_state *st)
{
    find_processes(st);
    size_t problems = 0;
    for (size_t i = 0; i < st->nw; i++) {
        struct watched *w = &st->w[i];
        if (!w->feed) {
            w->feed = top_feed_open(w->path, w->err, sizeof w->err);
            if (w->feed)
                forget_ended(w);
            else
                read_ended(w);
        }
        if (w->feed && top_feed_poll(w->feed, w->err, sizeof w->err) != 0 && !w->err[0])
            snprintf(w->err, sizeof w->err, "%s: out of memory", w->path);
        problems += w->err[0] != 0;
    }
    return problems;
}

static void watched_free(struct top_state *st)
{
    for (size_t i = 0; i < st->nw; i++) {
        top_feed_free(st->w[i].feed);
        forget_ended(&st->w[i]);
        free(st->w[i].summary);
        free(st->w[i].path);
        free(st->w[i].folder);
    }
    free(st->w);
    st->w = NULL;
    st->nw = 0;
}

/* ---- the threads ------------------------------------------------------------------------------- */

/* One thread name of the job (the threads of that name in every process, together). */
struct thread_row {
    char label[96];
    uint64_t syncs, blocked_ns;
    bool ends_steps;
};

/* The job's threads by name, in order of first appearance (process order, then the trace's);
 * tid 0 (threads that exited, together) is not one of them. Returns how many (<= cap). */
static size_t thread_rows(const struct top_state *st, struct thread_row *rows, size_t cap)
{
    size_t n = 0;
    for (size_t p = 0; p < st->nw; p++) {
        if (!st->w[p].feed)
            continue;
        const struct rep_process *rp = top_feed_process(st->w[p].feed);
        for (size_t i = 0; rp->threads && i < rp->nthreads; i++) {
            const struct rep_thread *t = &rp->threads[i];
            if (!t->tid)
                continue;
            char label[96];
            top_thread_label(t, label, sizeof label);
            size_t k = 0;
            while (k < n && strcmp(rows[k].label, label) != 0)
                k++;
            if (k == n) {
                if (n == cap)
                    continue;
                memset(&rows[n], 0, sizeof rows[n]);
                snprintf(rows[n].label, sizeof rows[n].label, "%s", label);
                n++;
            }
            rows[k].syncs += t->syncs;
            rows[k].blocked_ns += t->blocked_ns;
            rows[k].ends_steps |= t->ends_steps;
        }
    }
    return n;
}

/* 't': all threads, then each thread in turn, then all threads again. */
static void pick_next_thread(struct top_state *st, const struct thread_row *rows, size_t n)
{
    size_t k = 0;
    if (st->thread[0])
        while (k < n && strcmp(rows[k].label, st->thread) != 0)
            k++;
    size_t next = st->thread[0] ? k + 1 : 0;
    if (next < n)
        snprintf(st->thread, sizeof st->thread, "%s", rows[next].label);
    else
        st->thread[0] = '\0';
}

/* ---- the lines --------------------------------------------------------------------------------- */

/* A row of the lines table: a line since start and the same line in the last 10 s. */
struct row {
    const struct rep_line *line; /* since start's, else the window's */
    const struct cli_mline *m;   /* its merged line (since start's, else the window's): its APIs */
    size_t k;                    /* that merged line's index, in since or else in win */
    size_t num;                  /* its number in the report's order (since start's); 0: none */
    uint64_t count, blocked_ns, win_count, win_blocked_ns;
    char where[512];
};

static enum sort_key sort_by;

static int row_order(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    if (sort_by == SORT_WHERE)
        return strcmp(a->where, b->where);
    uint64_t x = sort_by == SORT_SYNCS          ? a->count
                 : sort_by == SORT_BLOCKED      ? a->blocked_ns
                 : sort_by == SORT_SYNCS_WINDOW ? a->win_count
                                                : a->win_blocked_ns;
    uint64_t y = sort_by == SORT_SYNCS          ? b->count
                 : sort_by == SORT_BLOCKED      ? b->blocked_ns
                 : sort_by == SORT_SYNCS_WINDOW ? b->win_count
                                                : b->win_blocked_ns;
    if (x != y)
        return (x < y) - (x > y);
    return (a->blocked_ns < b->blocked_ns) - (a->blocked_ns > b->blocked_ns);
}

/* Under a row, every operator that synced there (issue 35 item 1), heaviest first, each with its
 * rates since start (the window's for a row of the window alone) and its hint; nothing for a row
 * of one op that is no more than its API with no hint (as the report leaves it). Returns the
 * screen rows used. */
static int draw_ops(struct screen *s, const struct cli_set *set, const struct cli_merged *m,
                    size_t k)
{
    struct hints_op_sum *sum = calloc(CLI_OPS_MAX, sizeof *sum);
    size_t more = 0, n = sum ? cli_merged_ops(set, m, k, sum, CLI_OPS_MAX, &more) : 0;
    int used = 0;
    if (n == 1 && !more && !*sum[0].op.hint && m->lines[k].napis == 1 &&
        strcmp(sum[0].op.op, m->lines[k].apis[0].api) == 0)
        n = 0;
    for (size_t i = 0; i < n && s->rows_left > 0; i++, used++) {
        char a[32], b[32];
        rate_text(a, sizeof a, (double)sum[i].count / m->steps);
        report_format_ns(b, sizeof b, (double)sum[i].ns / m->steps);
        out(s, "%12s  op %s  %s syncs/step  %s/step%s%s", "", sum[i].op.op, a, b,
            *sum[i].op.hint ? "  hint: " : "", sum[i].op.hint);
    }
    if (more && s->rows_left > 0) {
        out(s, "%12s  ... and %zu more sites of other ops", "", more);
        used++;
    }
    free(sum);
    return used;
}

static void draw_lines(struct screen *s, const struct cli_set *since_set,
                       const struct cli_set *win_set, const struct cli_merged *since,
                       const struct cli_merged *win, enum sort_key key, int room)
{
    struct row *v = calloc(since->n + win->n + 1, sizeof *v);
    if (!v)
        return;
    size_t n = 0;
    for (size_t i = 0; i < since->n; i++)
        if (since->lines[i].count)
            v[n++] = (struct row){.line = since->lines[i].line,
                                  .m = &since->lines[i],
                                  .k = i,
                                  .num = i + 1,
                                  .count = since->lines[i].count,
                                  .blocked_ns = since->lines[i].blocked_ns};
    size_t matched_upto = n;
    for (size_t i = 0; i < win->n; i++) {
        const struct cli_mline *l = &win->lines[i];
        size_t k = 0;
        while (k < matched_upto && !cli_lines_same_row(v[k].line, l->line))
            k++;
        if (k == matched_upto)
            v[k = n++] = (struct row){.line = l->line, .m = l, .k = i};
        v[k].win_count += l->count;
        v[k].win_blocked_ns += l->blocked_ns;
    }
    for (size_t i = 0; i < n; i++)
        cli_line_where(v[i].line, v[i].where, sizeof v[i].where);
    sort_by = key;
    qsort(v, n, sizeof *v, row_order);
    out(s, "%4s %12s %10s  %12s %10s %9s  %s", "", "last 10 s:", "", "since start:", "", "", "");
    out(s, "%4s %12s %10s  %12s %10s %9s  %s", "#", "blocked/step", "syncs/step", "blocked/step",
        "syncs/step", "syncs/s", "api / where");
    double wall_per_proc = since->wall_ns / (double)(since->nprocs ? since->nprocs : 1);
    size_t i = 0;
    for (int used = 0; i < n && used < room; i++, used++) {
        char a[32], b[32], c[32], d[32], e[32], num[24], apis[512];
        report_format_ns(a, sizeof a, (double)v[i].win_blocked_ns / win->steps);
        rate_text(b, sizeof b, (double)v[i].win_count / win->steps);
        report_format_ns(c, sizeof c, (double)v[i].blocked_ns / since->steps);
        rate_text(d, sizeof d, (double)v[i].count / since->steps);
        rate_text(e, sizeof e, wall_per_proc > 0 ? (double)v[i].count * 1e9 / wall_per_proc : 0);
        snprintf(num, sizeof num, "%zu",
                 v[i].num); /* the report's row number; "-": the window's alone */
        report_apis_text(v[i].m->apis, v[i].m->napis, v[i].m->other_apis, apis, sizeof apis);
        out(s, "%4s %12s %10s  %12s %10s %9s  %s %s", v[i].num ? num : "-", a, b, c, d, e, apis,
            v[i].where);
        used +=
            v[i].num ? draw_ops(s, since_set, since, v[i].k) : draw_ops(s, win_set, win, v[i].k);
    }
    if (!n)
        out(s, "  no host-device syncs in the training steps yet");
    else if (i < n)
        out(s, "  (%zu more lines)", n - i);
    free(v);
}

/* ---- the frame --------------------------------------------------------------------------------- */

/* The views of every process that could be read, for the thread shown. */
struct views {
    struct top_view *v;
    struct watched **w;
    struct rep_process *since, *win;
    size_t n;
};

static void views_free(struct views *vs)
{
    for (size_t i = 0; i < vs->n; i++)
        top_view_free(&vs->v[i]);
    free(vs->v);
    free(vs->w);
    free(vs->since);
    free(vs->win);
    memset(vs, 0, sizeof *vs);
}

static int views_of(struct top_state *st, struct views *vs)
{
    memset(vs, 0, sizeof *vs);
    size_t cap = st->nw ? st->nw : 1;
    vs->v = calloc(cap, sizeof *vs->v);
    vs->w = calloc(cap, sizeof *vs->w);
    vs->since = calloc(cap, sizeof *vs->since);
    vs->win = calloc(cap, sizeof *vs->win);
    if (!vs->v || !vs->w || !vs->since || !vs->win)
        return -1;
    for (size_t i = 0; i < st->nw; i++) {
        if (!st->w[i].feed && st->w[i].ended && !st->thread[0]) {
            /* summary.json alone: since start its figures, nothing in the last 10 s; a thread's
             * lines need its sync records (a trace), so it is in the all-threads view only */
            const struct rep_process *d = &st->w[i].done;
            vs->v[vs->n] =
                (struct top_view){.since = *d, .window = {.pid = d->pid, .rank = d->rank}};
            vs->w[vs->n] = &st->w[i];
            vs->since[vs->n] = vs->v[vs->n].since;
            vs->win[vs->n] = vs->v[vs->n].window;
            vs->n++;
            continue;
        }
        if (!st->w[i].feed)
            continue;
        if (top_feed_view(st->w[i].feed, st->thread[0] ? st->thread : NULL, &vs->v[vs->n]) != 0) {
            top_view_free(&vs->v[vs->n]);
            return -1;
        }
        vs->w[vs->n] = &st->w[i];
        vs->since[vs->n] = vs->v[vs->n].since;
        vs->win[vs->n] = vs->v[vs->n].window;
        vs->n++;
    }
    return 0;
}

/* The header's figures summed over the processes shown: their last 10 s, since start (the
 * merged lines' syncs and blocked time), and the thread 't' chose. */
struct header_sums {
    struct top_window w; /* the last 10 s */
    bool running, short_of_steps, folded;
    uint64_t bound, sampled_from;
    uint64_t steps_seen, missing, thread_syncs, thread_blocked, thread_win_syncs,
        thread_win_blocked;
    double syncs, blocked;
};

static struct header_sums header_sums(const struct views *vs, const struct cli_merged *m)
{
    struct header_sums h = {.sampled_from = UINT64_MAX};
    for (size_t p = 0; p < vs->n; p++) {
        const struct top_view *v = &vs->v[p];
        h.w.steps += v->w.steps;
        h.w.wall_ns += v->w.wall_ns;
        h.w.syncs += v->w.syncs;
        h.w.blocked_ns += v->w.blocked_ns;
        h.short_of_steps |= v->w.short_of_steps;
        h.folded |= v->w.folded;
        if (v->since.trace_bound_bytes) {
            h.bound = v->since.trace_bound_bytes;
            h.sampled_from =
                v->since.sampled_from < h.sampled_from ? v->since.sampled_from : h.sampled_from;
        }
        h.running |= v->since.trace_unfinished && !v->since.trace_lost_errno; /* it grows no more */
        h.steps_seen += v->since.steps_seen;
        h.missing += v->records_missing;
        h.thread_syncs += v->thread_syncs;
        h.thread_blocked += v->thread_blocked_ns;
        h.thread_win_syncs += v->thread_win_syncs;
        h.thread_win_blocked += v->thread_win_blocked_ns;
        for (size_t i = 0; i < m->per_proc[p].n; i++) {
            h.syncs += (double)m->per_proc[p].lines[i].count;
            h.blocked += (double)m->per_proc[p].lines[i].blocked_ns;
        }
    }
    return h;
}

/* The title line, then what could not be read, what lost data and what has no trace (three of
 * each at most). */
static void draw_title(const struct top_state *st, const struct views *vs, bool running,
                       size_t problems, struct screen *s)
{
    char now[32] = "";
    time_t t = time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(now, sizeof now, "%H:%M:%S", &tm);
    out(s, "syncspy top  %s  %zu process%s, %s  (q quit, s sort, t thread)  %s", st->dir, vs->n,
        vs->n == 1 ? "" : "es", running ? "running" : "ended", now);
    for (size_t i = 0, shown = 0; i < st->nw && shown < 3; i++)
        if (st->w[i].err[0]) {
            out(s, "  %s", st->w[i].err);
            shown++;
        }
    if (problems)
        out(s, "  %zu trace%s could not be read (a process starting?)", problems,
            problems == 1 ? "" : "s");
    for (size_t p = 0, shown = 0; p < vs->n && shown < 3; p++) {
        char note[512];
        if (report_lost_note(&vs->v[p].since, note, sizeof note)) {
            out(s, "  pid %d: %s", vs->v[p].since.pid, note);
            shown++;
        }
    }
    for (size_t i = 0, shown = 0; i < st->nw && shown < 3; i++)
        if (!st->w[i].feed && st->w[i].ended) {
            out(s, "  %s: no %s there; the figures are its summary.json's (the process ended)%s",
                st->w[i].folder[0] ? st->w[i].folder : st->dir, TRACE_FILE_NAME,
                st->thread[0] ? ", left out of a thread's view" : "");
            shown++;
        }
}

/* The figures, the last 10 s beside since start: every thread's, or the thread 't' chose. */
static void draw_figures(const struct top_state *st, const struct views *vs,
                         const struct cli_merged *m, const struct header_sums *h, struct screen *s)
{
    double np = vs->n ? (double)vs->n : 1.0;
    bool one = st->thread[0] != 0;
    char a[32], b[32], c[32], d[32], e[32], f[32];
    /* steps/s of the job: each process's steps over its own time, averaged over processes */
    rate_text(a, sizeof a, h->w.wall_ns > 0 ? h->w.steps * 1e9 / (h->w.wall_ns / np) / np : 0);
    rate_text(b, sizeof b, m->wall_ns > 0 ? m->steps * 1e9 / (m->wall_ns / np) / np : 0);
    rate_text(c, sizeof c,
              h->w.steps ? (one ? (double)h->thread_win_syncs : h->w.syncs) / h->w.steps : 0);
    rate_text(d, sizeof d, (one ? (double)h->thread_syncs : h->syncs) / m->steps);
    share_text(e, sizeof e, one ? (double)h->thread_win_blocked : h->w.blocked_ns, h->w.wall_ns);
    share_text(f, sizeof f, one ? (double)h->thread_blocked : h->blocked, m->wall_ns);
    char whose[128];
    if (one)
        snprintf(whose, sizeof whose, "(thread %s's)", st->thread);
    else
        snprintf(whose, sizeof whose, "(every thread's)");
    out(s, "%-16s %14s %14s", "", "last 10 s", "since start");
    out(s, "%-16s %14s %14s", "steps/s", a, b);
    out(s, "%-16s %14s %14s   %s", "syncs/step", c, d, whose);
    out(s, "%-16s %14s %14s   %s", "blocked share", e, f, whose);
    out(s, "%-16s %14.0f %14.0f   (training steps; %llu begun)%s", "steps", h->w.steps, m->steps,
        (unsigned long long)h->steps_seen,
        h->short_of_steps ? "  (last 10 s: the newest steps kept)" : "");
}

/* What the last 10 s's figures lack: runs of folded steps, a sample of the records, records the
 * agent's rings had no room for. */
static void draw_header_notes(const struct views *vs, bool one, const struct header_sums *h,
                              struct screen *s)
{
    double np = vs->n ? (double)vs->n : 1.0;
    if (h->folded) {
        char span[32];
        report_format_ns(span, sizeof span, h->w.wall_ns / np);
        out(s,
            "  last 10 s: the newest runs of steps SYNCSPY_TRACE_MB folded, taken whole (%s): their "
            "counts are exact",
            span);
    }
    if (h->bound)
        out(s,
            "  past half of SYNCSPY_TRACE_MB=%llu the trace keeps the sync records of a sample of steps "
            "(every one before step %llu): the last 10 s's lines%s are that sample's, not exact; the "
            "steps and every thread's figures stay exact",
            (unsigned long long)(h->bound >> 20), (unsigned long long)h->sampled_from,
            one ? " and this thread's lines and last-10-s figures" : "");
    if (h->missing)
        out(s,
            "  %llu sync record%s not in the trace (the agent's rings were full): the last 10 s and "
            "one thread's lines count the %s there are",
            (unsigned long long)h->missing, h->missing == 1 ? "" : "s", "records");
}

static void draw_header(const struct top_state *st, const struct views *vs,
                        const struct cli_merged *m, const struct cli_merged *mw, size_t problems,
                        struct screen *s)
{
    (void)mw;
    struct header_sums h = header_sums(vs, m);
    draw_title(st, vs, h.running, problems, s);
    draw_figures(st, vs, m, &h, s);
    draw_header_notes(vs, st->thread[0] != 0, &h, s);
    out(s, "%s", "");
}

static void draw_processes(const struct views *vs, const struct cli_merged *m, struct screen *s)
{
    if (vs->n <= 1)
        return;
    out(s, "%-24s %8s %9s %11s %8s  %s", "process", "steps", "steps/s", "syncs/step", "blocked",
        "state");
    for (size_t p = 0; p < vs->n && s->rows_left > 8; p++) {
        const struct top_window *x = &vs->v[p].w;
        char name[64], a[32], c[32], e[32];
        proc_name(name, sizeof name, &vs->v[p].since);
        rate_text(a, sizeof a, x->wall_ns > 0 ? x->steps * 1e9 / x->wall_ns : 0);
        rate_text(c, sizeof c, x->steps ? x->syncs / x->steps : 0);
        share_text(e, sizeof e, x->blocked_ns, x->wall_ns);
        out(s, "%-24s %8.0f %9s %11s %8s  %s", name, m->per_proc[p].steps, a, c, e,
            vs->v[p].since.trace_lost_errno   ? "lost data"
            : vs->v[p].since.trace_unfinished ? "running"
                                              : "ended");
    }
    out(s, "%s", "");
}

static void draw_threads(const struct top_state *st, const struct thread_row *rows, size_t n,
                         struct screen *s)
{
    if (!n)
        return;
    out(s, "%-40s %10s %12s", "thread (t: next)", "syncs", "blocked");
    out(s, "%c %-38s", st->thread[0] ? ' ' : '>', "all threads");
    for (size_t i = 0; i < n && s->rows_left > 6; i++) {
        char a[32], name[128];
        snprintf(name, sizeof name, "%s%s", rows[i].label,
                 rows[i].ends_steps ? " (marks the steps)" : "");
        report_format_ns(a, sizeof a, (double)rows[i].blocked_ns);
        out(s, "%c %-38s %10llu %12s", strcmp(st->thread, rows[i].label) == 0 ? '>' : ' ', name,
            (unsigned long long)rows[i].syncs, a);
    }
    out(s, "%s", "");
}

#define THREAD_ROWS_MAX 256

static void draw(struct top_state *st, size_t problems, struct screen *s)
{
    struct thread_row *rows = calloc(THREAD_ROWS_MAX, sizeof *rows);
    size_t nrows = rows ? thread_rows(st, rows, THREAD_ROWS_MAX) : 0;
    if (st->next_thread) {
        pick_next_thread(st, rows, nrows);
        st->next_thread = false;
    }
    struct views vs;
    struct cli_merged m = {0}, mw = {0};
    struct cli_set since = {0}, win = {0};
    if (views_of(st, &vs) == 0) {
        since = (struct cli_set){.procs = vs.since, .n = vs.n};
        win = (struct cli_set){.procs = vs.win, .n = vs.n};
    }
    if (!rows || !vs.v || cli_merge_lines(&since, &m) != 0 || cli_merge_lines(&win, &mw) != 0) {
        out(s, "syncspy top: out of memory");
    } else {
        draw_header(st, &vs, &m, &mw, problems, s);
        draw_processes(&vs, &m, s);
        draw_threads(st, rows, nrows, s);
        out(s, "top lines of %s (sorted by %s):", st->thread[0] ? st->thread : "all threads",
            sort_names[st->sort]);
        int room = s->rows_left - 2;
        draw_lines(s, &since, &win, &m, &mw, st->sort,
                   room < 1                 ? 1
                   : room > LINES_SHOWN_MAX ? LINES_SHOWN_MAX
                                            : room);
    }
    cli_merged_free(&m);
    cli_merged_free(&mw);
    views_free(&vs);
    free(rows);
}

/* ---- the terminal ------------------------------------------------------------------------------ */

static struct termios saved_tty;
static bool tty_raw;
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static void tty_restore(void)
{
    if (tty_raw) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
        tty_raw = false;
    }
    if (isatty(STDOUT_FILENO)) {
        static const char leave[] = "\x1b[?25h\x1b[?1049l";
        ssize_t k = write(STDOUT_FILENO, leave, sizeof leave - 1);
        (void)k;
    }
}

static void tty_enter(void)
{
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tty) == 0) {
        struct termios raw = saved_tty;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
            tty_raw = true;
    }
    if (isatty(STDOUT_FILENO)) {
        static const char enter[] = "\x1b[?1049h\x1b[?25l";
        ssize_t k = write(STDOUT_FILENO, enter, sizeof enter - 1);
        (void)k;
    }
}

static void size_of_terminal(struct top_state *st)
{
    struct winsize ws;
    st->cols = 0;
    st->rows = 1000;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        st->cols = ws.ws_col;
        st->rows = ws.ws_row;
    }
}

static int frame(struct top_state *st)
{
    size_t problems = refresh(st);
    size_of_terminal(st);
    bool tty = !st->once && isatty(STDOUT_FILENO);
    struct screen s = {.rows_left = st->rows - 1, .cols = st->cols, .tty = tty};
    bool any = false;
    for (size_t i = 0; i < st->nw; i++)
        any |= st->w[i].feed != NULL || st->w[i].ended;
    if (!any) {
        out(&s, "syncspy top  %s: no process has written a trace yet (waiting)", st->dir);
        for (size_t i = 0; i < st->nw && i < 3; i++)
            if (st->w[i].err[0])
                out(&s, "  %s", st->w[i].err);
    } else {
        draw(st, problems, &s);
    }
    struct fd_writer *w = malloc(sizeof *w);
    int rc = -1;
    if (w) {
        fdw_init(w, STDOUT_FILENO);
        fdw_puts(w, tty ? "\x1b[H" : NULL); /* home, the frame, then clear what is below it */
        fdw_write(w, s.buf ? s.buf : "", s.len);
        fdw_puts(w, tty ? "\x1b[J" : NULL);
        rc = fdw_flush(w);
        free(w);
    }
    free(s.buf);
    return rc;
}

static int top_loop(struct top_state *st, pid_t child, int *status);

/* argv[0] is "top"; its options are the table's (cli/commands.c). */
int cli_top(int argc, char **argv)
{
    const struct cli_command *c = cli_command("top");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    struct top_state st = {.interval_ms = 1000};
    int key;
    while ((key = cli_next_option(&a)) > 0) {
        if (key == CLI_KEY_ONCE) {
            st.once = true;
        } else if (key == CLI_KEY_INTERVAL) {
            char *end = NULL;
            double sec = strtod(a.value, &end);
            if (!*a.value || *end || !(sec >= 0.1 && sec <= 3600))
                return cli_usage_error(c, "--interval wants seconds from 0.1 to 3600, not '%s'",
                                       cli_shown(a.value));
            st.interval_ms = (int)(sec * 1000);
        }
    }
    if (key == 0)
        return a.status;
    if (a.operands == argc)
        return cli_usage_error(c, "missing DIR (a process folder or the SYNCSPY_OUT root)");
    if (argc - a.operands > 1)
        return cli_usage_error(c, "takes one DIR; '%s' is one more",
                               cli_shown(argv[a.operands + 1]));
    st.dir = argv[a.operands];
    if (access(st.dir, R_OK) != 0) {
        fprintf(stderr, "syncspy top: cannot read %s: %s\n", cli_shown(st.dir), strerror(errno));
        return 2;
    }
    int rc = st.once ? (frame(&st) == 0 ? 0 : 1) : top_loop(&st, 0, NULL);
    watched_free(&st);
    return rc;
}

/* Refreshes until q, a signal, or (child > 0) the child's exit, its status in *status. Returns
 * 0, 1 when the screen could not be written, or 3 when the child exited. */
static int top_loop(struct top_state *st, pid_t child, int *status)
{
    struct sigaction sa = {0}, old[3];
    sa.sa_handler = on_signal;
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    stop_signal = 0;
    tty_enter();
    int rc = 0;
    while (!stop_signal) {
        if (frame(st) != 0) {
            rc = 1;
            break;
        }
        if (child > 0 && waitpid(child, status, WNOHANG) == child) {
            rc = 3;
            break;
        }
        struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
        int k = poll(&pfd, tty_raw ? 1 : 0, st->interval_ms);
        if (k > 0 && (pfd.revents & POLLIN)) {
            char c;
            ssize_t got = read(STDIN_FILENO, &c, 1);
            if (got == 1 && (c == 'q' || c == 'Q' || c == 3))
                break;
            if (got == 1 && c == 's')
                st->sort = (enum sort_key)((st->sort + 1) % SORT_KEYS);
            if (got == 1 && c == 't')
                st->next_thread = true;
        }
    }
    tty_restore();
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    return rc;
}

bool cli_top_beside(const char *dir, pid_t child, int *status)
{
    struct top_state st = {.dir = dir, .interval_ms = 1000};
    bool ended = top_loop(&st, child, status) == 3;
    watched_free(&st);
    return ended;
}
