/* Unit tests: the validated stack cache (collectors/stack_cache.c) and its CFI reader
 * (collectors/cfi.c). Every capture, from many call paths (recursion of varying depths, alloca
 * frames, frames with and without frame pointers, a signal handler on an alternate stack, the
 * same depth through different callers, longjmp, threads), must return exactly libunwind's list
 * taken through the same call; a stack seen before must come from the cache. */
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/cfi.h"
#include "collectors/native_stack.h"
#include "collectors/stack_cache.h"

#define LIMIT 80 /* SYNCSPY_MAX_DEPTH's default and the agent's slack */
#define NOINLINE __attribute__((noinline))
#define KEEP() __asm__ volatile("" ::: "memory") /* no tail call, no merging */

static struct stack_cache_stats stats_now(void)
{
    struct stack_cache_stats s;
    stack_cache_stats(&s);
    return s;
}

/* The capture at this point against libunwind's list from the same call: equal, entry for entry.
 * Returns the count (async-signal-safe apart from a failure's message). */
static NOINLINE int check_limit(int limit)
{
    void *raw[NATIVE_STACK_RAW_MAX], *ref[NATIVE_STACK_RAW_MAX];
    int nref = -2;
    int n = native_stack_test_raw(raw, ref, &nref, limit);
    if (n != nref)
        fail_msg("capture: %d frames, libunwind: %d", n, nref);
    for (int i = 0; i < n; i++)
        if (raw[i] != ref[i])
            fail_msg("frame %d of %d: %p, libunwind %p", i, n, raw[i], ref[i]);
    assert_true(n > 3);
    KEEP();
    return n;
}

static NOINLINE int check(void)
{
    int n = check_limit(LIMIT);
    KEEP();
    return n;
}

/* ---- call paths ----------------------------------------------------------------------------- */

static NOINLINE int recurse(int depth)
{
    int n = depth <= 0 ? check() : recurse(depth - 1);
    KEEP();
    return n;
}

static NOINLINE int recurse_limit(int depth, int limit)
{
    int n = depth <= 0 ? check_limit(limit) : recurse_limit(depth - 1, limit);
    KEEP();
    return n;
}

