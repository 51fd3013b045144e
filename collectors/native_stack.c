/* collectors/native_stack.c: raw native stacks (see native_stack.h). Called on the
 * application's thread inside a CUDA call: no malloc, no stdio, no locks of ours.
 * libunwind's fast trace path keeps its per-thread cache in its own mmap'ed memory; a stack
 * seen before on the thread comes from collectors/stack_cache.c without unwinding. */
#define UNW_LOCAL_ONLY
#include "collectors/native_stack.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <libunwind.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "collectors/loader_gate.h"
#include "collectors/stack_cache.h"
#include "common/compiler.h"

static uintptr_t self_lo, self_hi; /* the agent's loaded segments */

/* CUDA objects whose leading frames a CUPTI-delivered capture also skips (set once). */
static struct native_range cuda_ranges[NATIVE_SKIP_RANGES_MAX];
static _Atomic int n_cuda_ranges;
SYNCSPY_TLS bool native_stack_skip_cuda;

/* The span of an object's loaded segments. */
static void object_span(const struct dl_phdr_info *info, uintptr_t *lo_out, uintptr_t *hi_out)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    *lo_out = lo;
    *hi_out = hi;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t me = (uintptr_t)data;
    uintptr_t lo, hi;
    object_span(info, &lo, &hi);
    if (me >= lo && me < hi) {
        self_lo = lo;
        self_hi = hi;
        return 1;
    }
    return 0;
}

/* libunwind is loaded with dlopen(RTLD_LOCAL), never linked: the dependencies of a preloaded
 * library join the process's global scope, where libunwind's _Unwind_RaiseException and the
 * rest of the C++ unwinding ABI it exports would stand in for libgcc_s's in every exception the
 * program throws (PyTorch's C++ errors among them). Loaded locally, only the agent calls it. The
 * wheel carries a copy beside the agent under a soname of its own (NATIVE_UNWIND_BUNDLED), so
 * that it never stands in for a libunwind.so.8 of the program's either; a source build loads
 * the system's. The names are libunwind.h's macros spelled out (UNW_LOCAL_ONLY: _ULx86_64_...). */
#define STR_(x) #x
#define STR(x) STR_(x)
static int (*unwind_backtrace)(void **, int);
static int (*unwind_set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
static unw_addr_space_t *unwind_local_as;
/* the step-by-step unwinder: TSan builds' captures, and native_stack_function_holding */
static int (*unwind_getcontext)(unw_context_t *);
static int (*unwind_init_local)(unw_cursor_t *, unw_context_t *);
static int (*unwind_get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
static int (*unwind_step)(unw_cursor_t *);
static int (*unwind_get_proc_info)(unw_cursor_t *, unw_proc_info_t *);
static const char *unwind_missing; /* why there are no native stacks, or NULL */

static void *unwind_open(void)
{
    Dl_info di;
    const char *slash;
    if (dladdr((void *)&native_stack_init, &di) && di.dli_fname &&
        (slash = strrchr(di.dli_fname, '/'))) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - di.dli_fname), di.dli_fname,
                         NATIVE_UNWIND_BUNDLED);
        void *h = n > 0 && (size_t)n < sizeof path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h)
            return h;
    }
    return dlopen(NATIVE_UNWIND_SYSTEM, RTLD_NOW | RTLD_LOCAL);
}

