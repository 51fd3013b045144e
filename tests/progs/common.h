/* tests/progs/common.h: helpers for the end-to-end target programs. They run with or without
 * the agent: syncspy_step is looked up at run time. */
#ifndef PROGS_COMMON_H
#define PROGS_COMMON_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "simcuda.h"

#define MS 1000000ull

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)e_); \
            exit(99);                                                                \
        }                                                                            \
    } while (0)

/* Looked up once: dlsym takes the loader's lock, and a program whose signal handler calls
 * exit() must not be interrupted holding it in every step (exit() takes it too). */
static inline void mark_step(void)
{
    static void (*step)(void);
    static int looked;
    if (!looked) {
        step = (void (*)(void))dlsym(RTLD_DEFAULT, "syncspy_step");
        looked = 1;
    }
    if (step)
        step();
}

/* A kernel "launch" on the simulated device: func is any host address naming the kernel. */
static inline void launch(const void *func, cudaStream_t stream)
{
    dim3 one = {1, 1, 1};
    CHECK(cudaLaunchKernel(func, one, one, NULL, 0, stream));
}

/* Fork quiescence, for a sanitizer's run only (HARM_FORK_QUIESCE=1, set by the e2e tests of an
 * ASan build): GCC 12's libasan keeps no allocator lock across fork(), so a child forked while
 * another thread of the program frees may hang in its first malloc, with the agent or without.
 * Then the program's worker threads park at a loop boundary (fork_quiet_point) from the fork's
 * prepare handler to its parent or child handler; otherwise nothing of this runs and the fork
 * comes wherever the threads are. A worker calls fork_quiet_enter first and fork_quiet_leave
 * last; main calls fork_quiet_install before starting them, after its first CUDA call (fork
 * handlers run newest first: these must park the threads before the simulator's, registered at
 * its first use, take its locks). */
static struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool on, pausing;
    int active, parked;
} fork_quiet = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0, 0};

static inline void fork_quiet_prepare(void)
{
    pthread_mutex_lock(&fork_quiet.m);
    fork_quiet.pausing = true;
    while (fork_quiet.parked < fork_quiet.active)
        pthread_cond_wait(&fork_quiet.c, &fork_quiet.m);
    pthread_mutex_unlock(&fork_quiet.m);
}

static inline void fork_quiet_parent(void)
{
    pthread_mutex_lock(&fork_quiet.m);
    fork_quiet.pausing = false;
    pthread_cond_broadcast(&fork_quiet.c);
    pthread_mutex_unlock(&fork_quiet.m);
}

static inline void fork_quiet_child(void) /* the workers are the parent's */
{
    pthread_mutex_init(&fork_quiet.m, NULL);
    pthread_cond_init(&fork_quiet.c, NULL);
    fork_quiet.pausing = false;
    fork_quiet.active = fork_quiet.parked = 0;
}

static inline void fork_quiet_install(void)
{
    const char *v = getenv("HARM_FORK_QUIESCE");
    fork_quiet.on = v && *v == '1';
    if (fork_quiet.on)
        pthread_atfork(fork_quiet_prepare, fork_quiet_parent, fork_quiet_child);
}

static inline void fork_quiet_count(int delta)
{
    if (!fork_quiet.on)
        return;
    pthread_mutex_lock(&fork_quiet.m);
    fork_quiet.active += delta;
    pthread_cond_broadcast(&fork_quiet.c);
    pthread_mutex_unlock(&fork_quiet.m);
}

static inline void fork_quiet_enter(void)
{
    fork_quiet_count(1);
}

static inline void fork_quiet_leave(void)
{
    fork_quiet_count(-1);
}

static inline void fork_quiet_point(void)
{
    if (!fork_quiet.on)
        return;
    pthread_mutex_lock(&fork_quiet.m);
    if (fork_quiet.pausing) {
        fork_quiet.parked++;
        pthread_cond_broadcast(&fork_quiet.c);
        while (fork_quiet.pausing)
            pthread_cond_wait(&fork_quiet.c, &fork_quiet.m);
        fork_quiet.parked--;
    }
    pthread_mutex_unlock(&fork_quiet.m);
}

#endif
