/* cli/input.h: how the CLI opens the files it reads: a regular file only, opened without waiting
 * (a FIFO planted as trace.bin or summary.json never hangs the command), or one sentence saying
 * why not. CLI only. */
#ifndef SYNCSPY_CLI_INPUT_H
#define SYNCSPY_CLI_INPUT_H

#include <stddef.h>
#include <sys/stat.h>

/* A read-only fd on path and its fstat in *sb; -1 with a sentence naming path in err. */
int cli_open_input(const char *path, struct stat *sb, char *err, size_t errlen);

#endif
