/* agent/record/ring.h: a per-thread single-producer single-consumer ring of fixed-size event records
 * (struct tw_event, the trace encoder's own input: a drain is a copy). The producer is the
 * application's thread inside a CUDA call (no lock, no syscall, no allocation: a full ring drops
 * the record and counts it, never blocks); the consumer is the flusher thread. */
#ifndef SYNCSPY_RING_H
#define SYNCSPY_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "output/trace_writer.h" /* struct tw_event: what the flusher hands over as it is */

struct ring {
    _Atomic uint64_t head; /* next slot the producer writes */
    char pad0[56];
    _Atomic uint64_t tail; /* next slot the consumer reads */
    char pad1[56];
    _Atomic uint64_t dropped_syncs; /* records that found the ring full */
    _Atomic uint64_t dropped_launches;
    uint64_t mask; /* capacity - 1 (capacity a power of two) */
    struct tw_event recs[];
};

/* Producer side: true when the record was stored. */
static inline bool ring_push(struct ring *r, const struct tw_event *rec)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h - t > r->mask) {
        atomic_fetch_add_explicit(rec->kind == TW_SYNC ? &r->dropped_syncs : &r->dropped_launches,
                                  1, memory_order_relaxed);
        return false;
    }
    r->recs[h & r->mask] = *rec;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return true;
}

/* Consumer side: copies at most max records into out; returns how many. */
static inline uint32_t ring_drain(struct ring *r, struct tw_event *out, uint32_t max)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint32_t n = 0;
    while (t != h && n < max)
        out[n++] = r->recs[t++ & r->mask];
    atomic_store_explicit(&r->tail, t, memory_order_release);
    return n;
}

static inline bool ring_empty(struct ring *r)
{
    return atomic_load_explicit(&r->tail, memory_order_relaxed) ==
           atomic_load_explicit(&r->head, memory_order_acquire);
}

#endif
