/* cli/control.h: `syncspy start` and `syncspy stop` (cli/control.c): control the recording of a
 * running process through its folder (agent/background/control.h). CLI only. */
#ifndef SYNCSPY_CLI_CONTROL_H
#define SYNCSPY_CLI_CONTROL_H

/* argv[0] is the command's name. Exit status: 0 when every process answered, 1 when one did not
 * (gone, ended, no agent, no answer), 2 for a usage error or bad input. */
int cli_start(int argc, char **argv);
int cli_stop(int argc, char **argv);

#endif
