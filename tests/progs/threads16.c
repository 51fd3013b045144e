/* tests/progs/threads16.c [THREADS LAUNCHES [HOLD_MS]]: 16 threads syncing and launching at once. Each
 * thread: 5000 launches of a 0 ns kernel and, after every other one, a sync in thread_sync()
 * (cudaStreamSynchronize on its own non-blocking stream): 2500 syncs. With a tiny
 * SYNCSPY_BUFFER_MB the rings overflow; with more threads than the buffer has rings for, the
 * threads beyond get none. HOLD_MS: each thread stays alive that long after its work (the
 * flusher sees them all live). */
#include "common.h"
#include <pthread.h>
#include <unistd.h>

#define THREADS_MAX 256

static int launches = 5000, hold_ms;

static void k(void) {}

__attribute__((noinline)) void thread_sync(cudaStream_t s)
{
    CHECK(cudaStreamSynchronize(s));
}

static void *worker(void *arg)
{
    (void)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < launches; i++) {
        launch((const void *)k, s);
        if (i % 2 == 0)
            thread_sync(s);
    }
    CHECK(cudaStreamDestroy(s));
    if (hold_ms)
        usleep((useconds_t)hold_ms * 1000);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 16;
    if (argc > 2)
        launches = atoi(argv[2]);
    if (argc > 3)
        hold_ms = atoi(argv[3]);
    if (threads < 1 || threads > THREADS_MAX)
        return 2;
    simcuda_set_kernel_ns((const void *)k, 0);
    pthread_t t[THREADS_MAX];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("threads16: done\n");
    return 0;
}
