/* entry/cupti.h: CUPTI, the second way CUDA calls enter the agent. cuBLAS, cuDNN and NCCL link
 * the CUDA runtime statically, Triton calls the driver API, a program may link libcudart_static:
 * their calls never reach an interposed libcudart symbol, but CUPTI's runtime- and driver-domain
 * callbacks see them. entry/cupti.c subscribes to the sync family's callbacks and records each
 * such call through agent_enter/agent_sync/agent_leave, as entry/runtime.c does; it also exports
 * cuptiSubscribe/cuptiSubscribe_v2/cuptiActivityRegisterCallbacks: CUPTI 13 takes one
 * subscriber, so when another tool (torch.profiler's Kineto, Nsight) asks later, syncspy steps
 * aside first and forwards the call. libcupti is found and loaded by entry/cupti_load.c. */
#ifndef SYNCSPY_ENTRY_CUPTI_H
#define SYNCSPY_ENTRY_CUPTI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "output/config.h"
#include "agent/record/core.h"

/* The interposed runtime launch in progress on this thread (entry/runtime.c): its wrapper's
 * frame, 0 when none. A driver launch CUPTI reports from deeper in the stack is that launch's
 * own, counted by the wrapper, so CUPTI's runtime-domain callbacks of the launches the shim
 * interposes are not enabled (two callbacks a launch saved). A longjmp out of a launch leaves it
 * set until the thread's next interposed launch: driver launches made deeper than it meanwhile
 * are not counted. */
extern SYNCSPY_TLS uintptr_t entry_launch_frame;

/* At the first CUDA call (the lifecycle's first-use hook, on the calling thread, the agent's
 * guard held), or at load with SYNCSPY_CUPTI=eager: loads libcupti as SYNCSPY_CUPTI says and
 * subscribes to the sync family's driver and runtime callbacks, if the driver is usable
 * (entry/cuda_driver.h: NVIDIA's libcupti crashes the process when subscribed without a driver
 * it can start); else CUPTI waits for the program's driver (cupti_retry). Any failure (off, no
 * libcupti, another subscriber, a driver too old) is one stderr line and the runtime entry
 * points carry on alone. No call into libcupti ever asks it for words (cuptiGetResultString).
 * Once per process. */
void cupti_start(const struct config *cfg);

/* True while CUPTI is loaded and waits for the program's CUDA driver to be initialized. */
extern _Atomic bool cupti_waiting_for_driver;
/* After a CUDA call of the program that succeeded (its runtime initialized the driver by then),
 * from the entry points, off any agent work: subscribes if the driver is now usable. Cheap when
 * not waiting. */
void cupti_retry(void);
/* The subscription's lock, for the entry layer's fork handlers (entry/start.c). */
pthread_mutex_t *cupti_state_lock(void);
/* In a fork's child, its locks free (lock_taken: the fork handlers held the subscription's lock
 * across the fork, else another thread did): the child's own subscription state. */
void cupti_atfork_child(bool lock_taken);

/* SYNCSPY_CUPTI=eager's start, at load: cupti_start, whose failure is said by the first process
 * of a process tree only (an environment marker its children inherit). */
void cupti_start_eager(const struct config *cfg);

/* A libcudart is being loaded with dlopen before any CUDA call reached the shim (entry/dlopen.c):
 * a program calling it through the handle (ctypes.CDLL, dlsym) never reaches the shim, so CUPTI
 * subscribes now (SYNCSPY_CUPTI auto or a path; auto looks beside that libcudart) where the
 * driver gate is open before the program's cuInit (a GPU the kernel driver reports, or the
 * simulator's CUPTI). Quiet when it cannot: the first CUDA call the shim sees tries again and
 * says why. */
void cupti_start_early(const struct config *cfg, const char *cudart);

/* SYNCSPY_GPU=1: the correlation ids of the runtime and driver calls that returned on this
 * thread inside call (from its start on) go into it; the thread's notes are cleared. */
void cupti_take_correlation(struct sync_call *call);

/* The API name for a callback's functionName: a runtime name loses the version suffix CUPTI's
 * ids carry ("cudaMemcpy_v3020" -> "cudaMemcpy"); driver names keep theirs ("cuMemcpyDtoH_v2"
 * is the real symbol). */
void cupti_api_name(uint32_t domain, const char *function_name, char *out, size_t len);

#endif
