/* output/identity_json.h: a process's place in its job as JSON members (see identity_json.c). */
#ifndef SYNCSPY_IDENTITY_JSON_H
#define SYNCSPY_IDENTITY_JSON_H

#include "output/fd_writer.h"
#include "output/model.h"

/* `, "local_rank": 1, "world_size": 8, "node": 0, "host": "n0", "job_id": "77", "launcher":
 * "slurm"` after a member, each null when not known: as summary.json carries them. */
void identity_write_json(struct fd_writer *w, const struct rep_process *p);

#endif
