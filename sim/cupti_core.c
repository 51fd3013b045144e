/* sim/cupti_core.c: the simulated device's tools interface (see cupti_core.h), as CUPTI 13
 * behaves for a client: one subscriber at a time (a second one gets
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), callbacks only for the (domain, cbid) pairs it
 * enabled, at ENTER and EXIT with a CUpti_CallbackData; correlation ids per traced call; activity
 * records in buffers the client hands out, filled from the timelines and handed back when full
 * or flushed. Callbacks and buffer hand-backs run on the calling thread, never under a lock. */
#include "sim/cupti_core.h"
#include "sim/sim_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- the subscriber ---------------------------------------------------------------------- */

/* CUPTI 13 names subscribers (cuptiSubscribe_v2); CUPTI 12's are unnamed. */
#ifdef CUPTI_SUBSCRIBER_NAME_MAX_LEN
#define SUBSCRIBER_NAME_MAX_LEN CUPTI_SUBSCRIBER_NAME_MAX_LEN
#else
#define SUBSCRIBER_NAME_MAX_LEN 64
#endif

struct CUpti_Subscriber_st {
    CUpti_CallbackFunc callback;
    void *userdata;
    char name[SUBSCRIBER_NAME_MAX_LEN + 16];
};

/* The simulated device's one context (CUpti_CallbackData.context). */
struct CUctx_st {
    int unused;
};
static struct CUctx_st the_context;

static pthread_mutex_t sub_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUpti_Subscriber_st the_subscriber;
static _Atomic bool subscribed;
static _Atomic unsigned char enabled_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
static _Atomic unsigned char enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static _Atomic unsigned char enabled_resource[CUPTI_CBID_RESOURCE_SIZE];
static _Atomic uint32_t next_correlation = 1;

/* The calling thread's open traced calls, innermost last. */
#define TRACE_DEPTH 8
static __thread uint32_t corr_stack[TRACE_DEPTH];
static __thread CUpti_CallbackDomain domain_stack[TRACE_DEPTH];
static __thread int corr_depth;

CUcontext sim_cupti_context(void)
{
    return &the_context;
}

static _Atomic unsigned char *enabled_slot(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid > 0 && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
        return &enabled_driver[cbid];
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid > 0 && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
        return &enabled_runtime[cbid];
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid > 0 && cbid < CUPTI_CBID_RESOURCE_SIZE)
        return &enabled_resource[cbid];
    return NULL;
}

static size_t domain_size(CUpti_CallbackDomain domain)
{
    return domain == CUPTI_CB_DOMAIN_DRIVER_API    ? CUPTI_DRIVER_TRACE_CBID_SIZE
           : domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_RUNTIME_TRACE_CBID_SIZE
           : domain == CUPTI_CB_DOMAIN_RESOURCE    ? CUPTI_CBID_RESOURCE_SIZE
                                                   : 0;
}

static bool wants(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (!atomic_load_explicit(&subscribed, memory_order_acquire))
        return false;
    _Atomic unsigned char *slot = enabled_slot(domain, cbid);
    return slot && atomic_load_explicit(slot, memory_order_relaxed);
}

static void call_subscriber(struct sim_trace *t)
{
    CUpti_CallbackFunc cb = the_subscriber.callback;
    if (cb != NULL && wants(t->domain, t->cbid))
        cb(the_subscriber.userdata, t->domain, t->cbid, &t->data);
}

static _Atomic bool any_kind_on; /* some activity kind is enabled */

void sim_trace_enter(struct sim_trace *t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const char *name, const void *params)
{
    sim_init();
    t->pushed = false;
    t->traced = atomic_load_explicit(&subscribed, memory_order_relaxed) ||
                atomic_load_explicit(&any_kind_on, memory_order_relaxed);
    if (!t->traced)
        return; /* no tool: no correlation id, no callback (a few loads per call) */
    memset(&t->data, 0, sizeof t->data);
    t->domain = domain;
    t->cbid = cbid;
    t->data.callbackSite = CUPTI_API_ENTER;
    t->data.functionName = name;
    t->data.functionParams = params;
    t->data.context = &the_context;
    t->data.contextUid = 1;
    t->data.correlationId = atomic_fetch_add_explicit(&next_correlation, 1, memory_order_relaxed);
    static __thread uint64_t scratch[TRACE_DEPTH];
    if (corr_depth < TRACE_DEPTH) {
        scratch[corr_depth] = 0;
        t->data.correlationData = &scratch[corr_depth];
        domain_stack[corr_depth] = domain;
        corr_stack[corr_depth++] = t->data.correlationId;
        t->pushed = true;
    }
    call_subscriber(t);
}

