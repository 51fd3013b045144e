/* tests/progs/dlclose_lib.c: a CUDA-using library is loaded, syncs twice (lib_sync), and is
 * unloaded at once, before the process exits: its frames must still be named. argv[1]: its path. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 2;
    int (*lib_sync)(void) = (int (*)(void))dlsym(h, "lib_sync");
    for (int i = 0; i < 2; i++)
        if (!lib_sync || lib_sync() != 0)
            return 1;
    if (dlclose(h) != 0)
        return 3;
    printf("dlclose_lib: ok\n");
    return 0;
}
