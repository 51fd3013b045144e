/* collectors/native_stack.h: the calling thread's native stack as raw return addresses
 * (libunwind's unw_backtrace, or the thread's cache of validated stacks: stack_cache.h), without
 * the agent's own frames: frame 0 is the return address into the caller of the CUDA API. Runs
 * inside a CUDA call on the application's thread: no malloc, no locks of ours, no stdio. */
#ifndef SYNCSPY_NATIVE_STACK_H
#define SYNCSPY_NATIVE_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/compiler.h"

#define NATIVE_STACK_MAX 256
/* The raw list's room: max, the agent's own frames, a CUPTI-delivered call's CUDA frames. */
#define NATIVE_STACK_RAW_MAX (NATIVE_STACK_MAX + 16 + 32)

/* libunwind, dlopen'ed with RTLD_LOCAL (native_stack.c says why): the wheel's copy beside the
 * agent first, then the system's. */
#define NATIVE_UNWIND_BUNDLED "libunwind-syncspy.so.8"
#define NATIVE_UNWIND_SYSTEM "libunwind.so.8"

/* Once, before the first capture: finds the agent's own address range, loads libunwind, sets
 * its per-thread caching. Not on a recording path (dlopen). */
void native_stack_init(void);
/* NULL, or the line that says why captures are empty (libunwind could not be loaded): for the
 * agent to print at the first CUDA call (a process without one prints nothing). */
const char *native_stack_unavailable(void);

/* Writes at most max (<= NATIVE_STACK_MAX) return addresses into pcs, innermost first,
 * starting at the caller of the agent. raw (NATIVE_STACK_RAW_MAX entries) is the caller's room
 * for the raw list: the thread's storage, not the program's stack (issue 22). Returns the count
 * (0 when unwinding failed); sets *truncated when the stack was deeper than max. */
int native_stack_capture(uintptr_t *pcs, int max, int *truncated, void **raw);

/* The code range [lo, hi) (its unwind information's) of the function whose stack frame, on the
 * calling thread's stack, holds addr (a local variable of that function, found by the caller).
 * Returns 0, or -1 when no frame of the stack holds it. A full step-by-step unwind: rare calls
 * only (collectors/pyframes.h pyframes_learn_eval_range says when). */
int native_stack_function_holding(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

/* A capture unwinds only with NATIVE_STACK_ROOM_KIB KiB or more left below it on the thread's
 * own stack (libunwind's need and a margin, docs/RELIABILITY.md); with less, it has no native
 * frames. How many captures were short so far (the process's). */
#define NATIVE_STACK_ROOM_KIB 8
uint64_t native_stack_short_captures(void);
/* Captures given up because the process was forking meanwhile (collectors/loader_gate.h): those
 * syncs are counted without their native frames. */
uint64_t native_stack_fork_captures(void);
/* A fork's child counts its own. */
void native_stack_atfork_child(void);

/* Tests: the raw list of at most limit entries a capture at this point gets (the stack cache's
 * when it hits, collectors/stack_cache.h) into raw, and libunwind's own list, from the same call,
 * into ref (*nref entries). Returns the count written into raw. */
int native_stack_test_raw(void **raw, void **ref, int *nref, int limit);

/* True when pc lies in the agent's own object (libsyncspy.so). */
int native_stack_is_agent_pc(uintptr_t pc);

/* Calls that arrive through a CUPTI callback have more than the agent's frames above their
 * caller: libcupti's dispatcher and the driver or runtime entry point. While the calling
 * thread's native_stack_skip_cuda is set, a capture also skips leading frames inside the objects
 * of native_stack_set_skip_ranges (the shim's captures never set it: one TLS load more). */
struct native_range {
    uintptr_t lo, hi;
};
#define NATIVE_SKIP_RANGES_MAX 16
extern SYNCSPY_TLS bool native_stack_skip_cuda;

/* The address spans of the loaded objects whose file name starts with one of prefixes (e.g.
 * "libcuda.so"); returns how many were written (at most max). Not for the recording path. */
int native_stack_object_ranges(const char *const *prefixes, int nprefixes, struct native_range *out,
                               int max);
/* Sets the skipped objects' spans, once (a later call can only add ranges). */
void native_stack_set_skip_ranges(const struct native_range *ranges, int n);

#endif
