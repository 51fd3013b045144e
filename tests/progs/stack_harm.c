/* tests/progs/stack_harm.c MODE: syncs on stacks the agent does not own (issue 22), the same
 * with the agent and without it:
 *   coroutine  a makecontext coroutine syncs 100 frames deep, 20 times; the top 16 KiB of its
 *              stack are unmapped and a second coroutine on the rest reaches the same sync at
 *              the same stack pointer, twice; 8 rounds, each on a stack of its own (prints
 *              "same sp", exit 0: 176 syncs)
 *   small KIB USED  a thread with a stack of KIB KiB (0: PTHREAD_STACK_MIN) uses USED bytes
 *              of it, then makes the process's first CUDA call and syncs 12 times in 12 steps (a
 *              kernel and cudaStreamSynchronize: the capture of a stack seen before from the
 *              third on); prints "synced 12" and exits 0
 *   depth      the stack the CUDA calls of a thread use below its frame (a painted region's
 *              deepest write): the process's first CUDA call, the first sync, the most of 20
 *              later ones; prints "first call N", "first sync N", "later syncs N" (bytes)
 *   ctor LIB   dlopens LIB (tests/progs/lib/ctorcuda.c), whose constructor makes the process's
 *              first CUDA calls: 2 syncs inside dlopen, with the loader's lock held; prints
 *              "loaded" and exits 0
 * Every sync is in the function at_bottom (coroutine) or small_sync (small stacks, depth). */
#include "common.h"
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

static void k_sync(void) {}
static cudaStream_t s;

/* ---- coroutine ----------------------------------------------------------------------------- */

#define CO_STACK (256 * 1024)
#define CO_UNMAPPED (16 * 1024)
#define CO_DEPTH 100

static ucontext_t main_ctx, co_ctx;
static int co_depth, co_probe;
static size_t co_pad;
static uintptr_t frame_at[CO_DEPTH + 1]; /* each level's frame address (the probe's) */
static uintptr_t bottom_sp;

__attribute__((noinline)) void at_bottom(void)
{
    bottom_sp = (uintptr_t)__builtin_frame_address(0);
    if (co_probe)
        return;
    launch((const void *)k_sync, s);
    CHECK(cudaStreamSynchronize(s));
}

/* Frames of a fixed size (a buffer of its own each): 100 of them span ~25 KiB. */
__attribute__((noinline)) void dive(int depth)
{
    volatile char buf[200];
    buf[0] = (char)depth;
    frame_at[depth] = (uintptr_t)__builtin_frame_address(0);
    if (depth > 1)
        dive(depth - 1);
    else
        at_bottom();
    if (buf[0] != (char)depth) /* no tail call, and the buffer stays */
        abort();
}

static void co_entry(void)
{
    char *pad = __builtin_alloca(co_pad);
    __asm__ volatile("" : : "r"(pad) : "memory"); /* kept, its bytes left as they were */
    dive(co_depth);
}

static void co_run(char *stack, size_t size)
{
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = size;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, co_entry, 0);
    swapcontext(&main_ctx, &co_ctx);
}

/* One round: the first coroutine's frames start pad1 bytes below its stack's top. */
static int coroutine_round(size_t pad1)
{
    char *stack = mmap(NULL, CO_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED)
        return 3;
    co_depth = CO_DEPTH;
    co_pad = pad1;
    co_probe = 1;
    co_run(stack, CO_STACK);
    uintptr_t target = bottom_sp, frame = frame_at[2] - frame_at[1];
    co_probe = 0;
    for (int i = 0; i < 20; i++) {
        co_run(stack, CO_STACK);
        mark_step();
    }
    /* The second coroutine starts 16 KiB lower: it dives fewer levels, its pad (less than a
     * level) makes up the rest, so that its innermost frames lie where the first one's did and
     * the first one's next levels are just above its own start, in the unmapped part. */
    if (munmap(stack + CO_STACK - CO_UNMAPPED, CO_UNMAPPED) != 0)
        return 3;
    size_t levels = (CO_UNMAPPED - pad1 + frame - 1) / frame;
    co_depth = CO_DEPTH - (int)levels;
    co_pad = pad1 + levels * frame - CO_UNMAPPED;
    for (int i = 0; i < 2; i++) {
        co_run(stack, CO_STACK - CO_UNMAPPED);
        mark_step();
        if (bottom_sp != target) {
            printf("sp differs by %ld\n", (long)(bottom_sp - target));
            return 2;
        }
    }
    munmap(stack, CO_STACK - CO_UNMAPPED);
    return 0;
}

