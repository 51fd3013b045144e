/* Unit tests: a fork() while another thread holds each lock a fork must leave usable (the
 * agent's and the collectors', agent/process/lifecycle.c's list; the entry layer's CUPTI subscription
 * lock and signal view lock, entry/start.c), issue 36 item 1; the loader's gate is held inside
 * dl_iterate_phdr, whose lock glibc's fork does not reset. A lock the fork handlers take is
 * waited for (the fork returns only once the holder let it go); one they only try, or a flag, is
 * not. Either way the child, whose one thread is the forking one, finds every lock free and the
 * agent working as in a fresh process: it syncs, marks steps, has a site described by its own
 * flusher thread, and writes its summary.json as at _exit. The child reports by its exit status: 0,
 * or the number of the first check that failed (killed by SIGALRM when it hangs: 1014). */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/record/apis.h"
#include "agent/record/autograd.h"
#include "agent/record/core.h"
#include "agent/process/fork_locks.h"
#include "agent/process/lifecycle.h"
#include "agent/record/python_names.h"
#include "agent/step/recompiles.h"
#include "agent/record/sites.h"
#include "agent/step/steps.h"
#include "agent/syncspy.h"
#include "collectors/loader_gate.h"
#include "entry/cupti.h"
#include "entry/signals.h"
#include "agent_fixture.h"
#include "tests/fork_quiet.h"

#define HOLD_MS 300 /* a waited-for lock is held this long after the fork began */
#define CHILD_LIMIT_S 30
/* TSan cannot follow a child of a multi-threaded process that starts threads ("starting new
 * threads after multi-threaded fork is not supported"; with die_after_fork=0, "dup thread with
 * used id"): there the child checks its locks and the tables, makes no CUDA call (whose first one
 * starts the flusher thread) and writes nothing. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD true
#else
#define ASAN_BUILD false
#endif
#if defined(__SANITIZE_THREAD__)
#define CHILD_STARTS_THREADS 0
#else
#define CHILD_STARTS_THREADS 1
#endif

static uint64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* One lock as the test holds it. */
struct held {
    const char *name;
    bool waited; /* the fork waits for it */
    void (*hold)(const struct held *);
    void (*release)(const struct held *);
    const struct fork_lock *lock; /* the listed ones */
};

static void hold_listed(const struct held *h)
{
    if (h->lock->kind == FORK_LOCK_FLAG)
        atomic_store(h->lock->flag(), true);
    else if (h->lock->kind == FORK_LOCK_GATE)
        loader_gate_enter(true);
    else
        pthread_mutex_lock(h->lock->mutex());
}

static void release_listed(const struct held *h)
{
    if (h->lock->kind == FORK_LOCK_FLAG)
        atomic_store(h->lock->flag(), false);
    else if (h->lock->kind == FORK_LOCK_GATE)
        loader_gate_leave();
    else
        pthread_mutex_unlock(h->lock->mutex());
}

/* Inside the loader's gate the holder is where the unwinder and the symbolizer are: inside
 * dl_iterate_phdr, which holds the loader's write lock (glibc's fork leaves it as it is). */
static int sleep_in_loader(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    (void)arg;
    usleep(HOLD_MS * 1000);
    return 1; /* the first object only */
}

static int count_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    ++*(int *)arg;
    return 0;
}

static void hold_cupti(const struct held *h)
{
    (void)h;
    pthread_mutex_lock(cupti_state_lock());
}

static void release_cupti(const struct held *h)
{
    (void)h;
    pthread_mutex_unlock(cupti_state_lock());
}

/* The view lock as sigaction() takes it: the holder's signals held meanwhile. */
static sigset_t view_mask; /* the holder thread's */

static void hold_view(const struct held *h)
{
    (void)h;
    signals_atfork_prepare(&view_mask);
}

static void release_view(const struct held *h)
{
    (void)h;
    signals_atfork_release(&view_mask);
}

/* ---- the holder thread -------------------------------------------------------------------- */

static struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool held, forked;
} sync_ = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};

