/* agent/ring.h: a per-thread single-producer single-consumer ring of fixed-size event records.
 * The producer is the application's thread inside a CUDA call (no lock, no syscall, no
 * allocation: a full ring drops the record and counts it, never blocks); the consumer is the
 * flusher thread. */
#ifndef SYNCSPY_RING_H
#define SYNCSPY_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum ring_kind { RING_SYNC = 1, RING_LAUNCH = 2 };

struct ring_rec { /* 64 bytes: one cache line */
    uint64_t t0;       /* sync: start; launch: time */
    uint64_t t1;       /* sync: end */
    uint64_t stream;
    uint64_t arg;      /* sync: bytes; launch: the kernel's host function / handle */
    uint64_t step;
    uint32_t stack_id; /* sync */
    uint32_t tid;
    uint16_t api;      /* enum api_id */
    uint8_t kind;      /* enum ring_kind */
    uint8_t dir;       /* enum copy_dir */
    uint32_t pad[3];
};
_Static_assert(sizeof(struct ring_rec) == 64, "ring record size");

struct ring {
    _Atomic uint64_t head;           /* next slot the producer writes */
    char pad0[56];
    _Atomic uint64_t tail;           /* next slot the consumer reads */
    char pad1[56];
    _Atomic uint64_t dropped_syncs;  /* records that found the ring full */
    _Atomic uint64_t dropped_launches;
    uint64_t mask;                   /* capacity - 1 (capacity a power of two) */
    struct ring_rec recs[];
};

/* Producer side: true when the record was stored. */
static inline bool ring_push(struct ring *r, const struct ring_rec *rec)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (h - t > r->mask) {
        atomic_fetch_add_explicit(rec->kind == RING_SYNC ? &r->dropped_syncs : &r->dropped_launches, 1,
                                  memory_order_relaxed);
        return false;
    }
    r->recs[h & r->mask] = *rec;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return true;
}

/* Consumer side: copies at most max records into out; returns how many. */
static inline uint32_t ring_drain(struct ring *r, struct ring_rec *out, uint32_t max)
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
