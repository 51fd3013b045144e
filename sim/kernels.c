/* sim/kernels.c: kernels of the simulated device. A kernel computes nothing: launching one
 * queues its duration on the stream (simcuda_set_kernel_ns per kernel, else the default).
 * Owns the kernel table (host function or cudaKernel_t handle -> duration and name), the
 * <<<...>>> call-configuration stack and the launch checks CUDA makes before queuing. */
#include "sim/sim_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One kernel. Its address is the cudaKernel_t handle __cudaGetKernel / cudaGetKernel hand
 * out, so the table finds it both by host function and by handle. */
struct CUkern_st {
    const void *host_fn;
    uint64_t ns;
    bool has_ns;
    char *name; /* registered device name, or made up on the first cudaFuncGetName */
};

struct slot {
    const void *key;
    struct CUkern_st *kernel;
};

static pthread_mutex_t kern_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t kern_once = PTHREAD_ONCE_INIT;
static struct slot *table; /* open addressing, power-of-two capacity, at most half full */
static size_t table_cap, table_used;

struct call_config {
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
};
#define MAX_CALL_DEPTH 16
static __thread struct call_config call_stack[MAX_CALL_DEPTH];
static __thread int call_depth;

static void fork_prepare(void)
{
    pthread_mutex_lock(&kern_lock);
}
static void fork_parent(void)
{
    pthread_mutex_unlock(&kern_lock);
}
static void fork_child(void)
{
    pthread_mutex_init(&kern_lock, NULL);
}
static void kern_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void lock_kernels(void)
{
    pthread_once(&kern_once, kern_init);
    pthread_mutex_lock(&kern_lock);
}

static void unlock_kernels(void)
{
    pthread_mutex_unlock(&kern_lock);
}

