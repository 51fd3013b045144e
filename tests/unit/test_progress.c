/* Unit tests: the CLI's progress line (cli/progress.c): due only on a terminal and only after
 * CLI_PROGRESS_AFTER_S; written in place ("\r" ... "\033[K") and wiped at the end, nothing when
 * none was shown; never on a pipe or file, whatever the time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/progress.h"

static void test_when(void **state)
{
    (void)state;
    assert_false(cli_progress_due(false, 0.0));
    assert_false(cli_progress_due(false, 3600.0)); /* a pipe or a file: never */
    assert_false(cli_progress_due(true, 0.0));
    assert_false(cli_progress_due(true, CLI_PROGRESS_AFTER_S - 0.01)); /* quick work: never */
    assert_true(cli_progress_due(true, CLI_PROGRESS_AFTER_S));
    assert_true(cli_progress_due(true, 60.0));
    /* this test's stderr is no terminal (a memfd below, or the runner's log) */
    int fd = memfd_create("stderr", 0), saved = dup(2);
    dup2(fd, 2);
    cli_progress_start();
    assert_false(cli_progress_wanted());
    dup2(saved, 2);
    close(saved);
    close(fd);
}

static char *stderr_of(void (*fn)(void))
{
    fflush(stderr);
    int fd = memfd_create("stderr", 0), saved = dup(2);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t n = lseek(fd, 0, SEEK_END);
    char *out = calloc(1, (size_t)n + 1);
    assert_int_equal(pread(fd, out, (size_t)n, 0), n);
    close(fd);
    return out;
}

static void two_lines_and_end(void)
{
    cli_progress_say("syncspy: reading %s: %d M records", "t.bin", 1);
    cli_progress_say("syncspy: reading %s: %d M records", "t.bin", 2);
    cli_progress_end();
    cli_progress_end(); /* nothing more */
}

static void end_only(void)
{
    cli_progress_end();
}

static void test_in_place(void **state)
{
    (void)state;
    char *out = stderr_of(two_lines_and_end);
    assert_string_equal(out, "\rsyncspy: reading t.bin: 1 M records\033[K"
                             "\rsyncspy: reading t.bin: 2 M records\033[K\r\033[K");
    free(out);
    out = stderr_of(end_only);
    assert_string_equal(out, "");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_when),
        cmocka_unit_test(test_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
