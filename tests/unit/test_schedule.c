/* Unit tests: torch.profiler.schedule semantics and the SYNCSPY_SCHEDULE parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "output/schedule.h"

#define N NONE
#define W WARMUP
#define R RECORD
#define S RECORD_AND_SAVE
enum {
    NONE = ACTION_NONE,
    WARMUP = ACTION_WARMUP,
    RECORD = ACTION_RECORD,
    RECORD_AND_SAVE = ACTION_RECORD_AND_SAVE
};

static void expect_actions(const char *text, const int *want, size_t n)
{
    struct schedule s;
    char err[200];
    assert_int_equal(schedule_parse(text, &s, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++) {
        if ((int)schedule_action(&s, i) != want[i])
            fail_msg("%s: step %zu gives %d, want %d", text, i, schedule_action(&s, i), want[i]);
        assert_int_equal(schedule_records(&s, i), want[i] == R || want[i] == S);
    }
}

/* The documented example of torch.profiler.schedule: wait=1, warmup=1, active=3, repeat=2. */
static void test_torch_example(void **state)
{
    (void)state;
    const int want[] = {N, W, R, R, S, N, W, R, R, S, N, N, N, N};
    expect_actions("wait=1,warmup=1,active=3,repeat=2", want, sizeof want / sizeof *want);
}

static void test_skip_first(void **state)
{
    (void)state;
    const int want[] = {N, N, N, W, R, S, W, R, S, W};
    expect_actions("skip_first=3,warmup=1,active=2", want, sizeof want / sizeof *want);
}

/* skip_first_wait: after skip_first, the first wait phase is skipped (step shifted by wait). */
static void test_skip_first_wait(void **state)
{
    (void)state;
    const int want[] = {N, N, W, S, N, N, W, S, N, N, N};
    expect_actions("skip_first=2,skip_first_wait=1,wait=2,warmup=1,active=1,repeat=2", want,
                   sizeof want / sizeof *want);
}

static void test_repeat_zero_cycles_forever(void **state)
{
    (void)state;
    struct schedule s;
    char err[100];
    assert_int_equal(schedule_parse("wait=1,active=1", &s, err, sizeof err), 0);
    assert_true(schedule_records(&s, 1000001));
    assert_false(schedule_records(&s, 1000000));
}

static void test_every_step(void **state)
{
    (void)state;
    struct schedule s = {.every_step = true};
    for (uint64_t i = 0; i < 100; i++)
        assert_true(schedule_records(&s, i));
    char buf[64];
    schedule_describe(&s, buf, sizeof buf);
    assert_string_equal(buf, "every step");
}

static void test_bad_schedules(void **state)
{
    (void)state;
    const char *bad[] = {"",
                         "active=0",
                         "wait=1",
                         "active=-1",
                         "active=3,",
                         "active=3,,wait=1",
                         "active",
                         "active=3x",
                         "active= 3",
                         "bogus=1,active=1",
                         "active=1,active=2",
                         "active=99999999999999999999999",
                         "active=1000000001",
                         "=3",
                         "active=1;wait=2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct schedule s = {0};
        char err[200] = "";
        if (schedule_parse(bad[i], &s, err, sizeof err) != -1)
            fail_msg("'%s' was accepted", bad[i]);
        assert_true(strlen(err) > 0);
    }
}

static void test_describe_round_trip(void **state)
{
    (void)state;
    struct schedule s, t;
    char err[100], buf[160];
    assert_int_equal(
        schedule_parse("repeat=2,active=3,warmup=1,wait=1,skip_first=10", &s, err, sizeof err), 0);
    schedule_describe(&s, buf, sizeof buf);
    assert_string_equal(buf, "skip_first=10,wait=1,warmup=1,active=3,repeat=2");
    assert_int_equal(schedule_parse(buf, &t, err, sizeof err), 0);
    assert_memory_equal(&s, &t, sizeof s);
}

/* off: no step is recorded (until `syncspy start` or syncspy.start(): agent/background/control.h) */
static void test_off(void **state)
{
    (void)state;
    struct schedule s;
    char err[100], buf[64];
    assert_int_equal(schedule_parse("off", &s, err, sizeof err), 0);
    for (uint64_t i = 0; i < 1000; i++)
        assert_false(schedule_records(&s, i));
    schedule_describe(&s, buf, sizeof buf);
    assert_string_equal(buf, "off");
    assert_int_equal(schedule_parse("off,active=1", &s, err, sizeof err), -1);
    assert_int_equal(schedule_parse("Off", &s, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torch_example),
        cmocka_unit_test(test_off),
        cmocka_unit_test(test_skip_first),
        cmocka_unit_test(test_skip_first_wait),
        cmocka_unit_test(test_repeat_zero_cycles_forever),
        cmocka_unit_test(test_every_step),
        cmocka_unit_test(test_bad_schedules),
        cmocka_unit_test(test_describe_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
