/* cli/control.c: `syncspy start PID|DIR [--steps N]` and `syncspy stop PID|DIR`: a request into
 * each running process folder (output/control_format.h; a temporary file renamed into place),
 * then a short wait for the agent's acknowledgment, said in one line per process. The only
 * command that writes into a run folder, and only these two names in it (agent/background/control.h). */
#include "cli/control.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/load.h"
#include "output/control_format.h"
#include "output/model.h"
#include "output/summary_json.h"
#include "output/trace_format.h"

#define WAIT_DEFAULT_S 5.0

static uint64_t now_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#define TARGETS_MAX 4096 /* process folders of one root */

struct target {
    char dir[PATH_MAX];
    int pid; /* from its trace.bin's header */
    char host[72];
    char id[CONTROL_ID_MAX + 1];
    dev_t dev; /* the request written: the agent has taken it once it is gone */
    ino_t ino;
    bool sent, taken, done;
    struct control_ack ack;
};

/* The trace.bin header of dir: its pid (and host). False when there is no readable one. */
static bool read_header(const char *dir, struct target *t)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, TRACE_FILE_NAME);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct trace_file_header_v13 h = {0};
    ssize_t n = read(fd, &h, sizeof h);
    close(fd);
    if (n < (ssize_t)sizeof h.h || memcmp(h.h.magic, TRACE_MAGIC, sizeof h.h.magic) != 0)
        return false;
    t->pid = h.h.pid;
    if (n >= (ssize_t)sizeof h && (h.h.features & TRACE_FEATURE_IDENTITY))
        snprintf(t->host, sizeof t->host, "%.*s", (int)sizeof h.id.host - 1, h.id.host);
    return true;
}

static bool has_file(const char *dir, const char *name)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Whether the process of t is known to be gone: it ran on this host and has no pid now. */
static bool gone_here(const struct target *t)
{
    struct utsname un;
    if (t->host[0] && (uname(&un) != 0 || strcmp(un.nodename, t->host) != 0))
        return false; /* another node's: only its acknowledgment can tell */
    return t->pid > 0 && kill(t->pid, 0) != 0 && errno == ESRCH;
}

/* ---- the targets ------------------------------------------------------------------------------ */

struct targets {
    struct target *t;
    size_t n;
    const char *cmd;
};

static int add_folder(struct targets *ts, const char *dir)
{
    if (ts->n >= TARGETS_MAX)
        return 0;
    struct target *t = &ts->t[ts->n];
    memset(t, 0, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "%s", dir);
    if (!read_header(dir, t))
        return 0;
    ts->n++;
    return 1;
}

/* The process folders of a SYNCSPY_OUT root (one level down). */
static void add_root(struct targets *ts, const char *root)
{
    DIR *d = opendir(root);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s/%s", root, e->d_name) >= (int)sizeof sub)
            continue;
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode) && has_file(sub, TRACE_FILE_NAME))
            add_folder(ts, sub);
    }
    closedir(d);
}

/* The folder is this user's (else a request would be refused, or not read at all). */
static bool owned(const char *cmd, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "syncspy %s: %s: %s\n", cmd, cli_shown(dir), strerror(errno));
        return false;
    }
    if (st.st_uid != geteuid()) {
        fprintf(stderr,
                "syncspy %s: %s belongs to another user (uid %u): only the process's own "
                "user can start or stop its recording\n",
                cmd, cli_shown(dir), (unsigned)st.st_uid);
        return false;
    }
    return true;
}

/* PID's process folder: from its SYNCSPY_OUT (its environment, its working folder), the folder
 * whose trace.bin is that pid's and that has no summary.json yet. 0, 1 (not found: said) or 2. */
