/* common/log.c: one-line messages on stderr (see log.h), and the SIGPIPE and SIGXFSZ the agent's
 * own writes must not raise. Never allocates, never uses stdio. */
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

unsigned agent_debug_level;

int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* SIGPIPE and SIGXFSZ: the signals a write of the agent's own can raise */
static void own_write_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGPIPE);
    sigaddset(set, SIGXFSZ);
}

void quiet_pipe_begin(struct quiet_pipe *q)
{
    sigset_t set, pending;
    own_write_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, &q->old);
    bool got = sigpending(&pending) == 0;
    q->was_pending = got && sigismember(&pending, SIGPIPE);
    q->fsize_was_pending = !got || sigismember(&pending, SIGXFSZ);
}

/* Takes one pending sig off this thread (blocked here), without waiting. */
static void discard_pending(int sig)
{
    sigset_t one, pending;
    sigemptyset(&one);
    sigaddset(&one, sig);
    if (sigpending(&pending) != 0 || !sigismember(&pending, sig))
        return;
    const struct timespec now = {0, 0};
    while (sigtimedwait(&one, NULL, &now) < 0 && errno == EINTR)
        ;
}

void quiet_pipe_end(struct quiet_pipe *q, bool saw_epipe)
{
    int saved = errno;
    if (saw_epipe && !q->was_pending)
        discard_pending(SIGPIPE);
    /* the kernel sends SIGXFSZ to the thread whose write passed RLIMIT_FSIZE (it fails with
     * EFBIG): one that came while only the agent wrote on this thread is the agent's */
    if (!q->fsize_was_pending)
        discard_pending(SIGXFSZ);
    pthread_sigmask(SIG_SETMASK, &q->old, NULL);
    errno = saved;
}

void log_write(const char *buf, size_t n)
{
    struct quiet_pipe q;
    quiet_pipe_begin(&q);
    bool epipe = write_all(2, buf, n) != 0 && errno == EPIPE;
    quiet_pipe_end(&q, epipe);
}

void agent_log(const char *fmt, ...)
{
    char buf[512];
    int saved = errno;
    size_t n = (size_t)snprintf(buf, sizeof buf, "syncspy: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += (size_t)m < sizeof buf - n - 1 ? (size_t)m : sizeof buf - n - 2;
    if (n && buf[n - 1] != '\n')
        buf[n++] = '\n';
    log_write(buf, n);
    errno = saved;
}

void agent_output_error(const char *path, int err)
{
    static _Atomic int said;
    if (atomic_exchange(&said, 1))
        return;
    agent_log("cannot write %s: %s; recording goes on and the report at exit still has every "
              "count (further output errors are not repeated)",
              path, strerror(err));
}
