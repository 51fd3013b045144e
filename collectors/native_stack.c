/* collectors/native_stack.c: raw native stacks (see native_stack.h). Called on the
 * application's thread inside a CUDA call: no malloc, no stdio, no locks of ours.
 * libunwind's fast trace path keeps its per-thread cache in its own mmap'ed memory. */
#define UNW_LOCAL_ONLY
#include "collectors/native_stack.h"

#include <dlfcn.h>
#include <link.h>
#include <libunwind.h>
#include <stdatomic.h>
#include <string.h>

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

void native_stack_init(void)
{
    if (!self_hi)
        dl_iterate_phdr(find_self, (void *)(uintptr_t)&native_stack_init);
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
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

int native_stack_object_ranges(const char *const *prefixes, int nprefixes,
                               struct native_range *out, int max)
{
    struct ranges_ctx c = {prefixes, nprefixes, out, max, 0};
    dl_iterate_phdr(collect_ranges, &c);
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

int native_stack_capture(uintptr_t *pcs, int max, int *truncated)
{
    /* Room for the agent's own frames (shim entry, agent_sync, this function) above max. */
    void *raw[NATIVE_STACK_MAX + 16 + CUDA_FRAMES_SLACK];
    if (max > NATIVE_STACK_MAX)
        max = NATIVE_STACK_MAX;
    const bool skip_cuda = native_stack_skip_cuda;
    const int slack = skip_cuda ? 16 + CUDA_FRAMES_SLACK : 16;
    int n = 0;
#if defined(__SANITIZE_THREAD__)
    /* TSan builds: unw_backtrace's per-thread trace cache is freed by a pthread key destructor
     * that runs after TSan has torn down the exiting thread's state and crashes inside TSan's
     * mutex interceptor; the step-by-step unwinder keeps no such cache. */
    unw_context_t ctx;
    unw_cursor_t cur;
    if (unw_getcontext(&ctx) == 0 && unw_init_local(&cur, &ctx) == 0) {
        do {
            unw_word_t ip;
            if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
                break;
            raw[n++] = (void *)ip;
        } while (n < max + slack && unw_step(&cur) > 0);
    }
#else
    n = unw_backtrace(raw, max + slack);
#endif
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
    for (int i = 0; i < depth; i++)
        pcs[i] = (uintptr_t)raw[skip + i];
    return depth < 0 ? 0 : depth;
}
