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
#include "tests/fork_quiet.h"

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

/* Fork quiescence under ASan (HARM_FORK_QUIESCE=1, set by the e2e tests of an ASan build):
 * tests/fork_quiet.h. */
static inline void fork_quiet_install(void)
{
    const char *v = getenv("HARM_FORK_QUIESCE");
    fork_quiet_start(v && *v == '1');
}

#endif
