/* agent/record/step_now.c: the current step as the recording paths see it (see step_now.h).
 * Data only: agent/step/steps.c writes it, a fork's child included. */
#include "agent/record/step_now.h"

_Atomic bool steps_active;
_Atomic uint64_t steps_now;
struct step_open_counts step_open;