void sim_trace_exit(struct sim_trace *t, void *ret)
{
    if (!t->traced)
        return;
    t->data.callbackSite = CUPTI_API_EXIT;
    t->data.functionReturnValue = ret;
    call_subscriber(t);
    if (t->pushed)
        corr_depth--;
}

uint32_t sim_trace_corr(void)
{
    return corr_depth > 0 ? corr_stack[corr_depth - 1] : 0;
}

uint32_t sim_trace_runtime_corr(void)
{
    for (int i = 0; i < corr_depth; i++)
        if (domain_stack[i] == CUPTI_CB_DOMAIN_RUNTIME_API)
            return corr_stack[i];
    return 0;
}

CUptiResult sim_cupti_subscribe(CUpti_SubscriberHandle *out, CUpti_CallbackFunc cb, void *userdata,
                                const char *name, char *old_name, size_t old_size)
{
    if (out == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sub_lock);
    if (atomic_load(&subscribed)) {
        if (old_name != NULL && old_size > 0)
            snprintf(old_name, old_size, "%s", the_subscriber.name);
        pthread_mutex_unlock(&sub_lock);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    the_subscriber.callback = cb;
    the_subscriber.userdata = userdata;
    snprintf(the_subscriber.name, sizeof the_subscriber.name, "CUPTI for %.*s",
             SUBSCRIBER_NAME_MAX_LEN, name && *name ? name : "an unnamed subscriber");
    atomic_store(&subscribed, true);
    pthread_mutex_unlock(&sub_lock);
    *out = &the_subscriber;
    return CUPTI_SUCCESS;
}

static bool valid_handle_locked(CUpti_SubscriberHandle h)
{
    return h == &the_subscriber && atomic_load(&subscribed);
}

CUptiResult sim_cupti_unsubscribe(CUpti_SubscriberHandle h)
{
    pthread_mutex_lock(&sub_lock);
    if (!valid_handle_locked(h)) {
        pthread_mutex_unlock(&sub_lock);
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    atomic_store(&subscribed, false);
    for (size_t i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
        atomic_store_explicit(&enabled_driver[i], 0, memory_order_relaxed);
    for (size_t i = 0; i < CUPTI_RUNTIME_TRACE_CBID_SIZE; i++)
        atomic_store_explicit(&enabled_runtime[i], 0, memory_order_relaxed);
    for (size_t i = 0; i < CUPTI_CBID_RESOURCE_SIZE; i++)
        atomic_store_explicit(&enabled_resource[i], 0, memory_order_relaxed);
    pthread_mutex_unlock(&sub_lock);
    return CUPTI_SUCCESS;
}

/* cuptiFinalize: CUPTI detaches from the process: every activity kind off, the buffers
 * completed (handed back), the subscriber gone, so that a later cuptiSubscribe succeeds. */
CUptiResult sim_cupti_finalize(void)
{
    sim_cupti_activity_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (int k = CUPTI_ACTIVITY_KIND_INVALID + 1; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
        sim_cupti_activity_enable((CUpti_ActivityKind)k, false);
    pthread_mutex_lock(&sub_lock);
    bool was = atomic_load(&subscribed);
    pthread_mutex_unlock(&sub_lock);
    if (was)
        sim_cupti_unsubscribe(&the_subscriber);
    return CUPTI_SUCCESS;
}

CUptiResult sim_cupti_enable_callback(uint32_t enable, CUpti_SubscriberHandle h,
                                      CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    pthread_mutex_lock(&sub_lock);
    _Atomic unsigned char *slot = enabled_slot(domain, cbid);
    CUptiResult r =
        !valid_handle_locked(h) || slot == NULL ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_SUCCESS;
    if (r == CUPTI_SUCCESS)
        atomic_store(slot, enable ? 1 : 0);
    pthread_mutex_unlock(&sub_lock);
    return r;
}

CUptiResult sim_cupti_enable_domain(uint32_t enable, CUpti_SubscriberHandle h,
                                    CUpti_CallbackDomain domain)
{
    size_t n = domain_size(domain);
    pthread_mutex_lock(&sub_lock);
    CUptiResult r = valid_handle_locked(h) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 1; r == CUPTI_SUCCESS && i < n; i++)
        atomic_store(enabled_slot(domain, (CUpti_CallbackId)i), enable ? 1 : 0);
    pthread_mutex_unlock(&sub_lock);
    return r;
}

CUptiResult sim_cupti_get_callback_state(uint32_t *enable, CUpti_SubscriberHandle h,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    pthread_mutex_lock(&sub_lock);
    _Atomic unsigned char *slot = enabled_slot(domain, cbid);
    CUptiResult r = enable == NULL || !valid_handle_locked(h) || slot == NULL
                        ? CUPTI_ERROR_INVALID_PARAMETER
                        : CUPTI_SUCCESS;
    if (r == CUPTI_SUCCESS)
        *enable = atomic_load(slot);
    pthread_mutex_unlock(&sub_lock);
    return r;
}

/* The resource domain: the one context's creation, when the runtime first makes it active
 * (sim_ctx_activate), as CUPTI reports a context created after the subscriber's call. No other
 * resource (streams, modules, graphs) is reported. */
void sim_cupti_context_created(void)
{
    if (!wants(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED))
        return;
    CUpti_ResourceData d = {.context = &the_context};
    CUpti_CallbackFunc cb = the_subscriber.callback;
    if (cb != NULL)
        cb(the_subscriber.userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
           &d);
}

/* ---- activity records -------------------------------------------------------------------- */

_Atomic bool sim_activity_on;
static _Atomic bool kind_on[CUPTI_ACTIVITY_KIND_COUNT];
static pthread_mutex_t act_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc buffer_request;
static CUpti_BuffersCallbackCompleteFunc buffer_complete;
static uint8_t *buffer; /* being filled */
static size_t buffer_size, buffer_used;
static _Atomic uint64_t dropped;
static __thread struct sim_op current_op;

#define RECORD_ALIGN 8

/* A kernel's record: the newest layout of the headers, as the CUPTI of that version hands out. */
#if CUDA_VERSION >= 13000
typedef CUpti_ActivityKernel10 kernel_activity;
#else
typedef CUpti_ActivityKernel9 kernel_activity;
#endif

static size_t record_size(CUpti_ActivityKind kind)
{
    size_t n;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: n = sizeof(kernel_activity); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: n = sizeof(CUpti_ActivityMemcpy6); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: n = sizeof(CUpti_ActivityMemset4); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: n = sizeof(CUpti_ActivitySynchronization2); break;
    default: return 0;
    }
    return (n + RECORD_ALIGN - 1) & ~(size_t)(RECORD_ALIGN - 1);
}

static bool any_device_kind_on(void)
{
    return atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_KERNEL]) ||
           atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) ||
           atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_MEMCPY]) ||
           atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_MEMSET]);
}

