/* output/io.c: the I/O seam (see io.h). */
#include "output/io.h"

#include <fcntl.h>
#include <unistd.h>

static int plain_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return openat(dirfd, path, flags, mode);
}

ssize_t (*io_write)(int fd, const void *buf, size_t len) = write;
int (*io_openat)(int dirfd, const char *path, int flags, mode_t mode) = plain_openat;