/* An RBP-based CFA (alloca), the block's size varying. */
static NOINLINE int with_alloca(size_t size)
{
    volatile char *p = alloca(size);
    p[0] = 1;
    p[size - 1] = 2;
    int n = check();
    KEEP();
    return n + p[0] - 1;
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static int with_fp(int d)
{
    int n = d <= 0 ? with_alloca(64) : with_fp(d - 1);
    KEEP();
    return n;
}

__attribute__((noinline, optimize("omit-frame-pointer"))) static int without_fp(int d)
{
    int n = d <= 0 ? check() : without_fp(d - 1);
    KEEP();
    return n;
}

/* The same depth (the same rsp at the capture) through different callers. */
static NOINLINE int middle(void)
{
    int n = check();
    KEEP();
    return n;
}

static NOINLINE int caller_a(void)
{
    int n = middle();
    KEEP();
    return n + 1;
}

static NOINLINE int caller_b(void)
{
    int n = middle();
    KEEP();
    return n + 2;
}

/* ---- tests ---------------------------------------------------------------------------------- */

/* The cache's counts over body (the calling thread's). */
static struct stack_cache_stats counted(void (*body)(void))
{
    struct stack_cache_stats a = stats_now();
    body();
    struct stack_cache_stats b = stats_now();
    return (struct stack_cache_stats){b.hits - a.hits, b.misses - a.misses,
                                      b.uncacheable - a.uncacheable};
}

/* body's captures, all exact (check), hit the cache at least hits times. */
static void expect_hits(void (*body)(void), uint64_t hits)
{
    struct stack_cache_stats d = counted(body);
    if (STACK_CACHE_BUILT && d.hits < hits)
        fail_msg("%llu hits (%llu misses, %llu uncacheable), expected %llu at least",
                 (unsigned long long)d.hits, (unsigned long long)d.misses,
                 (unsigned long long)d.uncacheable, (unsigned long long)hits);
}

/* The loops below count with volatile counters: an unrolled loop has a call site per round. */
static void same_site(void)
{
    for (volatile int i = 0; i < 10; i++)
        recurse(5);
}

static void test_same_site_hits(void **state)
{
    (void)state;
    struct stack_cache_stats d = counted(same_site);
    assert_int_equal(d.hits, STACK_CACHE_BUILT ? 8 : 0); /* walked on its second miss */
    assert_int_equal(d.misses, STACK_CACHE_BUILT ? 2 : 0);
    assert_int_equal(d.uncacheable, 0);
}

/* 8 distinct depths over 8 entries: every round after the second hits. */
static void depths(void)
{
    static const int d[] = {0, 1, 7, 2, 30, 3, 60, 4, 7, 0, 30, 60, 1, 2};
    for (volatile int round = 0; round < 3; round++)
        for (size_t i = 0; i < sizeof d / sizeof *d; i++)
            recurse(d[i]);
}

static void alloca_sizes(void)
{
    static const size_t sizes[] = {16, 100, 1000, 5000, 16, 24, 100, 4096};
    for (volatile int round = 0; round < 3; round++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            with_alloca(sizes[i]);
}

static void frame_pointers_or_not(void)
{
    for (volatile int round = 0; round < 6; round++) {
        with_fp(round % 2 ? 3 : 9);
        without_fp(round % 2 ? 3 : 9);
    }
}

static void different_callers(void)
{
    for (volatile int i = 0; i < 6; i++) {
        caller_a();
        caller_b();
    }
}

/* A limit below the depth: libunwind stops there, so does the chain, and it still hits. */
static void truncated_by_limit(void)
{
    for (volatile int i = 0; i < 5; i++) {
        assert_int_equal(recurse_limit(100, 40), 40);
        recurse_limit(100, 41);
    }
}

static void test_recursion_depths(void **state)
{
    (void)state;
    expect_hits(depths, 14);
}

static void test_alloca_sizes(void **state)
{
    (void)state;
    expect_hits(alloca_sizes, 8);
}

static void test_frame_pointers_or_not(void **state)
{
    (void)state;
    expect_hits(frame_pointers_or_not, 4);
}

static void test_same_depth_different_callers(void **state)
{
    (void)state;
    expect_hits(different_callers, 8);
}

static void test_truncated_by_limit(void **state)
{
    (void)state;
    expect_hits(truncated_by_limit, 6);
}

/* Deeper than a chain holds: never cached, still exact. */
static void too_deep(void)
{
    for (volatile int i = 0; i < 3; i++)
        recurse_limit(STACK_CACHE_FRAMES + 20, NATIVE_STACK_RAW_MAX);
}

static void test_too_deep_uncacheable(void **state)
{
    (void)state;
    struct stack_cache_stats d = counted(too_deep);
    assert_int_equal(d.hits, 0);
    assert_int_equal(d.uncacheable, STACK_CACHE_BUILT ? 3 : 0);
}

static void test_switched_off(void **state)
{
    (void)state;
    stack_cache_set_enabled(false);
    struct stack_cache_stats d = counted(same_site);
    stack_cache_set_enabled(true);
    assert_int_equal(d.hits, 0);
    assert_int_equal(d.misses, 0);
}

/* After a dlclose every chain is dropped: the next capture of the same stack misses. */
static void test_forget_all(void **state)
{
    (void)state;
    same_site();
    stack_cache_forget_all();
    struct stack_cache_stats d = counted(same_site);
    assert_in_range(d.misses, STACK_CACHE_BUILT, 2);
    assert_int_equal(d.hits + d.misses, STACK_CACHE_BUILT ? 10 : 0);
}

static jmp_buf jb;
static volatile bool jump_armed = true;

static NOINLINE int recurse_and_jump(int depth)
{
    if (depth <= 0) {
        int n = check();
        if (jump_armed)
            longjmp(jb, 1);
        return n;
    }
    int n = recurse_and_jump(depth - 1);
    KEEP();
    return n;
}

static void test_longjmp_out_and_back(void **state)
{
    (void)state;
    for (volatile int i = 0; i < 6; i++) {
        if (setjmp(jb) == 0)
            recurse_and_jump(i % 2 ? 12 : 3);
        recurse(i % 3); /* the frames the jump abandoned are overwritten by others */
        with_alloca(200 + 8 * (size_t)i);
    }
}

/* ---- signals -------------------------------------------------------------------------------- */

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
    (void)sig;
    recurse(2);
    with_alloca(48);
    handled++;
}

static void test_signal_on_alternate_stack(void **state)
{
    (void)state;
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt}, old;
    assert_int_equal(sigaltstack(&ss, &old), 0);
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_ONSTACK}, osa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &osa);
    handled = 0;
    for (int i = 0; i < 5; i++) {
        raise(SIGUSR1);
        recurse(2);
    }
    assert_int_equal(handled, 5);
    sigaction(SIGUSR1, &osa, NULL);
    sigaltstack(&old, NULL);
}

