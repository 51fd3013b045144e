/* Unit tests: the per-thread SPSC rings under concurrency (run in the TSan build too): every
 * record pushed is either drained once, in order, or counted as dropped; wraparound of a small
 * ring many times over. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/record/ring.h"

#define PRODUCERS 4
#define PER_PRODUCER 200000
#define CAPACITY 64

static struct ring *rings[PRODUCERS];
static _Atomic int producers_done;

static struct ring *ring_new(uint64_t capacity)
{
    void *p = NULL;
    assert_int_equal(
        posix_memalign(&p, 64, sizeof(struct ring) + capacity * sizeof(struct tw_event)), 0);
    struct ring *r = p;
    memset(r, 0, sizeof *r);
    r->mask = capacity - 1;
    return r;
}

/* The first half waits for room (so the ring wraps around many times whatever the
 * scheduler does); the second half pushes blindly and counts drops. */
static void *producer(void *arg)
{
    struct ring *r = arg;
    for (uint64_t i = 1; i <= PER_PRODUCER; i++) {
        struct tw_event rec = {.t0 = i, .kind = (i % 3) ? TW_SYNC : TW_LAUNCH};
        if (i <= PER_PRODUCER / 2)
            while (atomic_load(&r->head) - atomic_load(&r->tail) > r->mask)
                sched_yield();
        ring_push(r, &rec);
    }
    atomic_fetch_add(&producers_done, 1);
    return NULL;
}

struct seen {
    uint64_t last, count;
};

static void drain_all(struct seen *seen)
{
    struct tw_event buf[32];
    for (int p = 0; p < PRODUCERS; p++) {
        uint32_t n;
        while ((n = ring_drain(rings[p], buf, 32)) > 0)
            for (uint32_t i = 0; i < n; i++) {
                /* in order, each at most once */
                assert_true(buf[i].t0 > seen[p].last);
                seen[p].last = buf[i].t0;
                seen[p].count++;
            }
    }
}

static void test_concurrent_drain_counts(void **state)
{
    (void)state;
    pthread_t t[PRODUCERS];
    for (int p = 0; p < PRODUCERS; p++) {
        rings[p] = ring_new(CAPACITY);
        pthread_create(&t[p], NULL, producer, rings[p]);
    }
    struct seen seen[PRODUCERS] = {0};
    while (atomic_load(&producers_done) < PRODUCERS)
        drain_all(seen);
    drain_all(seen);
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(t[p], NULL);
        uint64_t dropped =
            atomic_load(&rings[p]->dropped_syncs) + atomic_load(&rings[p]->dropped_launches);
        assert_int_equal(seen[p].count + dropped, PER_PRODUCER);
        /* the ring wrapped many times over, and nothing was dropped while there was room */
        assert_true(seen[p].count >= PER_PRODUCER / 2);
        assert_true(dropped <= PER_PRODUCER / 2);
        assert_true(ring_empty(rings[p]));
        free(rings[p]);
    }
}

static void test_full_ring_drops_and_counts_by_kind(void **state)
{
    (void)state;
    struct ring *r = ring_new(8);
    for (uint64_t i = 0; i < 8; i++)
        assert_true(ring_push(r, &(struct tw_event){.t0 = i, .kind = TW_SYNC}));
    assert_false(ring_push(r, &(struct tw_event){.t0 = 8, .kind = TW_SYNC}));
    assert_false(ring_push(r, &(struct tw_event){.t0 = 9, .kind = TW_LAUNCH}));
    assert_false(ring_push(r, &(struct tw_event){.t0 = 10, .kind = TW_LAUNCH}));
    assert_int_equal(atomic_load(&r->dropped_syncs), 1);
    assert_int_equal(atomic_load(&r->dropped_launches), 2);
    struct tw_event out[16];
    assert_int_equal(ring_drain(r, out, 3), 3);
    assert_int_equal(out[0].t0, 0);
    assert_true(ring_push(r, &(struct tw_event){.t0 = 11, .kind = TW_SYNC}));
    assert_int_equal(ring_drain(r, out, 16), 6);
    assert_int_equal(out[0].t0, 3);
    assert_int_equal(out[5].t0, 11);
    assert_true(ring_empty(r));
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_drain_counts),
        cmocka_unit_test(test_full_ring_drops_and_counts_by_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
