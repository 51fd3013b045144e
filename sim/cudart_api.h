/* sim/cudart_api.h: the macros of the files that define the simulated libcudart.so.13's
 * exports (sim/cudart.c, sim/cudart_ext.c): default visibility, a call counter per entry point
 * (simcuda_call_count), and the _ptsz/_ptds twin pairs. Included by those two files only. */
#ifndef SIM_CUDART_API_H
#define SIM_CUDART_API_H

#include "sim/sim_internal.h"

#define SIM_API __attribute__((visibility("default")))

/* Counts the call of the enclosing entry point (named by __func__) for simcuda_call_count. */
#define ENTER()                                                                               \
    static struct sim_counter counter_ __attribute__((section("simcuda_counters"), used)) = \
        { __func__, 0 };                                                                      \
    sim_enter(&counter_)

/* The same for a query that needs no context (it leaves the primary context inactive) but
 * initializes the driver, as the real runtime's first call does (cuInit: devices, properties,
 * driver entry points). */
#define ENTER_QUERY()                                                                         \
    static struct sim_counter counter_ __attribute__((section("simcuda_counters"), used)) = \
        { __func__, 0 };                                                                      \
    sim_enter_query(&counter_)

/* The same for a call that never needs the driver (versions, error strings, the thread's last
 * error and capture mode): it leaves the driver uninitialized. */
#define ENTER_PURE()                                                                          \
    static struct sim_counter counter_ __attribute__((section("simcuda_counters"), used)) = \
        { __func__, 0 };                                                                      \
    sim_enter_pure(&counter_)

/* Defines an entry point and its twin whose stream 0 (or implied stream) is the calling
 * thread's per-thread default stream (suffix _ptsz, or _ptds for the stream-less forms). The
 * body sees `def`, which default stream it means. */
#define SIM_TWINS(name, suffix, params, ...)                                                 \
    SIM_API cudaError_t name params                                                         \
    {                                                                                         \
        const sim_default_t def = SIM_DEF_LEGACY;                                             \
        (void)def;                                                                            \
        ENTER();                                                                              \
        __VA_ARGS__                                                                           \
    }                                                                                         \
    SIM_API cudaError_t name##suffix params                                                 \
    {                                                                                         \
        const sim_default_t def = SIM_DEF_PER_THREAD;                                         \
        (void)def;                                                                            \
        ENTER();                                                                              \
        __VA_ARGS__                                                                           \
    }

/* SIM_TWINS of an entry point whose name a macro gives (the name of a form that differs between
 * CUDA versions): expanded first, as SIM_TWINS pastes the name it is given as written. */
#define SIM_TWINS_OF(...) SIM_TWINS(__VA_ARGS__)

#endif
