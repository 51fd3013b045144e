/* Unit tests: the public counters (syncspy_counts, agent/syncspy.h) read from the core's C API
 * without preloading: the calling thread's counts against every thread's, exact under four
 * threads syncing at once, the step and whether the schedule records it (SYNCSPY_SCHEDULE
 * skip_first=1,active=1: step 0 is not recorded, so its syncs are not counted), the size argument that
 * lets the struct grow, bad arguments, and a forked child's fresh start. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/record/core.h"
#include "agent/process/lifecycle.h"
#include "agent/syncspy.h"
#include "agent_fixture.h"

#define THREADS 4
#define SYNCS_PER_THREAD 50

static struct syncspy_counts counts(int scope)
{
    struct syncspy_counts c;
    memset(&c, 0xee, sizeof c);
    assert_int_equal(syncspy_counts(scope, &c, sizeof c), 0);
    return c;
}

static void test_bad_arguments(void **state)
{
    (void)state;
    struct syncspy_counts c;
    memset(&c, 0xee, sizeof c);
    assert_int_equal(syncspy_counts(2, &c, sizeof c), -1);
    assert_int_equal(syncspy_counts(-1, &c, sizeof c), -1);
    assert_int_equal(syncspy_counts(SYNCSPY_SCOPE_THREAD, NULL, sizeof c), -1);
    assert_int_equal(syncspy_counts(SYNCSPY_SCOPE_THREAD, &c, 8), -1);
    assert_int_equal(c.syncs, 0xeeeeeeeeeeeeeeeeull); /* nothing written */
}

/* Step 0 is not recorded (skip_first=1,active=1): a sync there counts nowhere, and recording says so. */
static void test_unrecorded_step(void **state)
{
    (void)state;
    struct syncspy_counts t = counts(SYNCSPY_SCOPE_THREAD);
    assert_int_equal(t.syncs, 0);
    assert_int_equal(t.blocked_ns, 0);
    assert_int_equal(t.step, 0);
    assert_int_equal(t.recording, 0);
    assert_int_equal(t.reserved, 0);
    one_sync(7);
    assert_int_equal(counts(SYNCSPY_SCOPE_THREAD).syncs, 0);
    assert_int_equal(counts(SYNCSPY_SCOPE_PROCESS).syncs, 0);
    syncspy_step();
    t = counts(SYNCSPY_SCOPE_THREAD);
    assert_int_equal(t.step, 1);
    assert_int_equal(t.recording, 1);
    one_sync(7);
    t = counts(SYNCSPY_SCOPE_THREAD);
    assert_int_equal(t.syncs, 1);
    assert_int_equal(t.blocked_ns, 7);
    struct syncspy_counts p = counts(SYNCSPY_SCOPE_PROCESS);
    assert_int_equal(p.syncs, 1);
    assert_int_equal(p.blocked_ns, 7);
}

/* A caller that knows only the first two fields gets only those. */
static void test_smaller_struct(void **state)
{
    (void)state;
    uint64_t two[3] = {0, 0, 0xabcdef};
    assert_int_equal(syncspy_counts(SYNCSPY_SCOPE_THREAD, (struct syncspy_counts *)two, 16), 0);
    assert_int_equal(two[0], 1);
    assert_int_equal(two[1], 7);
    assert_int_equal(two[2], 0xabcdef);
}

struct worker {
    int index;
    struct syncspy_counts before, after, process_after;
};

static void *worker(void *p)
{
    struct worker *w = p;
    w->before = counts(SYNCSPY_SCOPE_THREAD);
    for (int i = 0; i < SYNCS_PER_THREAD; i++)
        one_sync(1000 * (uint64_t)(w->index + 1));
    w->after = counts(SYNCSPY_SCOPE_THREAD);
    w->process_after = counts(SYNCSPY_SCOPE_PROCESS);
    return NULL;
}

/* Four threads sync at once: each reads exactly its own, the process all of them. */
static void test_threads(void **state)
{
    (void)state;
    struct syncspy_counts main_before = counts(SYNCSPY_SCOPE_THREAD);
    struct syncspy_counts proc_before = counts(SYNCSPY_SCOPE_PROCESS);
    struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.index = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
    }
    uint64_t blocked = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].before.syncs, 0); /* a thread's own, from its first CUDA call */
        assert_int_equal(w[i].after.syncs, SYNCS_PER_THREAD);
        assert_int_equal(w[i].after.blocked_ns, SYNCS_PER_THREAD * 1000 * (uint64_t)(i + 1));
        assert_true(w[i].process_after.syncs >= proc_before.syncs + SYNCS_PER_THREAD);
        blocked += w[i].after.blocked_ns;
    }
    struct syncspy_counts main_after = counts(SYNCSPY_SCOPE_THREAD);
    assert_int_equal(main_after.syncs, main_before.syncs); /* the main thread made none */
    struct syncspy_counts proc_after = counts(SYNCSPY_SCOPE_PROCESS);
    assert_int_equal(proc_after.syncs - proc_before.syncs, THREADS * SYNCS_PER_THREAD);
    assert_int_equal(proc_after.blocked_ns - proc_before.blocked_ns, blocked);
    /* the threads exited: the process keeps their syncs */
    assert_int_equal(counts(SYNCSPY_SCOPE_PROCESS).syncs, proc_after.syncs);
}

/* A forked child counts from zero (and from step 0), the parent keeps its counts. */
static void test_fork(void **state)
{
    (void)state;
    uint64_t parent = counts(SYNCSPY_SCOPE_PROCESS).syncs;
    assert_true(parent > 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int bad =
            counts(SYNCSPY_SCOPE_PROCESS).syncs != 0 || counts(SYNCSPY_SCOPE_THREAD).syncs != 0;
        syncspy_step(); /* the child starts again at step 0, which the schedule skips */
        one_sync(3);
        struct syncspy_counts c = counts(SYNCSPY_SCOPE_PROCESS);
        bad |= c.syncs != 1 || c.blocked_ns != 3;
        syscall(SYS_exit_group, bad ? 3 : 0); /* no exit path of the agent's */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(counts(SYNCSPY_SCOPE_PROCESS).syncs, parent);
}

int main(int argc, char **argv)
{
    (void)argc;
#if defined(__SANITIZE_THREAD__)
    /* test_fork's child syncs, and the agent starts its flusher thread there again: TSan refuses
     * new threads after a multi-threaded fork unless told not to (it then checks the child as
     * any process; the re-run below reads the option at its start). */
    if (!getenv("SYNCSPY_OUT") && !getenv("TSAN_OPTIONS"))
        setenv("TSAN_OPTIONS", "die_after_fork=0", 1);
#endif
    /* a schedule that leaves step 0 unrecorded */
    if (agent_fixture_private_output(argv, "SYNCSPY_SCHEDULE", "skip_first=1,active=1") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),  cmocka_unit_test(test_unrecorded_step),
        cmocka_unit_test(test_smaller_struct), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_fork),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    agent_finish_now();
    return rc;
}
