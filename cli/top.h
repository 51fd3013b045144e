/* cli/top.h: `syncspy top DIR`: a live terminal view of a running job from the files its
 * processes' flushers append (cli/top.c). CLI only: it reads DIR, never writes there. */
#ifndef SYNCSPY_CLI_TOP_H
#define SYNCSPY_CLI_TOP_H

/* argv: what follows "top". Returns the exit status (2 for usage or an unreadable DIR). */
int cli_top(int argc, char **argv);

#endif
