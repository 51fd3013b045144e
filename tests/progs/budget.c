/* tests/progs/budget.c: sync budgets through the public C API (agent/syncspy.h), looked up with
 * dlsym(RTLD_DEFAULT) as a program that must also run without the agent does.
 *   budget          opens a region; the main thread makes 3 syncs in three_syncs and 1 in
 *                   one_sync, a second thread makes 2 in other_thread_syncs meanwhile (inside
 *                   the region); prints the region's tallies, this thread's then all threads'
 *                   ("tally SCOPE TID SYNCS SITE-DESCRIPTION"), as begin/end differences.
 *   budget steps    with SYNCSPY_SCHEDULE set: prints "recording R unrecorded U" at the start,
 *                   after one step mark and after a second one.
 * Without the agent it prints "no agent" and exits 0. The "budget:" comments mark the lines. */
#include "common.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/syncspy.h"

static int (*tally_begin)(void);
static void (*tally_end)(void);
static size_t (*tallies)(int, struct syncspy_tally *, size_t);
static int (*describe)(uint32_t, char *, size_t);
static int (*recording)(void);
static uint64_t (*unrecorded)(void);

static void k_work(void) {}

__attribute__((noinline)) void three_syncs(void)
{
    for (int i = 0; i < 3; i++) {
        launch((const void *)k_work, 0);
        CHECK(cudaStreamSynchronize(0)); /* budget: three */
    }
}

__attribute__((noinline)) void one_sync(void)
{
    CHECK(cudaDeviceSynchronize()); /* budget: one */
}

__attribute__((noinline)) void other_thread_syncs(void)
{
    for (int i = 0; i < 2; i++)
        CHECK(cudaDeviceSynchronize()); /* budget: other */
}

static void *other_thread(void *arg)
{
    (void)arg;
    other_thread_syncs();
    return NULL;
}

#define CAP 256

/* The region's tallies of scope: end minus start, per (table, site). */
static void print_region(const char *scope_name, int scope, const struct syncspy_tally *start, size_t nstart,
                         const struct syncspy_tally *end, size_t nend)
{
    for (size_t i = 0; i < nend; i++) {
        if (scope == SYNCSPY_THIS_THREAD && end[i].tid != (uint32_t)syscall(SYS_gettid))
            continue;
        uint64_t before = 0;
        for (size_t j = 0; j < nstart; j++)
            if (start[j].thread == end[i].thread && start[j].site == end[i].site)
                before = start[j].syncs;
        if (end[i].syncs == before)
            continue;
        char where[4096] = "?";
        if (describe(end[i].site, where, sizeof where) < 0)
            snprintf(where, sizeof where, "(not described)");
        for (char *p = where; *p; p++)
            if (*p == '\t')
                *p = '|';
        printf("tally %s %u %llu %s\n", scope_name, end[i].tid, (unsigned long long)(end[i].syncs - before), where);
    }
}

static int region(void)
{
    static struct syncspy_tally start[CAP], end[CAP];
    one_sync(); /* before the region: not counted */
    if (tally_begin() != SYNCSPY_TALLY_VERSION) {
        printf("not counting\n");
        return 1;
    }
    size_t nstart = tallies(SYNCSPY_ALL_THREADS, start, CAP);
    three_syncs();
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    one_sync();
    size_t nend = tallies(SYNCSPY_ALL_THREADS, end, CAP);
    print_region("this", SYNCSPY_THIS_THREAD, start, nstart, end, nend);
    print_region("all", SYNCSPY_ALL_THREADS, start, nstart, end, nend);
    tally_end();
    one_sync(); /* after it: not counted */
    printf("tallies after the region: %zu\n", tallies(SYNCSPY_ALL_THREADS, end, CAP));
    return 0;
}

static int steps(void)
{
    one_sync();
    for (int i = 0; i < 3; i++) {
        printf("recording %d unrecorded %llu\n", recording(), (unsigned long long)unrecorded());
        if (i < 2)
            mark_step();
    }
    return 0;
}

int main(int argc, char **argv)
{
    tally_begin = (int (*)(void))dlsym(RTLD_DEFAULT, "syncspy_tally_begin");
    tally_end = (void (*)(void))dlsym(RTLD_DEFAULT, "syncspy_tally_end");
    tallies = (size_t (*)(int, struct syncspy_tally *, size_t))dlsym(RTLD_DEFAULT, "syncspy_tallies");
    describe = (int (*)(uint32_t, char *, size_t))dlsym(RTLD_DEFAULT, "syncspy_site_describe");
    recording = (int (*)(void))dlsym(RTLD_DEFAULT, "syncspy_recording");
    unrecorded = (uint64_t (*)(void))dlsym(RTLD_DEFAULT, "syncspy_unrecorded_steps");
    simcuda_set_kernel_ns((const void *)k_work, 2 * MS);
    if (!tally_begin || !tally_end || !tallies || !describe || !recording || !unrecorded) {
        three_syncs();
        printf("no agent\n");
        return 0;
    }
    return argc > 1 && strcmp(argv[1], "steps") == 0 ? steps() : region();
}
