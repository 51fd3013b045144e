/* Unit tests: the agent's core C API called from several threads without preloading (the entry
 * layer's view: agent_enter / agent_sync / agent_leave / agent_count_launch, and syncspy_step): exact
 * per-step counts, one site per call site, the recursion guard and the marks a longjmp leaves,
 * the deferral of a fatal signal during agent work, the schedule. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/record/core.h"
#include "agent/process/lifecycle.h"
#include "agent/record/sites.h"
#include "agent/step/steps.h"
#include "agent/syncspy.h"
#include "agent_fixture.h"
#include "output/step_list.h"

#define THREADS 4

/* An interposed call one frame deeper than the caller: whether the agent takes it. */
__attribute__((noinline)) static bool call_taken(void)
{
    struct agent_call k;
    bool in = agent_enter(&k);
    if (in)
        agent_leave(&k);
    __asm__ volatile("" ::: "memory");
    return in;
}

/* Enters and returns without leaving: what a longjmp out of the real call leaves behind. */
__attribute__((noinline)) static bool call_abandoned(void)
{
    struct agent_call k;
    bool in = agent_enter(&k);
    __asm__ volatile("" ::: "memory");
    return in;
}

__attribute__((noinline)) static void work_abandoned(void)
{
    struct agent_work w;
    agent_work_begin(&w);
    __asm__ volatile("" ::: "memory");
}

/* What the agent's handler asks, for code interrupted one frame deeper than the caller. */
__attribute__((noinline)) static bool defer_here(int sig)
{
    char sp = 0;
    bool deferred = agent_defer_signal(sig, &sp);
    __asm__ volatile("" ::: "memory");
    return deferred;
}

static volatile sig_atomic_t usr1_seen;
static void on_usr1(int sig)
{
    (void)sig;
    usr1_seen++;
}

/* The marks of the interposed call and of agent work: nesting, and what a longjmp leaves. */
static void test_marks(void **state)
{
    (void)state;
    /* a CUDA call made inside an interposed call (the runtime's own) is forwarded untouched */
    struct agent_call outer;
    assert_true(agent_enter(&outer));
    assert_true(agent_thread_busy());
    assert_false(call_taken());
    agent_leave(&outer);
    assert_false(agent_thread_busy());
    assert_true(call_taken());

    /* ... and one made by agent code, which runs with cancellation off */
    struct agent_work w;
    int cancel;
    agent_work_begin(&w);
    assert_false(call_taken());
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    assert_int_equal(cancel, PTHREAD_CANCEL_DISABLE);
    agent_work_end(&w);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &cancel);
    assert_int_equal(cancel, PTHREAD_CANCEL_ENABLE);

    /* a longjmp out of the real call: the next call from higher up is taken again */
    assert_true(call_abandoned());
    struct agent_call again;
    assert_true(agent_enter(&again));
    agent_leave(&again);
    assert_false(agent_thread_busy());

    /* a longjmp out of agent work: calls are taken again, cancellation is back on */
    work_abandoned();
    assert_true(agent_enter(&again));
    agent_leave(&again);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &cancel);
    assert_int_equal(cancel, PTHREAD_CANCEL_ENABLE);

    /* a fatal signal for the agent's handler during agent work waits for its end */
    signal(SIGUSR1, on_usr1);
    usr1_seen = 0;
    agent_work_begin(&w);
    assert_true(defer_here(SIGUSR1));
    assert_int_equal(usr1_seen, 0);
    agent_work_end(&w);
    assert_int_equal(usr1_seen, 1);
    assert_false(defer_here(SIGUSR1));
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        agent_count_launch();
    for (int i = 0; i < 50; i++)
        one_sync(1000);
    return NULL;
}

static void run_threads(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
}

static void test_threads_steps_and_sites(void **state)
{
    (void)state;
    assert_int_equal(atomic_load(&agent_state), STATE_RUNNING);
    syncspy_step(); /* step 0 (start-up) ends */
    run_threads();
    syncspy_step(); /* step 1: the threads' work */
    one_sync(5);    /* step 2: one sync from the main thread, then exit */

    /* the recursion guard: a CUDA call from inside an interposed call is forwarded untouched */
    struct agent_call outer;
    assert_true(agent_enter(&outer));
    assert_false(call_taken());
    agent_leave(&outer);

    struct rep_process p = {0};
    steps_finish(&p, agent_now_ns());
    /* step 0 was closed by a mark: listed even without CUDA activity; step 2 is still open at
     * exit and had a sync: listed as partial */
    assert_int_equal(p.nsteps, 3);
    struct rep_step step[3];
    for (size_t i = 0; i < 3; i++)
        assert_true(rep_step_at(&p, i, &step[i]));
    assert_int_equal(step[0].step, 0);
    assert_int_equal(step[0].syncs, 0);
    assert_int_equal(step[1].step, 1);
    assert_int_equal(step[1].syncs, THREADS * 50);
    assert_int_equal(step[1].blocked_ns, THREADS * 50 * 1000);
    assert_int_equal(step[1].launches, THREADS * 1000);
    assert_false(step[1].partial);
    assert_int_equal(step[2].step, 2);
    assert_int_equal(step[2].syncs, 1);
    assert_int_equal(step[2].blocked_ns, 5);
    assert_true(step[2].partial);
    assert_int_equal(p.active_steps, 3);
    assert_int_equal(p.syncs, THREADS * 50 + 1);
    assert_int_equal(p.launches, THREADS * 1000);
    assert_int_equal(p.steps_seen, 3);

    /* one site for the workers' call site (same stack in every thread), one for main's */
    struct site_info all[8];
    size_t n = sites_snapshot(all, 8);
    assert_int_equal(n, 2);
    uint64_t counts[2] = {all[0].count, all[1].count};
    assert_true((counts[0] == THREADS * 50 && counts[1] == 1) ||
                (counts[1] == THREADS * 50 && counts[0] == 1));
    assert_int_equal(agent_unattributed_syncs(), 0);

    /* the exit path, with the flusher thread that drained the rings meanwhile */
    agent_finish_now();
    assert_int_equal(atomic_load(&agent_state), STATE_OFF);
    char path[4200];
    snprintf(path, sizeof path, "%s/pid%d/trace.bin", getenv("SYNCSPY_OUT"), (int)getpid());
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 1000); /* header, names, a few hundred sync records, END */
    snprintf(path, sizeof path, "%s/pid%d/summary.json", getenv("SYNCSPY_OUT"), (int)getpid());
    assert_int_equal(stat(path, &st), 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    /* a private output folder, no report: the test writes nothing into the current directory */
    if (agent_fixture_private_output(argv, NULL, NULL) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks),
        cmocka_unit_test(test_threads_steps_and_sites),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
