/* cli/top.h: `syncspy top DIR`: a live terminal view of a running job from the files its
 * processes' flushers append (cli/top.c). CLI only: it reads DIR, never writes there. */
#ifndef SYNCSPY_CLI_TOP_H
#define SYNCSPY_CLI_TOP_H

#include <stdbool.h>
#include <sys/types.h>

/* argv[0] is "top", then the words after it. Returns the exit status (2 for usage or an unreadable DIR). */
int cli_top(int argc, char **argv);

/* `syncspy run --live`: the view of dir on this terminal while child runs, until q or the child
 * exits (true, its wait status in *status; false: the caller still has to wait for it). */
bool cli_top_beside(const char *dir, pid_t child, int *status);

#endif
