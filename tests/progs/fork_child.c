/* tests/progs/fork_child.c: the parent syncs once (parent_sync, 5 ms kernel); a forked child
 * that never calls CUDA prints a line and exits 0 (it must stay silent under the agent). */
#include "common.h"
#include <sys/wait.h>
#include <unistd.h>

static void k(void) {}

__attribute__((noinline)) void parent_sync(void)
{
    launch((const void *)k, 0);
    CHECK(cudaDeviceSynchronize());
}

int main(void)
{
    simcuda_set_kernel_ns((const void *)k, 5 * MS);
    parent_sync();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        printf("child %d: no cuda here\n", (int)getpid());
        return 0;
    }
    int st;
    waitpid(pid, &st, 0);
    printf("parent: child exited %d\n", WEXITSTATUS(st));
    return 0;
}
