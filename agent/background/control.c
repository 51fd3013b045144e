/* agent/background/control.c: requests to record steps (see control.h). control_poll runs on the flusher
 * thread only: it may do I/O, bounded (a request of at most CONTROL_BYTES_MAX bytes, an
 * acknowledgment of at most CONTROL_ACK_BYTES_MAX); it never follows a link, reads nothing but a
 * small regular file of this process's user, and a bad request changes nothing but one line on
 * stderr. syncspy_start/syncspy_stop run on the program's thread: the step lock, no I/O. */
#include "agent/background/control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/record/core.h"
#include "agent/background/process_dir.h"
#include "agent/record/state.h"
#include "agent/step/steps.h"
#include "agent/syncspy.h"
#include "common/compiler.h"
#include "common/log.h"
#include "output/control_format.h"
#include "output/io.h"

_Static_assert((int)CONTROL_START == (int)STEPS_START && (int)CONTROL_STOP == (int)STEPS_STOP,
               "one numbering of the commands");
_Static_assert(CONTROL_ID_MAX == STEPS_REQUEST_ID_MAX, "one id length");

#define CONTROL_POLL_NS 90000000ull /* the flusher wakes every 100 ms: each wake-up polls */
#define REFUSALS_SAID_MAX 8         /* refused requests said on stderr; the others are counted */

static struct {
    uint64_t next_poll_ns;
    uint64_t acked_seq; /* the latest applied request acknowledged */
    unsigned refusals;  /* refused requests so far */
    bool kept;          /* the last thing refused could not be removed (a folder): it is */
    dev_t refused_dev;  /* refused once, not at every poll */
    ino_t refused_ino;
} ctl;

/* Writes the acknowledgment: a temporary file made without following a link, then renamed over
 * control.ack (a reader sees the old one or the new one whole). */
static void write_ack(int dirfd, struct control_ack *a)
{
    static bool said;
    char buf[CONTROL_ACK_BYTES_MAX];
    a->pid = (int)getpid();
    schedule_describe(&agent_cfg.schedule, a->schedule, sizeof a->schedule);
    int n = control_ack_format(a, buf, sizeof buf);
    if (n < 0)
        return;
    int fd = io_openat(dirfd, CONTROL_ACK_TMP_NAME,
                       O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, OUTPUT_FILE_MODE);
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < (size_t)n;) {
        ssize_t w = io_write(fd, buf + done, (size_t)n - done);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        done += ok ? (size_t)w : 0;
    }
    if (fd >= 0)
        close(fd);
    ok = ok && renameat(dirfd, CONTROL_ACK_TMP_NAME, dirfd, CONTROL_ACK_FILE_NAME) == 0;
    if (!ok && !said) {
        said = true;
        agent_log("cannot write %s in the process folder (%s): `syncspy start/stop` get no answer",
                  CONTROL_ACK_FILE_NAME, strerror(errno));
    }
}

/* The request's name removed, when it is still the thing examined (st): a request put there
 * meanwhile is left for the next poll. False when it stays (a folder). */
