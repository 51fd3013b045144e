/* tests/unit/private_out.h: for the unit tests that run the agent's core in their own process:
 * the agent reads its configuration in its constructor, so main() runs the test again with a
 * private output folder, no report and the given extra variable (NULL: none), so the test
 * writes nothing into the current directory. */
#ifndef SYNCSPY_TEST_PRIVATE_OUT_H
#define SYNCSPY_TEST_PRIVATE_OUT_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Returns only in the re-run (0), or when the re-run could not be started (-1). */
static inline int private_out_reexec(char **argv, const char *prefix, const char *var, const char *value)
{
    if (getenv("SYNCSPY_OUT"))
        return 0;
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(dir))
        return -1;
    setenv("SYNCSPY_OUT", dir, 1);
    setenv("SYNCSPY_REPORT", "off", 1);
    if (var)
        setenv(var, value, 1);
    execv("/proc/self/exe", argv);
    return -1;
}

#endif
