/* agent/internal.h: what agent modules share among themselves (lifecycle state, configuration, the
 * step log). Not for the shim, which sees only core.h. */
#ifndef SYNCSPY_INTERNAL_H
#define SYNCSPY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "agent/config.h"
#include "output/report.h"

/* Lifecycle: STARTING until the constructor (or the first CUDA call) ran the initialization;
 * RUNNING records; FINISHING while the exit report is written (late calls are forwarded
 * untouched); OFF afterwards. */
enum agent_state { STATE_STARTING, STATE_RUNNING, STATE_FINISHING, STATE_OFF };

extern struct config agent_cfg;
extern _Atomic int agent_state;

/* Initializes once (constructor, or the first CUDA call if that comes first). */
void agent_init_once(void);

/* Step boundaries. explicit_mark: syncspy_step(); otherwise an automatic source (the
 * optimizer hook), ignored once an explicit mark was seen. */
void agent_step(bool explicit_mark);

/* The steps recorded so far, closed at exit: fills the step fields of proc (steps array stays
 * owned by the agent). */
void agent_steps_close_and_fill(struct rep_process *proc);

/* Syncs counted in totals but not attributed to a site (tables full). */
uint64_t agent_unattributed_syncs(void);

/* Whether this process made any CUDA call (decides if anything is written at exit). */
bool agent_cuda_seen(void);

/* Writes summary.json and the report (agent/finish.c). */
void agent_write_outputs(void);

#endif
