/* tests/fuzz/fuzz_trace_read.c: libFuzzer target for the trace.bin reader and everything the CLI
 * does with what it reads: the report, the folded and Chrome exports (written to /dev/null).
 * Built and run by `make fuzz` (tests/fuzz.mk); seeds in tests/fuzz/corpus/trace_read/. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/chrome.h"
#include "cli/folded.h"
#include "cli/load.h"
#include "cli/trace_read.h"
#include "output/report.h"

static int devnull = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (devnull < 0)
        devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char err[512];
    struct cli_proc item;
    memset(&item, 0, sizeof item);
    /* a small event cap: the cap's path gets exercised too */
    struct trace_read_opts opts = {.max_events = 64};
    if (trace_read_buf(data, size, "fuzz", &opts, &item.rep, &item.events, err, sizeof err) != 0) {
        if (!err[0] || !memchr(err, '\0', sizeof err))
            abort(); /* every failure says why */
        return 0;
    }
    item.traced = item.has_events = true;
    struct cli_set set = {.items = &item, .procs = &item.rep, .n = 1};
    struct report_opts ropts = {.top = 5};
    report_render_text(&item.rep, 1, &ropts, devnull);
    cli_export_folded(&set, devnull);
    cli_export_chrome(&set, devnull);
    trace_free(&item.rep, &item.events);
    /* the same input without the timeline must read the same way */
    struct rep_process again;
    if (trace_read_buf(data, size, "fuzz", NULL, &again, NULL, err, sizeof err) != 0)
        abort();
    trace_free(&again, NULL);
    return 0;
}
