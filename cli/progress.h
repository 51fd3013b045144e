/* cli/progress.h: progress lines on stderr for long inputs: one per CLI_PROGRESS_EVERY records
 * or events, once stderr is a terminal or the command has run for a second (so tests stay
 * quiet). CLI only. */
#ifndef SYNCSPY_CLI_PROGRESS_H
#define SYNCSPY_CLI_PROGRESS_H

#include <stdbool.h>

#define CLI_PROGRESS_EVERY 1000000

/* The command's start: the second counts from here. */
void cli_progress_start(void);
bool cli_progress_wanted(void);

#endif
