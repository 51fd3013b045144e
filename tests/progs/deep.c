/* tests/progs/deep.c: a sync 300 frames deep (deeper than the frame limit). */
#include "common.h"

static void k(void) {}

__attribute__((noinline)) void deep_sync(void)
{
    launch((const void *)k, 0);
    CHECK(cudaStreamSynchronize(0));
}

__attribute__((noinline)) int recurse(int n)
{
    if (n == 0) {
        deep_sync();
        return 0;
    }
    int r = recurse(n - 1);
    __asm__ volatile("" ::: "memory"); /* no tail call: every level keeps its frame */
    return r + 1;
}

int main(void)
{
    simcuda_set_kernel_ns((const void *)k, 0);
    printf("deep: %d\n", recurse(300));
    return 0;
}
