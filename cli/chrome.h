/* cli/chrome.h: `syncspy export --chrome`: the timeline as Chrome trace events (Perfetto,
 * chrome://tracing): every sync, launch and step of a trace.bin, or the active steps of a
 * summary.json. CLI only. */
#ifndef SYNCSPY_CLI_CHROME_H
#define SYNCSPY_CLI_CHROME_H

#include "cli/load.h"

/* The whole document to fd: 0, or -1 with errno. */
int cli_export_chrome(const struct cli_set *set, int fd);

#endif
