/* tests/progs/driver_only.c: a program whose every CUDA call bypasses the shim (the driver API
 * through libsimdriver.so, as a program built with libcudart_static does): N steps of
 * drvlib_stream_sync (a 4 ms kernel, then cuStreamSynchronize). With argv[2] "longjmp" a
 * SIGALRM watchdog first siglongjmps out of a 1.5 s one (seen through CUPTI only, its EXIT
 * callback never comes). */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void drvlib_setup(unsigned long long kernel_ns);
void drvlib_stream_sync(void);
void drvlib_teardown(void);
void drvlib_kernel_ns(unsigned long long kernel_ns);

static sigjmp_buf watchdog;

static void on_alarm(int sig)
{
    (void)sig;
    siglongjmp(watchdog, 1);
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    drvlib_setup(4000000ull);
    if (argc > 2 && !strcmp(argv[2], "longjmp")) {
        signal(SIGALRM, on_alarm);
        drvlib_kernel_ns(1500000000ull);
        if (sigsetjmp(watchdog, 1) == 0) {
            ualarm(200000, 0);
            drvlib_stream_sync();
            return 1; /* not interrupted */
        }
        drvlib_kernel_ns(4000000ull);
    }
    for (int i = 0; i < steps; i++)
        drvlib_stream_sync();
    drvlib_teardown();
    printf("driver_only: done\n");
    return 0;
}
