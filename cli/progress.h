/* cli/progress.h: how far a long read or export is, on stderr: one line rewritten in place
 * ("\r...\033[K") every CLI_PROGRESS_EVERY records or events, only when stderr is a terminal and
 * the command has run for CLI_PROGRESS_AFTER_S (a quick command, a pipe, a log file: nothing), and
 * wiped when the work is done. CLI only. */
#ifndef SYNCSPY_CLI_PROGRESS_H
#define SYNCSPY_CLI_PROGRESS_H

#include <stdbool.h>

#define CLI_PROGRESS_EVERY 1000000
#define CLI_PROGRESS_AFTER_S 1.0

/* The command's start: the second counts from here. */
void cli_progress_start(void);
/* Whether a progress line is due now (cli_progress_due on stderr and the time since the start). */
bool cli_progress_wanted(void);
/* The rule itself: on a terminal, after CLI_PROGRESS_AFTER_S. */
bool cli_progress_due(bool terminal, double elapsed_s);
/* The progress line (printf format, no newline), in place of the one before. */
void cli_progress_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Wipes the progress line, if one is shown: call before other output and when done. */
void cli_progress_end(void);

#endif
