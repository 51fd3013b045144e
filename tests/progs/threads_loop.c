/* tests/progs/threads_loop.c STEPS: a training loop whose syncs come from three named threads, each
 * on lines of its own (for `syncspy top`'s thread view). Per step: the main thread ("trainer")
 * syncs once in trainer_sync() (1 ms kernel), worker "loader" twice in loader_sync() (2 ms each)
 * and worker "engine" three times in engine_sync() (1 ms each), then they meet at a barrier
 * and the main thread marks the step. A start-up sync before the first mark. Prints "ready"
 * (flushed) after 5 steps; STEPS 0 (the default): runs until it is killed. */
#include "common.h"
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static void k1(void) {}
static void k2(void) {}
static pthread_barrier_t start, done;
static volatile int stopping;

__attribute__((noinline)) void loader_sync(cudaStream_t s)
{
    launch((const void *)k2, s);
    CHECK(cudaStreamSynchronize(s));
}

__attribute__((noinline)) void engine_sync(cudaStream_t s)
{
    launch((const void *)k1, s);
    CHECK(cudaStreamSynchronize(s));
}

__attribute__((noinline)) void trainer_sync(cudaStream_t s)
{
    launch((const void *)k1, s);
    CHECK(cudaStreamSynchronize(s));
}

__attribute__((noinline)) void startup_sync(cudaStream_t s)
{
    launch((const void *)k1, s);
    CHECK(cudaStreamSynchronize(s));
}

static void *worker(void *arg)
{
    const char *name = arg;
    pthread_setname_np(pthread_self(), name);
    bool loader = !strcmp(name, "loader");
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (;;) {
        pthread_barrier_wait(&start);
        if (stopping)
            break;
        for (int i = 0; i < (loader ? 2 : 3); i++)
            loader ? loader_sync(s) : engine_sync(s);
        pthread_barrier_wait(&done);
    }
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 0;
    pthread_setname_np(pthread_self(), "trainer");
    simcuda_set_kernel_ns((const void *)k1, 1 * MS);
    simcuda_set_kernel_ns((const void *)k2, 2 * MS);
    pthread_barrier_init(&start, NULL, 3);
    pthread_barrier_init(&done, NULL, 3);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    pthread_t t[2];
    pthread_create(&t[0], NULL, worker, "loader");
    pthread_create(&t[1], NULL, worker, "engine");
    startup_sync(s);
    mark_step(); /* start-up ends: the steps below are the training steps */
    for (long i = 0; steps == 0 || i < steps; i++) {
        pthread_barrier_wait(&start);
        trainer_sync(s);
        pthread_barrier_wait(&done);
        mark_step();
        if (i + 1 == 5) {
            printf("ready\n");
            fflush(stdout);
        }
    }
    stopping = 1;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("threads_loop: done\n");
    return 0;
}
