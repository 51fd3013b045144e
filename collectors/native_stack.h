/* collectors/native_stack.h: the calling thread's native stack as raw return addresses
 * (libunwind's unw_backtrace with a per-thread cache), without the agent's own frames: frame 0
 * is the return address into the caller of the CUDA API. Runs inside a CUDA call on the
 * application's thread: no malloc, no locks of ours, no stdio. */
#ifndef SYNCSPY_NATIVE_STACK_H
#define SYNCSPY_NATIVE_STACK_H

#include <stdint.h>

#define NATIVE_STACK_MAX 256

/* Once, before the first capture: finds the agent's own address range, sets libunwind's
 * per-thread caching. */
void native_stack_init(void);

/* Writes at most max (<= NATIVE_STACK_MAX) return addresses into pcs, innermost first,
 * starting at the caller of the agent. Returns the count (0 when unwinding failed); sets
 * *truncated when the stack was deeper than max. */
int native_stack_capture(uintptr_t *pcs, int max, int *truncated);

/* True when pc lies in the agent's own object (libsyncspy.so). */
int native_stack_is_agent_pc(uintptr_t pc);

#endif
