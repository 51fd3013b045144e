/* output/hints.h: the rules that read a site's stack: which frame is the user's (the report groups
 * sites by it) and what to do about the sync (the hint table, output/hints.c). Pure functions of
 * the report model: no state, no I/O, no allocation. */
#ifndef SYNCSPY_HINTS_H
#define SYNCSPY_HINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

/* Index of the site's innermost user frame: the first frame, innermost first, of the sync's own
 * frames that is neither the CUDA runtime, PyTorch, CPython, the C/C++ runtime nor syncspy (by
 * module basename), nor a Python frame of the standard library or of torch itself; 0 when every
 * frame is such. */
uint32_t hints_user_frame(const struct rep_site *site);

/* Whether a frame is the runtime's or a framework's (not the user's), by the rules above. */
bool hints_frame_is_runtime(const struct rep_frame *f);

/* A backward-pass sync (output/model.h's sections): the innermost user frame of the forward
 * stack that created its autograd node / of the stack that called backward (absolute indexes
 * into site->frames); *found false when the site has no such section or no user frame in it. */
uint32_t hints_forward_user_frame(const struct rep_site *site, bool *found);
uint32_t hints_caller_user_frame(const struct rep_site *site, bool *found);

/* The autograd node whose backward the site ran in (its marker, else its frames: output/backward.h)
 * into buf; false when it ran in none. */
bool hints_backward_node(const struct rep_site *site, char *buf, size_t cap);

/* The advice for a site, with *matched set to what matched; NULL when no rule applies. A sync in
 * an autograd node's backward gets the rule of the forward op that made the node (by the node's
 * type, e.g. IndexBackward0: the boolean-mask index; *matched: the node's name). Any other sync:
 * the first matching rule of the table (frame function names from the CUDA call up to the user
 * frame, or the API name), *matched the function or API that matched. */
const char *hints_find(const struct rep_site *site, const char **matched);

#endif
