/* Unit tests: the one validating parser of SYNCSPY_* variables. Each bad value gives exactly
 * one line naming the variable and the default, and the default is used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "output/config.h"

static const char *env_names[16], *env_values[16];
static int env_n;

static const char *fake_getenv(const char *name)
{
    for (int i = 0; i < env_n; i++)
        if (!strcmp(env_names[i], name))
            return env_values[i];
    return NULL;
}

static void set_env(const char *name, const char *value)
{
    env_n = 0;
    if (name) {
        env_names[0] = name;
        env_values[0] = value;
        env_n = 1;
    }
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_defaults(void **state)
{
    (void)state;
    struct config c;
    set_env(NULL, NULL);
    config_parse(&c, fake_getenv);
    assert_string_equal(c.out_dir, "./syncspy-out");
    assert_true(c.schedule.every_step);
    assert_int_equal(c.step_mode, STEP_AUTO);
    assert_int_equal(c.report, REPORT_STDERR);
    assert_int_equal(c.top, 10);
    assert_int_equal(c.cupti, CUPTI_AUTO);
    assert_int_equal(c.max_depth, 64);
    assert_int_equal(c.buffer_mb, 8);
    assert_int_equal(c.trace_mb, 1024);
    assert_true(c.stack_cache);
    assert_false(c.trace_launches);
    assert_false(c.gpu);
    assert_string_equal(c.warnings, "");
}

static void test_good_values(void **state)
{
    (void)state;
    struct config c;
    env_n = 0;
    const char *pairs[][2] = {
        {"SYNCSPY_OUT", "/tmp/x"},    {"SYNCSPY_SCHEDULE", "wait=1,active=2"},
        {"SYNCSPY_STEP", "manual"},   {"SYNCSPY_REPORT", "/tmp/r.txt"},
        {"SYNCSPY_TOP", "3"},         {"SYNCSPY_CUPTI", "/opt/cupti/libcupti.so"},
        {"SYNCSPY_MAX_DEPTH", "128"}, {"SYNCSPY_BUFFER_MB", "64"},
        {"SYNCSPY_TRACE_MB", "3"},    {"SYNCSPY_LAUNCHES", "trace"},
        {"SYNCSPY_GPU", "1"}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        env_names[env_n] = pairs[i][0];
        env_values[env_n++] = pairs[i][1];
    }
    config_parse(&c, fake_getenv);
    assert_string_equal(c.warnings, "");
    assert_string_equal(c.out_dir, "/tmp/x");
    assert_false(c.schedule.every_step);
    assert_int_equal(c.schedule.active, 2);
    assert_int_equal(c.step_mode, STEP_MANUAL);
    assert_int_equal(c.report, REPORT_FILE);
    assert_string_equal(c.report_path, "/tmp/r.txt");
    assert_int_equal(c.top, 3);
    assert_int_equal(c.cupti, CUPTI_PATH);
    assert_int_equal(c.max_depth, 128);
    assert_int_equal(c.buffer_mb, 64);
    assert_int_equal(c.trace_mb, 3);
    assert_true(c.trace_launches);
    assert_true(c.gpu);
    set_env("SYNCSPY_GPU", "0");
    config_parse(&c, fake_getenv);
    assert_false(c.gpu);
    assert_string_equal(c.warnings, "");
    /* SYNCSPY_TRACE_MB: 0 is no bound; 1 TiB the most; one more is refused with its range */
    set_env("SYNCSPY_TRACE_MB", "0");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.trace_mb, 0);
    assert_string_equal(c.warnings, "");
    set_env("SYNCSPY_TRACE_MB", "1048576");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.trace_mb, 1048576);
    set_env("SYNCSPY_TRACE_MB", "1048577");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.trace_mb, 1024);
    assert_non_null(strstr(
        c.warnings, "SYNCSPY_TRACE_MB='1048577' is not an integer in 0..1048576; using 1024"));
    set_env("SYNCSPY_REPORT", "stdout");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.report, REPORT_STDOUT);
    set_env("SYNCSPY_REPORT", "off");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.report, REPORT_OFF);
    set_env("SYNCSPY_CUPTI", "off");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.cupti, CUPTI_OFF);
    set_env("SYNCSPY_CUPTI", "eager");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.cupti, CUPTI_EAGER);
    set_env("SYNCSPY_STACK_CACHE", "off");
    config_parse(&c, fake_getenv);
    assert_false(c.stack_cache);
    set_env("SYNCSPY_STACK_CACHE", "on");
    config_parse(&c, fake_getenv);
    assert_true(c.stack_cache);
    assert_string_equal(c.warnings, "");
}

