/* collectors/cupti.h: the syncs the runtime shim cannot see, through CUPTI callbacks. cuBLAS,
 * cuDNN and NCCL link the CUDA runtime statically, Triton calls the driver API, a program may
 * link libcudart_static: their calls never reach an LD_PRELOADed libcudart symbol, but CUPTI's
 * runtime- and driver-domain callbacks see them. libcupti is loaded at run time (never linked);
 * without it the agent records through the shim alone and says so once.
 * cupti.c: finding and loading libcupti, the subscription, the callbacks (which feed the same
 * site table through agent_enter/agent_sync/agent_leave), stepping aside for another CUPTI
 * client. cupti_rules.c: the pure parts (search order, which calls are syncs, names).
 * cupti_gpu.c: SYNCSPY_GPU=1, activity records and the GPU idle time after each sync. */
#ifndef SYNCSPY_CUPTI_H
#define SYNCSPY_CUPTI_H

#include <cupti_activity.h>
#include <cupti_result.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/core.h"

/* At the first CUDA call (agent/agent.c first_use(), on the calling thread, the agent's guard
 * held): loads libcupti as SYNCSPY_CUPTI says and subscribes to the sync family's driver and
 * runtime callbacks. Any failure (off, no libcupti, another subscriber) is one stderr line and
 * the shim carries on alone. Runs once per process. */
void cupti_start(const struct config *cfg);

/* At exit, before the sites are read (agent/finish.c): the last activity records are delivered
 * and the GPU idle times settled (SYNCSPY_GPU=1). */
void cupti_finish(void);

/* ---- SYNCSPY_GPU=1 ------------------------------------------------------------------------ */

/* True while activity records are collected: agent_sync then reports each sync's site. */
extern _Atomic bool cupti_gpu_tracking;
/* A sync was recorded at site site_id (agent_sync, on the calling thread). */
void cupti_gpu_note(uint32_t site_id, const struct sync_call *call);

/* What the activity records said about one site's syncs: after syncs of them (those whose next
 * device work was seen), the GPU sat idle idle_ns in total until work queued afterwards began;
 * next_work names that work (a kernel's name, "[CUDA memcpy]" ...), last seen. */
struct cupti_site_gpu {
    uint64_t idle_ns;
    uint64_t syncs;
    const char *next_work;
};
/* False when nothing was measured for the site (the result then says nothing). */
bool cupti_site_gpu(uint32_t site_id, struct cupti_site_gpu *out);

/* The CUPTI activity functions cupti_gpu.c uses, from the loaded libcupti (cupti.c). */
struct cupti_gpu_fns {
    CUptiResult (*enable)(CUpti_ActivityKind kind);
    CUptiResult (*disable)(CUpti_ActivityKind kind);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc request,
                                      CUpti_BuffersCallbackCompleteFunc complete);
    CUptiResult (*flush_all)(uint32_t flag);
    CUptiResult (*next_record)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
    CUptiResult (*timestamp)(uint64_t *ts);
    CUptiResult (*dropped)(CUcontext context, uint32_t stream_id, size_t *dropped);
};
/* Starts collecting (buffers from the agent's own memory); NULL, or why it could not. */
const char *cupti_gpu_start(const struct cupti_gpu_fns *fns);
/* Another CUPTI client takes over: the records so far are delivered, collection stops. */
void cupti_gpu_stop(void);
/* Records one sync for the idle-time join: its host end (CLOCK_MONOTONIC) and the correlation
 * ids of the runtime and driver calls it made (0 when unknown). */
void cupti_gpu_sync(uint32_t site_id, uint64_t end_ns, uint32_t runtime_corr, uint32_t driver_corr);
/* At exit: delivers the last records, settles every sync still open. */
void cupti_gpu_finish(void);

/* ---- the pure parts (collectors/cupti_rules.c), unit-tested --------------------------------- */

/* Where SYNCSPY_CUPTI=auto looks, first to last: (1) a libcupti the process already loaded (a
 * profiler's: sharing its copy), (2) beside the loaded libcudart.so* (the runtime in use, so the
 * CUPTI of the same release), (3) the nvidia CUPTI wheel of a site-packages/dist-packages folder
 * holding any loaded object (nvidia/cuda_cupti/lib/, nvidia/cu13/lib/), (4) CUDA_HOME (/usr/local/cuda when
 * unset; a relative one is not used) lib64/ and extras/CUPTI/lib64/, (5) the bare names libcupti.so.13 and libcupti.so for the loader's own
 * search. Every candidate but the last two is an absolute path built from absolute paths. */
struct cupti_search {
    const char *const *loaded; /* paths of the loaded objects (dl_iterate_phdr order; cupti.c
                                * resolves relative ones through /proc/self/maps) */
    size_t nloaded;
    const char *cuda_home;     /* CUDA_HOME as set, or NULL when unset */
};
#define CUPTI_CANDIDATES_MAX 48
/* Writes the candidates, duplicates left out, into out; returns how many. */
size_t cupti_search_paths(const struct cupti_search *in, char (*out)[PATH_MAX], size_t max);

/* What a host pointer is, for classifying copies (cuPointerGetAttribute in the process). */
enum cupti_mem { CUPTI_MEM_UNKNOWN, CUPTI_MEM_DEVICE, CUPTI_MEM_PINNED, CUPTI_MEM_PAGEABLE,
                 CUPTI_MEM_MANAGED };
typedef enum cupti_mem (*cupti_mem_fn)(const void *p);

/* The callback ids of the calls that can synchronize, per domain (CUPTI_CB_DOMAIN_DRIVER_API or
 * CUPTI_CB_DOMAIN_RUNTIME_API): the only ones syncspy enables. */
size_t cupti_sync_cbids(uint32_t domain, const uint32_t **cbids);

/* Whether the call (its params struct as CUPTI passes it) makes the host wait for the device,
 * CUDA's "API synchronization behavior": stream/context/event synchronize always; copies with a
 * host end in their synchronous forms, their Async forms only with pageable host memory;
 * device-to-device copies never; memsets of pinned or managed memory; frees of non-NULL
 * pointers. Fills call->stream, bytes and dir. Decided at the call's ENTER (a freed pointer can
 * no longer be asked about afterwards). */
bool cupti_classify(uint32_t domain, uint32_t cbid, const void *params, cupti_mem_fn mem,
                    struct sync_call *call);

/* The API name for a callback's functionName: a runtime name loses the version suffix CUPTI's
 * ids carry ("cudaMemcpy_v3020" -> "cudaMemcpy"); driver names keep theirs ("cuMemcpyDtoH_v2"
 * is the real symbol). */
void cupti_api_name(uint32_t domain, const char *function_name, char *out, size_t len);

#endif
