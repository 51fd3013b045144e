/* sim/memory.c: the simulated device's memory. Device, managed and pinned allocations are real
 * host memory (copies really move bytes), recorded in a sorted range table so every copy and
 * cudaPointerGetAttributes can tell device, pinned, managed and pageable memory apart.
 * Also owns CUDA arrays (dense row-major host memory). Never synchronizes: callers do. */
#include "sim/sim_internal.h"
#include "sim/device_facts.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What cudaMemGetInfo reports as total: an 80 GiB device. */
#define SIM_TOTAL_BYTES SIM_DEVICE_BYTES
#define SIM_DEVICE_ALIGN 256 /* cudaMalloc's documented minimum alignment */
#define SIM_HOST_ALIGN 4096  /* pinned memory is page-locked whole pages */

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;
static struct sim_range *ranges; /* sorted by base, never overlapping */
static size_t nranges, cap_ranges;
static size_t device_bytes; /* device + managed + arrays, for cudaMemGetInfo */
static struct cudaArray *arrays;

static void fork_prepare(void)
{
    pthread_mutex_lock(&mem_lock);
}
static void fork_parent(void)
{
    pthread_mutex_unlock(&mem_lock);
}
static void fork_child(void)
{
    pthread_mutex_init(&mem_lock, NULL);
}
static void mem_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void lock_mem(void)
{
    pthread_once(&mem_once, mem_init);
    pthread_mutex_lock(&mem_lock);
}

static void unlock_mem(void)
{
    pthread_mutex_unlock(&mem_lock);
}

/* Index of the first range whose base is > p. */
static size_t upper_bound_locked(uintptr_t p)
{
    size_t lo = 0, hi = nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ranges[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The range containing p, or NULL. */
static struct sim_range *find_locked(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    size_t i = upper_bound_locked(a);
    if (i == 0)
        return NULL;
    struct sim_range *r = &ranges[i - 1];
    return a - r->base < r->size ? r : NULL;
}

static void remove_at_locked(size_t i)
{
    if (ranges[i].owned && ranges[i].kind != SIM_MEM_PINNED)
        device_bytes -= ranges[i].size;
    memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof *ranges);
    nranges--;
}

/* Adds r. Ranges of memory the program handed us (registered host memory) that overlap a new
 * allocation are stale (the program freed that memory without unregistering) and are dropped;
 * any other overlap is refused. */
static bool insert_locked(const struct sim_range *r)
{
    size_t i = upper_bound_locked(r->base);
    while (i > 0 && ranges[i - 1].base + ranges[i - 1].size > r->base) {
        if (!r->owned || ranges[i - 1].owned)
            return false;
        remove_at_locked(--i);
    }
    while (i < nranges && ranges[i].base < r->base + r->size) {
        if (!r->owned || ranges[i].owned)
            return false;
        remove_at_locked(i);
    }
    if (nranges == cap_ranges) {
        size_t cap = cap_ranges ? cap_ranges * 2 : 64;
        struct sim_range *n = realloc(ranges, cap * sizeof *n);
        if (n == NULL)
            return false;
        ranges = n;
        cap_ranges = cap;
    }
    memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof *ranges);
    ranges[i] = *r;
    nranges++;
    if (r->owned && r->kind != SIM_MEM_PINNED)
        device_bytes += r->size;
    return true;
}

enum sim_mem_kind sim_mem_lookup(const void *p, struct sim_range *out)
{
    lock_mem();
    const struct sim_range *r = find_locked(p);
    enum sim_mem_kind kind = r != NULL ? r->kind : SIM_MEM_PAGEABLE;
    if (r != NULL && out != NULL)
        *out = *r;
    unlock_mem();
    return kind;
}

cudaError_t sim_mem_range(const void *p, void **base, size_t *size)
{
    struct sim_range r;
    if (p == NULL || sim_mem_lookup(p, &r) == SIM_MEM_PAGEABLE)
        return cudaErrorInvalidValue; /* CUDA_ERROR_NOT_FOUND in the driver's words */
    if (base != NULL)
        *base = (void *)r.base;
    if (size != NULL)
        *size = r.size;
    return cudaSuccess;
}

