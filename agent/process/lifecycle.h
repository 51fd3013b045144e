/* agent/process/lifecycle.h: the agent's one ordered lifecycle (agent/process/lifecycle.c): start (at load, or
 * at the first CUDA call if that comes first), the process's first CUDA call, step boundaries
 * (a step that ended is flushed), finish (at exit, or for a fatal signal), fork. Explicit
 * states: late calls from exiting threads or destructors do nothing. The entry layer is asked
 * for something only through the hooks it gave (agent_set_entry_hooks). */
#ifndef SYNCSPY_LIFECYCLE_H
#define SYNCSPY_LIFECYCLE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "agent/record/state.h"
#include "output/config.h"

/* What the entry layer does when the lifecycle asks (entry/start.c). */
struct agent_entry_hooks {
    void (*at_start)(const struct config *cfg);     /* the agent started */
    void (*at_first_use)(const struct config *cfg); /* the process's first CUDA call */
};
/* From the entry layer, at load (or at its first interposed call): kept for the whole run. */
void agent_set_entry_hooks(const struct agent_entry_hooks *hooks);

/* Initializes once (constructor, or the first CUDA call if that comes first). */
void agent_init_once(void);

/* The process's first CUDA call (agent/record/core.c, on that thread, its guard raised): the output
 * folder, the flusher, the entry layer's first-use hook, the Python step hook. Once. */
void agent_first_use(void);
/* The entry layer's work that had to wait for something after the first use (CUPTI waits for
 * the program's CUDA driver: entry/cupti.h), run as the first use's is: on a stack of the
 * agent's own, as agent work (CUDA calls it makes are forwarded untouched), signals held. Only
 * while RUNNING; never from inside agent work or an interposed call. */
void agent_run_entry_work(void (*fn)(void));
/* Whether this process made any CUDA call (decides if anything is written at exit). */
bool agent_cuda_seen(void);
/* The process folder: agent/background/process_dir.h. */

/* A step boundary. explicit_mark: syncspy_step(); otherwise an automatic source (the
 * optimizer hook), ignored once an explicit mark was seen. */
void agent_step(bool explicit_mark);
/* The optimizer hook's step boundary: optimizers stepped in the step it ends (agent/step/pyhook.c). */
void agent_optimizer_step(unsigned optimizers);
/* An optimizer's first step that may have ended an iteration (agent/step/steps.h steps_cut_here), and
 * the two marks made when a later step shows it did (steps_mark_split). */
void agent_optimizer_cut(void);
void agent_optimizer_step_split(unsigned optimizers_before, unsigned optimizers);

/* The exit path (RUNNING -> FINISHING -> OFF, outputs written), once, from the thread that asks
 * first: the atexit handler, or (agent_finish_from_signal) the flusher thread. */
void agent_finish_now(void);

/* ---- from the entry layer -------------------------------------------------------------------- */

/* From a signal handler whose default action ends the process (async-signal-safe): the exit
 * report and summary.json written on the flusher thread, waited for at most timeout_ms. Returns
 * at once when the exit path runs already, or a signal asked before (a second Ctrl-C). */
void agent_finish_from_signal(int timeout_ms);
/* From _exit/_Exit (Python's os._exit, multiprocessing's forked workers): what was recorded is
 * flushed, the summary and the report written on the flusher thread (the caller may be a
 * signal handler), waited for at most timeout_ms; stdio is not flushed. A later caller (another
 * thread's _exit while the first one's finish, or exit()'s, runs) waits for that finish within
 * the first one's bound. Nothing in a vfork child or when no CUDA call was made. */
void agent_finish_at_quick_exit(int timeout_ms);
/* Before the program's dlclose: the loaded objects are noted for symbolizing later (not for
 * the agent's own dlclose calls). */
void agent_before_dlclose(void);
/* After it: the threads' cached native stacks are dropped (collectors/stack_cache.h). */
void agent_after_dlclose(void);

#endif
