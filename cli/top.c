/* cli/top.c: `syncspy top DIR` (see top.h): a live view of a running job, read again every
 * interval from the files its processes' flushers append (trace.bin: steps, site totals and
 * thread totals at every flush, about every 100 ms), so it works from another node over a
 * shared filesystem. "Last 10 s" is the run's own last 10 s of steps (their wall times summed
 * from the newest back), never this machine's clock against theirs. It only reads DIR. CLI
 * only: stdio, termios, malloc. */
#include "cli/top.h"

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

#include "cli/lines.h"
#include "cli/load.h"
#include "cli/merge.h"
#include "output/fd_writer.h"
#include "output/report.h"

#define WINDOW_NS 10000000000ull /* "last 10 s" */
#define LINES_SHOWN_MAX 50

enum sort_key { SORT_BLOCKED, SORT_SYNCS, SORT_WHERE, SORT_KEYS };
static const char *const sort_names[SORT_KEYS] = {"blocked/step", "syncs/step", "where"};

struct top_state {
    const char *dir;
    int interval_ms;
    bool once;
    enum sort_key sort;
    int thread;        /* the thread picked with 't': an index over the threads shown; -1 none */
    int cols, rows;
};

/* The figures of a stretch of a process's training steps. */
struct window {
    double steps, wall_ns, syncs, blocked_ns;
};

/* The newest training steps of p whose wall times add up to the window (all of them when the
 * run is shorter): the report's training steps (start-up and the open step left out). */
static struct window last_window(const struct rep_process *p, const struct rep_lines *l)
{
    struct window w = {0};
    if (!p->steps || !p->nsteps)
        return w;
    size_t first = l->startup_left_out ? 1 : 0, last = p->nsteps - (l->partial_left_out ? 1 : 0);
    for (size_t i = last; i > first && w.wall_ns < (double)WINDOW_NS; i--) {
        const struct rep_step *s = &p->steps[i - 1];
        w.steps += 1;
        w.wall_ns += (double)s->wall_ns;
        w.syncs += (double)s->syncs;
        w.blocked_ns += (double)s->blocked_ns;
    }
    return w;
}

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

struct sorted_line {
    const struct cli_mline *m;
    char where[512];
};

static enum sort_key sort_by;

static int line_order(const void *pa, const void *pb)
{
    const struct sorted_line *a = pa, *b = pb;
    if (sort_by == SORT_WHERE)
        return strcmp(a->where, b->where);
    uint64_t x = sort_by == SORT_SYNCS ? a->m->count : a->m->blocked_ns;
    uint64_t y = sort_by == SORT_SYNCS ? b->m->count : b->m->blocked_ns;
    return (x < y) - (x > y);
}

static void draw_lines(struct screen *s, const struct cli_merged *m, enum sort_key key, int room)
{
    struct sorted_line *v = calloc(m->n ? m->n : 1, sizeof *v);
    if (!v)
        return;
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->lines[i].count) {
            v[n].m = &m->lines[i];
            cli_line_where(m->lines[i].line, v[n].where, sizeof v[n].where);
            n++;
        }
    sort_by = key;
    qsort(v, n, sizeof *v, line_order);
    out(s, "%12s  %10s  %9s  %s", "blocked/step", "syncs/step", "syncs/s", "api / where");
    for (size_t i = 0; i < n && (int)i < room; i++) {
        char a[32], b[32], c[32];
        report_format_ns(a, sizeof a, (double)v[i].m->blocked_ns / m->steps);
        rate_text(b, sizeof b, (double)v[i].m->count / m->steps);
        rate_text(c, sizeof c, m->wall_ns > 0 ? (double)v[i].m->count * 1e9 / (m->wall_ns / (double)m->nprocs) : 0);
        out(s, "%12s  %10s  %9s  %s %s", a, b, c, v[i].m->line->api, v[i].where);
    }
    if (!n)
        out(s, "  no host-device syncs in the training steps yet");
    else if ((int)n > room)
        out(s, "  (%zu more lines)", n - (size_t)room);
    free(v);
}

