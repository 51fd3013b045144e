/* cli/run.h: `syncspy run [OPTIONS] [--] CMD [ARGS...]`: runs CMD with the agent preloaded, its
 * options turned into the SYNCSPY_* variables (checked by the agent's own parser, output/config.c),
 * and ends as CMD ended (its exit status, or the same signal), after saying where the files are.
 * CLI only: it starts the program, it never runs inside it. */
#ifndef SYNCSPY_CLI_RUN_H
#define SYNCSPY_CLI_RUN_H

#include <stdbool.h>

#include "cli/commands.h" /* RUN_FAILED, RUN_CANNOT_EXECUTE, RUN_NOT_FOUND */

/* argv[0] is "run", argv[1..argc) the words after it. Returns the status to exit with; when CMD died of
 * a signal, raises the same signal first (so it returns only if that did not end the process). */
int cli_run(int argc, char **argv);

/* Whether key (of pyproject.toml's [tool.syncspy]: "trace_mb" or "trace-mb") names one of the
 * agent's variables, which `syncspy run` takes from the file where neither an option nor the
 * environment sets it. */
bool cli_run_knows_setting(const char *key);

#endif
