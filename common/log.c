/* common/log.c: one-line messages on stderr (see log.h). Never allocates, never uses stdio. */
#include "common/log.h"

#include <errno.h>
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
    write_all(2, buf, n);
    errno = saved;
}

void agent_output_error(const char *path, int err)
{
    static _Atomic int said;
    if (atomic_exchange(&said, 1))
        return;
    agent_log("cannot write %s: %s; recording goes on and the report at exit still has every "
              "count (further output errors are not repeated)", path, strerror(err));
}
