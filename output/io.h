/* output/io.h: the one seam every file the agent writes goes through (summary.json, trace.bin,
 * a report file; the report on stdout/stderr too). Plain openat(2)/write(2) in the product; the
 * fault-injection build (build/libsyncspy-faults.so, -DSYNCSPY_FAULTS) points them at wrappers
 * that fail with ENOSPC, EIO or EACCES (output/faults.c), the way jemalloc's JET_MUTABLE hooks
 * do. No state beyond the two pointers. */
#ifndef SYNCSPY_IO_H
#define SYNCSPY_IO_H

#include <sys/types.h>

/* The one rule for the modes of what syncspy writes, the agent (process folders, summary.json,
 * trace.bin, a report file) and the CLI (html, export --chrome/--folded, syncspy run's folder and
 * run.log) alike: private to the user (they hold paths, symbol names and source lines), created
 * with these modes less the umask. */
#define OUTPUT_DIR_MODE 0700
#define OUTPUT_FILE_MODE 0600

extern ssize_t (*io_write)(int fd, const void *buf, size_t len);
/* openat(2): the process folder's files are opened relative to its descriptor (AT_FDCWD for a
 * path of the user's, the report file). */
extern int (*io_openat)(int dirfd, const char *path, int flags, mode_t mode);

#endif
