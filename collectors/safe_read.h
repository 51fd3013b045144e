/* collectors/safe_read.h: copying bytes of this process's memory that another thread may free
 * meanwhile (a dict's table resized under a thread that does not hold the GIL): the kernel
 * copies them, and an address that is no longer mapped is a false answer, never a fault. About a
 * microsecond a read: for rare paths only (collectors/pyframes.c's 3.9/3.10 owner search). */
#ifndef SYNCSPY_SAFE_READ_H
#define SYNCSPY_SAFE_READ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* n bytes at src into dst; false (dst unspecified) when any of them cannot be read. errno kept. */
bool safe_read(void *dst, uintptr_t src, size_t n);

/* The flag of the thread reading through the pipe (a lock only ever tried), for the agent's fork
 * handlers (cleared in a fork's child), and the child's own pipe (the parent's is closed). */
_Atomic bool *safe_read_pipe_busy(void);
void safe_read_atfork_child(void);

#endif
