/* sim/cupti_core.h: the simulated device's tools interface, inside libcudart.so.13 (hidden):
 * the one CUPTI subscriber and its enabled callbacks, correlation ids, and activity records
 * written from the timelines. sim/cudart.c and sim/driver_core.c trace their calls through it;
 * libcupti.so.13 (sim/cupti_api.c) and libcuda.so.1 (sim/driver_api.c) reach it through the
 * table simcuda_private_ops() returns (sim/driver_ops.h). Never calls an exported name. */
#ifndef SIM_CUPTI_CORE_H
#define SIM_CUPTI_CORE_H

/* Not <cupti.h>: sim/cudart.c builds with __CUDA_API_VERSION_INTERNAL, under which cuda.h
 * defines the legacy structs that cupti.h declares again. */
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* One traced API call: the callback data CUPTI passes at its ENTER and EXIT sites. */
struct sim_trace {
    CUpti_CallbackData data;
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    bool traced; /* a subscriber or activity records were on at ENTER */
    bool pushed; /* its correlation id is on the thread's stack */
};

/* ENTER: gives the call a correlation id (the thread's innermost open call from now on) and
 * calls the subscriber when it enabled (domain, cbid). name: the function's name, params: the
 * real params struct of generated_cuda_meta.h / generated_cuda_runtime_api_meta.h (or NULL). */
void sim_trace_enter(struct sim_trace *t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const char *name, const void *params);
/* EXIT, with the call's return value (a cudaError_t or CUresult). */
void sim_trace_exit(struct sim_trace *t, void *ret);

/* The calling thread's open traced calls: the innermost one's correlation id (0 when none) and
 * the outermost runtime call's (0 when none). */
uint32_t sim_trace_corr(void);
uint32_t sim_trace_runtime_corr(void);

/* What the next queued operation is, for its activity record (set by the caller of the
 * timeline, read and cleared by sim_activity_enqueued). */
enum sim_op_kind { SIM_OP_UNKNOWN, SIM_OP_KERNEL, SIM_OP_MEMCPY, SIM_OP_MEMSET };
struct sim_op {
    enum sim_op_kind kind;
    const char *kernel_name;
    uint8_t copy_kind, src_kind, dst_kind; /* CUpti_ActivityMemcpyKind / MemoryKind */
    uint64_t bytes;
};
void sim_op_describe(const struct sim_op *op);
void sim_op_clear(void);

extern _Atomic bool sim_activity_on; /* any kernel/memcpy/memset activity kind is enabled */

/* sim/timeline.c calls this for every operation it queues: one activity record of the kind
 * described (if that kind is enabled), with the operation's place on the timeline. */
void sim_activity_enqueued(unsigned long long stream_id, uint64_t start_ns, uint64_t end_ns);
/* A synchronizing call's record (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), for the innermost open
 * call's correlation id. */
void sim_activity_sync(CUpti_ActivitySynchronizationType type, unsigned long long stream_id,
                       uint64_t start_ns, uint64_t end_ns);

/* The CUPTI API's backends (sim/cupti_api.c forwards to these through the ops table). */
CUptiResult sim_cupti_subscribe(CUpti_SubscriberHandle *out, CUpti_CallbackFunc cb, void *userdata,
                                const char *name, char *old_name, size_t old_size);
CUptiResult sim_cupti_unsubscribe(CUpti_SubscriberHandle h);
CUptiResult sim_cupti_finalize(void);
CUptiResult sim_cupti_enable_callback(uint32_t enable, CUpti_SubscriberHandle h,
                                      CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
CUptiResult sim_cupti_enable_domain(uint32_t enable, CUpti_SubscriberHandle h,
                                    CUpti_CallbackDomain domain);
CUptiResult sim_cupti_get_callback_state(uint32_t *enable, CUpti_SubscriberHandle h,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
CUptiResult sim_cupti_activity_enable(CUpti_ActivityKind kind, bool enable);
CUptiResult sim_cupti_activity_register(CUpti_BuffersCallbackRequestFunc request,
                                        CUpti_BuffersCallbackCompleteFunc complete);
CUptiResult sim_cupti_activity_flush(uint32_t flag);
CUptiResult sim_cupti_activity_next(uint8_t *buffer, size_t valid, CUpti_Activity **record);
uint64_t sim_cupti_dropped(void);
CUcontext sim_cupti_context(void);
void sim_cupti_context_created(void);

#pragma GCC visibility pop
#endif
