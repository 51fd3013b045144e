/* agent/process/step_calls.c: the calls of agent/syncspy.h about steps: syncspy_step (a step
 * boundary) and syncspy_start/stop (recording on request, as `syncspy start/stop` asks through
 * agent/background/control.h). Any program thread, any time: each starts the agent if a
 * library's constructor calls it before ours ran, takes the step lock with signals held, and
 * leaves errno as it found it. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "agent/process/lifecycle.h"
#include "agent/record/core.h"
#include "agent/step/steps.h"
#include "agent/syncspy.h"
#include "common/compiler.h"
#include "output/control_format.h"
#include "output/model.h"

SYNCSPY_EXPORT void syncspy_step(void)
{
    int saved = errno;
    agent_step(true);
    errno = saved;
}

/* ---- recording on request ----------------------------------------------------------- */

static int record_on_request(uint8_t command, uint64_t steps)
{
    agent_init_once();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return -1;
    struct steps_request r = {.command = command, .cause = REP_CAUSE_PY_START, .steps = steps};
    struct agent_work w;
    struct agent_hold h;
    agent_work_begin(&w);
    agent_hold_signals(&h); /* the step lock, as syncspy_step() takes it */
    steps_request(&r);
    agent_release_signals(&h);
    agent_work_end(&w);
    return 0;
}

SYNCSPY_EXPORT int syncspy_start(uint64_t steps)
{
    int saved = errno;
    int rc = steps > CONTROL_STEPS_MAX ? -1 : record_on_request(CONTROL_START, steps);
    errno = saved;
    return rc;
}

SYNCSPY_EXPORT int syncspy_stop(void)
{
    int saved = errno;
    int rc = record_on_request(CONTROL_STOP, 0);
    errno = saved;
    return rc;
}
