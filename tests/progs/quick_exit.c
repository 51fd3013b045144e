/* tests/progs/quick_exit.c MODE: ends through _exit/_Exit after syncing in 3 steps of 3 syncs
 * (a 2 ms kernel, then cudaStreamSynchronize; a pageable cudaMemcpy; cudaFree), with "buffered" left in
 * stdout's buffer (which _exit discards):
 *   self     the process itself calls _exit(5)
 *   Exit     the same through _Exit(6)
 *   handler  a SIGUSR1 handler calls _exit(9); a second thread sends it while the main thread
 *            waits in a 200 ms sync
 *   child    a forked child syncs and ends with _exit(7); the parent (no CUDA call) reports
 *            "child status 7" and returns 0
 *   vfork    the process syncs, a vfork child calls _exit(4) at once, then the process syncs
 *            3 steps more and returns 0 (exit: one report, 6 steps of syncs)
 *   threadsN N threads (threads2, threads8, threads64) wait at a barrier, then all call _exit(3)
 *            at once (issue 22: the second caller went straight to libc's _exit while the
 *            flusher still wrote); threads64-staggered: thread i calls it 0.5 ms x i later
 *   exit-race  the main thread calls exit(3) while 8 threads call _exit(3), all at once
 *   handler-race  8 threads call _exit(3) at once while a SIGUSR1 handler calls _exit(3) on the
 *            main thread (held pending until the barrier opens) */
#include "common.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void k_two(void) {}
static void k_long(void) {}
static cudaStream_t s;

__attribute__((noinline)) void quick_sync(void)
{
    launch((const void *)k_two, s);
    CHECK(cudaStreamSynchronize(s));
    static char host[4096];
    void *dev;
    CHECK(cudaMalloc(&dev, sizeof host));
    CHECK(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(dev));
}

static void steps(int n)
{
    for (int i = 0; i < n; i++) {
        quick_sync();
        mark_step();
    }
}

static void on_usr1(int sig)
{
    (void)sig;
    _exit(9);
}

static void *send_usr1(void *arg)
{
    struct timespec t = {0, 50 * 1000 * 1000};
    nanosleep(&t, NULL);
    pthread_kill(*(pthread_t *)arg, SIGUSR1);
    return NULL;
}

__attribute__((noinline)) void long_sync(void)
{
    launch((const void *)k_long, s);
    CHECK(cudaStreamSynchronize(s));
}

static pthread_barrier_t exit_barrier;

static void *exit_at_once(void *arg)
{
    pthread_barrier_wait(&exit_barrier);
    struct timespec t = {0, (long)(intptr_t)arg * 500 * 1000}; /* staggered: 0.5 ms apart */
    if (t.tv_nsec)
        nanosleep(&t, NULL);
    _exit(3);
}

enum { RACERS_MAX = 64 };

/* n threads, and the main thread, meet at a barrier; the threads call _exit(3) at once, or with
 * staggered, thread i 0.5 ms x i later (so that some come while the outputs are written). */
static void racers(int n, bool staggered)
{
    pthread_t t[RACERS_MAX];
    pthread_barrier_init(&exit_barrier, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, exit_at_once, (void *)(intptr_t)(staggered ? i : 0));
}

static void exit_from_threads(int n, bool staggered)
{
    racers(n, staggered);
    pthread_barrier_wait(&exit_barrier);
    for (;;) /* the threads end the process */
        pause();
}

static void on_usr1_exit3(int sig)
{
    (void)sig;
    _exit(3);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "self";
    simcuda_set_kernel_ns((const void *)k_two, 2 * MS);
    simcuda_set_kernel_ns((const void *)k_long, 200 * MS);
    if (strcmp(mode, "child") == 0) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            CHECK(cudaStreamCreate(&s));
            mark_step();
            steps(3);
            printf("buffered");
            _exit(7);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return 0;
    }
    CHECK(cudaStreamCreate(&s));
    mark_step(); /* start-up ends */
    steps(3);
    if (strcmp(mode, "vfork") == 0) {
        pid_t pid = vfork();
        if (pid == 0)
            _exit(4);
        int st = 0;
        waitpid(pid, &st, 0);
        steps(3);
        printf("vfork child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return 0;
    }
    printf("buffered");
    if (strcmp(mode, "Exit") == 0)
        _Exit(6);
    if (strncmp(mode, "threads", 7) == 0)
        exit_from_threads(atoi(mode + 7) > 0 && atoi(mode + 7) <= RACERS_MAX ? atoi(mode + 7) : 8,
                          strstr(mode, "-staggered") != NULL);
    if (strcmp(mode, "exit-race") == 0) {
        racers(8, false);
        pthread_barrier_wait(&exit_barrier);
        exit(3); /* stdio flushed if exit() comes first, "buffered" lost if an _exit does */
    }
    if (strcmp(mode, "handler-race") == 0) {
        signal(SIGUSR1, on_usr1_exit3);
        racers(8, false);
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &usr1, NULL);
        pthread_kill(pthread_self(), SIGUSR1); /* pending: the handler runs as the barrier opens */
        pthread_barrier_wait(&exit_barrier);
        pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
        for (;;)
            pause();
    }
    if (strcmp(mode, "handler") == 0) {
        signal(SIGUSR1, on_usr1);
        pthread_t self = pthread_self(), t;
        pthread_create(&t, NULL, send_usr1, &self);
        long_sync();
        return 1; /* not reached: the handler ends the process */
    }
    _exit(5);
}
