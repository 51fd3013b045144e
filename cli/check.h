/* cli/check.h: `syncspy check`: a sync budget per training step for every process of a DIR, as
 * the report counts (output/report.h's lines). CLI only. */
#ifndef SYNCSPY_CLI_CHECK_H
#define SYNCSPY_CLI_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/lines.h"
#include "cli/load.h"

struct check_opts {
    bool has_max_syncs, has_max_share;
    double max_syncs;     /* syncs per training step */
    double max_share;     /* blocked time over the training steps' wall time, in % */
    bool include_startup; /* start-up (before the first step mark) held to it as one step */
    bool json;
    const struct cli_allow *allow; /* lines whose syncs do not count */
    size_t nallow;
    const char *budget_text;   /* the budget as given, for the closing line */
    const char *settings_from; /* the pyproject.toml some of it came from, or NULL */
};

/* Checks every process of set; writes the verdict to fd (text, or JSON with opts->json).
 * Returns 0 when every process stays within the budget, 1 when one does not, 2 when the
 * verdict could not be written or a process could not be counted (errno ENOMEM). A process
 * whose trace.bin lost data never gets here: `syncspy check` refuses it with 2 when it loads
 * (cli/main.c load_all: its figures are a lower bound). */
int cli_check(const struct cli_set *set, const struct check_opts *opts, int fd);

#endif
