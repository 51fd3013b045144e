/* Unit tests: the sync budget API of agent/syncspy.h (syncspy_tally_*, syncspy_tallies,
 * syncspy_site_describe) called without preloading, from several threads: nothing counted while
 * no region is open, exact counts per (thread, site) while one is, this thread's apart from the
 * others', nested regions, a new epoch for the next region, a dead thread's table not handed to
 * a new thread inside the epoch, more sites than a table holds, concurrent readers (TSan), and a
 * site named by the flusher thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/record/core.h"
#include "agent/process/lifecycle.h"
#include "agent/syncspy.h"
#include "agent_fixture.h"
#include "agent/record/budget_counts.h"

#define CAP 512

__attribute__((noinline)) static void site_a(int n)
{
    for (int i = 0; i < n; i++)
        one_sync(10);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void site_b(int n)
{
    for (int i = 0; i < n; i++)
        one_sync(100);
    __asm__ volatile("" ::: "memory");
}

static uint32_t my_tid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

struct sums {
    uint64_t syncs, blocked_ns;
    size_t entries;
};

/* The tallies of scope whose tid is tid (0: any), summed. */
static struct sums sum_tallies(int scope, uint32_t tid)
{
    static struct syncspy_tally t[CAP];
    size_t n = syncspy_tallies(scope, t, CAP);
    assert_true(n <= CAP);
    struct sums s = {0};
    for (size_t i = 0; i < n; i++)
        if (!tid || t[i].tid == tid) {
            s.syncs += t[i].syncs;
            s.blocked_ns += t[i].blocked_ns;
            s.entries++;
        }
    return s;
}

struct worker_arg {
    int syncs;
    uint32_t tid;
    uint32_t table;
};

static void *worker_b(void *p)
{
    struct worker_arg *a = p;
    a->tid = my_tid();
    site_b(a->syncs);
    struct syncspy_tally t[4];
    size_t n = syncspy_tallies(SYNCSPY_THIS_THREAD, t, 4);
    a->table = n ? t[0].thread : 0;
    return NULL;
}

static void run_worker(struct worker_arg *a)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, worker_b, a), 0);
    pthread_join(th, NULL);
}

static void test_nothing_without_a_region(void **state)
{
    (void)state;
    assert_int_equal(atomic_load(&agent_state), STATE_RUNNING);
    site_a(3);
    struct syncspy_tally t[4];
    assert_int_equal(syncspy_tallies(SYNCSPY_ALL_THREADS, t, 4), 0);
    assert_int_equal(syncspy_tallies(SYNCSPY_THIS_THREAD, t, 4), 0);
    assert_int_equal(syncspy_recording(), 1);
    assert_int_equal(syncspy_unrecorded_steps(), 0);
}

static void test_this_thread_and_all(void **state)
{
    (void)state;
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    /* a region's epoch is new: what came before it is not there */
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, 0).syncs, 0);
    site_a(3);
    struct worker_arg w = {.syncs = 2};
    run_worker(&w);

    struct syncspy_tally t[CAP];
    size_t n = syncspy_tallies(SYNCSPY_THIS_THREAD, t, CAP);
    assert_int_equal(n, 1);
    assert_int_equal(t[0].tid, my_tid());
    assert_int_equal(t[0].syncs, 3);
    assert_int_equal(t[0].blocked_ns, 30);
    assert_true(t[0].site != 0);
    uint32_t site_of_a = t[0].site;

    struct sums all = sum_tallies(SYNCSPY_ALL_THREADS, 0);
    assert_int_equal(all.syncs, 5);
    assert_int_equal(all.blocked_ns, 230);
    struct sums other = sum_tallies(SYNCSPY_ALL_THREADS, w.tid);
    assert_int_equal(other.syncs, 2);
    assert_int_equal(other.entries, 1);

    /* a nested region: counting goes on until the outer one ends */
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    site_a(1);
    syncspy_tally_end();
    site_a(1);
    n = syncspy_tallies(SYNCSPY_THIS_THREAD, t, CAP);
    assert_int_equal(n, 1);
    assert_int_equal(t[0].site, site_of_a);
    assert_int_equal(t[0].syncs, 5);
    /* too little room: how many there are */
    assert_int_equal(syncspy_tallies(SYNCSPY_ALL_THREADS, t, 1), 2);
    syncspy_tally_end();

    /* closed: nothing to read, nothing counted */
    assert_int_equal(syncspy_tallies(SYNCSPY_ALL_THREADS, t, CAP), 0);
    site_a(1);
    /* the next region starts a new epoch: the tables read empty until their thread syncs */
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, 0).syncs, 0);
    site_a(2);
    assert_int_equal(sum_tallies(SYNCSPY_THIS_THREAD, 0).syncs, 2);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, 0).syncs, 2);
    syncspy_tally_end();
    syncspy_tally_end(); /* one end too many does nothing */
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, 0).syncs, 0);
    syncspy_tally_end();
}

/* A thread that exits inside a region keeps its table until the epoch ends: the next thread gets
 * another one, so neither's syncs are counted as the other's. After the region, tables are
 * reused. */
static void test_dead_threads_table(void **state)
{
    (void)state;
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    struct worker_arg first = {.syncs = 4}, second = {.syncs = 1};
    run_worker(&first);
    run_worker(&second);
    assert_true(first.table != 0 && second.table != 0);
    assert_int_not_equal(first.table, second.table);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, first.tid).syncs, 4);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, second.tid).syncs, 1);
    syncspy_tally_end();
    /* no region open: a dead thread's table may pass on */
    struct worker_arg third = {.syncs = 1};
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    run_worker(&third);
    assert_true(third.table == first.table || third.table == second.table);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, 0).syncs, 1);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, third.tid).syncs, 1);
    syncspy_tally_end();
}