/* 8 rounds, the first coroutine's frames one level lower in each: where the second one's
 * frames stop matching falls at each place of a validation's block of 8 loads. */
static int coroutine(void)
{
    co_probe = 1;
    co_depth = 2;
    co_pad = 16;
    char *probe = mmap(NULL, CO_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED)
        return 3;
    co_run(probe, CO_STACK);
    munmap(probe, CO_STACK);
    size_t frame = frame_at[2] - frame_at[1];
    for (int shift = 0; shift < 8; shift++) {
        int rc = coroutine_round(1024 + shift * frame);
        if (rc)
            return rc;
    }
    printf("same sp\n");
    return 0;
}

/* ---- small stacks ---------------------------------------------------------------------------- */

__attribute__((noinline)) void small_sync(void)
{
    launch((const void *)k_sync, s);
    CHECK(cudaStreamSynchronize(s));
}

static size_t small_used;

static void small_calls(void)
{
    CHECK(cudaStreamCreate(&s));
    mark_step(); /* start-up ends */
    int n = 0;
    for (volatile int i = 0; i < 12; i++, n++) {
        small_sync();
        mark_step();
    }
    printf("synced %d\n", n);
}

static void *small_thread(void *arg)
{
    (void)arg;
    volatile char *used = __builtin_alloca(small_used);
    for (size_t i = 0; i < small_used; i += 256)
        used[i] = 1; /* touched: the stack is really used */
    small_calls();
    used[0] = 0;
    return NULL;
}

static int small(size_t kib, size_t used_bytes)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (pthread_attr_setstacksize(&a, kib ? kib << 10 : (size_t)PTHREAD_STACK_MIN) != 0)
        return 3;
    small_used = used_bytes;
    pthread_t t;
    if (pthread_create(&t, &a, small_thread, NULL) != 0)
        return 3;
    pthread_join(t, NULL);
    return 0;
}

/* ---- depth --------------------------------------------------------------------------------- */

#define PAINT (512 * 1024)
#define PAINT_BYTE 0xa5

__attribute__((noinline)) static void paint(void)
{
    char *p = __builtin_alloca(PAINT);
    memset(p, PAINT_BYTE, PAINT);
    __asm__ volatile("" : : "r"(p) : "memory"); /* the stores stay */
}

/* The bytes below here that fn's call wrote. */
__attribute__((noinline)) static size_t depth_of(void (*fn)(void))
{
    const unsigned char *here = __builtin_frame_address(0);
    paint();
    fn();
    const unsigned char *lo = here - PAINT;
    size_t i = 0;
    while (i < PAINT && lo[i] == PAINT_BYTE)
        i++;
    return PAINT - i;
}

static void first_call(void)
{
    CHECK(cudaStreamCreate(&s));
}

static void *depth_thread(void *arg)
{
    (void)arg;
    size_t first = depth_of(first_call);
    mark_step();
    size_t sync1 = depth_of(small_sync), later = 0;
    mark_step();
    for (int i = 0; i < 20; i++) {
        size_t d = depth_of(small_sync);
        mark_step();
        if (d > later)
            later = d;
    }
    printf("first call %zu\nfirst sync %zu\nlater syncs %zu\n", first, sync1, later);
    return NULL;
}

static int depth(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 4 << 20);
    pthread_t t;
    if (pthread_create(&t, &a, depth_thread, NULL) != 0)
        return 3;
    pthread_join(t, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "coroutine";
    simcuda_set_kernel_ns((const void *)k_sync, 100 * 1000);
    if (strcmp(mode, "small") == 0 && argc == 4)
        return small((size_t)atoi(argv[2]), (size_t)atoi(argv[3]));
    if (strcmp(mode, "depth") == 0)
        return depth();
    if (strcmp(mode, "ctor") == 0 && argc == 3) {
        if (!dlopen(argv[2], RTLD_NOW | RTLD_LOCAL))
            return 3;
        printf("loaded\n");
        return 0;
    }
    CHECK(cudaStreamCreate(&s));
    mark_step(); /* start-up ends */
    if (strcmp(mode, "coroutine") == 0)
        return coroutine();
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