static bool remove_request(int dirfd, const struct stat *st)
{
    struct stat now;
    if (fstatat(dirfd, CONTROL_FILE_NAME, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        now.st_dev == st->st_dev && now.st_ino == st->st_ino)
        return !S_ISDIR(now.st_mode) && unlinkat(dirfd, CONTROL_FILE_NAME, 0) == 0;
    return true;
}

/* A request that is not one: said once on stderr (the first few), acknowledged as refused,
 * removed (a folder in its place stays, and is not refused again). Nothing else changes. */
static void refuse(int dirfd, const struct stat *st, const char *why)
{
    if (ctl.kept && st->st_dev == ctl.refused_dev && st->st_ino == ctl.refused_ino)
        return; /* refused before, and still there */
    ctl.refusals++;
    if (ctl.refusals <= REFUSALS_SAID_MAX)
        agent_log("ignored %s/%s: %s; nothing changed%s", agent_process_dir_path(),
                  CONTROL_FILE_NAME, why,
                  ctl.refusals == REFUSALS_SAID_MAX ? " (further ones are not said)" : "");
    struct control_ack a = {.result = CONTROL_REFUSED,
                            .step = atomic_load_explicit(&steps_now, memory_order_relaxed)};
    snprintf(a.reason, sizeof a.reason, "%s", why);
    write_ack(dirfd, &a);
    ctl.kept = !remove_request(dirfd, st);
    ctl.refused_dev = st->st_dev;
    ctl.refused_ino = st->st_ino;
}

/* Reads the request file open as fd (st its fstat) into buf; its length, or -1 with why. */
static ssize_t read_request(int fd, const struct stat *st, char *buf, size_t cap, char *why,
                            size_t whylen)
{
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, whylen, "it is not a regular file");
        return -1;
    }
    if (st->st_uid != geteuid()) {
        snprintf(why, whylen, "it belongs to uid %u, not to this process's user (uid %u)",
                 (unsigned)st->st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st->st_size > CONTROL_BYTES_MAX) {
        snprintf(why, whylen, "it has %lld bytes, more than a request's %d", (long long)st->st_size,
                 CONTROL_BYTES_MAX);
        return -1;
    }
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, whylen, "it cannot be read: %s", strerror(errno));
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > CONTROL_BYTES_MAX) { /* grew after the fstat */
        snprintf(why, whylen, "it has more than a request's %d bytes", CONTROL_BYTES_MAX);
        return -1;
    }
    return (ssize_t)n;
}

/* The request, if there is one: taken (handed to the steps, acknowledged as pending, removed)
 * or refused. */
static void take_request(int dirfd)
{
    struct stat st;
    char why[200] = "";
    int fd =
        openat(dirfd, CONTROL_FILE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT || fstatat(dirfd, CONTROL_FILE_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0)
            return;
        if (err == ELOOP)
            snprintf(why, sizeof why, "it is a symbolic link (never followed)");
        else
            snprintf(why, sizeof why, "it cannot be opened: %s", strerror(err));
        refuse(dirfd, &st, why);
        return;
    }
    char buf[CONTROL_BYTES_MAX + 1];
    struct control_request req;
    ssize_t n = fstat(fd, &st) == 0 ? read_request(fd, &st, buf, sizeof buf, why, sizeof why) : -1;
    if (n < 0 && !why[0])
        snprintf(why, sizeof why, "it cannot be examined: %s", strerror(errno));
    close(fd);
    if (n >= 0 && control_request_parse(buf, (size_t)n, &req, why, sizeof why) != 0)
        n = -1;
    if (n < 0) {
        refuse(dirfd, &st, why);
        return;
    }
    struct steps_request r = {.command = req.command, .cause = REP_CAUSE_START, .steps = req.steps};
    memcpy(r.id, req.id, sizeof r.id);
    steps_request(&r);
    struct control_ack a = {.result = CONTROL_PENDING,
                            .command = req.command,
                            .cause = REP_CAUSE_START,
                            .step = atomic_load_explicit(&steps_now, memory_order_relaxed)};
    memcpy(a.id, req.id, sizeof a.id);
    write_ack(dirfd, &a);
    remove_request(dirfd, &st);
    dbg(1, "control: %s request taken during step %llu",
        req.command == CONTROL_START ? "start" : "stop", (unsigned long long)a.step);
}

void control_poll(uint64_t now_ns)
{
    if (now_ns < ctl.next_poll_ns)
        return;
    ctl.next_poll_ns = now_ns + CONTROL_POLL_NS;
    int dirfd = agent_process_dir_fd();
    if (dirfd < 0)
        return;
    struct steps_applied ap = steps_applied();
    if (ap.seq != ctl.acked_seq) {
        ctl.acked_seq = ap.seq;
        struct control_ack a = {.result = CONTROL_APPLIED,
                                .command = ap.req.command,
                                .cause = ap.req.cause,
                                .step = ap.step,
                                .first = ap.first,
                                .last = ap.last};
        memcpy(a.id, ap.req.id, sizeof a.id);
        write_ack(dirfd, &a);
    }
    if (!steps_request_pending()) /* a request waiting for its boundary is not replaced */
        take_request(dirfd);
}

void control_atfork_child(void)
{
    memset(&ctl, 0, sizeof ctl);
}
