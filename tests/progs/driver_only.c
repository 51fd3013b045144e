/* tests/progs/driver_only.c: a program whose every CUDA call bypasses the shim (the driver API
 * through libsimdriver.so, as a program built with libcudart_static does): N steps of
 * drvlib_stream_sync (a 4 ms kernel, then cuStreamSynchronize). */
#include <stdio.h>
#include <stdlib.h>

void drvlib_setup(unsigned long long kernel_ns);
void drvlib_stream_sync(void);
void drvlib_teardown(void);

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    drvlib_setup(4000000ull);
    for (int i = 0; i < steps; i++)
        drvlib_stream_sync();
    drvlib_teardown();
    printf("driver_only: done\n");
    return 0;
}