static int find_pid(struct targets *ts, const char *arg, int pid)
{
    const char *cmd = ts->cmd;
    char path[64], out[PATH_MAX] = "syncspy-out", cwd[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", pid);
    if (stat(path, &st) != 0) {
        fprintf(stderr,
                "syncspy %s: no process %s here (it is gone, or runs on another node: name "
                "its process folder instead)\n",
                cmd, arg);
        return 1;
    }
    if (st.st_uid != geteuid()) {
        fprintf(stderr,
                "syncspy %s: process %d belongs to another user (uid %u): only its own user "
                "can start or stop its recording\n",
                cmd, pid, (unsigned)st.st_uid);
        return 2;
    }
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    bool agent = false;
    char line[PATH_MAX + 128];
    while (f && !agent && fgets(line, sizeof line, f))
        agent = strstr(line, "/libsyncspy.so") != NULL;
    if (f)
        fclose(f);
    if (!agent) {
        fprintf(stderr,
                "syncspy %s: process %d has no syncspy agent (start it with `syncspy run` "
                "or LD_PRELOAD=.../libsyncspy.so)\n",
                cmd, pid);
        return 1;
    }
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    f = fopen(path, "re");
    static char env[1 << 20];
    size_t n = f ? fread(env, 1, sizeof env - 1, f) : 0;
    if (f)
        fclose(f);
    env[n] = 0;
    for (size_t i = 0; i < n; i += strlen(env + i) + 1)
        if (!strncmp(env + i, "SYNCSPY_OUT=", 12) && env[i + 12])
            snprintf(out, sizeof out, "%s", env + i + 12);
    snprintf(path, sizeof path, "/proc/%d/cwd", pid);
    ssize_t c = readlink(path, cwd, sizeof cwd - 1);
    char root[2 * PATH_MAX + 2];
    if (out[0] != '/' && c > 0) {
        cwd[c] = 0;
        snprintf(root, sizeof root, "%s/%s", cwd, out);
    } else {
        snprintf(root, sizeof root, "%s", out);
    }
    struct targets all = {.t = ts->t + ts->n, .n = 0, .cmd = cmd};
    add_root(&all, root);
    for (size_t i = 0; i < all.n; i++)
        if (all.t[i].pid == pid && !has_file(all.t[i].dir, SUMMARY_FILE_NAME)) {
            if (i)
                all.t[0] = all.t[i];
            ts->n++;
            return 0;
        }
    fprintf(stderr,
            "syncspy %s: process %d has the agent but no process folder in %s yet (it makes "
            "one at its first CUDA call)\n",
            cmd, pid, cli_shown(root));
    return 1;
}

/* DIR: a process folder, or a root whose running processes are all asked. 0, 1 or 2 (said). */
static int find_dir(struct targets *ts, const char *dir)
{
    const char *cmd = ts->cmd;
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "syncspy %s: %s: %s\n", cmd, cli_shown(dir), strerror(errno));
        return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "syncspy %s: %s is not a process folder nor a SYNCSPY_OUT folder\n", cmd,
                cli_shown(dir));
        return 2;
    }
    if (!owned(cmd, dir))
        return 2;
    if (has_file(dir, TRACE_FILE_NAME)) {
        if (!add_folder(ts, dir)) {
            fprintf(stderr, "syncspy %s: %s/%s is not a syncspy trace: not a process folder\n", cmd,
                    cli_shown(dir), TRACE_FILE_NAME);
            return 2;
        }
        if (has_file(dir, SUMMARY_FILE_NAME)) {
            fprintf(stderr,
                    "syncspy %s: the process of %s (pid %d) has ended: its summary.json "
                    "is written\n",
                    cmd, cli_shown(dir), ts->t[0].pid);
            return 1;
        }
        if (gone_here(&ts->t[0])) {
            fprintf(stderr,
                    "syncspy %s: process %d of %s is gone (it ended without writing its "
                    "summary.json: killed?)\n",
                    cmd, ts->t[0].pid, cli_shown(dir));
            return 1;
        }
        return 0;
    }
    add_root(ts, dir);
    size_t kept = 0, found = ts->n;
    for (size_t i = 0; i < ts->n; i++)
        if (!has_file(ts->t[i].dir, SUMMARY_FILE_NAME) && !gone_here(&ts->t[i]) &&
            owned(cmd, ts->t[i].dir))
            ts->t[kept++] = ts->t[i];
    ts->n = kept;
    if (!kept) {
        fprintf(stderr, "syncspy %s: %s holds %s: nothing to %s\n", cmd, cli_shown(dir),
                found ? "no running process (each has its summary.json, or is gone)"
                      : "no process folder (no trace.bin in it or one level down)",
                cmd);
        return found ? 1 : 2;
    }
    return 0;
}

/* ---- the request and its answer --------------------------------------------------------------- */

