/* cli/progress.c: when to say how far a long read or export is (see progress.h). CLI only. */
#include "cli/progress.h"

#include <time.h>
#include <unistd.h>

static struct timespec progress_t0;

void cli_progress_start(void)
{
    clock_gettime(CLOCK_MONOTONIC, &progress_t0);
}

bool cli_progress_wanted(void)
{
    if (isatty(STDERR_FILENO) == 1)
        return true;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - progress_t0.tv_sec) +
           (double)(now.tv_nsec - progress_t0.tv_nsec) / 1e9 >= 1.0;
}
