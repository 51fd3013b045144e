/* shim/real.h: the real CUDA functions behind the interposed ones, found once and cached.
 * libcudart may be loaded after the agent and with RTLD_LOCAL (as Python extension modules
 * are), where dlsym(RTLD_NEXT) cannot see it; the resolver then finds it among the loaded
 * objects. The fast path is one relaxed load of a cached pointer. */
#ifndef SYNCSPY_REAL_H
#define SYNCSPY_REAL_H

#include <stdatomic.h>
#include <stddef.h>
#include "agent/apis.h"

/* Extra functions the shim calls but does not interpose. */
enum real_extra { REAL_cudaPointerGetAttributes = API_COUNT, REAL_COUNT };

extern void *_Atomic real_fns[REAL_COUNT];

/* Slow path: resolves and caches; NULL when no libcudart defines it. */
void *real_resolve(int id, const char *name);

static inline void *real_get(int id, const char *name)
{
    void *p = atomic_load_explicit(&real_fns[id], memory_order_relaxed);
    return __builtin_expect(p != NULL, 1) ? p : real_resolve(id, name);
}

#endif
