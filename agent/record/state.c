/* agent/record/state.c: the agent's state and configuration (see state.h). Data only: the
 * lifecycle writes them, nothing here runs. */
#include "agent/record/state.h"

struct config agent_cfg;
_Atomic int agent_state = STATE_STARTING;