static void set_flag(bool *flag)
{
    pthread_mutex_lock(&sync_.m);
    *flag = true;
    pthread_cond_broadcast(&sync_.c);
    pthread_mutex_unlock(&sync_.m);
}

static void wait_flag(bool *flag)
{
    pthread_mutex_lock(&sync_.m);
    while (!*flag)
        pthread_cond_wait(&sync_.c, &sync_.m);
    pthread_mutex_unlock(&sync_.m);
}

/* Holds the lock; a waited-for one HOLD_MS past the moment it told it holds it (the fork begins
 * then and must wait), another until the fork returned in the parent. */
static void *holder(void *arg)
{
    const struct held *h = arg;
    h->hold(h);
    set_flag(&sync_.held);
    if (h->lock && h->lock->kind == FORK_LOCK_GATE)
        dl_iterate_phdr(sleep_in_loader, NULL);
    else if (h->waited)
        usleep(HOLD_MS * 1000);
    else
        wait_flag(&sync_.forked);
    h->release(h);
    /* It ends only after the fork: an ending thread gives its allocator caches back, and under
     * ASan (GCC 12's libasan keeps no allocator lock across fork) a child forked meanwhile
     * inherits the quarantine's lock held and hangs in its first free. */
    wait_flag(&sync_.forked);
    return NULL;
}

/* ---- the child ---------------------------------------------------------------------------- */