static int send_request(const char *cmd, struct target *t, const struct control_request *req)
{
    char text[CONTROL_BYTES_MAX], tmp[PATH_MAX + 64], dst[PATH_MAX + 32];
    int n = control_request_format(req, text, sizeof text);
    snprintf(tmp, sizeof tmp, "%s/%s.tmp-%d", t->dir, CONTROL_FILE_NAME, (int)getpid());
    snprintf(dst, sizeof dst, "%s/%s", t->dir, CONTROL_FILE_NAME);
    unlink(tmp);
    int fd = n < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    bool ok = fd >= 0 && write(fd, text, (size_t)n) == n && fstat(fd, &st) == 0;
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    if (!ok || rename(tmp, dst) != 0) {
        fprintf(stderr, "syncspy %s: cannot write %s: %s\n", cmd, cli_shown(dst), strerror(errno));
        unlink(tmp);
        return 1;
    }
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    t->sent = true;
    return 0;
}

/* The acknowledgment of t's request, if there is one now. */
static bool read_ack(struct target *t)
{
    char path[PATH_MAX + 32], buf[CONTROL_ACK_BYTES_MAX + 1], err[128];
    snprintf(path, sizeof path, "%s/%s", t->dir, CONTROL_ACK_FILE_NAME);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    struct control_ack a;
    if (n <= 0 || control_ack_parse(buf, (size_t)n, &a, err, sizeof err) != 0 ||
        strcmp(a.id, t->id))
        return false;
    t->ack = a;
    t->taken = true;
    return a.result == CONTROL_APPLIED;
}

/* Whether the request file is still the one written (not taken yet). */
static bool still_there(const struct target *t)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", t->dir, CONTROL_FILE_NAME);
    struct stat st;
    return lstat(path, &st) == 0 && st.st_dev == t->dev && st.st_ino == t->ino;
}

static const char *schedule_note(const struct control_ack *a)
{
    static char buf[220];
    if (!a->schedule[0] || !strcmp(a->schedule, "off"))
        return "";
    snprintf(buf, sizeof buf, "; its schedule (%s) records its own steps too", a->schedule);
    return buf;
}

/* One line: what the process does now. 0, or 1 when it did not answer as asked. */
static int say(const char *cmd, struct target *t)
{
    const struct control_ack *a = &t->ack;
    typedef unsigned long long ull;
    if (t->done && a->command == CONTROL_START && a->last == CONTROL_UNTIL_STOP)
        printf("syncspy start: pid %d records steps from %llu on, until `syncspy stop` "
               "(asked during step %llu)%s\n",
               t->pid, (ull)a->first, (ull)a->step, schedule_note(a));
    else if (t->done && a->command == CONTROL_START)
        printf("syncspy start: pid %d records steps %llu to %llu (%llu steps, asked during step "
               "%llu)%s\n",
               t->pid, (ull)a->first, (ull)a->last, (ull)(a->last - a->first + 1), (ull)a->step,
               schedule_note(a));
    else if (t->done && a->first)
        printf("syncspy stop: pid %d stopped recording after step %llu (recorded on request: "
               "steps %llu to %llu)%s\n",
               t->pid, (ull)a->step, (ull)a->first, (ull)a->last, schedule_note(a));
    else if (t->done)
        printf("syncspy stop: pid %d was recording no steps on request (step %llu ended): nothing "
               "changed%s\n",
               t->pid, (ull)a->step, schedule_note(a));
    else if (t->taken)
        printf("syncspy %s: pid %d took the request during step %llu; it applies when that step "
               "ends (none ended yet)\n",
               cmd, t->pid, (ull)t->ack.step);
    else
        return -1;
    return 0;
}

