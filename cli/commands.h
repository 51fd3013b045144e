/* cli/commands.h: the one table of the `syncspy` command's subcommands: each one's usage lines,
 * description and options. Its option parsing (getopt_long over the table), its --help, its
 * usage errors, the shell completion scripts and the manual page are all made from it, so they
 * cannot disagree. CLI only: it prints to stdout and stderr, never runs inside a target. */
#ifndef SYNCSPY_CLI_COMMANDS_H
#define SYNCSPY_CLI_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

/* What completion offers for an option's value or an operand. */
enum cli_complete {
    CLI_COMPLETE_NONE,    /* a number, a spec: nothing to offer */
    CLI_COMPLETE_FILE,    /* a path */
    CLI_COMPLETE_DIR,     /* a folder */
    CLI_COMPLETE_COMMAND, /* run's CMD: a command, then its own arguments */
    CLI_COMPLETE_WORDS,   /* the words of .values (an option's) or .operand_words (a command's) */
    CLI_COMPLETE_SUBCOMMAND, /* help's CMD: the name of a command of the table */
};

/* The keys of the long options that have no short letter (short ones are their letter). */
enum cli_key {
    CLI_KEY_TOP = 256,
    CLI_KEY_COLOR,
    CLI_KEY_FOLDED,
    CLI_KEY_CHROME,
    CLI_KEY_INCLUDE_STARTUP,
    CLI_KEY_JSON,
    CLI_KEY_MAX_SYNCS,
    CLI_KEY_MAX_SHARE,
    CLI_KEY_ALLOW,
    CLI_KEY_INTERVAL,
    CLI_KEY_ONCE,
    CLI_KEY_VARIABLE, /* run: an option of the agent's variable of its name (--max-depth) */
    CLI_KEY_SIM,
    CLI_KEY_LIVE,
    CLI_KEY_MAN,
    CLI_KEY_STEPS,
    CLI_KEY_WAIT,
};

struct cli_option {
    const char *name;  /* the long name, without "--" */
    int key;           /* what cli_next_option returns: the short letter, or a cli_key */
    const char *arg;   /* its value's name in the help (N, DIR), or NULL for a flag */
    bool arg_optional; /* the value only as --name=VALUE */
    enum cli_complete complete;
    const char *values; /* CLI_COMPLETE_WORDS: the words, space-separated */
    const char *help;   /* one paragraph */
};

struct cli_command {
    const char *name;
    const char *synopsis; /* the usage lines, each without "syncspy ", '\n'-separated */
    const char *summary;  /* one line for the list of commands */
    /* paragraphs, "\n\n" between them; a paragraph whose lines all start with 4 spaces is
     * shown as it is (an example), any other is wrapped */
    const char *text;
    const char *exit_status;          /* its exit statuses, one paragraph */
    const struct cli_option *options; /* ended by a row with no name; -h/--help are added */
    enum cli_complete operands;
    const char *operand_words; /* CLI_COMPLETE_WORDS */
    bool options_first;        /* run: the options end at the first operand (CMD) */
    int usage_status;          /* the exit status of a usage error */
};

/* Every subcommand, ended by a row with no name. */
extern const struct cli_command cli_commands[];

/* Exit statuses of `syncspy run` itself, as env(1) and timeout(1) have them: its own failure
 * (a bad option, no agent next to the program) before CMD starts, CMD found but not runnable,
 * CMD not found. Any other status is CMD's. */
#define RUN_FAILED 125
#define RUN_CANNOT_EXECUTE 126
#define RUN_NOT_FOUND 127

/* The command of that name, or NULL. */
const struct cli_command *cli_command(const char *name);

/* One command line's options, read one at a time (getopt_long over the table). argv[0] is the
 * command's name; the options may come before, between or after the operands (but for an
 * options_first command: before CMD), "--" ends them. */
struct cli_args {
    const struct cli_command *cmd;
    int argc;
    char **argv;
    bool started;
    const char *value;            /* the option's value (NULL: none given) */
    const char *word;             /* the option as written (--top, --color=never) */
    const struct cli_option *opt; /* its row */
    int operands;                 /* after the last option: argv[operands..argc) */
    int status;                   /* when cli_next_option returns 0: the status to exit with */
};

/* The key of the next option; -1 when there are no more (the operands: argv[operands..argc));
 * 0 when the command is to exit with a->status: its help was printed on stdout (0), or a usage
 * error (an unknown option, a missing value) and the usage on stderr (cmd->usage_status). */
int cli_next_option(struct cli_args *a);

/* "syncspy CMD: MESSAGE", the command's usage lines and a pointer to its --help, on stderr;
 * returns cmd->usage_status. */
int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The help of one command (`syncspy CMD --help`) or, cmd NULL, of the whole program. */
void cli_print_help(const struct cli_command *cmd, FILE *out);
/* The usage lines alone: of one command, or (NULL) of all. */
void cli_print_usage(const struct cli_command *cmd, FILE *out);
/* The manual page syncspy(1) in roff (man -l), from the same table. */
void cli_print_man(FILE *out);
/* A completion script for shell ("bash" or "zsh"); false for another shell. */
bool cli_print_completion(const char *shell, FILE *out);

#endif
