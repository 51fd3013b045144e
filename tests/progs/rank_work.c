/* tests/progs/rank_work.c STEPS SYNCS KERNEL_MS [copy] [nostep]: one rank of a job, for the
 * per-rank tests (issue 28). Each step: 8 ms of host work, then SYNCS times a KERNEL_MS kernel
 * and a cudaStreamSynchronize in step_sync() (it waits about KERNEL_MS), then a step mark.
 * "copy": also a device-to-host cudaMemcpy into pageable memory in fetch_copy() each step (a
 * line that syncs on this rank only); "nostep": no step mark (the whole run is one step).
 * A rank with a longer kernel waits more: a straggler. Prints one line, exits 0. */
#include "common.h"
#include <stdbool.h>
#include <string.h>
#include <time.h>

static void k_step(void) {}
static char host_buf[4096];

__attribute__((noinline)) void step_sync(void)
{
    launch((const void *)k_step, 0);
    CHECK(cudaStreamSynchronize(0));
}

__attribute__((noinline)) void fetch_copy(void *dev)
{
    CHECK(cudaMemcpy(host_buf, dev, sizeof host_buf, cudaMemcpyDeviceToHost));
}

static void host_work(void)
{
    struct timespec t = {0, 8 * 1000 * 1000};
    while (nanosleep(&t, &t) != 0)
        ;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: rank_work STEPS SYNCS KERNEL_MS [copy] [nostep]\n");
        return 2;
    }
    int steps = atoi(argv[1]), syncs = atoi(argv[2]);
    bool copy = false, marks = true;
    for (int i = 4; i < argc; i++) {
        copy |= strcmp(argv[i], "copy") == 0;
        marks &= strcmp(argv[i], "nostep") != 0;
    }
    simcuda_set_kernel_ns((const void *)k_step, (unsigned long long)atoi(argv[3]) * MS);
    void *dev = NULL;
    CHECK(cudaMalloc(&dev, sizeof host_buf));
    for (int s = 0; s < steps; s++) {
        host_work();
        for (int k = 0; k < syncs; k++)
            step_sync();
        if (copy)
            fetch_copy(dev);
        if (marks)
            mark_step();
    }
    CHECK(cudaFree(dev));
    printf("rank_work: %d steps\n", steps);
    return 0;
}
