/* cli/html.h: `syncspy html DIR` and `syncspy html BASE NEW`: one offline HTML page (the page's
 * script and style, cli/html/, compiled in; the run's data a JSON block) with the report's
 * header, a per-step chart, the sites table with stacks and source, a flame graph, a step's
 * timeline, and for two runs the diff. CLI only: it reads the model, never a network. */
#ifndef SYNCSPY_CLI_HTML_H
#define SYNCSPY_CLI_HTML_H

#include "cli/load.h"

struct html_opts {
    const char *path;     /* DIR as given (BASE in the diff form), for the title */
    const char *new_path; /* the diff form: NEW as given; NULL for one run */
    int top;              /* the report's --top (its text in the page) */
};

/* The page of one run (neu NULL) or the diff of base (set) and neu to fd: 0, or -1 with errno. */
int cli_html(const struct cli_set *set, const struct cli_set *neu, const struct html_opts *opts,
             int fd);

#endif
