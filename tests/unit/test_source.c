/* Unit tests: one line of a source file for the report (output/source.c): the line without its
 * indentation, none past the end, none for a missing file, a fifo or a directory (never blocks
 * on a fifo), a long line cut without splitting a UTF-8 character, CRLF endings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "output/source.h"

static char dir[64];

static const char *file_with(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_lines(void **state)
{
    (void)state;
    const char *p =
        file_with("a.py", "import torch\n\n    def f(x):\n\t\tkeep = torch.nonzero(x)  \nlast");
    char buf[128];
    assert_true(source_line(p, 1, buf, sizeof buf));
    assert_string_equal(buf, "import torch");
    assert_false(source_line(p, 2, buf, sizeof buf)); /* blank */
    assert_true(source_line(p, 3, buf, sizeof buf));
    assert_string_equal(buf, "def f(x):");
    assert_true(source_line(p, 4, buf, sizeof buf));
    assert_string_equal(buf, "keep = torch.nonzero(x)");
    assert_true(source_line(p, 5, buf, sizeof buf)); /* no newline at the end */
    assert_string_equal(buf, "last");
    assert_false(source_line(p, 6, buf, sizeof buf));
    assert_false(source_line(p, 0, buf, sizeof buf));
    p = file_with("crlf.py", "a = 1\r\nb = 2\r\n");
    assert_true(source_line(p, 2, buf, sizeof buf));
    assert_string_equal(buf, "b = 2");
}

static void test_no_line(void **state)
{
    (void)state;
    char buf[64], path[128];
    assert_false(source_line("/nonexistent/file.py", 1, buf, sizeof buf));
    assert_false(source_line(NULL, 1, buf, sizeof buf));
    assert_false(source_line("", 1, buf, sizeof buf));
    assert_false(source_line(dir, 1, buf, sizeof buf)); /* a directory */
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_false(source_line(path, 1, buf, sizeof buf)); /* returns at once, no writer needed */
    assert_string_equal(buf, "");
}

static void test_long_line_cut_on_a_character(void **state)
{
    (void)state;
    /* 10 ASCII bytes then 'é' (2 bytes) repeated: a cut at 12 bytes may not split one */
    char text[256] = "0123456789";
    for (int i = 0; i < 20; i++)
        strcat(text, "\xc3\xa9");
    strcat(text, "\nnext\n");
    const char *p = file_with("u.py", text);
    char buf[14]; /* 13 bytes of text at most */
    assert_true(source_line(p, 1, buf, sizeof buf));
    size_t n = strlen(buf);
    assert_true(n <= 13);
    assert_int_equal(n % 2, 0); /* 10 ASCII + whole 2-byte characters */
    assert_memory_equal(buf, "0123456789", 10);
    assert_true(source_line(p, 2, buf, sizeof buf));
    assert_string_equal(buf, "next");
    /* a line longer than the read chunk, past the chunk boundary */
    char *big = malloc(20000);
    memset(big, 'x', 9000);
    strcpy(big + 9000, "\n  target = 1\n");
    p = file_with("big.py", big);
    free(big);
    char out[64];
    assert_true(source_line(p, 2, out, sizeof out));
    assert_string_equal(out, "target = 1");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/syncspy-source-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_no_line),
        cmocka_unit_test(test_long_line_cut_on_a_character),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