/* Every variable with garbage, empty, huge and negative values. */
static void test_bad_values(void **state)
{
    (void)state;
    static char huge[8192];
    memset(huge, '9', sizeof huge - 1);
    const char *const *vars = config_variables; /* every variable, `syncspy run`'s options */
    const char *values[] = {
        "",    "garbage",  "-1",   "0x10",  huge,           "  3",
        "1e3", "\xff\xfe", "5\nx", "2\r\n", "\x1b[31mred\t"}; /* control characters: still one line */
    for (size_t v = 0; vars[v]; v++) {
        for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
            struct config c, d;
            set_env(vars[v], values[k]);
            config_parse(&c, fake_getenv);
            set_env(NULL, NULL);
            config_parse(&d, fake_getenv);
            /* SYNCSPY_OUT and SYNCSPY_REPORT accept any non-empty path that fits. */
            bool path_ok =
                (!strcmp(vars[v], "SYNCSPY_OUT") || !strcmp(vars[v], "SYNCSPY_REPORT")) &&
                values[k][0] && strlen(values[k]) < 4000;
            if (path_ok) {
                assert_string_equal(c.warnings, "");
                continue;
            }
            if (count_lines(c.warnings) != 1)
                fail_msg("%s='%.20s': %d warning lines: %s", vars[v], values[k],
                         count_lines(c.warnings), c.warnings);
            assert_non_null(strstr(c.warnings, vars[v]));
            assert_non_null(strstr(c.warnings, "using"));
            /* the variable and the reason alone, as `syncspy run` says them of an option */
            assert_string_equal(c.first_bad, vars[v]);
            assert_true(c.first_why[0] != '\0');
            assert_non_null(strstr(c.warnings, c.first_why));
            assert_true(strlen(c.warnings) < 400); /* a huge value is cut in the message */
            /* the default is used instead */
            assert_string_equal(c.out_dir, d.out_dir);
            assert_int_equal(c.top, d.top);
            assert_int_equal(c.step_mode, d.step_mode);
            assert_int_equal(c.report, d.report);
            assert_int_equal(c.cupti, d.cupti);
            assert_int_equal(c.max_depth, d.max_depth);
            assert_int_equal(c.buffer_mb, d.buffer_mb);
            assert_int_equal(c.trace_mb, d.trace_mb);
            assert_int_equal(c.trace_launches, d.trace_launches);
            assert_int_equal(c.gpu, d.gpu);
            assert_int_equal(c.schedule.every_step, d.schedule.every_step);
            assert_int_equal(c.backward, d.backward);
            assert_int_equal(c.color, d.color);
        }
    }
}

/* SYNCSPY_COLOR, and NO_COLOR (no-color.org: any non-empty value) under it. */
static void test_color(void **state)
{
    (void)state;
    struct config c;
    set_env(NULL, NULL);
    config_parse(&c, fake_getenv);
    assert_int_equal(c.color, REPORT_COLOR_AUTO);
    const char *names[] = {"SYNCSPY_COLOR", "NO_COLOR"};
    struct {
        const char *color, *no_color;
        enum report_color want;
    } cases[] = {{"always", NULL, REPORT_COLOR_ALWAYS}, {"never", NULL, REPORT_COLOR_NEVER},
                 {"auto", NULL, REPORT_COLOR_AUTO},     {NULL, "1", REPORT_COLOR_NEVER},
                 {NULL, "", REPORT_COLOR_AUTO},         {"auto", "yes", REPORT_COLOR_NEVER},
                 {"always", "1", REPORT_COLOR_ALWAYS},  {"never", "", REPORT_COLOR_NEVER}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        env_n = 0;
        const char *vals[] = {cases[i].color, cases[i].no_color};
        for (int k = 0; k < 2; k++)
            if (vals[k]) {
                env_names[env_n] = names[k];
                env_values[env_n++] = vals[k];
            }
        config_parse(&c, fake_getenv);
        assert_int_equal(c.color, cases[i].want);
        assert_string_equal(c.warnings, "");
    }
    set_env("SYNCSPY_COLOR", "yes");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.color, REPORT_COLOR_AUTO);
    assert_non_null(
        strstr(c.warnings, "SYNCSPY_COLOR='yes' is not auto, always or never; using auto"));
}

static void test_top_range(void **state)
{
    (void)state;
    struct config c;
    set_env("SYNCSPY_TOP", "0");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.top, 10);
    assert_non_null(strstr(c.warnings, "SYNCSPY_TOP='0' is not an integer in 1..1000; using 10"));
    set_env("SYNCSPY_TOP", "1000");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.top, 1000);
    set_env("SYNCSPY_TOP", "1001");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.top, 10);
}

static void test_control_characters_shown_escaped(void **state)
{
    (void)state;
    struct config c;
    set_env("SYNCSPY_TOP", "5\nx\x1b");
    config_parse(&c, fake_getenv);
    assert_string_equal(
        c.warnings, "syncspy: SYNCSPY_TOP='5\\nx\\x1b' is not an integer in 1..1000; using 10\n");
}

static void test_relative_cupti_refused(void **state)
{
    (void)state;
    struct config c;
    set_env("SYNCSPY_CUPTI", "libcupti.so");
    config_parse(&c, fake_getenv);
    assert_int_equal(c.cupti, CUPTI_AUTO);
    assert_non_null(strstr(c.warnings, "absolute path"));
}

/* Each of bad refused: one warning line naming var and ending with says; *flag keeps dflt. */
static void refused_values(const char *var, const char *const *bad, size_t n, const char *says,
                           const bool *flag, struct config *c, bool dflt)
{
    for (size_t i = 0; i < n; i++) {
        set_env(var, bad[i]);
        config_parse(c, fake_getenv);
        assert_true(*flag == dflt);
        assert_int_equal(count_lines(c->warnings), 1);
        assert_non_null(strstr(c->warnings, var));
        assert_non_null(strstr(c->warnings, says));
    }
}

static void test_gpu_values(void **state)
{
    (void)state;
    struct config c = {0};
    const char *bad[] = {"2", "yes", "on", "true", "01x", "-1"};
    refused_values("SYNCSPY_GPU", bad, sizeof bad / sizeof *bad, "0..1; using 0", &c.gpu, &c,
                   false);
}

static void test_stack_cache_values(void **state)
{
    (void)state;
    struct config c = {0};
    const char *bad[] = {"1", "0", "ON", "yes", "off ", ""};
    refused_values("SYNCSPY_STACK_CACHE", bad, sizeof bad / sizeof *bad,
                   "is not on or off; using on", &c.stack_cache, &c, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_good_values),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_top_range),
        cmocka_unit_test(test_color),
        cmocka_unit_test(test_control_characters_shown_escaped),
        cmocka_unit_test(test_relative_cupti_refused),
        cmocka_unit_test(test_gpu_values),
        cmocka_unit_test(test_stack_cache_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
