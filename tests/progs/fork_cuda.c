/* tests/progs/fork_cuda.c: the parent syncs once in parent_sync(), then forks a child that syncs
 * three times in child_sync() (recording into its own folder), and runs `sh -c 'echo exec'` (an
 * exec'd child that never uses CUDA: silent). */
#include "common.h"
#include <sys/wait.h>
#include <unistd.h>

static void k(void) {}

__attribute__((noinline)) void parent_sync(void)
{
    launch((const void *)k, 0);
    CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) void child_sync(void)
{
    launch((const void *)k, 0);
    CHECK(cudaDeviceSynchronize());
}

int main(void)
{
    simcuda_set_kernel_ns((const void *)k, 1 * MS);
    parent_sync();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 3; i++)
            child_sync();
        printf("child: done\n");
        return 0;
    }
    int st;
    waitpid(pid, &st, 0);
    fflush(stdout);
    int rc = system("echo exec");
    printf("parent: child %d, sh %d\n", WEXITSTATUS(st), WEXITSTATUS(rc));
    return 0;
}
