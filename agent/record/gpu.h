/* agent/record/gpu.h: SYNCSPY_GPU=1 as the agent runs it: the GPU activity collector
 * (collectors/gpu.h) starts once the entry layer has CUPTI, stops when another tool takes CUPTI
 * over, hears of each recorded sync, and is finished at exit; one notice when it cannot run. */
#ifndef SYNCSPY_AGENT_GPU_H
#define SYNCSPY_AGENT_GPU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* True while activity records are collected: the entry layer then fills the correlation ids of
 * struct sync_call (agent/record/core.h), and agent_sync hands each sync to the collector. */
extern _Atomic bool agent_gpu_tracking;

/* From the entry layer, once, when it subscribed to CUPTI (cupti_symbol: the loaded libcupti's
 * functions, by name) or could not (NULL). Starts the collector under SYNCSPY_GPU=1. */
void agent_cupti_ready(void *(*cupti_symbol)(const char *name));
/* From the entry layer: another CUPTI client calls what (CUPTI takes one): the records so far
 * are delivered, collection stops. */
void agent_cupti_leaving(const char *what);

/* At exit, before the sites are read: the last activity records are delivered and the idle
 * times settled. */
void agent_gpu_finish(void);

/* A sync recorded at site_id (agent_sync, on the calling thread): when it returned, and the
 * correlation ids of the runtime and driver calls inside it (0: unknown). */
void agent_gpu_sync(uint32_t site_id, uint64_t end_ns, uint32_t runtime_corr, uint32_t driver_corr);

/* In a forked child: the parent's device work is not the child's. */
void agent_gpu_atfork_child(void);

#endif
