/* sim/pools.c: memory pools (cudaMemPool_t) of the simulated device: the default pool, pools
 * made by cudaMemPoolCreate, their attributes and access descriptors. Allocations from a pool
 * are ordinary device allocations released at once by cudaFreeAsync, so a pool never keeps
 * memory: its reserved and used counters read 0 and trimming does nothing. Hidden code, called
 * from sim/cudart_ext.c only. */

#include "sim/sim_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct CUmemPoolHandle_st {
    struct CUmemPoolHandle_st *next;
    int reuse
        [3]; /* cudaMemPoolReuse{FollowEventDependencies,AllowOpportunistic,AllowInternalDependencies} */
    uint64_t release_threshold;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUmemPoolHandle_st default_pool = {NULL, {1, 1, 1}, 0};
static struct CUmemPoolHandle_st *created; /* cudaMemPoolCreate's, newest first */
static struct CUmemPoolHandle_st *current = &default_pool;

cudaMemPool_t sim_pool_default(void)
{
    return &default_pool;
}

cudaMemPool_t sim_pool_current(void)
{
    pthread_mutex_lock(&pool_lock);
    cudaMemPool_t p = current;
    pthread_mutex_unlock(&pool_lock);
    return p;
}

/* Whether pool is a live one; pool_lock held. */
static bool live(cudaMemPool_t pool)
{
    if (pool == &default_pool)
        return true;
    for (struct CUmemPoolHandle_st *p = created; p != NULL; p = p->next)
        if (p == pool)
            return true;
    return false;
}

cudaError_t sim_pool_check(cudaMemPool_t pool)
{
    pthread_mutex_lock(&pool_lock);
    bool ok = pool != NULL && live(pool);
    pthread_mutex_unlock(&pool_lock);
    return ok ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t sim_pool_set_current(cudaMemPool_t pool)
{
    pthread_mutex_lock(&pool_lock);
    bool ok = pool != NULL && live(pool);
    if (ok)
        current = pool;
    pthread_mutex_unlock(&pool_lock);
    return ok ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t sim_pool_create(cudaMemPool_t *out, const struct cudaMemPoolProps *props)
{
    if (out == NULL || props == NULL || props->allocType != cudaMemAllocationTypePinned ||
        props->location.type != cudaMemLocationTypeDevice)
        return cudaErrorInvalidValue;
    cudaError_t err = sim_device_check(props->location.id);
    if (err != cudaSuccess)
        return err;
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (p == NULL)
        return cudaErrorMemoryAllocation;
    for (int i = 0; i < 3; i++)
        p->reuse[i] = 1;
    pthread_mutex_lock(&pool_lock);
    p->next = created;
    created = p;
    pthread_mutex_unlock(&pool_lock);
    *out = p;
    return cudaSuccess;
}

cudaError_t sim_pool_destroy(cudaMemPool_t pool)
{
    cudaError_t err = cudaErrorInvalidValue;
    pthread_mutex_lock(&pool_lock);
    for (struct CUmemPoolHandle_st **pp = &created; *pp != NULL; pp = &(*pp)->next)
        if (*pp == pool) {
            *pp = pool->next;
            if (current == pool)
                current = &default_pool;
            free(pool);
            err = cudaSuccess;
            break;
        }
    pthread_mutex_unlock(&pool_lock);
    return err; /* the default pool cannot be destroyed */
}

/* cudaMemPoolGetAttribute / SetAttribute: the reuse flags are ints, the rest cuuint64_t. The
 * counters read 0 (a pool keeps nothing); only their high watermarks can be set, to 0. */
cudaError_t sim_pool_attribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value, bool set)
{
    if (value == NULL)
        return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&pool_lock);
    if (pool == NULL || !live(pool)) {
        err = cudaErrorInvalidValue;
    } else if (attr >= cudaMemPoolReuseFollowEventDependencies &&
               attr <= cudaMemPoolReuseAllowInternalDependencies) {
        int *slot = &pool->reuse[attr - cudaMemPoolReuseFollowEventDependencies];
        if (set)
            *slot = *(int *)value != 0;
        else
            *(int *)value = *slot;
    } else if (attr == cudaMemPoolAttrReleaseThreshold) {
        if (set)
            pool->release_threshold = *(uint64_t *)value;
        else
            *(uint64_t *)value = pool->release_threshold;
    } else if (attr >= cudaMemPoolAttrReservedMemCurrent && attr <= cudaMemPoolAttrUsedMemHigh) {
        bool high = attr == cudaMemPoolAttrReservedMemHigh || attr == cudaMemPoolAttrUsedMemHigh;
        if (!set)
            *(uint64_t *)value = 0;
        else if (!high || *(uint64_t *)value != 0)
            err = cudaErrorInvalidValue;
    } else {
        err = cudaErrorInvalidValue;
    }
    pthread_mutex_unlock(&pool_lock);
    return err;
}

static bool device_location(const struct cudaMemLocation *loc)
{
    return loc->type == cudaMemLocationTypeDevice && sim_device_check(loc->id) == cudaSuccess;
}

cudaError_t sim_pool_set_access(cudaMemPool_t pool, const struct cudaMemAccessDesc *list,
                                size_t count)
{
    if (count > 0 && list == NULL)
        return cudaErrorInvalidValue;
    for (size_t i = 0; i < count; i++)
        if (!device_location(&list[i].location) ||
            (list[i].flags != cudaMemAccessFlagsProtNone &&
             list[i].flags != cudaMemAccessFlagsProtRead &&
             list[i].flags != cudaMemAccessFlagsProtReadWrite))
            return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&pool_lock);
    if (pool == NULL || !live(pool))
        err = cudaErrorInvalidValue;
    else
        for (size_t i = 0; i < count; i++)
            /* The device that owns the pool always has read-write access to it. */
            if (list[i].flags != cudaMemAccessFlagsProtReadWrite)
                err = cudaErrorInvalidDevice;
    pthread_mutex_unlock(&pool_lock);
    return err;
}

cudaError_t sim_pool_get_access(enum cudaMemAccessFlags *flags, cudaMemPool_t pool,
                                struct cudaMemLocation *location)
{
    if (flags == NULL || location == NULL || !device_location(location))
        return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&pool_lock);
    if (pool == NULL || !live(pool))
        err = cudaErrorInvalidValue;
    else
        *flags = cudaMemAccessFlagsProtReadWrite; /* its own device's, always */
    pthread_mutex_unlock(&pool_lock);
    return err;
}
