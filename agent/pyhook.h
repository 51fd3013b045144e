/* agent/pyhook.h: automatic training steps in Python processes. Once torch.optim is loaded,
 * registers a global optimizer step post hook (torch.optim.optimizer.
 * register_optimizer_step_post_hook) whose every call ends a step. Registration runs Python
 * code, so it happens only from a safe point: a Py_AddPendingCall callback, which the
 * interpreter runs on its main thread with the GIL, never inside a CUDA call. */
#ifndef SYNCSPY_PYHOOK_H
#define SYNCSPY_PYHOOK_H

#include <stdint.h>

/* Called from the agent's recording paths in a Python process (now: CLOCK_MONOTONIC ns):
 * queues the registration attempt, at most every 50 ms, until it succeeds. Lock-free; does
 * nothing with SYNCSPY_STEP=manual. */
void pyhook_poll(uint64_t now_ns);

void pyhook_atfork_child(void);

#endif
