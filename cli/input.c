/* cli/input.c: opening the CLI's input files (see input.h). */
#include "cli/input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cli_open_input(const char *path, struct stat *sb, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO must not hang the open; it is refused just below */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return -1;
    }
    return fd;
}