static void unwind_load(void)
{
    void *h = unwind_open();
    if (!h) {
        unwind_missing = NATIVE_UNWIND_SYSTEM " (libunwind) could not be loaded: syncs are "
                                              "counted without their native frames";
        return;
    }
    *(void **)&unwind_set_caching_policy = dlsym(h, STR(unw_set_caching_policy));
    unwind_local_as = dlsym(h, STR(unw_local_addr_space));
    *(void **)&unwind_getcontext = dlsym(h, STR(unw_tdep_getcontext));
    *(void **)&unwind_init_local = dlsym(h, STR(unw_init_local));
    *(void **)&unwind_get_reg = dlsym(h, STR(unw_get_reg));
    *(void **)&unwind_step = dlsym(h, STR(unw_step));
    *(void **)&unwind_get_proc_info = dlsym(h, STR(unw_get_proc_info));
#if defined(__SANITIZE_THREAD__)
    bool ok = unwind_getcontext && unwind_init_local && unwind_get_reg && unwind_step;
#else
    bool ok = true;
#endif
    void *bt = dlsym(h, "unw_backtrace");
    if (!ok || !bt || !unwind_set_caching_policy || !unwind_local_as) {
        unwind_missing = "the libunwind found lacks unw_backtrace: syncs are counted "
                         "without their native frames";
        return; /* left loaded: a dlclose here would gain nothing */
    }
    unwind_set_caching_policy(*unwind_local_as, UNW_CACHE_PER_THREAD);
    *(void **)&unwind_backtrace = bt; /* before the agent runs: no capture can be in flight */
}

void native_stack_init(void)
{
    if (!self_hi && loader_gate_enter(true)) {
        dl_iterate_phdr(find_self, (void *)(uintptr_t)&native_stack_init);
        loader_gate_leave();
    }
    if (!unwind_backtrace && !unwind_missing)
        unwind_load();
}

const char *native_stack_unavailable(void)
{
    return unwind_missing;
}

int native_stack_is_agent_pc(uintptr_t pc)
{
    return pc >= self_lo && pc < self_hi;
}

struct ranges_ctx {
    const char *const *prefixes;
    int nprefixes;
    struct native_range *out;
    int max, n;
};

static int collect_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct ranges_ctx *c = data;
    const char *name = info->dlpi_name;
    if (!name || !*name || c->n >= c->max)
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (int i = 0; i < c->nprefixes; i++) {
        if (strncmp(base, c->prefixes[i], strlen(c->prefixes[i])))
            continue;
        uintptr_t lo, hi;
        object_span(info, &lo, &hi);
        if (lo < hi)
            c->out[c->n++] = (struct native_range){lo, hi};
        break;
    }
    return 0;
}

int native_stack_object_ranges(const char *const *prefixes, int nprefixes, struct native_range *out,
                               int max)
{
    struct ranges_ctx c = {prefixes, nprefixes, out, max, 0};
    loader_gate_enter(true);
    dl_iterate_phdr(collect_ranges, &c);
    loader_gate_leave();
    return c.n;
}

void native_stack_set_skip_ranges(const struct native_range *ranges, int n)
{
    if (n > NATIVE_SKIP_RANGES_MAX)
        n = NATIVE_SKIP_RANGES_MAX;
    int have = atomic_load_explicit(&n_cuda_ranges, memory_order_acquire);
    if (n <= have)
        return; /* set once: captures in flight read the ranges without a lock */
    memcpy(cuda_ranges + have, ranges + have, (size_t)(n - have) * sizeof *ranges);
    atomic_store_explicit(&n_cuda_ranges, n, memory_order_release);
}

