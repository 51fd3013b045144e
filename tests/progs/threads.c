/* tests/progs/threads.c: syncs from non-main threads. NTHREADS workers each run worker_sync
 * ITER times (a 2 ms kernel on its own stream, then cudaStreamSynchronize), and launch 100
 * kernels each. The main thread makes no sync of its own. */
#include "common.h"
#include <pthread.h>

#define NTHREADS 4
#define ITER 5

static void k_work(void) {}
static void k_zero(void) {}

__attribute__((noinline)) void worker_sync(cudaStream_t s)
{
    launch((const void *)k_work, s);
    CHECK(cudaStreamSynchronize(s));
}

static void *worker(void *arg)
{
    (void)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < 100; i++)
        launch((const void *)k_zero, s);
    for (int i = 0; i < ITER; i++)
        worker_sync(s);
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(void)
{
    simcuda_set_kernel_ns((const void *)k_work, 2 * MS);
    simcuda_set_kernel_ns((const void *)k_zero, 0);
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads: done\n");
    return 0;
}
