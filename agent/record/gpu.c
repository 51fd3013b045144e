/* agent/record/gpu.c: SYNCSPY_GPU=1 as the agent runs it (see gpu.h). Called by the entry layer while
 * it loads or hands over CUPTI (its lock held, outside the recording paths), and by agent_sync. */
#include "agent/record/gpu.h"

#include "agent/record/state.h"
#include "collectors/gpu.h"
#include "common/log.h"

_Atomic bool agent_gpu_tracking;
static _Atomic bool said;

static void notice_once(const char *what, const char *why)
{
    if (!atomic_exchange(&said, true))
        agent_log("%s%s", what, why);
}

void agent_cupti_ready(void *(*cupti_symbol)(const char *name))
{
    if (!agent_cfg.gpu)
        return;
    if (!cupti_symbol) {
        notice_once("SYNCSPY_GPU=1 needs CUPTI: no GPU idle times", "");
        return;
    }
    const char *why = gpu_start(cupti_symbol);
    if (why)
        notice_once("SYNCSPY_GPU=1: no GPU idle times: ", why);
    else
        atomic_store(&agent_gpu_tracking, true);
}

void agent_cupti_leaving(const char *what)
{
    atomic_store(&agent_gpu_tracking, false);
    if (gpu_stop() && !atomic_exchange(&said, true)) /* the records so far are delivered first */
        agent_log("another CUPTI client calls %s: no GPU idle times from now on", what);
}

void agent_gpu_finish(void)
{
    atomic_store(&agent_gpu_tracking, false);
    gpu_finish();
}

void agent_gpu_sync(uint32_t site_id, uint64_t end_ns, uint32_t runtime_corr, uint32_t driver_corr)
{
    gpu_note_sync(site_id, end_ns, runtime_corr, driver_corr);
}

void agent_gpu_atfork_child(void)
{
    atomic_store(&agent_gpu_tracking, false);
    gpu_atfork_child();
}
