/* cli/summary_read.h: reads a summary.json (output/summary_json.h) back into the report model.
 * CLI only. */
#ifndef SYNCSPY_SUMMARY_READ_H
#define SYNCSPY_SUMMARY_READ_H

#include <stddef.h>

#include "output/model.h"

/* Reads a summary.json written by summary_write_json (or a compatible later version).
 * On success returns 0 and fills *out with storage owned by *out (free with
 * summary_free). On a bad, truncated or foreign file returns -1 and writes one sentence into
 * err. Never crashes and never allocates without bound on hostile input. */
int summary_read_json(const char *path, struct rep_process *out, char *err, size_t errlen);
void summary_free(struct rep_process *proc);

#endif
