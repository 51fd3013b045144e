/* Unit tests: the control request of `syncspy start/stop` (output/control_format.h), as the agent
 * parses what anyone may have put into the process folder, and its acknowledgment round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "output/control_format.h"
#include "output/model.h"

static int parse(const char *text, struct control_request *r, char *err, size_t n)
{
    return control_request_parse(text, strlen(text), r, err, n);
}

static void test_valid_requests(void **state)
{
    (void)state;
    struct control_request r;
    char err[200];
    assert_int_equal(
        parse("syncspy-control 1\nid=h-1-2\ncommand=start\nsteps=100\n", &r, err, sizeof err), 0);
    assert_int_equal(r.command, CONTROL_START);
    assert_int_equal(r.steps, 100);
    assert_string_equal(r.id, "h-1-2");
    assert_int_equal(parse("syncspy-control 1\ncommand=start", &r, err, sizeof err), 0);
    assert_int_equal(r.steps, 0); /* until a stop */
    assert_string_equal(r.id, "");
    assert_int_equal(parse("syncspy-control 1\ncommand=stop\n", &r, err, sizeof err), 0);
    assert_int_equal(r.command, CONTROL_STOP);
    /* what the CLI writes is what the agent reads */
    struct control_request w = {.command = CONTROL_START, .steps = 1000000000, .id = "node.a_1:2"},
                           back;
    char text[CONTROL_BYTES_MAX];
    int n = control_request_format(&w, text, sizeof text);
    assert_true(n > 0);
    assert_int_equal(control_request_parse(text, (size_t)n, &back, err, sizeof err), 0);
    assert_int_equal(back.steps, w.steps);
    assert_string_equal(back.id, w.id);
}

static void expect_refused(const char *text, size_t n, const char *why)
{
    struct control_request r = {.command = 9};
    char err[200] = "";
    if (control_request_parse(text, n, &r, err, sizeof err) != -1)
        fail_msg("accepted: %.*s", (int)n, text);
    if (!strstr(err, why))
        fail_msg("'%s' does not say '%s'", err, why);
    assert_int_equal(r.command, 9); /* nothing written */
}

#define REFUSED(text, why) expect_refused(text, sizeof text - 1, why)

static void test_bad_requests(void **state)
{
    (void)state;
    REFUSED("", "not a syncspy control file");
    REFUSED("garbage\n", "not a syncspy control file");
    REFUSED("syncspy-control 2\ncommand=start\n", "not a syncspy control file");
    REFUSED("syncspy-control 1\n", "no command=start");
    REFUSED("syncspy-control 1\ncommand=start\0steps=1\n", "NUL byte");
    REFUSED("syncspy-control 1\ncommand=go\n", "command 'go' is neither start nor stop");
    REFUSED("syncspy-control 1\ncommand=start\ncommand=stop\n", "'command' given twice");
    REFUSED("syncspy-control 1\ncommand=start\nsteps=-5\n",
            "steps '-5' is not a whole number from 1");
    REFUSED("syncspy-control 1\ncommand=start\nsteps=0\n", "steps '0'");
    REFUSED("syncspy-control 1\ncommand=start\nsteps=1000000001\n", "steps '1000000001'");
    REFUSED("syncspy-control 1\ncommand=start\nsteps=99999999999999999999999\n", "is not a whole");
    REFUSED("syncspy-control 1\ncommand=start\nsteps= 5\n", "steps ' 5'");
    REFUSED("syncspy-control 1\ncommand=stop\nsteps=5\n", "steps= goes with command=start only");
    REFUSED("syncspy-control 1\ncommand=start\npath=/etc/passwd\n", "unknown key 'path'");
    REFUSED("syncspy-control 1\ncommand=start\njunk\n", "the line 'junk' is not key=value");
    REFUSED("syncspy-control 1\ncommand=start\nid=a/b\n", "id 'a/b'");
    REFUSED("syncspy-control 1\ncommand=start\nid=\x1b[31m\n", "id '?[31m'"); /* shown escaped */
    char long_id[200] = "syncspy-control 1\ncommand=start\nid=";
    memset(long_id + strlen(long_id), 'a', CONTROL_ID_MAX + 1);
    expect_refused(long_id, strlen(long_id), "is not 1 to 64");
}

static void test_ack_round_trip(void **state)
{
    (void)state;
    struct control_ack a = {.id = "x-1",
                            .result = CONTROL_APPLIED,
                            .command = CONTROL_START,
                            .cause = REP_CAUSE_START,
                            .pid = 42,
                            .step = 200,
                            .first = 201,
                            .last = CONTROL_UNTIL_STOP,
                            .schedule = "wait=1,\nactive=2"},
                       b;
    char text[CONTROL_ACK_BYTES_MAX], err[100];
    int n = control_ack_format(&a, text, sizeof text);
    assert_true(n > 0);
    assert_non_null(strstr(text, "last=until-stop\n"));
    assert_non_null(strstr(text, "schedule=wait=1, active=2\n")); /* one line */
    assert_int_equal(control_ack_parse(text, (size_t)n, &b, err, sizeof err), 0);
    assert_string_equal(b.id, "x-1");
    assert_int_equal(b.result, CONTROL_APPLIED);
    assert_int_equal(b.pid, 42);
    assert_int_equal(b.step, 200);
    assert_int_equal(b.first, 201);
    assert_true(b.last == CONTROL_UNTIL_STOP);
    assert_int_equal(control_ack_parse("nope\nresult=applied\n", 20, &b, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_requests),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_ack_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
