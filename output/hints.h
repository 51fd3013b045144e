/* output/hints.h: the rules that read a site's stack: which frame is the user's (the report groups
 * sites by it) and what to do about the sync (the hint table, output/hints.c). Pure functions of
 * the report model: no state, no I/O, no allocation. */
#ifndef SYNCSPY_HINTS_H
#define SYNCSPY_HINTS_H

#include <stdint.h>

#include "output/model.h"

/* Index of the site's innermost user frame: the first frame, innermost first, that is neither
 * the CUDA runtime, PyTorch, CPython, the C/C++ runtime nor syncspy (by module basename), nor a
 * Python frame of the standard library or of torch itself; 0 when every frame is such. */
uint32_t hints_user_frame(const struct rep_site *site);

/* The advice for a site (first matching rule of the table: frame function names from the CUDA
 * call up to the user frame, or the API name), with *matched set to the function or API that
 * matched; NULL when no rule applies. */
const char *hints_find(const struct rep_site *site, const char **matched);

#endif
