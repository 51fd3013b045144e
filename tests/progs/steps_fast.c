/* tests/progs/steps_fast.c [STEPS]: a training loop of STEPS (default 20000) short steps, each
 * one sync in step_sync() and a step mark, as fast as the machine goes (issue 22: step records
 * lost to a full step queue made the trace's per-step figures wrong). Prints "steps: done N". */
#include "common.h"

__attribute__((noinline)) void step_sync(void)
{
    CHECK(cudaStreamSynchronize(0));
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20000;
    for (int s = 0; s < steps; s++) {
        step_sync();
        mark_step();
    }
    printf("steps: done %d\n", steps);
    return 0;
}
