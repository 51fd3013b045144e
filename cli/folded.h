/* cli/folded.h: `syncspy export --folded`: sync sites as folded stacks weighted by blocked ns
 * (flamegraph.pl, speedscope, inferno). CLI only. */
#ifndef SYNCSPY_CLI_FOLDED_H
#define SYNCSPY_CLI_FOLDED_H

#include "cli/load.h"

/* The whole document to fd: 0, or -1 with errno. */
int cli_export_folded(const struct cli_set *set, int fd);

#endif
