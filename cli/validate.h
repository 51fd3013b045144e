/* cli/validate.h: whether a process as read (from summary.json or trace.bin) contradicts itself:
 * the one check every command's input passes (cli/load.c), so `report`, `check`, `diff` and
 * `export` refuse the same files. CLI only: a pure function of the report model. */
#ifndef SYNCSPY_CLI_VALIDATE_H
#define SYNCSPY_CLI_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#include "output/model.h"

/* True when p contradicts itself (its totals against its step list, a count's parts against
 * the count, step numbers), with the first contradiction found written into why as a clause
 * ("active_steps is 9223372036854775808 but ..."). */
bool cli_contradiction(const struct rep_process *p, char *why, size_t n);

#endif
