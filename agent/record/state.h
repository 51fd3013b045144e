/* agent/record/state.h: the agent's state and configuration, which every layer reads: STARTING
 * until the start ran, RUNNING, FINISHING, OFF, and SYNCSPY_*'s values. Only the lifecycle
 * (agent/process/lifecycle.c) writes them: the configuration once at the start, the state at
 * each transition. A relaxed load on the recording paths. */
#ifndef SYNCSPY_STATE_H
#define SYNCSPY_STATE_H

#include <stdatomic.h>

#include "output/config.h"

/* STARTING until the initialization ran; RUNNING records; FINISHING while the outputs are
 * written (late calls are forwarded untouched); OFF afterwards. */
enum agent_state { STATE_STARTING, STATE_RUNNING, STATE_FINISHING, STATE_OFF };

extern struct config agent_cfg; /* SYNCSPY_*, parsed once at the start */
extern _Atomic int agent_state;

#endif
