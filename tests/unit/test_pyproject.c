/* tests/unit/test_pyproject.c: [tool.syncspy] of a pyproject.toml (cli/pyproject.c): the values a
 * setting can have, a real project's other tables skipped whole (multi-line arrays and strings
 * that hold '[' or the table's own name), and hostile files: each refused with its line, never a
 * crash or a value guessed. */
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

#include "cli/pyproject.h"

static int parse(struct pyproject *p, const char *text)
{
    memset(p, 0, sizeof *p);
    return pyproject_parse(p, text, strlen(text), "pyproject.toml");
}

static void test_values(void **state)
{
    (void)state;
    struct pyproject p;
    assert_int_equal(parse(&p, "[tool.syncspy]\n"
                               "max_syncs_per_step = 2.5  # a comment\n"
                               "include_startup = true\n"
                               "schedule = \"wait=1,warmup=1\"\n"
                               "out = 'C:\\literal'\n"
                               "allow = [\"a.py:1\", 'b.py:2',\n   \"c.py:3\",  # more\n]\n"
                               "empty = []\n"),
                     0);
    assert_int_equal(p.n, 6);
    const struct pyproject_value *v = pyproject_get(&p, "max_syncs_per_step");
    assert_non_null(v);
    assert_int_equal(v->type, PV_NUMBER);
    assert_true(v->num == 2.5);
    assert_int_equal(v->line, 2);
    v = pyproject_get(&p, "include_startup");
    assert_int_equal(v->type, PV_BOOL);
    assert_true(v->b);
    assert_string_equal(pyproject_get(&p, "schedule")->s, "wait=1,warmup=1");
    assert_string_equal(pyproject_get(&p, "out")->s, "C:\\literal");
    v = pyproject_get(&p, "allow");
    assert_int_equal(v->type, PV_LIST);
    assert_int_equal(v->nlist, 3);
    assert_string_equal(v->list[2], "c.py:3");
    assert_int_equal(pyproject_get(&p, "empty")->nlist, 0);
    assert_null(pyproject_get(&p, "nothing"));
    pyproject_free(&p);
}

/* A project's other tables: skipped whole, whatever they hold. */
static void test_other_tables_skipped(void **state)
{
    (void)state;
    struct pyproject p;
    assert_int_equal(parse(&p, "[project]\n"
                               "name = \"x\"\n"
                               "dependencies = [\n"
                               "  \"torch>=2\",   # ]\n"
                               "[tool.syncspy]\n" /* inside an array: not a header */
                               "]\n"
                               "description = \"\"\"\n"
                               "[tool.syncspy]\n"
                               "top = 99\n"
                               "\"\"\"\n"
                               "[tool.black]\n"
                               "x = {a = 1, b = [1, [2, 3]], c = \"]\"}\n"
                               "dotted.key = 1978-05-27\n"
                               "[[tool.mypy.overrides]]\n"
                               "module = \"a\"\n"
                               "[ tool . syncspy ]\n"
                               "top = 5\n"
                               "[tool.after]\n"
                               "top = 7\n"),
                     0);
    assert_int_equal(p.n, 1);
    assert_int_equal(pyproject_get(&p, "top")->num, 5);
    assert_int_equal(pyproject_get(&p, "top")->line, 17);
    pyproject_free(&p);
    assert_int_equal(parse(&p, "[project]\nname = \"no table of ours\"\n"), 0);
    assert_int_equal(p.n, 0);
    pyproject_free(&p);
}

/* Each refused with its line and what is wrong. */
static void test_hostile(void **state)
{
    (void)state;
    static const struct {
        const char *text, *err;
    } bad[] = {
        {"[tool.syncspy]\ntop = \n", "pyproject.toml:2: top has no value"},
        {"[tool.syncspy]\ntop = nine\n", "pyproject.toml:2: top = nine: not a string"},
        {"[tool.syncspy]\nallow = [1, 2]\n", "pyproject.toml:2: allow wants an array of strings"},
        {"[tool.syncspy]\nallow = [\"a\"\n",
         "pyproject.toml:3: allow: expected ',' or ']' in the array"},
        {"[tool.syncspy]\nx = {a = 1}\n", "pyproject.toml:2: x: an inline table"},
        {"[tool.syncspy]\na.b = 1\n", "pyproject.toml:2: a.b: dotted keys"},
        {"[tool.syncspy]\ntop = 1\ntop = 2\n", "pyproject.toml:3: top is set twice"},
        {"[tool.syncspy]\ns = \"open\n",
         "pyproject.toml:2: a string that does not end on its line"},
        {"[tool.syncspy]\ns = \"\\u0041\"\n", "pyproject.toml:2: the escape '\\u'"},
        {"[tool.syncspy]\ntop = 1 2\n", "pyproject.toml:2: top = 1 2: not a string"},
        {"[tool.syncspy]\ntop = 1\n[tool.x]\n[tool.syncspy]\n", "[tool.syncspy] defined twice"},
        {"[tool.syncspy.sub]\n", "syncspy's settings are the keys of [tool.syncspy] itself"},
        {"[tool.syncspy\n", "a table header without its closing bracket"},
        {"[project]\nx = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
         "values nested deeper than"},
        {"[project]\nx = \"\"\"never closed\n", "a string that does not end"},
        {"= 1\n", "unexpected '=' where a key begins"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct pyproject p;
        if (parse(&p, bad[i].text) != -1 || !strstr(p.err, bad[i].err))
            fail_msg("case %zu: expected \"%s\", got \"%s\"", i, bad[i].err, p.err);
        pyproject_free(&p);
    }
    struct pyproject p;
    memset(&p, 0, sizeof p);
    assert_int_equal(pyproject_parse(&p, "[tool.syncspy]\ntop = 1\0x", 24, "f"), -1);
    assert_non_null(strstr(p.err, "NUL"));
    pyproject_free(&p);
}

/* The nearest file from a folder upwards; a folder with none above it: none. */
static void test_load(void **state)
{
    (void)state;
    char dir[] = "/tmp/syncspy-pyproject-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[sizeof dir + 8], path[sizeof dir + 32];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    snprintf(path, sizeof path, "%s/a", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/pyproject.toml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[tool.syncspy]\nmax_syncs_per_step = 3\n", f);
    fclose(f);
    struct pyproject p;
    assert_int_equal(pyproject_load(&p, sub), 1);
    assert_string_equal(p.path, path);
    assert_true(pyproject_get(&p, "max_syncs_per_step")->num == 3);
    pyproject_free(&p);
    /* a folder named pyproject.toml is not a settings file */
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(pyproject_load(&p, sub), -1);
    assert_non_null(strstr(p.err, "not a regular file"));
    pyproject_free(&p);
    rmdir(path);
    snprintf(path, sizeof path, "%s/a/b", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/a", dir);
    rmdir(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_other_tables_skipped),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
