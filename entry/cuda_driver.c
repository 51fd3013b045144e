/* entry/cuda_driver.c: is the CUDA driver usable (see cuda_driver.h). Asks only what changes
 * nothing: cuDeviceGetCount (CUDA_ERROR_NOT_INITIALIZED until the program's cuInit) and
 * cuDriverGetVersion, never cuInit. Runs under entry/cupti.c's lock on the agent's own stack,
 * never on the recording path (dlopen and opendir allocate): no stdio streams. */
#include "entry/cuda_driver.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "entry/real.h"

/* cuda.h's types, without its prototypes (the agent never links the driver). */
typedef int cu_result; /* CUresult: CUDA_SUCCESS == 0 */
typedef cu_result (*int_out_fn)(int *);

/* The loaded driver's answer through its function id (entry/real.h: found only in the
 * libcuda.so.1 the process loaded), -1 when it has none or says no. */
static int ask_driver(int id)
{
    int_out_fn f = (int_out_fn)real_resolve(id);
    int v = 0;
    return f && f(&v) == 0 ? v : -1;
}

int cuda_driver_devices(void)
{
    return ask_driver(REAL_cuDeviceGetCount);
}

int cuda_driver_version(void)
{
    return ask_driver(REAL_cuDriverGetVersion);
}

bool cuda_kernel_driver_has_gpu(const char *root)
{
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/dev/dxg", root) < (int)sizeof path && stat(path, &st) == 0)
        return true; /* WSL: the GPU is the host's, behind /dev/dxg */
    if (snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus", root) >= (int)sizeof path)
        return false;
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;)
        found = e->d_name[0] != '.'; /* one folder per GPU, named by its PCI address */
    closedir(d);
    return found;
}

bool cuda_driver_installed(int min_version)
{
    if (min_version <= 0 || !cuda_kernel_driver_has_gpu(""))
        return false;
    /* loading it is what libcupti would do first (and the runtime at its first call); nothing
     * is initialized by it. Kept loaded: the table's driver symbols are found in it. */
    if (!dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL))
        return false;
    int v = ask_driver(REAL_cuDriverGetVersion);
    dbg(2, "CUDA driver: installed, for CUDA %d (wanted %d)", v, min_version);
    return v >= min_version;
}

int cuda_cupti_min_driver(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    static const char prefix[] = "libcupti.so.";
    if (strncmp(base, prefix, sizeof prefix - 1) != 0)
        return 0;
    char *end;
    long major = strtol(base + sizeof prefix - 1, &end, 10);
    if (end == base + sizeof prefix - 1 || (*end != 0 && *end != '.') || major < 1 || major > 99)
        return 0;
    return (int)major * 1000;
}
