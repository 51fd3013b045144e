/* tests/progs/threads16.c: 16 threads syncing and launching at once. Each thread: 5000
 * launches of a 0 ns kernel and, after every other one, a sync in thread_sync()
 * (cudaStreamSynchronize on its own non-blocking stream): 2500 syncs. With a tiny
 * SYNCSPY_BUFFER_MB the rings overflow. */
#include "common.h"
#include <pthread.h>

#define THREADS 16
#define LAUNCHES 5000

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
    for (int i = 0; i < LAUNCHES; i++) {
        launch((const void *)k, s);
        if (i % 2 == 0)
            thread_sync(s);
    }
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(void)
{
    simcuda_set_kernel_ns((const void *)k, 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads16: done\n");
    return 0;
}
