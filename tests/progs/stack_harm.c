/* tests/progs/stack_harm.c MODE: syncs on stacks the agent does not own (issue 22), the same
 * with the agent and without it:
 *   coroutine  a makecontext coroutine syncs 100 frames deep, 20 times; the top 16 KiB of its
 *              stack are unmapped and a second coroutine on the rest reaches the same sync at
 *              the same stack pointer, twice; 8 rounds, each on a stack of its own (prints
 *              "same sp", exit 0: 176 syncs)
 *   small KIB USED  a thread with a stack of KIB KiB uses USED KiB of it, then syncs 5 times
 *              (a kernel and cudaStreamSynchronize) and once more after its first steps (the
 *              capture of a stack seen before); prints "synced" and exits 0
 * Every sync is in the function at_bottom (coroutine) or small_sync (small stacks). */
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

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "coroutine";
    simcuda_set_kernel_ns((const void *)k_sync, 100 * 1000);
    CHECK(cudaStreamCreate(&s));
    mark_step(); /* start-up ends */
    if (strcmp(mode, "coroutine") == 0)
        return coroutine();
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
