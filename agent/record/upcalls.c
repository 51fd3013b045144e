/* agent/record/upcalls.c: the table of the only way up (see upcalls.h), and the step hook's
 * eagerness flag the recording paths read. Data only. */
#include "agent/record/upcalls.h"

const struct agent_upcalls *_Atomic agent_upcalls;
_Atomic bool pyhook_eager;

void agent_set_upcalls(const struct agent_upcalls *up)
{
    atomic_store_explicit(&agent_upcalls, up, memory_order_release);
}