cudaError_t sim_mem_check_span(const void *p, size_t len)
{
    lock_mem();
    const struct sim_range *r = find_locked(p);
    bool ok = r == NULL || len <= r->size - ((uintptr_t)p - r->base);
    unlock_mem();
    return ok ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t sim_mem_alloc(void **out, size_t size, enum sim_mem_kind kind, unsigned flags)
{
    if (out == NULL)
        return cudaErrorInvalidValue;
    *out = NULL;
    if (size == 0) /* CUDA hands out NULL for an empty allocation */
        return cudaSuccess;
    void *p;
    size_t align = kind == SIM_MEM_PINNED ? SIM_HOST_ALIGN : SIM_DEVICE_ALIGN;
    if (posix_memalign(&p, align, size) != 0)
        return cudaErrorMemoryAllocation;
    struct sim_range r = {
        .base = (uintptr_t)p, .size = size, .kind = kind, .flags = flags, .owned = true};
    lock_mem();
    bool ok =
        (kind == SIM_MEM_PINNED || device_bytes + size <= SIM_TOTAL_BYTES) && insert_locked(&r);
    unlock_mem();
    if (!ok) {
        free(p);
        return cudaErrorMemoryAllocation;
    }
    *out = p;
    return cudaSuccess;
}

cudaError_t sim_mem_release(void *p, unsigned kind_mask)
{
    lock_mem();
    struct sim_range *r = find_locked(p);
    bool ok = r != NULL && r->base == (uintptr_t)p && r->owned && ((1u << r->kind) & kind_mask);
    if (ok)
        remove_at_locked((size_t)(r - ranges));
    unlock_mem();
    if (!ok)
        return cudaErrorInvalidValue;
    free(p);
    return cudaSuccess;
}

cudaError_t sim_mem_host_register(void *p, size_t size, unsigned flags)
{
    if (p == NULL || size == 0)
        return cudaErrorInvalidValue;
    struct sim_range r = {
        .base = (uintptr_t)p, .size = size, .kind = SIM_MEM_PINNED, .flags = flags};
    lock_mem();
    bool ok = insert_locked(&r);
    unlock_mem();
    return ok ? cudaSuccess : cudaErrorHostMemoryAlreadyRegistered;
}

cudaError_t sim_mem_host_unregister(void *p)
{
    lock_mem();
    struct sim_range *r = find_locked(p);
    bool ok = r != NULL && r->base == (uintptr_t)p && !r->owned && r->kind == SIM_MEM_PINNED;
    if (ok)
        remove_at_locked((size_t)(r - ranges));
    unlock_mem();
    return ok ? cudaSuccess : cudaErrorHostMemoryNotRegistered;
}

void sim_mem_register_symbol(void *p, size_t size)
{
    if (p == NULL || size == 0)
        return;
    struct sim_range r = {
        .base = (uintptr_t)p, .size = size, .kind = SIM_MEM_DEVICE, .symbol = true};
    lock_mem();
    (void)insert_locked(&r); /* registered twice (a module loaded again): keep the first */
    unlock_mem();
}

cudaError_t sim_mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
    lock_mem();
    size_t used = device_bytes;
    unlock_mem();
    if (free_bytes != NULL)
        *free_bytes = SIM_TOTAL_BYTES - used;
    if (total_bytes != NULL)
        *total_bytes = SIM_TOTAL_BYTES;
    return cudaSuccess;
}

/* As CUDA 11 and later answer: memory CUDA does not know (malloc, stack, NULL) is
 * cudaMemoryTypeUnregistered with cudaSuccess, on no device (cudaInvalidDeviceId), reachable
 * only from the host (driver_types.h notes hostPointer is then the pointer, unchecked). */
