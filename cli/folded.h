/* cli/folded.h: `syncspy export --folded`: sync sites as folded stacks weighted by blocked ns
 * (flamegraph.pl, speedscope, inferno). CLI only. */
#ifndef SYNCSPY_CLI_FOLDED_H
#define SYNCSPY_CLI_FOLDED_H

#include "cli/load.h"

/* The whole document to fd: 0, or -1 with errno. Weighted as the report counts (start-up and
 * the step still open at exit left out), start-up kept when include_startup. */
int cli_export_folded(const struct cli_set *set, bool include_startup, int fd);

#endif
