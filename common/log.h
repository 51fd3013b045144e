/* common/log.h: the in-process library's only way to speak, for every layer inside the target:
 * one line at a time to stderr with write(2) from a fixed buffer (no stdio: the application's
 * FILE locks may be held). Debug lines are switched on by SYNCSPY_DEBUG=1|2 and cost one load
 * and a branch when off. */
#ifndef SYNCSPY_LOG_H
#define SYNCSPY_LOG_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

extern unsigned agent_debug_level;

void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define dbg(level, ...)                                        \
    do {                                                       \
        if (__builtin_expect(agent_debug_level >= (level), 0)) \
            agent_log(__VA_ARGS__);                            \
    } while (0)

/* An output file could not be created or written: said once per process (the first failure
 * names the file and the reason; counting goes on and the report at exit is still printed). */
void agent_output_error(const char *path, int err);

/* write() loop that retries EINTR and short writes; returns 0 or -1. */
int write_all(int fd, const void *buf, size_t len);

/* Around the agent's writes to the program's stderr or stdout (or a fifo): a write to a pipe
 * whose reader is gone raises SIGPIPE, whose default action would kill a program that itself
 * printed nothing. Between begin and end SIGPIPE is blocked on this thread; end discards the
 * SIGPIPE the agent's own write raised (saw_epipe) unless one was pending before, then puts the
 * mask back. SIGXFSZ the same way: a write of the agent's own past RLIMIT_FSIZE (trace.bin,
 * summary.json, a report file) fails with EFBIG and raises it, whose default action would kill
 * the program; one that became pending on this thread between begin and end is discarded. */
struct quiet_pipe {
    sigset_t old;
    bool was_pending;
    bool fsize_was_pending;
};
void quiet_pipe_begin(struct quiet_pipe *q);
void quiet_pipe_end(struct quiet_pipe *q, bool saw_epipe);
/* Lines already formatted, to stderr, quietly as above. */
void log_write(const char *buf, size_t n);

#endif
