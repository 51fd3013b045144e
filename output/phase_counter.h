/* output/phase_counter.h: a sync counter that also knows how much of it belongs to start-up (step 0, from
 * the process's start to the first step mark) and to the last step it saw (at exit: the step
 * still open, left out of per-step rates). Lock-free, for the recording path: a site's counters
 * (agent/record/sites.c) and a thread's (agent/record/threads.c). Exact but in one race: when two threads make
 * a site's first sync of a step at the same instant, one of them may be counted in the step
 * before. */
#ifndef SYNCSPY_PHASE_H
#define SYNCSPY_PHASE_H

#include <stdatomic.h>
#include <stdint.h>

#include "output/model.h"

struct phase_counter {
    _Atomic uint64_t count, ns;                 /* every sync */
    _Atomic uint64_t startup_count, startup_ns; /* those of step 0 */
    _Atomic uint64_t step;                      /* the step of the latest sync, + 1 (0: none) */
    _Atomic uint64_t base_count, base_ns;       /* count and ns when that step began here */
};

static inline void phase_add(struct phase_counter *p, uint64_t step, uint64_t ns)
{
    uint64_t c = atomic_fetch_add_explicit(&p->count, 1, memory_order_relaxed);
    uint64_t t = atomic_fetch_add_explicit(&p->ns, ns, memory_order_relaxed);
    if (step == 0) {
        atomic_fetch_add_explicit(&p->startup_count, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->startup_ns, ns, memory_order_relaxed);
    }
    uint64_t seen = atomic_load_explicit(&p->step, memory_order_relaxed);
    if (seen != step + 1 &&
        atomic_compare_exchange_strong_explicit(&p->step, &seen, step + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        atomic_store_explicit(&p->base_count, c, memory_order_relaxed);
        atomic_store_explicit(&p->base_ns, t, memory_order_relaxed);
    }
}

/* What the counter kept, for rep_split_of (output/model.h). */
static inline struct rep_phase_raw phase_raw(const struct phase_counter *p)
{
    return (struct rep_phase_raw){
        .count = atomic_load_explicit(&p->count, memory_order_relaxed),
        .ns = atomic_load_explicit(&p->ns, memory_order_relaxed),
        .startup_count = atomic_load_explicit(&p->startup_count, memory_order_relaxed),
        .startup_ns = atomic_load_explicit(&p->startup_ns, memory_order_relaxed),
        .seen_step = atomic_load_explicit(&p->step, memory_order_relaxed),
        .base_count = atomic_load_explicit(&p->base_count, memory_order_relaxed),
        .base_ns = atomic_load_explicit(&p->base_ns, memory_order_relaxed)};
}

#endif
