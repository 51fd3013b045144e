/* agent/record/step_now.h: what the recording paths see of the training step: whether the
 * schedule records it, its number, and its syncs so far. The steps (agent/step/steps.c) write
 * them at each boundary, under their step lock; every thread's recording path reads them and
 * adds to the counts without a lock: two relaxed loads and two relaxed adds per sync. */
#ifndef SYNCSPY_STEP_NOW_H
#define SYNCSPY_STEP_NOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

extern _Atomic bool steps_active;  /* the current step is recorded */
extern _Atomic uint64_t steps_now; /* its number */

/* The open step's syncs, taken and cleared by the steps at its boundary. */
struct step_open_counts {
    _Atomic uint64_t syncs, blocked_ns;
};
extern struct step_open_counts step_open;

/* A sync of the current (active) step. */
static inline void steps_add_sync(uint64_t blocked_ns)
{
    atomic_fetch_add_explicit(&step_open.syncs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&step_open.blocked_ns, blocked_ns, memory_order_relaxed);
}

#endif