static void draw(const struct top_state *st, const struct cli_set *set, size_t problems, struct screen *s)
{
    struct cli_merged m;
    if (cli_merge_lines(set, &m) != 0) {
        cli_merged_free(&m);
        out(s, "syncspy top: out of memory");
        return;
    }
    struct window w = {0};
    bool running = false;
    uint64_t steps_seen = 0;
    double syncs = 0, blocked = 0;
    for (size_t p = 0; p < set->n; p++) {
        struct window x = last_window(&set->procs[p], &m.per_proc[p]);
        w.steps += x.steps;
        w.wall_ns += x.wall_ns;
        w.syncs += x.syncs;
        w.blocked_ns += x.blocked_ns;
        running |= set->procs[p].trace_unfinished;
        steps_seen += set->procs[p].steps_seen;
        for (size_t i = 0; i < m.per_proc[p].n; i++) {
            syncs += (double)m.per_proc[p].lines[i].count;
            blocked += (double)m.per_proc[p].lines[i].blocked_ns;
        }
    }
    char now[32] = "";
    time_t t = time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(now, sizeof now, "%H:%M:%S", &tm);
    out(s, "syncspy top  %s  %zu process%s, %s  (q quit, s sort, t thread)  %s", st->dir, set->n,
        set->n == 1 ? "" : "es", running ? "running" : "ended", now);
    if (problems)
        out(s, "  %zu file%s could not be read (a process starting?)", problems, problems == 1 ? "" : "s");
    double np = set->n ? (double)set->n : 1.0;
    char a[32], b[32], c[32], d[32], e[32], f[32];
    /* steps/s of the job: each process's steps over its own time, averaged over processes */
    rate_text(a, sizeof a, w.wall_ns > 0 ? w.steps * 1e9 / (w.wall_ns / np) / np : 0);
    rate_text(b, sizeof b, m.wall_ns > 0 ? m.steps * 1e9 / (m.wall_ns / np) / np : 0);
    rate_text(c, sizeof c, w.steps ? w.syncs / w.steps : 0);
    rate_text(d, sizeof d, syncs / m.steps);
    share_text(e, sizeof e, w.blocked_ns, w.wall_ns);
    share_text(f, sizeof f, blocked, m.wall_ns);
    out(s, "%-16s %14s %14s", "", "last 10 s", "since start");
    out(s, "%-16s %14s %14s", "steps/s", a, b);
    out(s, "%-16s %14s %14s   (every thread's)", "syncs/step", c, d);
    out(s, "%-16s %14s %14s", "blocked share", e, f);
    out(s, "%-16s %14.0f %14.0f   (training steps; %llu begun)", "steps", w.steps, m.steps,
        (unsigned long long)steps_seen);
    out(s, "%s", "");
    if (set->n > 1) {
        out(s, "%-24s %8s %9s %11s %8s  %s", "process", "steps", "steps/s", "syncs/step", "blocked", "state");
        for (size_t p = 0; p < set->n && s->rows_left > 8; p++) {
            const struct rep_process *rp = &set->procs[p];
            struct window x = last_window(rp, &m.per_proc[p]);
            char name[64];
            proc_name(name, sizeof name, rp);
            rate_text(a, sizeof a, x.wall_ns > 0 ? x.steps * 1e9 / x.wall_ns : 0);
            rate_text(c, sizeof c, x.steps ? x.syncs / x.steps : 0);
            share_text(e, sizeof e, x.blocked_ns, x.wall_ns);
            out(s, "%-24s %8.0f %9s %11s %8s  %s", name, m.per_proc[p].steps, a, c, e,
                rp->trace_unfinished ? "running" : "ended");
        }
        out(s, "%s", "");
    }
    /* the threads that synced (totals since start), 't' picks one */
    int nthreads = 0;
    for (size_t p = 0; p < set->n; p++)
        nthreads += (int)set->procs[p].nthreads;
    if (nthreads) {
        out(s, "%-34s %10s %12s", "thread (t: next)", "syncs", "blocked");
        int k = 0;
        for (size_t p = 0; p < set->n; p++)
            for (size_t i = 0; i < set->procs[p].nthreads && s->rows_left > 6; i++, k++) {
                const struct rep_thread *th = &set->procs[p].threads[i];
                char name[96];
                snprintf(name, sizeof name, "%s tid %u%s", th->name && *th->name ? th->name : "?", th->tid,
                         th->ends_steps ? " (marks the steps)" : "");
                report_format_ns(a, sizeof a, (double)th->blocked_ns);
                out(s, "%c %-32s %10llu %12s", k == st->thread % (nthreads ? nthreads : 1) && st->thread >= 0 ? '>' : ' ',
                    name, (unsigned long long)th->syncs, a);
            }
        out(s, "%s", "");
    }
    out(s, "top lines, since start (sorted by %s):", sort_names[st->sort]);
    int room = s->rows_left - 2;
    draw_lines(s, &m, st->sort, room < 1 ? 1 : room > LINES_SHOWN_MAX ? LINES_SHOWN_MAX : room);
    cli_merged_free(&m);
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
    struct cli_set set;
    /* a process still writing may have a trace whose last record is cut: read up to it */
    size_t problems = cli_load(st->dir, 0, &set);
    size_of_terminal(st);
    bool tty = !st->once && isatty(STDOUT_FILENO);
    struct screen s = {.rows_left = st->rows - 1, .cols = st->cols, .tty = tty};
    if (set.n == 0)
        out(&s, "syncspy top  %s: no process has written a trace yet (waiting)", st->dir);
    else
        draw(st, &set, problems, &s);
    cli_set_free(&set);
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

static const char top_usage[] =
    "usage: syncspy top [--interval SECONDS] [--once] DIR\n";

int cli_top(int argc, char **argv)
{
    struct top_state st = {.interval_ms = 1000, .thread = -1};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--once") == 0) {
            st.once = true;
        } else if (strcmp(a, "--interval") == 0 || strncmp(a, "--interval=", 11) == 0) {
            const char *v = a[10] == '=' ? a + 11 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            double sec = v ? strtod(v, &end) : 0;
            if (!v || !*v || *end || !(sec >= 0.1 && sec <= 3600)) {
                fprintf(stderr, "syncspy top: --interval wants seconds from 0.1 to 3600, not '%s'\n%s",
                        v ? v : "", top_usage);
                return 2;
            }
            st.interval_ms = (int)(sec * 1000);
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(top_usage, stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "syncspy top: unknown option '%s'\n%s", a, top_usage);
            return 2;
        } else if (st.dir) {
            fprintf(stderr, "syncspy top takes one DIR; '%s' is one more\n%s", a, top_usage);
            return 2;
        } else {
            st.dir = a;
        }
    }
    if (!st.dir) {
        fprintf(stderr, "syncspy top needs a DIR (a process folder or the SYNCSPY_OUT root)\n%s", top_usage);
        return 2;
    }
    if (access(st.dir, R_OK) != 0) {
        fprintf(stderr, "syncspy top: cannot read %s: %s\n", st.dir, strerror(errno));
        return 2;
    }
    if (st.once)
        return frame(&st) == 0 ? 0 : 1;
    return top_loop(&st, 0, NULL);
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
                st->thread++;
        }
    }
    tty_restore();
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    return rc;
}

bool cli_top_beside(const char *dir, pid_t child, int *status)
{
    struct top_state st = {.dir = dir, .interval_ms = 1000, .thread = -1};
    return top_loop(&st, child, status) == 3;
}
