/* tests/progs/loop.c: a training loop that runs until it is killed. Each step: a 2 ms kernel and a
 * sync in step_sync(), then a step mark. After `ready_after` steps it prints "ready" (flushed).
 * argv[1]: default | handler | ignore: what the program does with SIGTERM and SIGINT itself
 * (handler: prints "caught N" and exits 7 from the handler). */
#include "common.h"
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void k(void) {}

__attribute__((noinline)) void step_sync(void)
{
    launch((const void *)k, 0);
    CHECK(cudaStreamSynchronize(0));
}

static void on_term(int sig)
{
    char msg[32];
    int n = snprintf(msg, sizeof msg, "caught %d\n", sig);
    ssize_t w = write(1, msg, (size_t)n);
    (void)w;
    _exit(7);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "default";
    int ready_after = argc > 2 ? atoi(argv[2]) : 5;
    if (!strcmp(mode, "handler")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGINT, on_term);
    } else if (!strcmp(mode, "ignore")) {
        signal(SIGTERM, SIG_IGN);
    }
    simcuda_set_kernel_ns((const void *)k, 2 * MS);
    for (int s = 0;; s++) {
        step_sync();
        mark_step();
        if (s + 1 == ready_after) {
            printf("ready\n");
            fflush(stdout);
        }
        if (!strcmp(mode, "ignore") && s > ready_after + 50)
            break; /* SIGTERM was ignored: end on our own */
    }
    printf("loop: done\n");
    return 0;
}
