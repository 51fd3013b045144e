/* collectors/loader_gate.h: the collectors' sections that may hold the dynamic loader's write
 * lock (dl_iterate_phdr: libunwind's unwinding when its cache misses, the symbolizer's list of
 * loaded objects), closed around fork(). glibc's fork initializes the loader's dl_load_lock anew
 * in the child, but not dl_load_write_lock (2.36, posix/fork.c), which dl_iterate_phdr holds: a
 * child forked while another thread was inside it waits forever at its own first dl_iterate_phdr
 * (its first sync's unwinding, its flusher's symbolizer, any C++ exception it throws). The
 * agent's fork handlers close the gate (agent/process/fork_locks.h), waiting for the sections open on
 * other threads (each ends on its own: no lock of the agent's is taken inside); a section that
 * finds it closed is given up on a program's thread (no native frames for that sync) or waited
 * out on the agent's own. Atomics only, and no thread-local state (every thread's static TLS is
 * carved from its stack): no malloc, no lock, no stdio. */
#ifndef SYNCSPY_LOADER_GATE_H
#define SYNCSPY_LOADER_GATE_H

#include <stdbool.h>

/* Enters a section: true, or false when a fork is under way and wait is false (on a program's
 * thread: never wait for another thread's fork). With wait, returns once the fork is over. */
bool loader_gate_enter(bool wait);
void loader_gate_leave(void);

/* The fork handlers' side, on the forking thread: close waits until no thread is inside (at
 * most 2 s: a section that does not end is the forking thread's own, interrupted by a signal
 * handler that forks); open after the fork in the parent; the child's reset (its one thread). */
void loader_gate_close(void);
void loader_gate_open(void);
void loader_gate_atfork_child(void);

#endif
