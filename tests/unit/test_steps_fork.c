/* Unit tests: a fork in the middle of a run of steps (agent/step/steps.c, agent/record/core.c at fork). The
 * parent marks steps with two optimizers in each, attributed to their backward, and records a
 * sync without a ring; the child forked then must hold only its own steps: its step numbers, its
 * optimizers, its attribution count, its counters (issue 37: the hand-written reset missed the
 * attribution count, the optimizers' histogram and records_without_ring). The child reports by
 * its exit status: 0, or the number of the first check that failed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/record/autograd.h"
#include "agent/record/core.h"
#include "agent/process/lifecycle.h"
#include "agent/step/steps.h"
#include "agent/syncspy.h"
#include "agent_fixture.h"
#include "output/step_list.h"

#define PARENT_STEPS 5
#define CHILD_STEPS 2
#define RINGS 4 /* SYNCSPY_BUFFER_MB=1: four 256 KiB rings (agent/record/threads.c) */

/* The child's checks: 0 when all hold, else the first that failed. */
static int child_checks(void)
{
    if (atomic_load(&steps_now) != 0)
        return 10;
    if (agent_unattributed_syncs() != 0)
        return 11;
    struct syncspy_counts c;
    if (syncspy_counts(SYNCSPY_SCOPE_PROCESS, &c, sizeof c) != 0 || c.syncs != 0 || c.step != 0)
        return 13;
    if (agent_records_without_ring() != 0)
        return 12;
    for (int i = 0; i < CHILD_STEPS; i++)
        steps_mark(agent_now_ns(), false, 1); /* one optimizer in each of the child's steps */
    struct rep_process p = {0};
    steps_finish(&p, agent_now_ns());
    if (p.steps_seen != CHILD_STEPS + 1)
        return 20;
    struct rep_step first, second;
    if (p.nsteps != CHILD_STEPS || !rep_step_at(&p, 0, &first) || first.step != 0 ||
        !rep_step_at(&p, 1, &second) || second.step != 1)
        return 21;
    uint64_t attributed = 0;
    struct rep_step_cursor cur;
    struct rep_step st;
    for (rep_steps_begin(&cur, &p); rep_steps_next(&cur, &st);)
        attributed += st.attributed;
    if (p.attribution_steps != attributed)
        return 22;
    if (p.optimizers != 1 || p.optimizers_max != 1)
        return 23;
    if (p.active_steps != CHILD_STEPS || p.syncs != 0)
        return 24;
    return 0;
}

/* The threads stay until all have synced, so none gives its ring back to another. */
static pthread_barrier_t all_synced;

static void *sync_and_wait(void *arg)
{
    (void)arg;
    one_sync(1000);
    pthread_barrier_wait(&all_synced);
    return NULL;
}

static void test_child_forked_between_steps(void **state)
{
    (void)state;
    assert_int_equal(atomic_load(&agent_state), STATE_RUNNING);
    autograd_set_state(BACKWARD_CAUSE_NONE); /* the steps' backward syncs attributed */
    for (int i = 0; i < PARENT_STEPS; i++)
        steps_mark(agent_now_ns(), false, 2); /* two optimizers in each */
    /* more threads than SYNCSPY_BUFFER_MB=1 has rings for: a sync recorded without a ring */
    one_sync(1000);
    pthread_t t[RINGS];
    pthread_barrier_init(&all_synced, NULL, RINGS + 1);
    for (int i = 0; i < RINGS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, sync_and_wait, NULL), 0);
    pthread_barrier_wait(&all_synced);
    for (int i = 0; i < RINGS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&all_synced);
    assert_true(agent_records_without_ring() >= 1);
    assert_int_equal(atomic_load(&steps_now), PARENT_STEPS);

    assert_int_equal(agent_fixture_child_failure(agent_fixture_fork(child_checks)), 0);

    /* the parent's steps go on where they were */
    assert_int_equal(atomic_load(&steps_now), PARENT_STEPS);
    steps_mark(agent_now_ns(), false, 2);
    struct rep_process p = {0};
    steps_finish(&p, agent_now_ns());
    assert_int_equal(p.steps_seen, PARENT_STEPS + 2);
    assert_int_equal(p.optimizers_max, 2);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (agent_fixture_private_output(argv, "SYNCSPY_BUFFER_MB", "1") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_child_forked_between_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
