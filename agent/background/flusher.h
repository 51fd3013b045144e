/* agent/background/flusher.h: the flusher thread. It drains every thread's ring at an active step's end
 * (at most every 50 ms: short steps share a drain), when a ring is half full, and at least every
 * 100 ms, and hands what it drained (with any new
 * threads, stacks, ended steps and site totals) to trace.bin's encoder (output/trace_writer.h).
 * All signals blocked, named "syncspy-flush", stoppable; an I/O error is said once and counting
 * goes on. Started by the lifecycle at the first CUDA call, never at load; the lifecycle decides
 * when it stops and when the file is closed (agent/process/lifecycle.c). */
#ifndef SYNCSPY_FLUSHER_H
#define SYNCSPY_FLUSHER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "output/trace_format.h"

/* Creates trace.bin in the folder open as dirfd (named dir) with its header (dir NULL, or the
 * file not made: no trace) and starts
 * the thread (once; later calls do nothing). bound_bytes: SYNCSPY_TRACE_MB's bound on the file
 * (0: none; output/trace_writer.h tw_set_bound).
 * Safe to call inside a CUDA call: it is the process's first one. on_finish_request runs on the
 * flusher thread when flusher_request_finish asks for it (the exit path for a fatal signal,
 * whose handler cannot write the report itself). */
void flusher_start(int dirfd, const char *dir, const struct trace_file_header *header,
                   uint64_t bound_bytes, void (*on_finish_request)(void));
/* Asks for a drain now. Never blocks; async-signal-safe. */
void flusher_kick(void);
/* A recorded step ended at now_ns: asks for a drain unless one began (or was asked for) less
 * than 50 ms ago. Never blocks. */
void flusher_step_ended(uint64_t now_ns);
/* From a signal handler (async-signal-safe): has the flusher thread run on_finish_request and
 * waits for it at most timeout_ms. False when there is no thread or it did not answer. */
bool flusher_request_finish(int timeout_ms);
/* Whether the thread was started and not stopped (async-signal-safe). */
bool flusher_running(void);
/* Stops the thread (joined within 5 s); not from the flusher thread itself. */
void flusher_stop(void);
/* After the last step was closed and the thread stopped (or on the thread itself): drains what
 * is left, writes the END record and closes the file. */
void flusher_close(uint64_t unattributed_syncs, uint64_t steps_seen);
/* 0, or the errno of trace.bin's first failed write: the trace lost data from there on (said
 * once when it happened, marked in its header, and put into summary.json). Read after
 * flusher_close. */
int flusher_trace_lost(void);
/* Before a dlclose: the symbolizer takes note of the objects loaded now (kept after unload). */
void flusher_note_modules(void);
/* Runs fn(sym, ctx) on the flusher thread, with its symbolizer (made then if it had none) under
 * the flush lock, for a program thread that needs names (agent/record/budget_counts.c), and waits for it:
 * false when there is no flusher thread, another call is in progress, or fn had not begun after
 * timeout_ms (it is then never run). Once fn has begun it is waited for to its end. */
struct symbolizer;
bool flusher_call(void (*fn)(struct symbolizer *sym, void *ctx), void *ctx, int timeout_ms);
/* One drain and write of everything now, on the flusher thread, waited for (flusher_call's
 * terms): new stacks are named and a backward sync's node type is known when it returns. */
bool flusher_flush_now(int timeout_ms);
/* The flusher's symbolizer (NULL before the flusher started), reused at exit. */
struct symbolizer *flusher_symbolizer(void);
/* The drains' lock and the program threads' call lock, for the fork handlers
 * (agent/process/fork_locks.h): the first is only tried (a fork never waits for a drain), the second
 * taken. */
pthread_mutex_t *flusher_lock(void);
pthread_mutex_t *flusher_call_lock(void);
/* In a forked child: the thread does not exist there, and the file is the parent's. whole: the
 * fork held the drains' lock (what it guards is whole), else it is set aside. */
void flusher_atfork_child(bool whole);

#endif
