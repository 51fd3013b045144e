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
 *   threads8 8 threads wait at a barrier, then all call _exit(3) at once (issue 22: the second
 *            caller went straight to libc's _exit while the flusher still wrote) */
#include "common.h"
#include <pthread.h>
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
    (void)arg;
    pthread_barrier_wait(&exit_barrier);
    _exit(3);
}

static void exit_from_8_threads(void)
{
    enum { N = 8 };
    pthread_t t[N];
    pthread_barrier_init(&exit_barrier, NULL, N + 1);
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, exit_at_once, NULL);
    pthread_barrier_wait(&exit_barrier);
    for (;;) /* the threads end the process */
        pause();
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
    if (strcmp(mode, "threads8") == 0)
        exit_from_8_threads();
    if (strcmp(mode, "handler") == 0) {
        signal(SIGUSR1, on_usr1);
        pthread_t self = pthread_self(), t;
        pthread_create(&t, NULL, send_usr1, &self);
        long_sync();
        return 1; /* not reached: the handler ends the process */
    }
    _exit(5);
}
