/* agent/record/python_names.h: names of Python frames, resolved once per (code object, instruction) while
 * the frame still runs (code objects may be freed before exit), kept in the agent's arena. */
#ifndef SYNCSPY_PYNAMES_H
#define SYNCSPY_PYNAMES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct pyname {
    const char *file;
    const char *function;
    uint32_t line;
};

struct py_raw_frame;

/* Resolves and keeps the names of every Python frame in words[0..n) (stack words, see
 * collectors/pyframes.h) not seen before. Call on the capturing thread, inside the CUDA call;
 * py[0..n_py) are the thread's frames just captured (on CPython 3.9/3.10 the qualified name of
 * a code is derived from its running frame, once per code object). */
void python_names_intern_stack(const uintptr_t *words, uint32_t n, const struct py_raw_frame *py,
                               int n_py);

/* Whether one of the thread's frames just captured, py[0..n_py), runs torch.compile's own work
 * (common/gencode.h gencode_compile_work_file); their names were interned before. */
bool python_names_compile_work(const struct py_raw_frame *py, int n_py);

/* The kept names, or NULL. */
const struct pyname *python_names_find(uintptr_t code, uint32_t lasti);

/* The names' lock, for the fork handlers (agent/process/fork_locks.h: taken around fork()). */
pthread_mutex_t *python_names_lock(void);
/* In a fork's child: no name kept (the child interns its own). */
void python_names_atfork_child(void);

#endif
