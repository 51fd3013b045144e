/* entry/cupti_load.h: finding and loading libcupti (at run time, never linked): the search
 * order (pure, unit-tested) and the dlopen, whose symbols are bound into the one table of real
 * symbols (entry/real.h). Runs once, under entry/cupti.c's lock, at the first CUDA call. */
#ifndef SYNCSPY_CUPTI_LOAD_H
#define SYNCSPY_CUPTI_LOAD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "output/config.h"

/* Where SYNCSPY_CUPTI=auto looks, first to last: (1) a libcupti the process already loaded (a
 * profiler's: sharing its copy), (2) beside the loaded libcudart.so* (the runtime in use, so the
 * CUPTI of the same release), (3) the nvidia CUPTI wheel of a site-packages/dist-packages folder
 * holding any loaded object (nvidia/cuda_cupti/lib/, nvidia/cu13/lib/), (4) CUDA_HOME
 * (/usr/local/cuda when unset; a relative one is not used) lib64/ and extras/CUPTI/lib64/, (5)
 * the bare names libcupti.so.13 and libcupti.so for the loader's own search. Every candidate but
 * the last two is an absolute path built from absolute paths. */
struct cupti_search {
    const char *const *loaded; /* paths of the loaded objects (dl_iterate_phdr order; relative
                                * ones are resolved through /proc/self/maps) */
    size_t nloaded;
    const char *cuda_home; /* CUDA_HOME as set, or NULL when unset */
};
#define CUPTI_CANDIDATES_MAX 48
/* Writes the candidates, duplicates left out, into out; returns how many. */
size_t cupti_search_paths(const struct cupti_search *in, char (*out)[PATH_MAX], size_t max);

/* A libcudart named `file` (dlopen's argument) is about to be loaded: the next search treats it
 * as loaded (step 2 above). Under entry/cupti.c's lock. */
void cupti_load_expect(const char *file);

/* Loads libcupti as cfg says (SYNCSPY_CUPTI=auto|eager: the search above; a path: that file)
 * and binds its symbols. True with its path in path; false with why in why. */
bool cupti_load(const struct config *cfg, char *path, size_t pathlen, char *why, size_t whylen);

#endif
