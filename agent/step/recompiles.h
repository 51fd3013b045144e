/* agent/step/recompiles.h: torch.compile's recompilations, by function. At the end of each
 * compilation agent/step/dynamo_hide.py reads Dynamo's guard failures (torch._dynamo.utils.
 * guard_failures: the original code object -> the reasons its compiled code's guards failed, one
 * entry per compiled code tried) and hands each function whose list grew to recompiles_add, with
 * the GIL, through agent/step/pyhook.c. The exit report and summary.json list them (the step of each
 * tells start-up's from the training steps'). A fixed table: past RECOMPILES_MAX functions the
 * rest are counted together as "other functions". */
#ifndef SYNCSPY_RECOMPILES_H
#define SYNCSPY_RECOMPILES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

#define RECOMPILES_MAX 32

/* One recompilation of function (file:line, its first line) in step `step`, the first guard
 * failure's words in reason. Strings are copied (cut to the table's room). */
void recompiles_add(const char *function, const char *file, uint32_t line, const char *reason,
                    uint64_t step);

/* The functions recompiled, most recompiled first, into proc (malloc'd; report_model_free frees). */
void recompiles_model(struct rep_process *proc);

/* The table's lock, for the fork handlers (agent/process/fork_locks.h: taken around fork()). */
pthread_mutex_t *recompiles_lock(void);
/* In a fork's child: the table starts empty. */
void recompiles_atfork_child(void);

#endif