static int in_cuda_object(uintptr_t pc)
{
    int n = atomic_load_explicit(&n_cuda_ranges, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (pc >= cuda_ranges[i].lo && pc < cuda_ranges[i].hi)
            return 1;
    return 0;
}

/* Frames a CUPTI-delivered capture may have to skip beyond the agent's own: the callback
 * dispatcher in libcupti and the driver or runtime entry point the call arrived through. */
#define CUDA_FRAMES_SLACK 32
_Static_assert(NATIVE_STACK_RAW_MAX == NATIVE_STACK_MAX + 16 + CUDA_FRAMES_SLACK, "raw room");

/* The stack a capture that unwinds must find left below its rsp: libunwind's unw_backtrace
 * takes 3.3 KiB on a stack it traced before, 6.0 KiB on a thread's first (docs/RELIABILITY.md:
 * how measured), the stack cache's walk and the site's first lookup a little more. */
#define NATIVE_UNWIND_ROOM_BYTES (8u << 10)
_Static_assert(NATIVE_UNWIND_ROOM_BYTES == NATIVE_STACK_ROOM_KIB << 10, "the header's figure");
static _Atomic uint64_t short_captures; /* captures that had no room to unwind */

uint64_t native_stack_short_captures(void)
{
    return atomic_load_explicit(&short_captures, memory_order_relaxed);
}

static _Atomic uint64_t fork_captures; /* captures given up while the process forked */

uint64_t native_stack_fork_captures(void)
{
    return atomic_load_explicit(&fork_captures, memory_order_relaxed);
}

void native_stack_atfork_child(void)
{
    atomic_store_explicit(&short_captures, 0, memory_order_relaxed);
    atomic_store_explicit(&fork_captures, 0, memory_order_relaxed);
}

/* libunwind may hold the loader's write lock (collectors/loader_gate.h): a capture that finds a
 * fork under way is given up (counted), never waits for it. */
static bool gate_enter(void)
{
    if (loader_gate_enter(false))
        return true;
    atomic_fetch_add_explicit(&fork_captures, 1, memory_order_relaxed);
    return false;
}

#if defined(__SANITIZE_THREAD__)
/* TSan builds: unw_backtrace's per-thread trace cache is freed by a pthread key destructor that
 * runs after TSan has torn down the exiting thread's state and crashes inside TSan's mutex
 * interceptor; the step-by-step unwinder keeps no such cache (nor does this path use ours). */
static int capture_raw(void **raw, int limit)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    int n = 0;
    if (!unwind_backtrace || !gate_enter())
        return 0;
    if (unwind_getcontext(&ctx) == 0 && unwind_init_local(&cur, &ctx) == 0) {
        do {
            unw_word_t ip;
            if (unwind_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
                break;
            raw[n++] = (void *)ip;
        } while (n < limit && unwind_step(&cur) > 0);
    }
    loader_gate_leave();
    return n;
}
#else
SYNCSPY_TLS void **native_stack_test_ref;
SYNCSPY_TLS int native_stack_test_nref;

/* libunwind's list into dst (nothing when dst is NULL: -1). */
static inline int unwind_into(void **dst, int limit)
{
    if (!dst)
        return -1;
    return likely(unwind_backtrace != NULL) ? unwind_backtrace(dst, limit) : 0;
}

/* The raw list of at most limit entries: from the thread's stack cache when a chain seen before
 * still holds (collectors/stack_cache.c), else libunwind's, then offered to the cache. The
 * registers are taken here, at one fixed point. libunwind is called from one call site only,
 * so that the first entry of its list (its return address into this function) is the same in
 * every capture. With native_stack_test_ref set (tests), a hit also writes libunwind's own
 * list there, through the same call. */
static __attribute__((noinline)) int capture_raw(void **raw, int limit)
{
    struct sc_regs regs;
    STACK_CACHE_SNAPSHOT(regs);
    bool cached = stack_cache_begin();
    stack_cache_thread_bounds();
    int n = cached ? stack_cache_find(&regs, raw, limit) : -1;
    void **ref = native_stack_test_ref;
    /* libunwind needs ~6 KiB of stack (its cursor and context, more on a thread's first call):
     * with less left on the thread's own stack, no native frames rather than an overflow */
    if (n < 0 && !stack_cache_room(regs.rsp, NATIVE_UNWIND_ROOM_BYTES)) {
        n = 0;
        if (unlikely(ref != NULL))
            native_stack_test_nref = 0; /* no reference list either */
        ref = NULL;
        atomic_fetch_add_explicit(&short_captures, 1, memory_order_relaxed);
    }
    void **dst = n < 0 ? raw : ref;
    bool gate = dst && gate_enter();
    int m = unwind_into(gate ? dst : NULL, limit);
    if (gate)
        loader_gate_leave();
    __asm__ volatile("" : "+r"(n)); /* n opaque: the one call is not duplicated per branch */
    if (n < 0) {
        n = m;
        if (cached && n > 0)
            stack_cache_learn(&regs, raw, n, limit);
        if (unlikely(ref != NULL))
            memcpy(ref, raw, (size_t)(n > 0 ? n : 0) * sizeof *raw);
    }
    if (unlikely(ref != NULL))
        native_stack_test_nref = m;
    if (cached)
        stack_cache_end();
    return n;
}
#endif

int native_stack_test_raw(void **raw, void **ref, int *nref, int limit)
{
    if (limit > NATIVE_STACK_RAW_MAX)
        limit = NATIVE_STACK_RAW_MAX;
#if defined(__SANITIZE_THREAD__)
    int n = 0;
    for (volatile int k = 0; k < 2; k++) /* one call site: the same first entries */
        *(k ? nref : &n) = capture_raw(k ? ref : raw, limit);
#else
    void **outer = native_stack_test_ref; /* a signal handler's test inside another test's */
    int outer_n = native_stack_test_nref;
    native_stack_test_ref = ref;
    int n = capture_raw(raw, limit);
    *nref = native_stack_test_nref;
    native_stack_test_nref = outer_n;
    native_stack_test_ref = outer;
#endif
    return n;
}

/* Frame i of a step-by-step unwind occupies [its SP, the next frame's SP): the one that holds
 * addr is found by comparing each frame's SP with the next's. Once per process at most (the
 * caller's rule): libunwind's full walk, ~6 KiB of stack, no cache. */
static int function_holding(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

int native_stack_function_holding(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    if (!unwind_backtrace || !unwind_getcontext || !unwind_init_local || !unwind_get_reg ||
        !unwind_step || !unwind_get_proc_info)
        return -1;
    if (!loader_gate_enter(false))
        return -1; /* a fork under way: the caller asks again later */
    int rc = function_holding(addr, lo, hi);
    loader_gate_leave();
    return rc;
}

static int function_holding(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    unw_context_t ctx;
    unw_cursor_t cur, prev;
    unw_word_t prev_sp = 0;
    if (unwind_getcontext(&ctx) != 0 || unwind_init_local(&cur, &ctx) != 0)
        return -1;
    for (int i = 0; i < NATIVE_STACK_RAW_MAX; i++) {
        unw_word_t sp;
        if (unwind_get_reg(&cur, UNW_REG_SP, &sp) < 0 || sp < prev_sp)
            return -1;
        if (i > 0 && addr >= prev_sp && addr < sp) { /* the previous frame's */
            unw_proc_info_t pi;
            if (unwind_get_proc_info(&prev, &pi) < 0 || pi.start_ip >= pi.end_ip)
                return -1;
            *lo = (uintptr_t)pi.start_ip;
            *hi = (uintptr_t)pi.end_ip;
            return 0;
        }
        prev = cur;
        prev_sp = sp;
        if (unwind_step(&cur) <= 0)
            return -1;
    }
    return -1;
}

int native_stack_capture(uintptr_t *pcs, int max, int *truncated, void **raw)
{
    /* raw has room for the agent's own frames (shim entry, agent_sync, this function) above max */
    if (max > NATIVE_STACK_MAX)
        max = NATIVE_STACK_MAX;
    const bool skip_cuda = native_stack_skip_cuda;
    const int slack = skip_cuda ? 16 + CUDA_FRAMES_SLACK : 16;
    int n = capture_raw(raw, max + slack);
    int skip = 0;
    while (skip < n && native_stack_is_agent_pc((uintptr_t)raw[skip]))
        skip++;
    if (unlikely(skip_cuda)) /* then libcupti's dispatcher and the CUDA entry point */
        while (skip < n && (in_cuda_object((uintptr_t)raw[skip]) ||
                            native_stack_is_agent_pc((uintptr_t)raw[skip])))
            skip++;
    int depth = n - skip;
    *truncated = 0;
    if (depth > max) {
        depth = max;
        *truncated = 1;
    } else if (n == max + slack) {
        *truncated = 1;
    }
    if (depth <= 0)
        return 0;
    memcpy(pcs, raw + skip, (size_t)depth * sizeof *pcs); /* void * and uintptr_t: one size */
    return depth;
}
