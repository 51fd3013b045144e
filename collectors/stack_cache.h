/* collectors/stack_cache.h: the per-thread cache of validated native stacks (x86_64): the
 * capture of a stack seen before on the same thread checks a chain of stack slots with loads
 * issued in parallel instead of unwinding ~40 frames one dependent read after another. Used by
 * native_stack.c's captures; the agent tells it the switch, thread exits, forks and dlcloses.
 * Runs inside a CUDA call on the application's thread: no malloc, no locks, no stdio (a
 * thread's storage is mmap'ed on its first cacheable stack). */
#ifndef SYNCSPY_STACK_CACHE_H
#define SYNCSPY_STACK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/cfi.h"

#if CFI_SUPPORTED && !defined(__SANITIZE_THREAD__)
#define STACK_CACHE_BUILT 1
#else
#define STACK_CACHE_BUILT 0 /* other arches; TSan builds keep libunwind's step-by-step path */
#endif

/* The registers of the capturing function at one point: rip (that point), rsp and rbp. */
struct sc_regs {
    uintptr_t rip, rsp, rbp;
};
#if STACK_CACHE_BUILT
#define STACK_CACHE_SNAPSHOT(r)                                           \
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" \
                     : "=r"((r).rip), "=r"((r).rsp), "=r"((r).rbp))
#else
#define STACK_CACHE_SNAPSHOT(r) ((r).rip = (r).rsp = (r).rbp = 0)
#endif

/* The most raw frames (libunwind's list, the agent's own included) a cached chain holds:
 * SYNCSPY_MAX_DEPTH's default 64 plus the slack of a CUPTI-delivered capture fits. */
#define STACK_CACHE_FRAMES 128

/* A capture begins: false when the cache is off, not built, or this thread is already inside a
 * capture (a CUDA call from a signal handler that interrupted one): then it is not used. */
bool stack_cache_begin(void);
void stack_cache_end(void);

/* The raw list (libunwind's, limit its maximum) cached for the stack at r, copied into raw when
 * every slot of its chain still holds what it held; its count, or -1. */
int stack_cache_find(const struct sc_regs *r, void **raw, int limit);

/* After a miss: on the stack's second miss (a one-off is only noted), walks it from r with the
 * CFI rules; when the walk yields exactly raw[0..n) (after the constant frames of the capture's
 * own call into libunwind), keeps the chain. */
void stack_cache_learn(const struct sc_regs *r, void *const *raw, int n, int limit);

/* The calling thread's own stack's bounds, learned once (its first capture; cheap after): the
 * cache works on that stack only, and stack_cache_room reads them. */
void stack_cache_thread_bounds(void);
/* False when rsp is on the thread's own stack and less than bytes of it are left below rsp
 * (true on any other stack, or while the bounds are not known: nothing to go by). */
bool stack_cache_room(uintptr_t rsp, size_t bytes);

/* SYNCSPY_STACK_CACHE (before the first capture; tests switch it at will). */
void stack_cache_set_enabled(bool on);

/* The calling thread is exiting (agent/record/threads.c's key destructor): its storage goes back to the
 * pool for the next thread. In a fork's child: the other threads' storage is free again. */
void stack_cache_thread_exit(void);
void stack_cache_atfork_child(void);
/* After a dlclose: every thread's chains are stale (checked by a generation at each capture). */
void stack_cache_forget_all(void);

/* The calling thread's counts (tests, SYNCSPY_DEBUG=1's line at exit): captures answered from the cache, captures that found
 * no valid entry, misses whose stack could not be cached (a rule not modelled, a walk that
 * disagreed with libunwind, a stack deeper than STACK_CACHE_FRAMES). */
struct stack_cache_stats {
    uint64_t hits, misses, uncacheable;
};
void stack_cache_stats(struct stack_cache_stats *out);
/* The same, summed over the threads that exited so far. */
void stack_cache_stats_exited(struct stack_cache_stats *out);

#endif
