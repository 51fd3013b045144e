/* entry/real.c: finds the real symbols of the table (see real.h). Runs on the application's
 * thread at the first call of each entry point (and at load for libc's): dlsym, dlopen with
 * RTLD_NOLOAD and dl_iterate_phdr only, no output but debug lines. */
#include "entry/real.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "common/log.h"

void *_Atomic real_fns[REAL_COUNT];
/* The load address of the object each CUDA runtime or driver symbol was found in: after a
 * dlclose, a symbol whose object is gone (or another object is there) is found again. */
static _Atomic uintptr_t real_bases[REAL_COUNT];

static const char *const names[REAL_COUNT] = {
#define X(name) [API_##name] = #name,
    SYNCSPY_APIS(X)
#undef X
#define X(name, where, need) [REAL_##name] = #name,
        REAL_SYMBOLS(X)
#undef X
};

/* The table's other columns; a CUDA entry point (below API_COUNT) is REAL_CUDART, REQUIRED. */
static const unsigned char wheres[REAL_COUNT] = {
#define X(name, where, need) [REAL_##name] = where,
    REAL_SYMBOLS(X)
#undef X
};
static const unsigned char needs[REAL_COUNT] = {
#define X(name, where, need) [REAL_##name] = need,
    REAL_SYMBOLS(X)
#undef X
};

static enum real_where where_of(int id)
{
    return id < API_COUNT ? REAL_CUDART : (enum real_where)wheres[id];
}

static enum real_need need_of(int id)
{
    return id < API_COUNT ? REAL_REQUIRED : (enum real_need)needs[id];
}

bool real_is_ours(const void *fn)
{
    static _Atomic uintptr_t own_base;
    uintptr_t base = atomic_load_explicit(&own_base, memory_order_relaxed);
    Dl_info info;
    if (!base && dladdr((const void *)real_is_ours, &info) && info.dli_fbase) {
        base = (uintptr_t)info.dli_fbase;
        atomic_store_explicit(&own_base, base, memory_order_relaxed);
    }
    return fn && base && dladdr(fn, &info) && (uintptr_t)info.dli_fbase == base;
}

/* libc's dlclose, for the handles taken here a moment before (never entry/dlclose.c's). */
static void close_handle(void *h)
{
    int (*f)(void *) = (int (*)(void *))real_get(REAL_dlclose);
    if (f)
        f(h);
}

static void *next_definition(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    return real_is_ours(fn) ? NULL : fn;
}

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
    close_handle(h);
    if (fn && !real_is_ours(fn)) {
        ctx->fn = fn;
        return 1;
    }
    return 0;
}

static void *from_cudart(const char *name)
{
    void *fn = next_definition(name);
    if (!fn) {
        struct find_ctx ctx = {name, NULL};
        dl_iterate_phdr(find_in_cudart, &ctx);
        fn = ctx.fn;
    }
    return fn;
}

static void *from_driver(const char *name)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD); /* only the copy in use */
    if (!h)
        return NULL;
    void *fn = dlsym(h, name);
    close_handle(h);
    return real_is_ours(fn) ? NULL : fn;
}

static void *find(int id)
{
    switch (where_of(id)) {
    case REAL_CUDART: return from_cudart(names[id]);
    case REAL_DRIVER: return from_driver(names[id]);
    case REAL_LIBC: return next_definition(names[id]);
    case REAL_CUPTI: return NULL; /* bound by real_bind_cupti only */
    }
    return NULL;
}

static uintptr_t object_base(const void *fn)
{
    Dl_info info;
    return fn && dladdr(fn, &info) ? (uintptr_t)info.dli_fbase : 0;
}

static bool may_unload(int id)
{
    return where_of(id) == REAL_CUDART || where_of(id) == REAL_DRIVER;
}

static void store(int id, void *fn)
{
    if (may_unload(id))
        atomic_store_explicit(&real_bases[id], object_base(fn), memory_order_relaxed);
    atomic_store_explicit(&real_fns[id], fn, memory_order_relaxed);
}

void real_forget_unloaded(void)
{
    for (int id = 0; id < REAL_COUNT; id++) {
        void *fn = real_cached(id);
        if (!fn || !may_unload(id))
            continue;
        if (object_base(fn) != atomic_load_explicit(&real_bases[id], memory_order_relaxed))
            atomic_store_explicit(&real_fns[id], NULL, memory_order_relaxed); /* found again */
    }
}

void *real_resolve(int id)
{
    void *fn = find(id);
    if (fn) {
        store(id, fn);
    } else if (need_of(id) == REAL_REQUIRED && where_of(id) != REAL_CUPTI) {
        static _Atomic bool said[REAL_COUNT];
        if (!atomic_exchange(&said[id], true))
            dbg(2, "no real %s found (yet): the call is answered as without it", names[id]);
    }
    return fn;
}

void real_resolve_at_load(void)
{
    for (int id = API_COUNT; id < REAL_COUNT; id++)
        if (where_of(id) == REAL_LIBC && !real_cached(id)) {
            void *fn = find(id);
            if (fn)
                store(id, fn);
        }
}

bool real_bind_cupti(void *handle)
{
    bool complete = true;
    for (int id = API_COUNT; id < REAL_COUNT; id++) {
        if (where_of(id) != REAL_CUPTI)
            continue;
        void *fn = dlsym(handle, names[id]);
        if (real_is_ours(fn))
            fn = NULL; /* never our own exports (cuptiSubscribe is one) */
        store(id, fn);
        complete &= fn != NULL || need_of(id) == REAL_OPTIONAL;
    }
    if (!complete)
        for (int id = API_COUNT; id < REAL_COUNT; id++)
            if (where_of(id) == REAL_CUPTI)
                store(id, NULL);
    return complete;
}

void *real_cupti_symbol(const char *name)
{
    for (int id = API_COUNT; id < REAL_COUNT; id++)
        if (where_of(id) == REAL_CUPTI && !strcmp(names[id], name))
            return real_cached(id);
    return NULL;
}

void *real_next_for_caller(const char *name, const void *caller)
{
    Dl_info info;
    if (caller && dladdr(caller, &info) && info.dli_fname && info.dli_fname[0]) {
        void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            void *f = dlsym(h, name);
            close_handle(h);
            if (f && !real_is_ours(f))
                return f;
        }
    }
    void *f = next_definition(name);
    return f ? f : real_cupti_symbol(name);
}
