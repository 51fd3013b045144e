/* shim/classify.c: sync or not (see classify.h). Calls only the real cudaPointerGetAttributes. */
#include "shim/classify.h"

#include "shim/real.h"

enum mem_kind { MEM_UNKNOWN, MEM_DEVICE, MEM_PINNED, MEM_PAGEABLE, MEM_MANAGED };

typedef cudaError_t (*attr_fn)(struct cudaPointerAttributes *, const void *);

static enum mem_kind mem_kind(const void *p)
{
    attr_fn f = (attr_fn)real_get(REAL_cudaPointerGetAttributes, "cudaPointerGetAttributes");
    struct cudaPointerAttributes a;
    /* CUDA 11+ answers cudaSuccess with type Unregistered for ordinary host memory, so this
     * does not leave an error behind for the application's cudaGetLastError. */
    if (!f || f(&a, p) != cudaSuccess)
        return MEM_UNKNOWN;
    switch (a.type) {
    case cudaMemoryTypeDevice: return MEM_DEVICE;
    case cudaMemoryTypeHost: return MEM_PINNED;
    case cudaMemoryTypeManaged: return MEM_MANAGED;
    case cudaMemoryTypeUnregistered: return MEM_PAGEABLE;
    default: return MEM_UNKNOWN;
    }
}

static bool on_host(enum mem_kind k)
{
    return k == MEM_PINNED || k == MEM_PAGEABLE;
}

bool classify_copy(enum cudaMemcpyKind kind, const void *dst, const void *src, bool async,
                   enum copy_dir *dir)
{
    enum mem_kind dk = MEM_UNKNOWN, sk = MEM_UNKNOWN;
    switch (kind) {
    case cudaMemcpyHostToDevice: *dir = DIR_H2D; break;
    case cudaMemcpyDeviceToHost: *dir = DIR_D2H; break;
    case cudaMemcpyDeviceToDevice: *dir = DIR_D2D; break;
    case cudaMemcpyHostToHost: *dir = DIR_H2H; break;
    default: /* cudaMemcpyDefault: the pointers say (unified virtual addressing) */
        dk = mem_kind(dst);
        sk = mem_kind(src);
        if (on_host(dk))
            *dir = on_host(sk) ? DIR_H2H : DIR_D2H;
        else
            *dir = on_host(sk) ? DIR_H2D : DIR_D2D;
        break;
    }
    if (*dir == DIR_D2D)
        return false; /* no host-side synchronization in either form */
    if (*dir == DIR_H2H || !async)
        return true; /* host-to-host, and the synchronous forms of every other direction */
    /* Async between host and device: synchronous when the host memory is pageable. */
    const void *host = *dir == DIR_H2D ? src : dst;
    enum mem_kind hk = *dir == DIR_H2D ? sk : dk;
    if (hk == MEM_UNKNOWN)
        hk = mem_kind(host);
    return hk == MEM_PAGEABLE;
}

bool classify_memset(const void *dst)
{
    enum mem_kind k = mem_kind(dst);
    return k == MEM_PINNED || k == MEM_MANAGED;
}
