/* tests/fuzz/fuzz_trace_read.c: libFuzzer target for the trace.bin reader and everything the CLI
 * does with what it reads: the report, the folded and Chrome exports, `check` (text and JSON,
 * with an allow-list and start-up), `diff` of the trace with itself, and `html` (its page and
 * its diff page) (written to /dev/null).
 * Built and run by `make fuzz` (tests/fuzz.mk); seeds in tests/fuzz/corpus/trace_read/. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/check.h"
#include "cli/chrome.h"
#include "cli/diff.h"
#include "cli/folded.h"
#include "cli/html.h"
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
    cli_export_folded(&set, false, devnull);
    cli_export_folded(&set, true, devnull);
    cli_export_chrome(&set, devnull);
    struct cli_allow allow[2];
    cli_allow_parse("train.py:42", &allow[0]);
    cli_allow_parse("/x/loss.py:7", &allow[1]);
    struct check_opts copts = {.has_max_syncs = true, .max_syncs = 1, .has_max_share = true, .max_share = 5,
                               .include_startup = true, .allow = allow, .nallow = 2, .budget_text = "fuzz"};
    cli_check(&set, &copts, devnull);
    copts.json = true;
    cli_check(&set, &copts, devnull);
    struct diff_opts dopts = {.base_path = "a", .new_path = "b"};
    cli_diff(&set, &set, &dopts, devnull);
    dopts.json = true;
    cli_diff(&set, &set, &dopts, devnull);
    struct html_opts hopts = {.path = "a", .top = 5};
    cli_html(&set, NULL, &hopts, devnull);
    hopts.new_path = "b";
    cli_html(&set, &set, &hopts, devnull);
    trace_free(&item.rep, &item.events);
    /* the same input without the timeline must read the same way */
    struct rep_process again;
    if (trace_read_buf(data, size, "fuzz", NULL, &again, NULL, err, sizeof err) != 0)
        abort();
    trace_free(&again, NULL);
    return 0;
}
