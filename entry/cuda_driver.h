/* entry/cuda_driver.h: whether the process's CUDA driver can be trusted with CUPTI, asked without
 * changing anything: never cuInit (a driver initialized by a tool before a fork breaks CUDA in
 * the program's forked children), never a library that is not loaded already, but for
 * libcuda.so.1 where NVIDIA's kernel driver reports a GPU. NVIDIA's libcupti, subscribed without
 * a driver it can load and start, recurses until the stack ends (CUDA 13.2's wheel: issue 33). */
#ifndef SYNCSPY_CUDA_DRIVER_H
#define SYNCSPY_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

/* The devices of the driver the program (or its runtime) initialized: libcuda.so.1 is loaded
 * and cuDeviceGetCount answers; -1 before a successful cuInit (every driver answers
 * CUDA_ERROR_NOT_INITIALIZED then) or when no driver is loaded. */
int cuda_driver_devices(void);
/* The loaded driver's CUDA version (cuDriverGetVersion: 13000 for 13.0), -1 when none. */
int cuda_driver_version(void);

/* NVIDIA's kernel driver reports a GPU under root ("/" on a real system): an entry in
 * <root>/proc/driver/nvidia/gpus/, or WSL's <root>/dev/dxg. Pure but for reading that folder. */
bool cuda_kernel_driver_has_gpu(const char *root);

/* A driver for CUDA min_version or later is installed and a GPU is there, before anyone
 * initialized it: cuda_kernel_driver_has_gpu("/"), and libcuda.so.1 loads and its
 * cuDriverGetVersion (which needs no cuInit) says min_version or later. */
bool cuda_driver_installed(int min_version);

/* The CUDA major version a libcupti file is for, times 1000, from its name (".../libcupti.so.13"
 * -> 13000); 0 when the name does not say (then only an initialized driver will do). */
int cuda_cupti_min_driver(const char *path);

#endif
