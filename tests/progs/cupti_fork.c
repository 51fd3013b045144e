/* tests/progs/cupti_fork.c: driver-API syncs (libsimdriver.so: only CUPTI sees them) in a parent
 * and in a child it forks after CUDA and CUPTI are initialized. The parent launches through the
 * shim (its first CUDA call: the agent subscribes to CUPTI) and makes 2 parent_syncs
 * (cuStreamSynchronize), then forks; the child makes 3 child_stream_syncs (cuStreamSynchronize),
 * 2 child_ctx_syncs (cuCtxSynchronize), 1 child_static_sync (cudaStreamSynchronize through
 * libcudart's own handle, as a statically linked runtime calls it: CUPTI's runtime callback) and
 * 1 child_shim_sync (cudaStreamSynchronize through the shim: CUPTI must not count it again),
 * then exits; the parent waits for it and makes 1 parent_after_sync. `cupti_fork thread`: a
 * thread of the parent's makes 20 thread_syncs (cuStreamSynchronize on a stream of its own)
 * while the main thread forks. Each process's summary.json must count exactly its own. */
#include "common.h"
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void drvlib_setup(unsigned long long kernel_ns);
void drvlib_stream_sync(void);
void drvlib_ctx_sync(void);
void drvlib_teardown(void);

static void k(void) {}
static cudaError_t (*runtime_stream_sync)(cudaStream_t);
static cudaStream_t thread_stream;

__attribute__((noinline)) void parent_sync(void)
{
    drvlib_stream_sync();
}

__attribute__((noinline)) void parent_after_sync(void)
{
    drvlib_stream_sync();
}

__attribute__((noinline)) void child_stream_sync(void)
{
    drvlib_stream_sync();
}

__attribute__((noinline)) void child_ctx_sync(void)
{
    drvlib_ctx_sync();
}

__attribute__((noinline)) void child_static_sync(void)
{
    launch((const void *)k, 0);
    CHECK(runtime_stream_sync(0));
}

__attribute__((noinline)) void child_shim_sync(void)
{
    launch((const void *)k, 0);
    CHECK(cudaStreamSynchronize(0));
}

__attribute__((noinline)) void thread_sync(void)
{
    launch((const void *)k, thread_stream);
    CHECK(runtime_stream_sync(thread_stream)); /* CUPTI's runtime callback only */
}

static void *thread_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        fork_quiet_point();
        thread_sync();
    }
    fork_quiet_leave();
    return NULL;
}

static int child(void)
{
    for (int i = 0; i < 3; i++)
        child_stream_sync();
    for (int i = 0; i < 2; i++)
        child_ctx_sync();
    child_static_sync();
    child_shim_sync();
    printf("child: done\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    bool thread = argc > 1 && !strcmp(argv[1], "thread");
    simcuda_set_kernel_ns((const void *)k, 1 * MS);
    launch((const void *)k, 0); /* the first CUDA call: the agent subscribes to CUPTI */
    drvlib_setup(2 * MS);
    void *cudart = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    runtime_stream_sync = (cudaError_t (*)(cudaStream_t))dlsym(cudart, "cudaStreamSynchronize");
    if (!runtime_stream_sync)
        return 2;
    for (int i = 0; i < 2; i++)
        parent_sync();
    pthread_t t;
    if (thread) {
        CHECK(cudaStreamCreateWithFlags(&thread_stream, cudaStreamNonBlocking));
        fork_quiet_install();
        fork_quiet_enter(); /* counted before it starts: the fork may come first */
        if (pthread_create(&t, NULL, thread_main, NULL) != 0)
            return 4;
        usleep(5000); /* the fork comes while it syncs */
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 3;
    if (pid == 0)
        _exit(child()); /* the child's outputs written by its _exit */
    int st = 0;
    waitpid(pid, &st, 0);
    if (thread)
        pthread_join(t, NULL);
    parent_after_sync();
    drvlib_teardown();
    printf("parent: child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}
