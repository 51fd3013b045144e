/* entry/real.h: the one table of real symbols (heaptrack's HOOK(name, Required|Optional),
 * uftrace's single resolver): every function the entry layer forwards to or calls, named once,
 * with where it is found and whether its user can run without it. The CUDA runtime's are found
 * lazily (libcudart may be loaded after the agent, and with RTLD_LOCAL as Python extension
 * modules load it, where dlsym(RTLD_NEXT) cannot see it: the loaded objects are searched then),
 * libc's at load, libcupti's when entry/cupti_load.c loads it. Never one of syncspy's own
 * definitions. The fast path is one relaxed load of a cached pointer. */
#ifndef SYNCSPY_REAL_H
#define SYNCSPY_REAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent/record/apis.h"

/* Where a real symbol is found. */
enum real_where {
    REAL_CUDART, /* the runtime in use: the next definition, else a loaded libcudart.so* */
    REAL_DRIVER, /* the loaded libcuda.so.1 (syncspy loads it only as entry/cuda_driver.h says) */
    REAL_LIBC,   /* the next definition after syncspy's own (libc's), resolved at load */
    REAL_CUPTI,  /* the libcupti entry/cupti_load.c loaded (real_bind_cupti) */
};

/* REQUIRED: its user cannot run without it (an interposed function answers as the missing
 * library would: cudaErrorSharedObjectSymbolNotFound, ENOSYS; a libcupti without it is refused).
 * OPTIONAL: a feature goes without it. */
enum real_need { REAL_REQUIRED, REAL_OPTIONAL };

/* Every interposed CUDA entry point (agent/record/apis.h) is REAL_CUDART and REQUIRED, with its API id
 * as its id. The others, X(name, where, need): */
#define REAL_SYMBOLS(X)                                                                       \
    X(cudaPointerGetAttributes, REAL_CUDART, REAL_OPTIONAL) /* copy rules; unknown without */ \
    X(cuPointerGetAttribute, REAL_DRIVER, REAL_OPTIONAL)    /* the same, for CUPTI's calls */ \
    X(cuDeviceGetCount, REAL_DRIVER, REAL_OPTIONAL)         /* entry/cuda_driver.c */         \
    X(cuDriverGetVersion, REAL_DRIVER, REAL_OPTIONAL)                                         \
    X(sigaction, REAL_LIBC, REAL_REQUIRED) /* entry/signals.c */                              \
    X(signal, REAL_LIBC, REAL_REQUIRED)                                                       \
    X(bsd_signal, REAL_LIBC, REAL_OPTIONAL)                                                   \
    X(sysv_signal, REAL_LIBC, REAL_OPTIONAL)                                                  \
    X(__sysv_signal, REAL_LIBC, REAL_OPTIONAL) /* signal() under -std=c99 */                  \
    X(sigset, REAL_LIBC, REAL_OPTIONAL)                                                       \
    X(dlclose, REAL_LIBC, REAL_REQUIRED) /* entry/dlclose.c, own handles */                   \
    X(dlopen, REAL_LIBC, REAL_REQUIRED)  /* entry/dlopen.c */                                 \
    X(_exit, REAL_LIBC, REAL_REQUIRED)   /* entry/exit.c */                                   \
    X(_Exit, REAL_LIBC, REAL_REQUIRED)                                                        \
    X(cuptiSubscribe, REAL_CUPTI, REAL_REQUIRED) /* entry/cupti.c */                          \
    X(cuptiSubscribe_v2, REAL_CUPTI, REAL_OPTIONAL)                                           \
    X(cuptiUnsubscribe, REAL_CUPTI, REAL_REQUIRED)                                            \
    X(cuptiEnableCallback, REAL_CUPTI, REAL_REQUIRED)                                         \
    X(simcupti_runs_without_driver, REAL_CUPTI, REAL_OPTIONAL) /* the simulator's: sim/ */    \
    X(cuptiGetVersion, REAL_CUPTI, REAL_OPTIONAL) /* SYNCSPY_GPU=1: collectors/gpu.c */       \
    X(cuptiGetTimestamp, REAL_CUPTI, REAL_OPTIONAL)                                           \
    X(cuptiActivityEnable, REAL_CUPTI, REAL_OPTIONAL)                                         \
    X(cuptiActivityDisable, REAL_CUPTI, REAL_OPTIONAL)                                        \
    X(cuptiActivityRegisterCallbacks, REAL_CUPTI, REAL_OPTIONAL)                              \
    X(cuptiActivityFlushAll, REAL_CUPTI, REAL_OPTIONAL)                                       \
    X(cuptiActivityGetNextRecord, REAL_CUPTI, REAL_OPTIONAL)                                  \
    X(cuptiActivityGetNumDroppedRecords, REAL_CUPTI, REAL_OPTIONAL)

enum real_id {
    REAL_BEFORE_EXTRA = API_COUNT - 1,
#define X(name, where, need) REAL_##name,
    REAL_SYMBOLS(X)
#undef X
        REAL_COUNT
};

extern void *_Atomic real_fns[REAL_COUNT];

/* Slow path: finds and caches symbol id (REAL_CUPTI ones only come from real_bind_cupti); NULL
 * when nothing defines it. */
void *real_resolve(int id);

static inline void *real_get(int id)
{
    void *p = atomic_load_explicit(&real_fns[id], memory_order_relaxed);
    return __builtin_expect(p != NULL, 1) ? p : real_resolve(id);
}

/* What is cached, without looking again (NULL: not resolved, or not there). */
static inline void *real_cached(int id)
{
    return atomic_load_explicit(&real_fns[id], memory_order_relaxed);
}

/* After a dlclose: the CUDA runtime and driver symbols whose object was unloaded (a library
 * loaded with RTLD_LOCAL took its libcudart with it) are forgotten, to be found again at their
 * next use; calling them would jump into whatever the program mapped there since. */
void real_forget_unloaded(void);

/* At load: every REAL_LIBC symbol. */
void real_resolve_at_load(void);

/* Binds every REAL_CUPTI symbol from a libcupti handle; false, with nothing bound, when a
 * REQUIRED one is missing (it is not a CUPTI library). */
bool real_bind_cupti(void *handle);

/* The bound REAL_CUPTI symbol of that name; NULL when unbound or not in the table. The GPU
 * collector asks for its activity functions through this (collectors/gpu.h). */
void *real_cupti_symbol(const char *name);

/* The definition of name that the code at caller would reach without syncspy: its own object's
 * dependency tree first (a library that links libcupti), then the global scope after syncspy,
 * then the bound libcupti. Not cached: it depends on the caller. For the CUPTI calls of another
 * tool, which entry/cupti.c forwards after stepping aside. */
void *real_next_for_caller(const char *name, const void *caller);

/* True when fn lies in syncspy's own object (it is never forwarded to). */
bool real_is_ours(const void *fn);

#endif
