/* output/summary_json.h: summary.json as DESIGN.md describes it ("Contracts"), written inside
 * the target process at exit. The format's version is shared with its reader, the CLI's
 * cli/summary_read.c: a reader refuses a newer one with a sentence. */
#ifndef SYNCSPY_SUMMARY_JSON_H
#define SYNCSPY_SUMMARY_JSON_H

#include <stddef.h>

#include "output/model.h"

#define SUMMARY_VERSION 1
#define SUMMARY_FILE_NAME "summary.json"

/* The document into fd. Returns 0 or -1 on a write error (errno set). */
int summary_write_json(const struct rep_process *proc, int fd);

/* summary.json in the folder open as dirfd (named dir) through a temporary file created with
 * O_EXCL|O_NOFOLLOW, then renamed into place, both relative to dirfd: a planted symlink is
 * never followed and a reader never sees half a file. path gets dir's name of it (pathlen
 * bytes). Returns 0, or -1 with errno. */
int summary_write_file(const struct rep_process *proc, int dirfd, const char *dir, char *path,
                       size_t pathlen);

#endif
