/* tests/progs/shares.c: 8 threads sync at once in every step while the main thread marks the
 * steps: per step, each worker waits 20 ms in cudaStreamSynchronize (a 20 ms kernel on its own
 * stream) and the main thread 5 ms in its own (a 5 ms kernel), then the workers meet the main
 * thread at a barrier and it calls syncspy_step(). 8 x 20 ms of the workers' blocked time falls
 * in a step of about 20 ms: summed over threads it is 800 % of the step; the main thread's own
 * share is about 25 %. */
#include "common.h"
#include <pthread.h>

#define NTHREADS 8
#define STEPS 5

static void k_worker(void) {}
static void k_main(void) {}
static pthread_barrier_t start, done;

__attribute__((noinline)) void worker_wait(cudaStream_t s)
{
    launch((const void *)k_worker, s);
    CHECK(cudaStreamSynchronize(s));
}

static void *worker(void *arg)
{
    (void)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < STEPS; i++) {
        pthread_barrier_wait(&start);
        worker_wait(s);
        pthread_barrier_wait(&done);
    }
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

__attribute__((noinline)) void main_wait(cudaStream_t s)
{
    launch((const void *)k_main, s);
    CHECK(cudaStreamSynchronize(s));
}

int main(void)
{
    simcuda_set_kernel_ns((const void *)k_worker, 20 * MS);
    simcuda_set_kernel_ns((const void *)k_main, 5 * MS);
    pthread_barrier_init(&start, NULL, NTHREADS + 1);
    pthread_barrier_init(&done, NULL, NTHREADS + 1);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    mark_step(); /* start-up ends: the steps below are the training steps */
    for (int i = 0; i < STEPS; i++) {
        pthread_barrier_wait(&start);
        main_wait(s);
        pthread_barrier_wait(&done);
        mark_step();
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    printf("shares: done\n");
    return 0;
}