CUptiResult sim_cupti_activity_enable(CUpti_ActivityKind kind, bool enable)
{
    if ((int)kind <= CUPTI_ACTIVITY_KIND_INVALID || (int)kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    atomic_store(&kind_on[kind], enable);
    atomic_store(&sim_activity_on, any_device_kind_on());
    bool any = false;
    for (int k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
        any |= atomic_load(&kind_on[k]);
    atomic_store(&any_kind_on, any);
    return CUPTI_SUCCESS;
}

CUptiResult sim_cupti_activity_register(CUpti_BuffersCallbackRequestFunc request,
                                        CUpti_BuffersCallbackCompleteFunc complete)
{
    if (request == NULL || complete == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&act_lock);
    buffer_request = request;
    buffer_complete = complete;
    pthread_mutex_unlock(&act_lock);
    return CUPTI_SUCCESS;
}

/* A full (or flushed) buffer, handed back outside the lock. */
struct handback {
    CUpti_BuffersCallbackCompleteFunc complete;
    uint8_t *buf;
    size_t size, used;
};

static void take_buffer_locked(struct handback *hb)
{
    *hb = (struct handback){buffer_complete, buffer, buffer_size, buffer_used};
    buffer = NULL;
    buffer_size = buffer_used = 0;
}

static void hand_back(const struct handback *hb)
{
    if (hb->buf != NULL && hb->complete != NULL)
        hb->complete(&the_context, 0, hb->buf, hb->size, hb->used);
}

/* Copies one record into the current buffer, asking the client for a new one when it is full. */
static void append_record(const void *rec, size_t rec_bytes, CUpti_ActivityKind kind)
{
    size_t n = record_size(kind);
    struct handback full = {0};
    pthread_mutex_lock(&act_lock);
    if (buffer != NULL && buffer_size - buffer_used < n)
        take_buffer_locked(&full);
    if (buffer == NULL && buffer_request != NULL) {
        uint8_t *b = NULL;
        size_t size = 0, max_records = 0;
        buffer_request(&b, &size, &max_records);
        if (b != NULL && size >= n) {
            buffer = b;
            buffer_size = size;
            buffer_used = 0;
        }
    }
    if (buffer != NULL) {
        memcpy(buffer + buffer_used, rec, rec_bytes);
        memset(buffer + buffer_used + rec_bytes, 0, n - rec_bytes);
        buffer_used += n;
    } else {
        atomic_fetch_add(&dropped, 1);
    }
    pthread_mutex_unlock(&act_lock);
    hand_back(&full);
}

CUptiResult sim_cupti_activity_flush(uint32_t flag)
{
    (void)flag;
    struct handback hb = {0};
    pthread_mutex_lock(&act_lock);
    bool registered = buffer_complete != NULL;
    if (buffer != NULL && buffer_used > 0)
        take_buffer_locked(&hb);
    pthread_mutex_unlock(&act_lock);
    if (!registered)
        return CUPTI_ERROR_INVALID_OPERATION;
    hand_back(&hb);
    return CUPTI_SUCCESS;
}

CUptiResult sim_cupti_activity_next(uint8_t *buf, size_t valid, CUpti_Activity **record)
{
    if (buf == NULL || record == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t at = 0;
    if (*record != NULL) {
        size_t n = record_size((*record)->kind);
        if (n == 0)
            return CUPTI_ERROR_INVALID_KIND;
        at = (size_t)((uint8_t *)*record - buf) + n;
    }
    if (at >= valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *r = (CUpti_Activity *)(void *)(buf + at);
    size_t n = record_size(r->kind);
    if (n == 0 || at + n > valid)
        return CUPTI_ERROR_INVALID_KIND;
    *record = r;
    return CUPTI_SUCCESS;
}

uint64_t sim_cupti_dropped(void)
{
    return atomic_load(&dropped);
}

void sim_op_describe(const struct sim_op *op)
{
    current_op = *op;
}

void sim_op_clear(void)
{
    memset(&current_op, 0, sizeof current_op);
}

static void kernel_record(unsigned long long stream_id, uint64_t start, uint64_t end,
                          const char *name)
{
    CUpti_ActivityKind kind = atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL])
                                  ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                  : CUPTI_ACTIVITY_KIND_KERNEL;
    if (!atomic_load(&kind_on[kind]))
        return;
    kernel_activity k;
    memset(&k, 0, sizeof k);
    k.kind = kind;
    k.start = start;
    k.end = end;
    k.completed = end;
    k.queued = k.submitted = start;
    k.contextId = 1;
    k.streamId = (uint32_t)stream_id;
    k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
    k.correlationId = sim_trace_corr();
    k.name = name != NULL ? name : "(unknown kernel)";
    append_record(&k, sizeof k, kind);
}

void sim_activity_enqueued(unsigned long long stream_id, uint64_t start_ns, uint64_t end_ns)
{
    struct sim_op op = current_op;
    sim_op_clear();
    if (!atomic_load_explicit(&sim_activity_on, memory_order_relaxed))
        return;
    if (op.kind == SIM_OP_MEMCPY && atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_MEMCPY])) {
        CUpti_ActivityMemcpy6 m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m.copyKind = op.copy_kind;
        m.srcKind = op.src_kind;
        m.dstKind = op.dst_kind;
        m.bytes = op.bytes;
        m.start = start_ns;
        m.end = end_ns;
        m.contextId = 1;
        m.streamId = (uint32_t)stream_id;
        m.correlationId = sim_trace_corr();
        m.runtimeCorrelationId = sim_trace_runtime_corr();
        m.copyCount = 1;
        append_record(&m, sizeof m, CUPTI_ACTIVITY_KIND_MEMCPY);
    } else if (op.kind == SIM_OP_MEMSET && atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_MEMSET])) {
        CUpti_ActivityMemset4 m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        m.bytes = op.bytes;
        m.start = start_ns;
        m.end = end_ns;
        m.contextId = 1;
        m.streamId = (uint32_t)stream_id;
        m.correlationId = sim_trace_corr();
        append_record(&m, sizeof m, CUPTI_ACTIVITY_KIND_MEMSET);
    } else if (op.kind == SIM_OP_KERNEL || (op.kind == SIM_OP_UNKNOWN && end_ns > start_ns)) {
        /* work queued by an entry point that does not describe itself is still device time */
        kernel_record(stream_id, start_ns, end_ns, op.kernel_name);
    }
}

void sim_activity_sync(CUpti_ActivitySynchronizationType type, unsigned long long stream_id,
                       uint64_t start_ns, uint64_t end_ns)
{
    if (!atomic_load(&kind_on[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]))
        return;
    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = type;
    s.start = start_ns;
    s.end = end_ns;
    s.correlationId = sim_trace_corr();
    s.contextId = 1;
    s.streamId = (uint32_t)stream_id;
    append_record(&s, sizeof s, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
}
