/* Unit tests: the stack and site tables from several threads (exact counts, deduplication,
 * per-thread caches), and their memory cap. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/record/sites.h"

#define THREADS 8
#define STACKS 50
#define DEPTH 24

static uintptr_t stacks[STACKS][DEPTH];

static void *hammer(void *arg)
{
    (void)arg;
    static _Thread_local struct site_cache cache;
    for (int i = 0; i < 1000; i++) {
        int k = i % STACKS;
        uint32_t api = (uint32_t)((i / STACKS) % 2);
        struct site *s = sites_lookup(&cache, api, stacks[k], DEPTH, false);
        if (!s)
            return (void *)1;
        site_add(s, 1, 10 + (uint64_t)k, 7);
    }
    return NULL;
}

static void test_threads_exact_counts(void **state)
{
    (void)state;
    sites_atfork_child(); /* a clean table */
    sites_init(16u << 20);
    for (int k = 0; k < STACKS; k++)
        for (int d = 0; d < DEPTH; d++)
            stacks[k][d] = 0x400000u + (uintptr_t)k * 0x1000 + (uintptr_t)d * 8;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, hammer, NULL);
    for (int i = 0; i < THREADS; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
    assert_int_equal(stacks_count(), STACKS);
    assert_int_equal(sites_count(), 2 * STACKS);
    struct site_info all[2 * STACKS + 1];
    size_t n = sites_snapshot(all, 2 * STACKS + 1);
    assert_int_equal(n, 2 * STACKS);
    for (size_t i = 0; i < n; i++) {
        const struct site_info *s = &all[i];
        int k = (int)((s->words[0] - 0x400000u) / 0x1000);
        assert_int_equal(s->depth, DEPTH);
        assert_int_equal(s->count, THREADS * 10);
        assert_int_equal(s->blocked_ns, (uint64_t)THREADS * 10 * (10 + k));
        assert_int_equal(s->max_ns, 10 + k);
    }
}

static void test_same_stack_two_apis_share_the_stack(void **state)
{
    (void)state;
    sites_atfork_child();
    sites_init(16u << 20);
    struct site_cache cache;
    memset(&cache, 0, sizeof cache);
    uintptr_t pcs[3] = {1, 2, 3};
    struct site *a = sites_lookup(&cache, 1, pcs, 3, false);
    struct site *b = sites_lookup(&cache, 2, pcs, 3, false);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_int_equal(site_stack_id(a), site_stack_id(b));
    assert_ptr_equal(sites_lookup(&cache, 1, pcs, 3, false), a);
    uintptr_t shorter[2] = {1, 2};
    struct site *c = sites_lookup(&cache, 1, shorter, 2, false);
    assert_ptr_not_equal(c, a);
    assert_int_equal(stacks_count(), 2);
    /* an empty stack (unwinding failed) is a site of its own */
    struct site *e = sites_lookup(&cache, 1, pcs, 0, false);
    assert_non_null(e);
    struct site_info ei;
    site_info(e, &ei);
    assert_int_equal(ei.depth, 0);
}

static void test_cap_refuses_new_stacks_keeps_old(void **state)
{
    (void)state;
    sites_atfork_child();
    sites_init(2u << 20);
    struct site_cache cache;
    memset(&cache, 0, sizeof cache);
    uintptr_t pcs[256];
    for (int d = 0; d < 256; d++)
        pcs[d] = 0x1000 + (uintptr_t)d;
    struct site *first = sites_lookup(&cache, 0, pcs, 256, true);
    assert_non_null(first);
    struct site_info fi;
    site_info(first, &fi);
    assert_true(fi.truncated);
    int refused = 0;
    for (uintptr_t i = 1; i < 100000 && !refused; i++) {
        pcs[0] = 0x100000 + i;
        if (!sites_lookup(&cache, 0, pcs, 256, false))
            refused = 1;
    }
    assert_true(refused);
    size_t before = sites_count();
    pcs[0] = 0x1000;
    memset(&cache, 0, sizeof cache);
    assert_ptr_equal(sites_lookup(&cache, 0, pcs, 256, true), first);
    assert_int_equal(sites_count(), before);
}

/* A loop's sync sites stay in the thread's cache together: after site A, each of 256 other
 * sites B is looked up, and both A and B are then found in the cache, without the table. A
 * direct-mapped cache of 64 slots lost A to a few of them (issue 36 item 4: a sync a step paid
 * the table's lock); two ways keep both. */
static void test_cache_keeps_two_sites_that_share_a_set(void **state)
{
    (void)state;
    sites_atfork_child();
    sites_init(16u << 20);
    static uintptr_t a[DEPTH], b[DEPTH];
    for (int d = 0; d < DEPTH; d++)
        a[d] = 0x700000u + (uintptr_t)d * 8;
    int lost = 0;
    for (int k = 0; k < 256; k++) {
        struct site_cache cache;
        memset(&cache, 0, sizeof cache);
        for (int d = 0; d < DEPTH; d++)
            b[d] = 0x900000u + (uintptr_t)k * 0x1000 + (uintptr_t)d * 8;
        struct site *sa = sites_lookup(&cache, 0, a, DEPTH, false);
        struct site *sb = sites_lookup(&cache, 0, b, DEPTH, false);
        assert_non_null(sa);
        assert_non_null(sb);
        assert_ptr_equal(sites_cached(&cache, 0, b, DEPTH), sb);
        lost += sites_cached(&cache, 0, a, DEPTH) != sa;
    }
    assert_int_equal(lost, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_exact_counts),
        cmocka_unit_test(test_same_stack_two_apis_share_the_stack),
        cmocka_unit_test(test_cap_refuses_new_stacks_keeps_old),
        cmocka_unit_test(test_cache_keeps_two_sites_that_share_a_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
