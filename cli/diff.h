/* cli/diff.h: `syncspy diff BASE NEW`: each line's syncs and blocked time per training step in
 * two runs, matched by line and API (cli/lines.h), new and gone lines marked. CLI only. */
#ifndef SYNCSPY_CLI_DIFF_H
#define SYNCSPY_CLI_DIFF_H

#include <stdbool.h>

#include "cli/load.h"

struct diff_opts {
    bool json;
    const char *base_path, *new_path; /* as given, for the header */
};

/* Writes the comparison to fd (text, or JSON with opts->json). Returns 0, or 2 when it could not
 * be written (or memory ran out). */
int cli_diff(const struct cli_set *base, const struct cli_set *neu, const struct diff_opts *opts,
             int fd);

#endif
