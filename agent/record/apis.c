/* agent/record/apis.c: the names of the interposed entry points and of the APIs seen only through CUPTI
 * (see apis.h). A constant table and an append-only one. */
#include "agent/record/apis.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const char *const names[API_COUNT] = {
#define X(name) [API_##name] = #name,
    SYNCSPY_APIS(X)
#undef X
};

#define API_NAME_MAX 64

static char dynamic_names[API_DYNAMIC_MAX][API_NAME_MAX];
static _Atomic uint32_t n_dynamic;
/* Taken around fork() by the fork handlers (agent/process/fork_locks.h): a child keeps the names. */
static pthread_mutex_t dynamic_lock = PTHREAD_MUTEX_INITIALIZER;

pthread_mutex_t *apis_lock(void)
{
    return &dynamic_lock;
}

static uint32_t find_dynamic(const char *name, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strncmp(dynamic_names[i], name, API_NAME_MAX - 1))
            return API_COUNT + i;
    return 0;
}

uint32_t api_intern(const char *name)
{
    uint32_t id = find_dynamic(name, atomic_load_explicit(&n_dynamic, memory_order_acquire));
    if (id)
        return id;
    pthread_mutex_lock(&dynamic_lock);
    uint32_t n = atomic_load_explicit(&n_dynamic, memory_order_relaxed);
    id = find_dynamic(name, n);
    if (!id) {
        if (n == API_DYNAMIC_MAX - 1) {
            snprintf(dynamic_names[n], API_NAME_MAX, "other");
            id = API_COUNT + n;
        } else {
            snprintf(dynamic_names[n], API_NAME_MAX, "%s", name);
            atomic_store_explicit(&n_dynamic, n + 1, memory_order_release);
            id = API_COUNT + n;
        }
    }
    pthread_mutex_unlock(&dynamic_lock);
    return id;
}

const char *api_name(uint32_t id)
{
    if (id < API_COUNT)
        return names[id];
    if (id - API_COUNT < API_DYNAMIC_MAX && dynamic_names[id - API_COUNT][0])
        return dynamic_names[id - API_COUNT];
    return "?";
}
