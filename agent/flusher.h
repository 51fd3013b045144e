/* agent/flusher.h: the flusher thread. It drains every thread's ring at each active step's end
 * and at least every 100 ms, and appends the records, with any new stacks, frames and names, to
 * <process folder>/trace.bin. All signals blocked, named "syncspy-flush", stoppable; an I/O
 * error is said once and counting goes on. Started at the first CUDA call, never at load. */
#ifndef SYNCSPY_FLUSHER_H
#define SYNCSPY_FLUSHER_H

#include <stdbool.h>
#include <stdint.h>

/* Creates the trace file and the thread (once; later calls do nothing). Safe to call inside a
 * CUDA call: it is the process's first one. */
void flusher_start(void);
/* Asks for a drain now (an active step ended). Never blocks. */
void flusher_kick(void);
/* At exit, after the last step was closed: stops the thread, drains what is left, writes the
 * END record and closes the file. */
void flusher_finish(uint64_t unattributed_syncs);
/* From a signal handler (async-signal-safe): asks the flusher thread to write the exit report
 * and waits for it at most timeout_ms. False when there is no flusher or it did not answer. */
bool flusher_finish_from_signal(int sig, int timeout_ms);
/* Before a dlclose: the symbolizer takes note of the objects loaded now (kept after unload). */
void flusher_note_modules(void);
/* The flusher's symbolizer (NULL before the flusher started), reused at exit. */
struct symbolizer *flusher_symbolizer(void);
/* In a forked child: the thread does not exist there, and the file is the parent's. */
void flusher_atfork_child(void);

#endif
