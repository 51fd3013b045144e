/* sim/contents.c: what device memory reads as. Kernels compute nothing, so the bytes a kernel
 * would have written are unknown; reading them back as whatever was there before (stale bytes
 * of a block a caching allocator reused, say) would hand a framework absurd data-dependent
 * sizes (torch.unique's count, torch.nonzero's). The rule (sim/README.md, "Device memory
 * contents"): a byte of device or managed memory reads as what a copy or memset last wrote
 * there if no kernel has been launched since on any stream; otherwise it reads as zero. So a
 * count a kernel "computes" is 0, a flag is false, and a copy in and out with no kernel in
 * between gives the bytes back.
 *
 * The written-since-the-last-launch ranges are kept in a sorted array of at most
 * SIM_FRESH_MAX disjoint intervals; a launch empties it (one atomic add on the launch path).
 * When it is full the lowest range is forgotten (it reads as zero from then on). */
#include "sim/sim_internal.h"

#include <pthread.h>
#include <string.h>

#define SIM_FRESH_MAX 1024

struct fresh {
    uintptr_t lo, hi; /* [lo, hi) */
};

static _Atomic uint64_t launches; /* kernel launches so far */
static pthread_mutex_t fresh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fresh fresh[SIM_FRESH_MAX]; /* sorted by lo, disjoint, not adjacent */
static size_t nfresh;
static uint64_t fresh_epoch; /* `launches` when fresh[] was last valid */

void sim_contents_kernel(void)
{
    atomic_fetch_add_explicit(&launches, 1, memory_order_relaxed);
}

/* fresh_lock held: forget every range if a kernel was launched since they were written. */
static void expire_locked(void)
{
    uint64_t now = atomic_load_explicit(&launches, memory_order_relaxed);
    if (now != fresh_epoch) {
        nfresh = 0;
        fresh_epoch = now;
    }
}

/* The first range whose hi is above a (it may start above a too). */
static size_t first_after(uintptr_t a)
{
    size_t lo = 0, hi = nfresh;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fresh[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool tracked(const void *p)
{
    enum sim_mem_kind k = sim_mem_lookup(p, NULL);
    return k == SIM_MEM_DEVICE || k == SIM_MEM_MANAGED;
}

void sim_contents_written(const void *p, size_t n)
{
    if (n == 0 || !tracked(p))
        return;
    uintptr_t a = (uintptr_t)p, b = a + n;
    pthread_mutex_lock(&fresh_lock);
    expire_locked();
    /* Merge with every range that overlaps or touches [a, b). */
    size_t i = first_after(a > 0 ? a - 1 : 0), j = i;
    while (j < nfresh && fresh[j].lo <= b) {
        if (fresh[j].lo < a)
            a = fresh[j].lo;
        if (fresh[j].hi > b)
            b = fresh[j].hi;
        j++;
    }
    if (j == i && nfresh == SIM_FRESH_MAX) { /* full and nothing merged: forget the lowest */
        memmove(&fresh[0], &fresh[1], (nfresh - 1) * sizeof fresh[0]);
        nfresh--;
        if (i > 0)
            i--;
        j = i;
    }
    /* Replace fresh[i, j) by the one merged range. */
    memmove(&fresh[i + 1], &fresh[j], (nfresh - j) * sizeof fresh[0]);
    nfresh = nfresh - (j - i) + 1;
    fresh[i].lo = a;
    fresh[i].hi = b;
    pthread_mutex_unlock(&fresh_lock);
}

void sim_contents_read(void *dst, const void *src, size_t n)
{
    if (n == 0)
        return;
    if (!tracked(src)) {
        memmove(dst, src, n);
        return;
    }
    uintptr_t a = (uintptr_t)src, b = a + n;
    unsigned char *out = dst;
    pthread_mutex_lock(&fresh_lock);
    expire_locked();
    uintptr_t at = a;
    for (size_t i = first_after(a); i < nfresh && fresh[i].lo < b; i++) {
        uintptr_t lo = fresh[i].lo > at ? fresh[i].lo : at;
        uintptr_t hi = fresh[i].hi < b ? fresh[i].hi : b;
        memset(out + (at - a), 0, lo - at);
        memmove(out + (lo - a), (const void *)lo, hi - lo);
        at = hi;
    }
    memset(out + (at - a), 0, b - at);
    pthread_mutex_unlock(&fresh_lock);
}
