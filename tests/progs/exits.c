/* tests/progs/exits.c: ways out. argv[1]: thread-exit (a worker thread calls exit(5) after its
 * syncs), _exit (the main thread syncs N steps, waits for the flusher, _exit(4)), abort. Every
 * sync is in exits_sync(); argv[2]: steps before leaving (default 6). */
#include "common.h"
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static void k(void) {}

__attribute__((noinline)) void exits_sync(void)
{
    launch((const void *)k, 0);
    CHECK(cudaStreamSynchronize(0));
}

static int steps = 6;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < steps; i++) {
        exits_sync();
        mark_step();
    }
    printf("worker: exit(5)\n");
    fflush(stdout);
    exit(5);
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "thread-exit";
    if (argc > 2)
        steps = atoi(argv[2]);
    simcuda_set_kernel_ns((const void *)k, 1 * MS);
    if (!strcmp(how, "thread-exit")) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_join(t, NULL);
        return 0; /* not reached */
    }
    for (int i = 0; i < steps; i++) {
        exits_sync();
        mark_step();
    }
    printf("main: %s\n", how);
    fflush(stdout);
    usleep(300000); /* three flusher ticks */
    if (!strcmp(how, "_exit"))
        _exit(4);
    abort();
}