/* The child's summary.json, written by its finish (the flusher's lock, the steps'). */
static bool own_summary(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pid%d/summary.json", getenv("SYNCSPY_OUT"), (int)getpid());
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

static void *syncs_once(void *arg)
{
    (void)arg;
    one_sync(2000);
    return NULL;
}

/* Every lock free (a mutex taken at once, a flag clear), then the agent's work. */
static int child_checks(void)
{
    alarm(CHILD_LIMIT_S);
    size_t n;
    const struct fork_lock *locks = agent_fork_locks(&n);
    for (size_t i = 0; i < n; i++) {
        if (locks[i].kind == FORK_LOCK_FLAG) {
            if (atomic_load(locks[i].flag()))
                return 10;
        } else if (locks[i].kind == FORK_LOCK_GATE) {
            if (!loader_gate_enter(false))
                return 14;
            loader_gate_leave();
        } else if (pthread_mutex_trylock(locks[i].mutex()) != 0) {
            return 11;
        } else {
            pthread_mutex_unlock(locks[i].mutex());
        }
    }
    if (pthread_mutex_trylock(cupti_state_lock()) != 0)
        return 12;
    pthread_mutex_unlock(cupti_state_lock());
    struct sigaction sa; /* the view lock, through the interposed sigaction */
    if (sigaction(SIGTERM, NULL, &sa) != 0)
        return 13;
    int objects = 0; /* the loader's write lock */
    dl_iterate_phdr(count_object, &objects);
    if (objects == 0)
        return 15;
    /* a fresh process's tables */
    if (sites_count() != 0 || stacks_count() != 0 || atomic_load(&steps_now) != 0)
        return 20;
    /* the agent at work: syncs on this thread and another, steps, the tables */
    if (CHILD_STARTS_THREADS) {
        one_sync(1000);
        pthread_t t;
        if (pthread_create(&t, NULL, syncs_once, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 21;
    }
    syncspy_step();
    syncspy_step();
    if (atomic_load(&steps_now) != 2 || sites_count() != (CHILD_STARTS_THREADS ? 2 : 0))
        return 22;
    if (api_intern("cuForkTestCall") < API_COUNT || !autograd_name_id("ForkTestBackward0"))
        return 23;
    recompiles_add("f", "fork.py", 1, "a guard failed", 1);
    if (python_names_find(1, 2) != NULL)
        return 24;
    struct syncspy_counts c;
    if (syncspy_counts(SYNCSPY_SCOPE_PROCESS, &c, sizeof c) != 0 ||
        c.syncs != (CHILD_STARTS_THREADS ? 2 : 0))
        return 25;
    if (!CHILD_STARTS_THREADS)
        return 0;
    /* the child's own flusher thread describes its site (the describe, call and drains' locks) */
    char line[4096];
    if (syncspy_site_describe(1, line, sizeof line) <= 0 ||
        strncmp(line, "cudaStreamSynchronize\t", 22) != 0)
        return 26;
    /* its outputs, as its _exit writes them (called here: an ASan build's _exit is libasan's) */
    agent_finish_at_quick_exit(5000);
    return own_summary() ? 0 : 27;
}

/* ---- the test ----------------------------------------------------------------------------- */

static void fork_while_held(const struct held *h)
{
    sync_.held = sync_.forked = false;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, holder, (void *)h), 0);
    wait_flag(&sync_.held);
    uint64_t t0 = mono_ms();
    pid_t pid = agent_fixture_fork(child_checks);
    uint64_t took = mono_ms() - t0;
    set_flag(&sync_.forked);
    pthread_join(t, NULL);
    int failure = agent_fixture_child_failure(pid);
    if (failure)
        fail_msg("%s held at fork: the child failed %d (1000 + a signal that killed it)", h->name,
                 failure);
    if (h->waited && took < HOLD_MS - 50)
        fail_msg("%s: the fork took %llu ms, it did not wait for the lock", h->name,
                 (unsigned long long)took);
    if (!h->waited && took >= HOLD_MS)
        fail_msg("%s: the fork took %llu ms, it waited for a lock it only tries", h->name,
                 (unsigned long long)took);
    /* the parent goes on: its locks free, its agent recording */
    one_sync(1000);
}

static void test_fork_while_each_lock_is_held(void **state)
{
    (void)state;
    one_sync(1000); /* the parent's flusher runs, its tables hold a site */
    size_t n;
    const struct fork_lock *locks = agent_fork_locks(&n);
    assert_true(n >= 10);
    for (size_t i = 0; i < n; i++) {
        bool waited = locks[i].kind == FORK_LOCK_WAIT || locks[i].kind == FORK_LOCK_GATE ||
                      (locks[i].kind == FORK_LOCK_TRY && locks[i].wait_ms > 0); /* ASan's drains */
        struct held h = {locks[i].name, waited, hold_listed, release_listed, &locks[i]};
        fork_while_held(&h);
    }
    struct held cupti = {"CUPTI subscription", false, hold_cupti, release_cupti, NULL};
    fork_while_held(&cupti);
    struct held view = {"signal view", true, hold_view, release_view, NULL};
    fork_while_held(&view);
}

/* Threads recording while the main thread forks again and again: every child works. Under
 * ASan they park between their calls at each fork (GCC 12's libasan keeps no allocator lock
 * across fork: a child forked while another thread frees may hang in its first malloc, whatever
 * the agent does), so there only the locks' own handlers are tested, by the test above. */
static _Atomic bool stop_recording;

static void *record(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_recording)) {
        fork_quiet_point();
        one_sync(100);
        syncspy_step();
        usleep(200); /* a training loop's pace, not a flood of steps */
    }
    fork_quiet_leave();
    return NULL;
}

static void test_forks_while_threads_record(void **state)
{
    (void)state;
    pthread_t t[4];
    atomic_store(&stop_recording, false);
    fork_quiet_start(ASAN_BUILD);
    for (int i = 0; i < 4; i++) {
        fork_quiet_enter(); /* counted before it starts: the fork may come first */
        assert_int_equal(pthread_create(&t[i], NULL, record, NULL), 0);
    }
    for (int k = 0; k < 20; k++) {
        usleep(2000);
        int failure = agent_fixture_child_failure(agent_fixture_fork(child_checks));
        if (failure)
            fail_msg("fork %d: the child failed %d (1000 + a signal that killed it)", k, failure);
    }
    atomic_store(&stop_recording, true);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (agent_fixture_private_output(argv, "SYNCSPY_CUPTI", "off") != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork_while_each_lock_is_held),
        cmocka_unit_test(test_forks_while_threads_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
