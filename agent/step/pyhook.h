/* agent/step/pyhook.h: automatic training steps in Python processes. Once torch.optim is loaded,
 * registers a global optimizer step post hook (torch.optim.optimizer.
 * register_optimizer_step_post_hook) whose every call ends a step. Registration runs Python
 * code, so it happens only with the GIL at a safe point, never inside a CUDA call: a
 * Py_AddPendingCall callback, which the interpreter runs on its main thread; and, when the
 * attempt is asked from another thread (the main one may be blocked in Thread.join() for good),
 * on a thread of the agent's own that takes the GIL (docs/INTERNALS.md, "Python"). */
#ifndef SYNCSPY_PYHOOK_H
#define SYNCSPY_PYHOOK_H

#include <stdint.h>

#include <stdatomic.h>
#include <stdbool.h>

/* Called from the agent's recording paths in a Python process (now: CLOCK_MONOTONIC ns):
 * queues the registration attempt, at most every 10 ms, until it succeeds. Never waits; does
 * nothing with SYNCSPY_STEP=manual. */
void pyhook_poll(uint64_t now_ns);

/* At the end of an interposed CUDA call (agent_leave), outside agent work, signals as the program
 * has them, where this thread's poll asked the agent's Python thread for the attempt and set
 * agent_tls.pyhook_wait (agent/record/threads.h): waits (at most 200 ms, and only until a wait first
 * runs out) until that thread holds the GIL or the attempt is over, so that the hook is in place
 * before this thread's next Python line. */
void pyhook_wait_slow(void);

/* True from the first poll until the hook is registered (or cannot be: SYNCSPY_STEP=manual, no
 * usable CPython, or torch.optim still not imported after PYHOOK_EAGER_ATTEMPTS attempts):
 * meanwhile every CUDA call polls, those of steps the schedule does not record and every launch
 * included, so the hook is in place before the first optimizer step. Afterwards the recorded
 * syncs and every 256th launch still poll, at most every PYHOOK_LAZY_MS. The flag,
 * pyhook_eager, lies with the recording paths that read it (agent/record/upcalls.h). */
#define PYHOOK_EAGER_ATTEMPTS 200
#define PYHOOK_LAZY_MS 500

/* Whether the step hook was registered; false also when never tried (no Python). */
bool pyhook_registered(void);
/* Whether a registration was attempted in a Python process and torch.optim never was there. */
bool pyhook_never_found_optim(void);

void pyhook_atfork_child(void);

/* A sync ran in torch.compile's generated code `file` that agent/record/compiled.h cannot name: asks
 * agent/step/dynamo_hide.py's _syncspy_graphs for the user's lines of every generated module (a
 * Py_AddPendingCall; any thread, no GIL needed). At most once per file (the last few asked are
 * remembered) and one call queued at a time. */
void pyhook_request_graphs(const char *file);

#endif
