/* tests/progs/rtld_local.c: loads a CUDA-using library with dlopen(RTLD_LOCAL) and calls it
 * three times; never links libcudart itself. argv[1]: the library's path. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    int (*lib_sync)(void) = (int (*)(void))dlsym(h, "lib_sync");
    for (int i = 0; i < 3; i++)
        if (!lib_sync || lib_sync() != 0)
            return 1;
    printf("rtld_local: ok\n");
    return 0;
}
