/* tests/progs/c99_signal.c: built with -std=c99 (no _GNU_SOURCE), where <signal.h> makes
 * signal() libc's __sysv_signal (one-shot System V semantics). After its first CUDA call the
 * program sets SIGTERM with signal(h1), then with sigaction(h2), and raises SIGTERM twice: h2
 * runs, then (sigaction kept no SA_RESETHAND) h2 again. Prints which ran and what each call
 * said was there before. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

static void say(const char *s)
{
    ssize_t n = write(1, s, strlen(s));
    (void)n;
}

static void h1(int sig)
{
    (void)sig;
    say("h1\n");
}

static void h2(int sig)
{
    (void)sig;
    say("h2\n");
}

int main(void)
{
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 99;
    void (*before)(int) = signal(SIGTERM, h1);
    printf("signal: before was the default: %d\n", before == SIG_DFL);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h2;
    sigaction(SIGTERM, &sa, &old);
    printf("sigaction: before was h1: %d, one-shot: %d\n", old.sa_handler == h1,
           (old.sa_flags & SA_RESETHAND) != 0);
    fflush(stdout);
    raise(SIGTERM);
    raise(SIGTERM);
    return 0;
}
