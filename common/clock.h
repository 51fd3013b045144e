/* common/clock.h: the two clocks every record uses, read through the vDSO (no syscall, no lock):
 * CLOCK_MONOTONIC for durations and ordering, CLOCK_REALTIME only to place a process on the
 * wall clock. Inline, no state. */
#ifndef SYNCSPY_CLOCK_H
#define SYNCSPY_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t clock_real_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#endif
