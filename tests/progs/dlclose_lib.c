#define _GNU_SOURCE /* dladdr */
/* tests/progs/dlclose_lib.c: a CUDA-using library is loaded, syncs twice (lib_sync), and is
 * unloaded at once, before the process exits: its frames must still be named. argv[1]: its path.
 * With argv[2] "reload" (issue 13): after the unload took libcudart with it, the program maps
 * memory where libcudart was, then loads the library again (libcudart lands elsewhere) and
 * syncs again, twice over; "mapped over: 1" says the memory took libcudart's place. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* Where the libcudart the library loaded is mapped: [*start, *start + *len). */
static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *slash = strrchr(info->dlpi_name, '/');
    if (!strstr(slash ? slash : info->dlpi_name, "libcudart.so"))
        return 0;
    uintptr_t *range = data, end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz > end)
            end = info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz;
    range[0] = info->dlpi_addr;
    range[1] = (end + 4095) & ~(uintptr_t)4095;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int rounds = argc > 2 && !strcmp(argv[2], "reload") ? 3 : 1;
    for (int round = 0; round < rounds; round++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return 2;
        int (*lib_sync)(void) = (int (*)(void))dlsym(h, "lib_sync");
        uintptr_t range[2] = {0, 0};
        dl_iterate_phdr(find_cudart, range);
        for (int i = 0; i < 2; i++)
            if (!lib_sync || lib_sync() != 0)
                return 1;
        if (dlclose(h) != 0)
            return 3;
        if (rounds == 1)
            break;
        if (dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD)) {
            printf("libcudart still loaded\n");
            return 4;
        }
        void *p = mmap((void *)range[0], range[1], PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        printf("round %d: mapped over: %d\n", round, range[0] && p == (void *)range[0]);
    }
    printf("dlclose_lib: ok\n");
    return 0;
}