/* More sites than a table holds: the first TALLY_SLOTS itemized, the rest under site 0 (the
 * table's own function, on a table of the test's: here every stack of the test binary looks the
 * same to the agent, whose own object it is). */
static void test_more_sites_than_slots(void **state)
{
    (void)state;
    enum { SITES = TALLY_SLOTS + 6 };
    static struct tally_table table;
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    for (uint32_t site = 1; site <= SITES; site++)
        for (uint32_t k = 0; k < site % 3 + 1; k++)
            budget_counts_add(&table, site, 7);
    budget_counts_add(&table, 0, 5); /* a sync without a site */
    uint64_t itemized = 0, seen[SITES + 1] = {0};
    for (size_t i = 0; i < TALLY_SLOTS; i++) {
        uint32_t site = atomic_load(&table.slot[i].site);
        assert_true(site >= 1 && site <= SITES);
        assert_int_equal(seen[site], 0);
        seen[site] = atomic_load(&table.slot[i].syncs);
        assert_int_equal(seen[site], site % 3 + 1); /* every sync of a site in its own slot */
        assert_int_equal(atomic_load(&table.slot[i].ns), 7 * seen[site]);
        itemized += seen[site];
    }
    uint64_t total = 0;
    for (uint32_t site = 1; site <= SITES; site++)
        total += site % 3 + 1;
    assert_int_equal(atomic_load(&table.other_syncs), total - itemized + 1);
    syncspy_tally_end();
    /* the next epoch: the table's first sync clears it */
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    budget_counts_add(&table, 3, 1);
    assert_int_equal(atomic_load(&table.other_syncs), 0);
    uint64_t syncs = 0;
    for (size_t i = 0; i < TALLY_SLOTS; i++)
        syncs += atomic_load(&table.slot[i].syncs);
    assert_int_equal(syncs, 1);
    syncspy_tally_end();
    /* no region open: nothing counted */
    budget_counts_add(&table, 3, 1);
    budget_counts_add(&table, 0, 1);
    syncs = atomic_load(&table.other_syncs);
    for (size_t i = 0; i < TALLY_SLOTS; i++)
        syncs += atomic_load(&table.slot[i].syncs);
    assert_int_equal(syncs, 1);
}

static _Atomic bool stop_reading;

static void *reader(void *p)
{
    (void)p;
    struct syncspy_tally t[CAP];
    while (!atomic_load(&stop_reading))
        (void)syncspy_tallies(SYNCSPY_ALL_THREADS, t, CAP);
    return NULL;
}

static void *syncer(void *p)
{
    (void)p;
    site_b(500);
    return NULL;
}

/* Readers and writers at once (the TSan build checks the protocol): counts stay exact. */
static void test_concurrent_readers(void **state)
{
    (void)state;
    enum { WRITERS = 4 };
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    pthread_t r, w[WRITERS];
    atomic_store(&stop_reading, false);
    pthread_create(&r, NULL, reader, NULL);
    for (int i = 0; i < WRITERS; i++)
        pthread_create(&w[i], NULL, syncer, NULL);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    atomic_store(&stop_reading, true);
    pthread_join(r, NULL);
    assert_int_equal(sum_tallies(SYNCSPY_ALL_THREADS, 0).syncs, WRITERS * 500);
    syncspy_tally_end();
}

/* The flusher thread names a site: one line of eight fields, its API first (the file and line
 * of a program's own frames are checked end to end, tests/e2e/test_budget.py: here the test
 * binary is the agent's own object, whose frames a stack leaves out). */
static void test_describe(void **state)
{
    (void)state;
    assert_int_equal(syncspy_tally_begin(), SYNCSPY_TALLY_VERSION);
    site_a(1);
    struct syncspy_tally t[4];
    assert_int_equal(syncspy_tallies(SYNCSPY_THIS_THREAD, t, 4), 1);
    char line[4096];
    int len = syncspy_site_describe(t[0].site, line, sizeof line);
    assert_true(len > 0);
    assert_int_equal((size_t)len, strlen(line));
    int tabs = 0;
    for (char *p = line; *p; p++)
        tabs += *p == '\t';
    assert_int_equal(tabs, 7);
    assert_memory_equal(line, "cudaStreamSynchronize\t", 22);
    /* no such site; no room; no site */
    assert_int_equal(syncspy_site_describe(999999, line, sizeof line), -1);
    assert_int_equal(syncspy_site_describe(t[0].site, line, 8), -1);
    assert_int_equal(syncspy_site_describe(0, line, sizeof line), -1);
    syncspy_tally_end();
}

/* A failed test leaves no region open for the next one. */
static int close_regions(void **state)
{
    (void)state;
    while (budget_counts_open(atomic_load(&budget_counts_state)))
        syncspy_tally_end();
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    /* a private output folder, no report: the test writes nothing into the current directory */
    if (agent_fixture_private_output(argv, NULL, NULL) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_nothing_without_a_region, close_regions),
        cmocka_unit_test_teardown(test_this_thread_and_all, close_regions),
        cmocka_unit_test_teardown(test_dead_threads_table, close_regions),
        cmocka_unit_test_teardown(test_more_sites_than_slots, close_regions),
        cmocka_unit_test_teardown(test_concurrent_readers, close_regions),
        cmocka_unit_test_teardown(test_describe, close_regions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
