/* output/summary_json.h: summary.json as DESIGN.md describes it ("Contracts"), written inside
 * the target process at exit. The format's version is shared with its reader, the CLI's
 * cli/summary_read.c: a reader refuses a newer one with a sentence. */
#ifndef SYNCSPY_SUMMARY_JSON_H
#define SYNCSPY_SUMMARY_JSON_H

#include <stddef.h>

#include "output/fd_writer.h"
#include "output/model.h"

#define SUMMARY_VERSION 1
#define SUMMARY_FILE_NAME "summary.json"

/* The document into fd. Returns 0 or -1 on a write error (errno set). */
int summary_write_json(const struct rep_process *proc, int fd);

/* The process's place in its job (agent/identity.h) as summary.json carries it, each null when
 * not known: `, "local_rank": 1, "world_size": 8, "node": 0, "host": "n0", "job_id": "77",
 * "launcher": "slurm"` (after a member; `syncspy check --json` writes the same). */
void summary_write_identity(struct fd_writer *w, const struct rep_process *p);

/* dir/summary.json through a temporary file created with O_EXCL|O_NOFOLLOW, then renamed into
 * place: a planted symlink is never followed and a reader never sees half a file. path gets the
 * final name (pathlen bytes). Returns 0, or -1 with errno. */
int summary_write_file(const struct rep_process *proc, const char *dir, char *path, size_t pathlen);

#endif
