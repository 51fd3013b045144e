/* sim/cudart_api.h: the macros of the files that define the simulated libcudart.so.13's
 * exports (sim/cudart.c, sim/cudart_ext.c): default visibility, a call counter per entry point
 * (simcuda_call_count), and the _ptsz/_ptds twin pairs. Included by those two files only. */
#ifndef SIM_CUDART_API_H
#define SIM_CUDART_API_H

#include "sim/cupti_core.h"
#include "sim/sim_internal.h"

#include <generated_cuda_runtime_api_meta.h> /* the params structs RT_ENTER fills */

#define SIM_API __attribute__((visibility("default")))

/* Counts the call of the enclosing entry point (named by __func__) for simcuda_call_count. */
#define ENTER()                                                             \
    static struct sim_counter counter_                                      \
        __attribute__((section("simcuda_counters"), used)) = {__func__, 0}; \
    sim_enter(&counter_)

/* The same for a query that needs no context (it leaves the primary context inactive) but
 * initializes the driver, as the real runtime's first call does (cuInit: devices, properties,
 * driver entry points). */
#define ENTER_QUERY()                                                       \
    static struct sim_counter counter_                                      \
        __attribute__((section("simcuda_counters"), used)) = {__func__, 0}; \
    sim_enter_query(&counter_)

/* The same for a call that never needs the driver (versions, error strings, the thread's last
 * error and capture mode): it leaves the driver uninitialized. */
#define ENTER_PURE()                                                        \
    static struct sim_counter counter_                                      \
        __attribute__((section("simcuda_counters"), used)) = {__func__, 0}; \
    sim_enter_pure(&counter_)

/* Defines an entry point and its twin whose stream 0 (or implied stream) is the calling
 * thread's per-thread default stream (suffix _ptsz, or _ptds for the stream-less forms). The
 * body sees `def`, which default stream it means. */
#define SIM_TWINS(name, suffix, params, ...)          \
    SIM_API cudaError_t name params                   \
    {                                                 \
        const sim_default_t def = SIM_DEF_LEGACY;     \
        (void)def;                                    \
        ENTER();                                      \
        __VA_ARGS__                                   \
    }                                                 \
    SIM_API cudaError_t name##suffix params           \
    {                                                 \
        const sim_default_t def = SIM_DEF_PER_THREAD; \
        (void)def;                                    \
        ENTER();                                      \
        __VA_ARGS__                                   \
    }

/* SIM_TWINS of an entry point whose name a macro gives (the name of a form that differs between
 * CUDA versions): expanded first, as SIM_TWINS pastes the name it is given as written. */
#define SIM_TWINS_OF(...) SIM_TWINS(__VA_ARGS__)

/* A runtime entry point traced for CUPTI (sim/cupti_core.c): RT_ENTER opens the call in the
 * runtime domain with its params struct (the real layout of generated_cuda_runtime_api_meta.h)
 * and RT_RETURN closes it with its return value. The device work inside goes through a traced
 * driver operation (sim/driver_core.c), so a runtime call nests a driver call, as with the real
 * runtime. RT_ENTER_TWIN picks the cbid of the plain entry point or of its _ptsz/_ptds twin. */
#define RT_ENTER(cbid, ptype, ...)                                                                \
    ptype rt_params_ = {__VA_ARGS__};                                                             \
    struct sim_trace rt_;                                                                         \
    sim_trace_enter(&rt_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##cbid, __func__, \
                    &rt_params_)
#define RT_ENTER_TWIN(cbid, twin_cbid, ptype, ...)                                \
    ptype rt_params_ = {__VA_ARGS__};                                             \
    struct sim_trace rt_;                                                         \
    sim_trace_enter(&rt_, CUPTI_CB_DOMAIN_RUNTIME_API,                            \
                    def == SIM_DEF_LEGACY ? CUPTI_RUNTIME_TRACE_CBID_##cbid       \
                                          : CUPTI_RUNTIME_TRACE_CBID_##twin_cbid, \
                    __func__, &rt_params_)
/* RT_ENTER_TWIN with both cbids named by one macro (expanded before RT_ENTER_TWIN pastes them). */
#define RT_ENTER_TWIN_OF(...) RT_ENTER_TWIN(__VA_ARGS__)
#define RT_RETURN(err)                      \
    do {                                    \
        cudaError_t rt_err_ = sim_ret(err); \
        sim_trace_exit(&rt_, &rt_err_);     \
        return rt_err_;                     \
    } while (0)

#endif
