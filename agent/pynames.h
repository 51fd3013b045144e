/* agent/pynames.h: names of Python frames, resolved once per (code object, instruction) while
 * the frame still runs (code objects may be freed before exit), kept in the agent's arena. */
#ifndef SYNCSPY_PYNAMES_H
#define SYNCSPY_PYNAMES_H

#include <stdint.h>

struct pyname {
    const char *file;
    const char *function;
    uint32_t line;
};

/* Resolves and keeps the names of every Python frame in words[0..n) (stack words, see
 * collectors/pyframes.h) not seen before. Call on the capturing thread, inside the CUDA call. */
void pynames_intern_stack(const uintptr_t *words, uint32_t n);

/* The kept names, or NULL. */
const struct pyname *pynames_find(uintptr_t code, uint32_t lasti);

void pynames_atfork_prepare(void);
void pynames_atfork_parent(void);
void pynames_atfork_child(void);

#endif
