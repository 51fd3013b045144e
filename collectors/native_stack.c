/* collectors/native_stack.c: raw native stacks (see native_stack.h). Called on the
 * application's thread inside a CUDA call: no malloc, no stdio, no locks of ours.
 * libunwind's fast trace path keeps its per-thread cache in its own mmap'ed memory. */
#define UNW_LOCAL_ONLY
#include "collectors/native_stack.h"

#include <dlfcn.h>
#include <link.h>
#include <libunwind.h>
#include <string.h>

static uintptr_t self_lo, self_hi; /* the agent's loaded segments */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t me = (uintptr_t)data;
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

int native_stack_capture(uintptr_t *pcs, int max, int *truncated)
{
    /* Room for the agent's own frames (shim entry, agent_sync, this function) above max. */
    void *raw[NATIVE_STACK_MAX + 16];
    if (max > NATIVE_STACK_MAX)
        max = NATIVE_STACK_MAX;
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
        } while (n < max + 16 && unw_step(&cur) > 0);
    }
#else
    n = unw_backtrace(raw, max + 16);
#endif
    int skip = 0;
    while (skip < n && native_stack_is_agent_pc((uintptr_t)raw[skip]))
        skip++;
    int depth = n - skip;
    *truncated = 0;
    if (depth > max) {
        depth = max;
        *truncated = 1;
    } else if (n == max + 16) {
        *truncated = 1;
    }
    for (int i = 0; i < depth; i++)
        pcs[i] = (uintptr_t)raw[skip + i];
    return depth < 0 ? 0 : depth;
}
