/* sim/driver_lookup.c: how the simulated runtime reaches the simulated driver's functions for
 * cudaGetDriverEntryPoint*: like the real runtime, it asks the driver's own cuGetProcAddress_v2.
 * The driver is the libcuda.so.1 beside this library (the simulated device has one driver),
 * else the one the loader finds. Hidden; no exported name of this library is called. */

#include "sim/sim_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* cuGetProcAddress_v2's type (cuda.h), without including cuda.h beside the runtime's headers. */
typedef int (*get_proc_fn)(const char *symbol, void **pfn, int cuda_version,
                           unsigned long long flags, int *status);

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static get_proc_fn get_proc;

static void *open_driver(void)
{
    Dl_info info;
    if (dladdr((void *)&open_driver, &info) != 0 && info.dli_fname != NULL) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash != NULL) {
            char path[PATH_MAX];
            int n = snprintf(path, sizeof path, "%.*s/libcuda.so.1", (int)(slash - info.dli_fname),
                             info.dli_fname);
            if (n > 0 && (size_t)n < sizeof path) {
                void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (h != NULL)
                    return h;
            }
        }
    }
    return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

static void find_driver(void)
{
    void *h = open_driver();
    if (h != NULL)
        get_proc = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
    if (get_proc == NULL)
        SIM_DBG(1, "no simulated libcuda.so.1 with cuGetProcAddress_v2: %s", dlerror());
}

void *sim_driver_proc(const char *symbol, unsigned cuda_version, bool per_thread)
{
    pthread_once(&driver_once, find_driver);
    if (get_proc == NULL)
        return NULL;
    void *fn = NULL;
    int status = 0;
    /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2, _LEGACY_STREAM = 1 */
    if (get_proc(symbol, &fn, (int)cuda_version, per_thread ? 2u : 1u, &status) != 0)
        return NULL;
    return fn;
}
