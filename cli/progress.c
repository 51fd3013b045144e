/* cli/progress.c: when and how to say how far a long read or export is (see progress.h). CLI
 * only. */
#include "cli/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static struct timespec progress_t0;
static bool progress_shown;

void cli_progress_start(void)
{
    clock_gettime(CLOCK_MONOTONIC, &progress_t0);
}

bool cli_progress_due(bool terminal, double elapsed_s)
{
    return terminal && elapsed_s >= CLI_PROGRESS_AFTER_S;
}

bool cli_progress_wanted(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double elapsed = (double)(now.tv_sec - progress_t0.tv_sec) +
                     (double)(now.tv_nsec - progress_t0.tv_nsec) / 1e9;
    return cli_progress_due(isatty(STDERR_FILENO) == 1, elapsed);
}

void cli_progress_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputc('\r', stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\033[K", stderr);
    fflush(stderr);
    va_end(ap);
    progress_shown = true;
}

void cli_progress_end(void)
{
    if (progress_shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        progress_shown = false;
    }
}
