/* shim/real.c: finds the real CUDA runtime functions (see real.h). Runs on the application's
 * thread at the first call of each entry point: dlsym and dl_iterate_phdr only, no output. */
#include "shim/real.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "collectors/native_stack.h"

void *_Atomic real_fns[REAL_COUNT];

struct find_ctx {
    const char *name;
    void *fn;
};

/* Is this object a CUDA runtime (libcudart.so, libcudart.so.13, libcudart.so.13.0.48, ...)? */
static int is_cudart(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return !strncmp(base, "libcudart.so", 12);
}

static int find_in_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find_ctx *ctx = data;
    if (!info->dlpi_name || !is_cudart(info->dlpi_name))
        return 0;
    /* RTLD_NOLOAD: only a handle on the copy that is already loaded, never a new load. */
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *fn = dlsym(h, ctx->name);
    dlclose(h);
    if (fn && !native_stack_is_agent_pc((uintptr_t)fn)) {
        ctx->fn = fn;
        return 1;
    }
    return 0;
}

void *real_resolve(int id, const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (fn && native_stack_is_agent_pc((uintptr_t)fn))
        fn = NULL; /* never forward to ourselves */
    if (!fn) {
        struct find_ctx ctx = {name, NULL};
        dl_iterate_phdr(find_in_cudart, &ctx);
        fn = ctx.fn;
    }
    if (fn)
        atomic_store_explicit(&real_fns[id], fn, memory_order_relaxed);
    return fn;
}