static size_t hash_ptr(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static struct CUkern_st *find_locked(const void *key)
{
    if (table_cap == 0)
        return NULL;
    for (size_t i = hash_ptr(key) & (table_cap - 1);; i = (i + 1) & (table_cap - 1)) {
        if (table[i].key == key)
            return table[i].kernel;
        if (table[i].key == NULL)
            return NULL;
    }
}

static void put_slot(struct slot *t, size_t cap, const void *key, struct CUkern_st *k)
{
    size_t i = hash_ptr(key) & (cap - 1);
    while (t[i].key != NULL && t[i].key != key)
        i = (i + 1) & (cap - 1);
    t[i].key = key;
    t[i].kernel = k;
}

static bool reserve_locked(size_t more)
{
    if ((table_used + more) * 2 <= table_cap)
        return true;
    size_t cap = table_cap ? table_cap * 2 : 256;
    struct slot *t = calloc(cap, sizeof *t);
    if (t == NULL)
        return false;
    for (size_t i = 0; i < table_cap; i++)
        if (table[i].key != NULL)
            put_slot(t, cap, table[i].key, table[i].kernel);
    free(table);
    table = t;
    table_cap = cap;
    return true;
}

/* The kernel for func (a host function or a handle), made if it is new; NULL without memory. */
static struct CUkern_st *get_locked(const void *func)
{
    struct CUkern_st *k = find_locked(func);
    if (k != NULL)
        return k;
    if (!reserve_locked(2) || (k = calloc(1, sizeof *k)) == NULL)
        return NULL;
    k->host_fn = func;
    put_slot(table, table_cap, func, k);
    put_slot(table, table_cap, k, k);
    table_used += 2;
    return k;
}

void sim_kernel_set_ns(const void *func, uint64_t ns)
{
    if (func == NULL)
        return;
    lock_kernels();
    struct CUkern_st *k = get_locked(func);
    if (k != NULL) {
        k->ns = ns;
        k->has_ns = true;
    }
    unlock_kernels();
}

static uint64_t kernel_ns(const void *func)
{
    lock_kernels();
    const struct CUkern_st *k = find_locked(func);
    bool own = k != NULL && k->has_ns;
    uint64_t ns = own ? k->ns : 0;
    unlock_kernels();
    return own ? ns : atomic_load(&sim_default_kernel_ns);
}

cudaError_t sim_kernel_handle(cudaKernel_t *out, const void *func)
{
    if (out == NULL || func == NULL)
        return cudaErrorInvalidValue;
    lock_kernels();
    struct CUkern_st *k = get_locked(func);
    unlock_kernels();
    if (k == NULL)
        return cudaErrorMemoryAllocation;
    *out = k;
    return cudaSuccess;
}

cudaError_t sim_kernel_name(const char **name, const void *func)
{
    if (name == NULL || func == NULL)
        return cudaErrorInvalidValue;
    lock_kernels();
    struct CUkern_st *k = get_locked(func);
    if (k != NULL && k->name == NULL && asprintf(&k->name, "kernel@%p", k->host_fn) < 0)
        k->name = NULL;
    const char *n = k != NULL ? k->name : NULL;
    unlock_kernels();
    if (n == NULL)
        return cudaErrorMemoryAllocation;
    *name = n;
    return cudaSuccess;
}

void sim_kernel_register(const void *host_fn, const char *device_name)
{
    if (host_fn == NULL || device_name == NULL)
        return;
    char *copy = strdup(device_name); /* the module holding the string may be unloaded */
    lock_kernels();
    struct CUkern_st *k = get_locked(host_fn);
    if (k != NULL && copy != NULL) {
        free(k->name);
        k->name = copy;
        copy = NULL;
    }
    unlock_kernels();
    free(copy);
}

/* The checks a real launch makes before queuing (limits of a compute capability 9.0 device). */
static cudaError_t check_config(dim3 grid, dim3 block)
{
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
        return cudaErrorInvalidConfiguration;
    if (grid.y > 65535 || grid.z > 65535 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
        (uint64_t)block.x * block.y * block.z > 1024)
        return cudaErrorInvalidConfiguration;
    return cudaSuccess;
}

cudaError_t sim_launch(const void *func, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
                       sim_default_t def)
{
    if (func == NULL)
        return cudaErrorInvalidDeviceFunction;
    cudaError_t err = check_config(grid, block);
    if (err != cudaSuccess)
        return err;
    if (shmem > 227 * 1024)
        return cudaErrorInvalidValue;
    return sim_launch_ns(func, kernel_ns(func), stream, def);
}

static _Atomic unsigned long long kernels_queued, launches_made;
static __thread bool replaying; /* in sim_graph_replay: its kernels are the graph launch's */

unsigned long long sim_kernel_count(void)
{
    return atomic_load_explicit(&kernels_queued, memory_order_relaxed);
}

unsigned long long sim_launch_count(void)
{
    return atomic_load_explicit(&launches_made, memory_order_relaxed);
}

void sim_graph_replay(bool begin)
{
    replaying = begin;
    if (begin)
        atomic_fetch_add_explicit(&launches_made, 1, memory_order_relaxed);
}

cudaError_t sim_launch_ns(const void *func, uint64_t ns, cudaStream_t stream, sim_default_t def)
{
    if (func == NULL)
        return cudaErrorInvalidDeviceFunction;
    uint64_t start = 0, end = 0;
    cudaError_t err = sim_enqueue_kernel(stream, def, ns, func, &start, &end);
    if (err == cudaSuccess && !replaying) /* a launch call, captured or run */
        atomic_fetch_add_explicit(&launches_made, 1, memory_order_relaxed);
    if (err == cudaSuccess && !sim_last_enqueue_captured()) { /* captured: runs at graph launch */
        atomic_fetch_add_explicit(&kernels_queued, 1, memory_order_relaxed);
        sim_contents_kernel(); /* what it "wrote" reads as zero from now on */
    }
    SIM_DBG(2, "launch %p: %llu ns, starts in %lld ns", func, (unsigned long long)ns,
            sim_ns_left(start));
    return err;
}

unsigned sim_push_call_config(dim3 grid, dim3 block, size_t shmem, cudaStream_t stream)
{
    if (call_depth == MAX_CALL_DEPTH)
        return 1;
    call_stack[call_depth++] = (struct call_config){grid, block, shmem, stream};
    return 0;
}

cudaError_t sim_pop_call_config(dim3 *grid, dim3 *block, size_t *shmem, cudaStream_t *stream)
{
    if (call_depth == 0)
        return cudaErrorMissingConfiguration;
    const struct call_config *c = &call_stack[--call_depth];
    *grid = c->grid;
    *block = c->block;
    *shmem = c->shmem;
    *stream = c->stream;
    return cudaSuccess;
}

/* Resident blocks per multiprocessor for a block size: 64 warps per multiprocessor, at most 32
 * blocks (compute capability 9.0), whatever the kernel's registers and shared memory. */
cudaError_t sim_occupancy(int *blocks_per_sm, const void *func, int block_size)
{
    if (blocks_per_sm == NULL || block_size <= 0)
        return cudaErrorInvalidValue;
    if (func == NULL)
        return cudaErrorInvalidDeviceFunction;
    int warps = (block_size + 31) / 32;
    int blocks = 64 / warps;
    *blocks_per_sm = blocks > 32 ? 32 : blocks;
    return cudaSuccess;
}