/* A makecontext coroutine (issue 22): a stack that is not the thread's own is never read from
 * the cache (its memory may be unmapped under a chain kept from it) nor kept: every capture
 * unwinds, exactly; back on the thread's stack, captures hit again. */
static ucontext_t co_main, co_ctx;

static void co_body(void)
{
    for (volatile int i = 0; i < 5; i++)
        recurse(3);
}

static void on_coroutine(void)
{
    size_t size = 256 << 10;
    char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(stack != MAP_FAILED);
    for (volatile int round = 0; round < 2; round++) {
        getcontext(&co_ctx);
        co_ctx.uc_stack.ss_sp = stack;
        co_ctx.uc_stack.ss_size = size;
        co_ctx.uc_link = &co_main;
        makecontext(&co_ctx, co_body, 0);
        swapcontext(&co_main, &co_ctx);
    }
    munmap(stack, size);
}

static void test_coroutine_stack_never_cached(void **state)
{
    (void)state;
    struct stack_cache_stats d = counted(on_coroutine);
    assert_int_equal(d.hits, 0);
    assert_int_equal(d.misses, STACK_CACHE_BUILT ? 10 : 0);
    expect_hits(same_site, 8);
}

/* A thread on a stack the program gave it (pthread_attr_setstack): its bounds are that block's,
 * and its captures hit. */
static void *hits_on_own_stack(void *arg)
{
    (void)arg;
    expect_hits(same_site, 8);
    return NULL;
}

static void test_thread_on_a_given_stack_hits(void **state)
{
    (void)state;
    size_t size = 1 << 20;
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(stack != MAP_FAILED);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstack(&a, stack, size);
    pthread_t t;
    assert_int_equal(pthread_create(&t, &a, hits_on_own_stack, NULL), 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    munmap(stack, size);
}

/* A timer signal whose handler captures while the thread is capturing (inside the cache's
 * capture at times): both exact. */
static volatile sig_atomic_t ticks;

static void on_alarm(int sig)
{
    (void)sig;
    recurse(1);
    ticks++;
}

static void test_capture_in_a_signal_handler_during_captures(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = on_alarm}, osa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &osa);
    struct itimerval it = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
    ticks = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    for (int i = 0; i < 20000 && ticks < 50; i++)
        recurse(i % 5);
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &osa, NULL);
    assert_true(ticks > 0);
}

/* ---- threads -------------------------------------------------------------------------------- */

static void *thread_body(void *arg)
{
    int rounds = (int)(intptr_t)arg;
    for (int r = 0; r < rounds; r++) { /* 7 stacks: they fit the thread's 8 entries */
        recurse(r % 3);
        with_alloca(32 + (size_t)(r % 2) * 512);
        caller_a();
        caller_b();
    }
    struct stack_cache_stats s = stats_now();
    stack_cache_thread_exit(); /* as agent/record/threads.c's destructor does */
    return (void *)(uintptr_t)s.hits;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_body, (void *)(intptr_t)40), 0);
    for (int i = 0; i < 4; i++) {
        void *hits;
        pthread_join(t[i], &hits);
        if (STACK_CACHE_BUILT)
            assert_true((uintptr_t)hits > 100);
    }
}

/* More short threads than the pool holds: each one's storage goes back at its exit. */
static void test_many_short_threads(void **state)
{
    (void)state;
    for (int i = 0; i < 300; i++) {
        pthread_t t;
        void *hits;
        assert_int_equal(pthread_create(&t, NULL, thread_body, (void *)(intptr_t)4), 0);
        pthread_join(t, &hits);
        if (STACK_CACHE_BUILT)
            assert_true((uintptr_t)hits > 0);
    }
}

