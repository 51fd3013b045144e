/* output/faults.c: fault injection for the reliability tests, compiled in only by the
 * fault-injection build (build/libsyncspy-faults.so, -DSYNCSPY_FAULTS); the product has none of
 * it. SYNCSPY_FAULTS=write=ENOSPC|EIO[,after=N] makes writes to files (not to the terminal's
 * fds 0-2) fail after N successful ones (file=NAME: only writes to a file of that name, e.g.
 * trace.bin); delay=MS[,after=N] makes them take MS ms longer after N
 * (a slow disk: an exit that outlasts its bound); open=EACCES makes every file creation fail; steps=N
 * queues at most N ended steps for the trace (read by agent/step/steps.c). */
#ifdef SYNCSPY_FAULTS
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/io.h"

static int write_errno, open_errno, delay_ms;
static _Atomic long writes_left;
static char only_file[64]; /* file=NAME: the writes that fail are those to a file of that name */

/* Whether fd is a file named only_file (any, when none is set). */
static bool file_chosen(int fd)
{
    if (!only_file[0])
        return true;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return false;
    path[n] = 0;
    const char *base = strrchr(path, '/');
    return strcmp(base ? base + 1 : path, only_file) == 0;
}

static ssize_t faulty_write(int fd, const void *buf, size_t len)
{
    if (fd > 2 && delay_ms && atomic_fetch_sub(&writes_left, 1) <= 0) {
        struct timespec t = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000};
        nanosleep(&t, NULL);
    } else if (fd > 2 && write_errno && file_chosen(fd) && atomic_fetch_sub(&writes_left, 1) <= 0) {
        errno = write_errno;
        return -1;
    }
    return write(fd, buf, len);
}

static int faulty_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    (void)dirfd;
    (void)path;
    (void)flags;
    (void)mode;
    errno = open_errno;
    return -1;
}

static int errno_named(const char *s)
{
    return !strncmp(s, "ENOSPC", 6)   ? ENOSPC
           : !strncmp(s, "EIO", 3)    ? EIO
           : !strncmp(s, "EACCES", 6) ? EACCES
           : !strncmp(s, "EFBIG", 5)  ? EFBIG
                                      : 0;
}

__attribute__((constructor(101))) static void faults_init(void)
{
    const char *spec = getenv("SYNCSPY_FAULTS");
    if (!spec)
        return;
    const char *w = strstr(spec, "write="), *o = strstr(spec, "open="), *a = strstr(spec, "after=");
    const char *d = strstr(spec, "delay="), *f = strstr(spec, "file=");
    if (f) {
        snprintf(only_file, sizeof only_file, "%s", f + 5);
        only_file[strcspn(only_file, ",")] = 0;
    }
    if (d && (delay_ms = atoi(d + 6)) > 0) {
        atomic_store(&writes_left, a ? atol(a + 6) : 0);
        io_write = faulty_write;
    } else if (w && (write_errno = errno_named(w + 6))) {
        atomic_store(&writes_left, a ? atol(a + 6) : 0);
        io_write = faulty_write;
    }
    if (o && (open_errno = errno_named(o + 5)))
        io_openat = faulty_openat;
}
#else
typedef int syncspy_faults_not_built; /* ISO C: a translation unit is never empty */
#endif
