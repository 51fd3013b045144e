/* collectors/gpu.h: SYNCSPY_GPU=1: CUPTI activity records (kernels, copies, memsets,
 * synchronizations) joined with the syncs the agent recorded give each sync site the time the
 * GPU then sat idle. Called by the agent (agent/record/gpu.c, agent/background/report_model.c); its CUPTI functions
 * come from the libcupti the entry layer loaded, asked for by name. Includes nothing above it. */
#ifndef SYNCSPY_GPU_H
#define SYNCSPY_GPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Starts collecting (buffers from its own memory) with the functions cupti_symbol returns (the
 * activity API of CUDA 13's CUPTI); NULL, or why it could not. */
const char *gpu_start(void *(*cupti_symbol)(const char *name));
/* Another CUPTI client takes over: the records so far are delivered, collection stops. True
 * when it was collecting. */
bool gpu_stop(void);
/* One recorded sync for the idle-time join: its host end (CLOCK_MONOTONIC) and the correlation
 * ids of the runtime and driver calls it made (0 when unknown). A lock and an array slot. */
void gpu_note_sync(uint32_t site_id, uint64_t end_ns, uint32_t runtime_corr, uint32_t driver_corr);
/* At exit: delivers the last records, settles every sync still open. */
void gpu_finish(void);

/* The collector's one lock (a leaf, held for a few array slots: never across a CUPTI call), for
 * the agent's fork handlers (agent/process/fork_locks.h: waited for around fork()). */
pthread_mutex_t *gpu_records_lock(void);
/* In a forked child, after its locks were made free: the parent's device work is not the
 * child's, no sync of the child's is noted. */
void gpu_atfork_child(void);

/* What the activity records said about one site's syncs: after syncs of them (those whose next
 * device work was seen), the GPU sat idle idle_ns in total until work queued afterwards began;
 * next_work names that work (a kernel's name, "[CUDA memcpy]" ...), last seen. */
struct gpu_site_idle {
    uint64_t idle_ns;
    uint64_t syncs;
    const char *next_work;
};
/* False when nothing was measured for the site (out then says nothing). */
bool gpu_site(uint32_t site_id, struct gpu_site_idle *out);

#endif