cudaError_t sim_mem_pointer_attributes(struct cudaPointerAttributes *attr, const void *p)
{
    if (attr == NULL)
        return cudaErrorInvalidValue;
    memset(attr, 0, sizeof *attr);
    void *q = (void *)(uintptr_t)p;
    switch (sim_mem_lookup(p, NULL)) {
    case SIM_MEM_DEVICE:
        attr->type = cudaMemoryTypeDevice;
        attr->device = 0;
        attr->devicePointer = q;
        break;
    case SIM_MEM_PINNED:
        attr->type = cudaMemoryTypeHost;
        attr->device = 0;
        attr->devicePointer = q;
        attr->hostPointer = q;
        break;
    case SIM_MEM_MANAGED:
        attr->type = cudaMemoryTypeManaged;
        attr->device = 0;
        attr->devicePointer = q;
        attr->hostPointer = q;
        break;
    case SIM_MEM_PAGEABLE:
        attr->type = cudaMemoryTypeUnregistered;
        attr->device = cudaInvalidDeviceId;
        attr->hostPointer = q;
        break;
    }
    return cudaSuccess;
}

/* cudaDeviceReset: every allocation and host registration goes; __device__ variables stay. */
void sim_mem_release_all(void)
{
    lock_mem();
    size_t kept = 0;
    for (size_t i = 0; i < nranges; i++) {
        if (ranges[i].symbol)
            ranges[kept++] = ranges[i];
        else if (ranges[i].owned)
            free((void *)ranges[i].base);
    }
    nranges = kept;
    device_bytes = 0;
    for (struct cudaArray *a = arrays, *next; a != NULL; a = next) {
        next = a->next;
        free(a->data);
        free(a);
    }
    arrays = NULL;
    unlock_mem();
}

/* --- arrays -------------------------------------------------------------------------------- */

cudaError_t sim_array_alloc(cudaArray_t *out, const struct cudaChannelFormatDesc *desc,
                            size_t width, size_t height, size_t depth, unsigned flags)
{
    if (out == NULL || desc == NULL || width == 0)
        return cudaErrorInvalidValue;
    int bits = desc->x + desc->y + desc->z + desc->w;
    if (desc->x < 0 || desc->y < 0 || desc->z < 0 || desc->w < 0 || bits <= 0 || bits % 8)
        return cudaErrorInvalidChannelDescriptor;
    struct cudaArray *a = calloc(1, sizeof *a);
    if (a == NULL)
        return cudaErrorMemoryAllocation;
    a->desc = *desc;
    a->width = width;
    a->height = height;
    a->depth = depth;
    a->rows = height ? height : 1;
    a->slices = depth ? depth : 1;
    a->elem_bytes = (size_t)bits / 8;
    a->pitch = width * a->elem_bytes;
    a->flags = flags;
    size_t bytes = a->pitch * a->rows * a->slices;
    a->data = calloc(1, bytes);
    if (a->data == NULL) {
        free(a);
        return cudaErrorMemoryAllocation;
    }
    lock_mem();
    bool fits = device_bytes + bytes <= SIM_TOTAL_BYTES;
    if (fits) {
        device_bytes += bytes;
        a->next = arrays;
        arrays = a;
    }
    unlock_mem();
    if (!fits) {
        free(a->data);
        free(a);
        return cudaErrorMemoryAllocation;
    }
    *out = a;
    return cudaSuccess;
}

cudaError_t sim_array_release(cudaArray_t array)
{
    if (array == NULL)
        return cudaSuccess;
    lock_mem();
    struct cudaArray **pos = &arrays;
    while (*pos != NULL && *pos != array)
        pos = &(*pos)->next;
    bool found = *pos != NULL;
    if (found) {
        *pos = array->next;
        device_bytes -= array->pitch * array->rows * array->slices;
    }
    unlock_mem();
    if (!found)
        return cudaErrorInvalidResourceHandle;
    free(array->data);
    free(array);
    return cudaSuccess;
}

struct cudaArray *sim_array_lookup(cudaArray_const_t array)
{
    lock_mem();
    struct cudaArray *a = arrays;
    while (a != NULL && a != array)
        a = a->next;
    unlock_mem();
    return a;
}