/* ---- the CFI reader ------------------------------------------------------------------------- */

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static int rule_inside_fp(
    struct cfi_rule *out)
{
    uintptr_t pc;
    __asm__ volatile("lea 0(%%rip), %0" : "=r"(pc));
    int rc = cfi_rule_at(pc, out);
    KEEP();
    return rc;
}

static NOINLINE int leaf(int x)
{
    return x * 3 + 1;
}

static void test_cfi_rules(void **state)
{
    (void)state;
#if CFI_SUPPORTED
    struct cfi_rule r;
    assert_int_equal(rule_inside_fp(&r), 0); /* after the prologue: CFA = RBP+16, RBP at CFA-16 */
    assert_int_equal(r.cfa_base, CFI_CFA_RBP);
    assert_int_equal(r.cfa_off, 16);
    assert_int_equal(r.ra_off, -8);
    assert_true(r.rbp_saved);
    assert_int_equal(r.rbp_off, -16);
    assert_false(r.end);
    assert_int_equal(cfi_rule_at((uintptr_t)&leaf, &r), 0); /* at a function's entry */
    assert_int_equal(r.cfa_base, CFI_CFA_RSP);
    assert_int_equal(r.cfa_off, 8);
    assert_int_equal(r.ra_off, -8);
    assert_false(r.rbp_saved);
    assert_int_equal(cfi_rule_at((uintptr_t)&getpid, &r), 0); /* libc's, through its own table */
    assert_int_equal(r.cfa_base, CFI_CFA_RSP);
    assert_int_equal(r.cfa_off, 8);
    static const char not_code[16];
    assert_int_equal(cfi_rule_at((uintptr_t)not_code, &r), -1);
    assert_int_equal(leaf(1), 4);
#else
    skip();
#endif
}

/* native_stack_function_holding: the function whose frame holds a local is found, by its code
 * range, from a callee's call; an address on no frame of the stack is refused. */
static NOINLINE int holding_from_callee(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    int rc = native_stack_function_holding(addr, lo, hi);
    KEEP();
    return rc;
}

static NOINLINE uintptr_t frame_with_a_local(uintptr_t *lo, uintptr_t *hi, int *rc)
{
    volatile char local[64];
    local[0] = 1;
    *rc = holding_from_callee((uintptr_t)&local[32], lo, hi);
    KEEP();
    return (uintptr_t)__builtin_return_address(0);
}

static void test_function_holding_a_local(void **state)
{
    (void)state;
    uintptr_t lo = 0, hi = 0;
    int rc = -1;
    frame_with_a_local(&lo, &hi, &rc);
    assert_int_equal(rc, 0);
    uintptr_t fn = (uintptr_t)&frame_with_a_local;
    assert_true(lo <= fn && fn < hi);
    assert_false(lo <= (uintptr_t)&holding_from_callee && (uintptr_t)&holding_from_callee < hi);
    static char not_on_the_stack;
    assert_int_equal(native_stack_function_holding((uintptr_t)&not_on_the_stack, &lo, &hi), -1);
}

int main(void)
{
    native_stack_init();
    if (native_stack_unavailable()) {
        fprintf(stderr, "%s\n", native_stack_unavailable());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfi_rules),
        cmocka_unit_test(test_function_holding_a_local),
        cmocka_unit_test(test_same_site_hits),
        cmocka_unit_test(test_recursion_depths),
        cmocka_unit_test(test_alloca_sizes),
        cmocka_unit_test(test_frame_pointers_or_not),
        cmocka_unit_test(test_same_depth_different_callers),
        cmocka_unit_test(test_truncated_by_limit),
        cmocka_unit_test(test_too_deep_uncacheable),
        cmocka_unit_test(test_switched_off),
        cmocka_unit_test(test_forget_all),
        cmocka_unit_test(test_longjmp_out_and_back),
        cmocka_unit_test(test_signal_on_alternate_stack),
        cmocka_unit_test(test_capture_in_a_signal_handler_during_captures),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_many_short_threads),
        cmocka_unit_test(test_coroutine_stack_never_cached),
        cmocka_unit_test(test_thread_on_a_given_stack_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