/* Waits (at most wait_s) for every target's answer, then says each. 0 when all answered. */
static int wait_answers(const char *cmd, struct targets *ts, double wait_s)
{
    uint64_t deadline = now_ns(CLOCK_MONOTONIC) + (uint64_t)(wait_s * 1e9);
    for (;;) {
        size_t open_ = 0;
        for (size_t i = 0; i < ts->n; i++) {
            struct target *t = &ts->t[i];
            if (t->sent && !t->done)
                t->done = read_ack(t);
            open_ += t->sent && !t->done;
        }
        if (!open_ || now_ns(CLOCK_MONOTONIC) >= deadline)
            break;
        struct timespec pause = {0, 20000000};
        nanosleep(&pause, NULL);
    }
    int rc = 0;
    fflush(stdout);
    for (size_t i = 0; i < ts->n; i++) {
        struct target *t = &ts->t[i];
        if (!t->sent)
            continue;
        if (say(cmd, t) == 0)
            continue;
        rc = 1;
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", t->dir, CONTROL_FILE_NAME);
        bool withdrawn = still_there(t) && unlink(path) == 0;
        if (has_file(t->dir, SUMMARY_FILE_NAME))
            fprintf(stderr, "syncspy %s: process %d of %s ended before it answered\n", cmd, t->pid,
                    cli_shown(t->dir));
        else if (gone_here(t))
            fprintf(stderr,
                    "syncspy %s: process %d of %s is gone (it ended without writing its "
                    "summary.json: killed?)\n",
                    cmd, t->pid, cli_shown(t->dir));
        else
            fprintf(stderr,
                    "syncspy %s: no answer from process %d of %s in %g s (stopped, stuck, or "
                    "not syncspy's agent)%s\n",
                    cmd, t->pid, cli_shown(t->dir), wait_s,
                    withdrawn ? "; the request was withdrawn" : "");
    }
    fflush(stdout);
    return rc;
}

/* ---- the commands ------------------------------------------------------------------------------ */

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static int control_main(int argc, char **argv, uint8_t command)
{
    const struct cli_command *c = cli_command(command == CONTROL_START ? "start" : "stop");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    struct control_request req = {.command = command};
    double wait_s = WAIT_DEFAULT_S;
    int key;
    while ((key = cli_next_option(&a)) > 0) {
        char *end;
        if (key == CLI_KEY_STEPS) {
            unsigned long long v = 0;
            errno = 0;
            if (all_digits(a.value))
                v = strtoull(a.value, &end, 10);
            if (!all_digits(a.value) || errno || v < 1 || v > CONTROL_STEPS_MAX)
                return cli_usage_error(c, "--steps wants a whole number from 1 to %llu, not '%s'",
                                       CONTROL_STEPS_MAX, cli_shown(a.value));
            req.steps = v;
        } else if (key == CLI_KEY_WAIT) {
            errno = 0;
            wait_s = strtod(a.value, &end);
            if (errno || end == a.value || *end || !(wait_s >= 0.1 && wait_s <= 3600))
                return cli_usage_error(c, "--wait wants seconds from 0.1 to 3600, not '%s'",
                                       cli_shown(a.value));
        }
    }
    if (key == 0)
        return a.status;
    if (a.argc - a.operands != 1)
        return cli_usage_error(c,
                               a.argc - a.operands ? "takes one PID or DIR; '%s' is one more"
                                                   : "missing PID or DIR%s",
                               a.argc - a.operands ? cli_shown(a.argv[a.operands + 1]) : "");
    const char *arg = a.argv[a.operands];
    static struct target slots[TARGETS_MAX];
    struct targets ts = {.t = slots, .cmd = c->name};
    int rc =
        all_digits(arg) && strlen(arg) < 10 ? find_pid(&ts, arg, atoi(arg)) : find_dir(&ts, arg);
    if (rc)
        return rc;
    struct utsname un;
    const char *host = uname(&un) == 0 ? un.nodename : "host";
    for (size_t i = 0; i < ts.n; i++) {
        struct target *t = &ts.t[i];
        snprintf(t->id, sizeof t->id, "%.24s-%d-%llu-%zu", host, (int)getpid(),
                 (unsigned long long)(now_ns(CLOCK_REALTIME) % 1000000000000ull), i);
        for (char *p = t->id; *p; p++) /* a host name's other characters: not in an id */
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
                *p = '_';
        memcpy(req.id, t->id, sizeof req.id);
        if (send_request(c->name, t, &req) != 0)
            rc = 1;
    }
    return wait_answers(c->name, &ts, wait_s) || rc;
}

int cli_start(int argc, char **argv)
{
    return control_main(argc, argv, CONTROL_START);
}

int cli_stop(int argc, char **argv)
{
    return control_main(argc, argv, CONTROL_STOP);
}
