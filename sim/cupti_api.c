/* sim/cupti_api.c: every symbol the simulated libcupti.so.13 exports: the CUPTI callback and
 * activity API (and the event and metric API's answers for a 9.0 device) with the real
 * prototypes, ids and structures of the CUDA 13 headers (12's in libcupti.so.12), backed by
 * the simulated device's tools interface in libcudart.so.13 (sim/cupti_core.c, reached through
 * simcuda_private_ops()). As CUPTI 13: one subscriber at a time, a second one gets
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED. No entry point calls another exported name
 * (a tool that interposes cuptiSubscribe must see only its callers' calls). */
#include <cupti.h>
#include <stdatomic.h>
#include <string.h>

#include "sim/driver_ops.h"

/* cbid -> name tables generated from the CUDA headers' enums by sim.mk (cuptiGetCallbackName) */
#include "cupti_cbid_names.inc"

#define CUPTI_API __attribute__((visibility("default")))

static const struct simcuda_private_ops *_Atomic ops_cache;

static const struct simcuda_private_ops *ops(void)
{
    const struct simcuda_private_ops *o = atomic_load_explicit(&ops_cache, memory_order_acquire);
    if (o == NULL) {
        o = simcuda_private_ops();
        atomic_store_explicit(&ops_cache, o, memory_order_release);
    }
    return o;
}

static __thread CUptiResult last_error = CUPTI_SUCCESS;

static CUptiResult ret(CUptiResult r)
{
    if (r != CUPTI_SUCCESS)
        last_error = r;
    return r;
}

/* Not CUPTI's: says that this CUPTI runs without NVIDIA's driver (it is the simulator's), so a
 * tool may subscribe before the program initialized its driver. NVIDIA's libcupti crashes the
 * process when subscribed without a driver it can start (CUDA 13.2: it recurses through
 * cuptiGetResultString), so syncspy subscribes to it only once the driver is usable
 * (entry/cuda_driver.h), and to this one at once. */
CUPTI_API int simcupti_runs_without_driver(void)
{
    return 1;
}

CUPTI_API CUptiResult cuptiGetVersion(uint32_t *version)
{
    if (version == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

CUPTI_API CUptiResult cuptiGetLastError(void)
{
    CUptiResult r = last_error;
    last_error = CUPTI_SUCCESS;
    return r;
}

static const struct {
    CUptiResult code;
    const char *name;
} results[] = {
#define R_(c) \
    {         \
        c, #c \
    }
    R_(CUPTI_SUCCESS),
    R_(CUPTI_ERROR_INVALID_PARAMETER),
    R_(CUPTI_ERROR_INVALID_DEVICE),
    R_(CUPTI_ERROR_INVALID_CONTEXT),
    R_(CUPTI_ERROR_INVALID_KIND),
    R_(CUPTI_ERROR_MAX_LIMIT_REACHED),
    R_(CUPTI_ERROR_NOT_INITIALIZED),
    R_(CUPTI_ERROR_INVALID_OPERATION),
    R_(CUPTI_ERROR_NOT_SUPPORTED),
    R_(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
    R_(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED),
    R_(CUPTI_ERROR_UNKNOWN),
#undef R_
};

CUPTI_API CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    if (str == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    for (size_t i = 0; i < sizeof results / sizeof results[0]; i++)
        if (results[i].code == result) {
            *str = results[i].name;
            return CUPTI_SUCCESS;
        }
    *str = "CUPTI_ERROR_UNKNOWN";
    return ret(CUPTI_ERROR_INVALID_PARAMETER);
}

/* ---- callbacks ------------------------------------------------------------------------------ */

CUPTI_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                     CUpti_CallbackFunc callback, void *userdata)
{
    return ret(ops()->subscribe(subscriber, callback, userdata, NULL, NULL, 0));
}

#if CUDA_VERSION >= 13000 /* named subscribers: CUPTI 13 */
CUPTI_API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                        CUpti_CallbackFunc callback, void *userdata,
                                        CUpti_SubscriberParams *pParams)
{
    const char *name = NULL;
    char *old = NULL;
    size_t old_size = 0;
    if (pParams != NULL) {
        if (pParams->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
            return ret(CUPTI_ERROR_INVALID_PARAMETER);
        name = pParams->subscriberName;
        old = pParams->oldSubscriberName;
        old_size = pParams->oldSubscriberSize;
    }
    return ret(ops()->subscribe(subscriber, callback, userdata, name, old, old_size));
}
#endif

CUPTI_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    return ret(ops()->unsubscribe(subscriber));
}

CUPTI_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                          CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    return ret(ops()->enable_callback(enable, subscriber, domain, cbid));
}

CUPTI_API CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                        CUpti_CallbackDomain domain)
{
    return ret(ops()->enable_domain(enable, subscriber, domain));
}

CUPTI_API CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
    CUptiResult r = ops()->enable_domain(enable, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    if (r == CUPTI_SUCCESS)
        r = ops()->enable_domain(enable, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (r == CUPTI_SUCCESS)
        r = ops()->enable_domain(enable, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    return ret(r);
}

CUPTI_API CUptiResult cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle subscriber,
                                            CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    return ret(ops()->get_callback_state(enable, subscriber, domain, cbid));
}

/* ---- activity ------------------------------------------------------------------------------- */

static CUpti_TimestampCallbackFunc _Atomic
    timestamp_fn; /* cuptiActivityRegisterTimestampCallback */

CUPTI_API CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    if (timestamp == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    CUpti_TimestampCallbackFunc fn = atomic_load(&timestamp_fn);
    *timestamp = fn != NULL ? fn() : ops()->now_ns();
    return CUPTI_SUCCESS;
}

CUPTI_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    return ret(ops()->activity_enable(kind, true));
}

CUPTI_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    return ret(ops()->activity_enable(kind, false));
}

CUPTI_API CUptiResult
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    return ret(ops()->activity_register(funcBufferRequested, funcBufferCompleted));
}

CUPTI_API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    return ret(ops()->activity_flush(flag));
}

CUPTI_API CUptiResult cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag)
{
    (void)context;
    (void)streamId;
    return ret(ops()->activity_flush(flag));
}

CUPTI_API CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                 CUpti_Activity **record)
{
    CUptiResult r = ops()->activity_next(buffer, validBufferSizeBytes, record);
    return r == CUPTI_ERROR_MAX_LIMIT_REACHED ? r : ret(r);
}

CUPTI_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                        size_t *dropped)
{
    (void)context;
    (void)streamId;
    if (dropped == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    *dropped = (size_t)ops()->activity_dropped();
    return CUPTI_SUCCESS;
}

/* ---- what Kineto (torch.profiler) uses besides ---------------------------------------------- */

CUPTI_API CUptiResult cuptiFinalize(void)
{
    return ret(ops()->finalize());
}

/* The name CUPTI gives a callback id: the enum's name without its prefix, version suffix kept
 * (cudaLaunchKernel_v7000), as real CUPTI answers. */
CUPTI_API CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                           const char **name)
{
    if (name == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    const char *const *table = NULL;
    size_t n = 0;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        table = sim_runtime_cbid_names;
        n = sizeof sim_runtime_cbid_names / sizeof sim_runtime_cbid_names[0];
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        table = sim_driver_cbid_names;
        n = sizeof sim_driver_cbid_names / sizeof sim_driver_cbid_names[0];
    }
    if (table == NULL || cbid == 0 || cbid >= n || table[cbid] == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    *name = table[cbid];
    return CUPTI_SUCCESS;
}

/* API activity records (RUNTIME, DRIVER), CUDA event timestamps and external correlation
 * records are not produced (sim/README.md): the switches for them are accepted. */
#if CUDA_VERSION >= 13000 /* not in CUPTI 12 */
CUPTI_API CUptiResult cuptiActivityEnableCudaEventDeviceTimestamps(uint8_t enable)
{
    (void)enable;
    return CUPTI_SUCCESS;
}
#endif

CUPTI_API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
    (void)enable;
    return cbid > 0 && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? CUPTI_SUCCESS
                                                           : ret(CUPTI_ERROR_INVALID_PARAMETER);
}

CUPTI_API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
    (void)enable;
    return cbid > 0 && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? CUPTI_SUCCESS
                                                            : ret(CUPTI_ERROR_INVALID_PARAMETER);
}

/* External correlation ids: a stack per thread and kind, as CUPTI keeps them. */
#define EXT_DEPTH 64
static __thread uint64_t ext_ids[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE][EXT_DEPTH];
static __thread unsigned ext_depth[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

CUPTI_API CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                             uint64_t id)
{
    if ((int)kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        (int)kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return ret(CUPTI_ERROR_INVALID_KIND);
    if (ext_depth[kind] == EXT_DEPTH)
        return ret(CUPTI_ERROR_MAX_LIMIT_REACHED);
    ext_ids[kind][ext_depth[kind]++] = id;
    return CUPTI_SUCCESS;
}

CUPTI_API CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t *lastId)
{
    if ((int)kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        (int)kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return ret(CUPTI_ERROR_INVALID_KIND);
    if (ext_depth[kind] == 0)
        return ret(CUPTI_ERROR_QUEUE_EMPTY);
    uint64_t id = ext_ids[kind][--ext_depth[kind]];
    if (lastId != NULL)
        *lastId = id;
    return CUPTI_SUCCESS;
}

/* Activity records keep the timelines' clock (CLOCK_MONOTONIC); a registered timestamp
 * function is used for cuptiGetTimestamp's answers only (sim/README.md). */
CUPTI_API CUptiResult
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    if (funcTimestamp == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    atomic_store(&timestamp_fn, funcTimestamp);
    return CUPTI_SUCCESS;
}

/* Buffer sizes and limits: accepted and reported back; the simulator's buffers are the
 * client's own, whatever their size. */
CUPTI_API CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize,
                                                void *value)
{
    (void)attr;
    if (valueSize == NULL || value == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    return CUPTI_SUCCESS;
}

CUPTI_API CUptiResult cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize,
                                                void *value)
{
    (void)attr;
    if (valueSize == NULL || value == NULL || *valueSize < sizeof(size_t))
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    *(size_t *)value = 0;
    *valueSize = sizeof(size_t);
    return CUPTI_SUCCESS;
}

/* ---- the event and metric API ---------------------------------------------------------------- */
/* Kineto links it (torch 2.6's for its CUPTI event profiler). CUPTI does not support it on
 * devices of compute capability 7.5 and higher, such as the simulated 9.0 one: every call that
 * would reach the device answers CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED after its argument
 * checks, so no event, metric or event group id is ever handed out. */

static CUptiResult legacy_profiler(const void *required_out)
{
    return ret(required_out == NULL ? CUPTI_ERROR_INVALID_PARAMETER
                                    : CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
}

CUPTI_API CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
    (void)context; /* the one context, or NULL for the current one: both device 0 */
    if (deviceId == NULL)
        return ret(CUPTI_ERROR_INVALID_PARAMETER);
    *deviceId = 0;
    return CUPTI_SUCCESS;
}

CUPTI_API CUptiResult cuptiSetEventCollectionMode(CUcontext context, CUpti_EventCollectionMode mode)
{
    (void)context;
    (void)mode;
    return ret(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
}

CUPTI_API CUptiResult cuptiEventGetIdFromName(CUdevice device, const char *eventName,
                                              CUpti_EventID *event)
{
    (void)device;
    return legacy_profiler(eventName == NULL ? NULL : event);
}

CUPTI_API CUptiResult cuptiEventGetAttribute(CUpti_EventID event, CUpti_EventAttribute attrib,
                                             size_t *valueSize, void *value)
{
    (void)event;
    (void)attrib;
    return legacy_profiler(valueSize == NULL ? NULL : value);
}

CUPTI_API CUptiResult cuptiEventGroupGetAttribute(CUpti_EventGroup eventGroup,
                                                  CUpti_EventGroupAttribute attrib,
                                                  size_t *valueSize, void *value)
{
    (void)eventGroup;
    (void)attrib;
    return legacy_profiler(valueSize == NULL ? NULL : value);
}

CUPTI_API CUptiResult cuptiEventGroupSetAttribute(CUpti_EventGroup eventGroup,
                                                  CUpti_EventGroupAttribute attrib,
                                                  size_t valueSize, void *value)
{
    (void)eventGroup;
    (void)attrib;
    (void)valueSize;
    return legacy_profiler(value);
}

CUPTI_API CUptiResult cuptiEventGroupReadEvent(CUpti_EventGroup eventGroup,
                                               CUpti_ReadEventFlags flags, CUpti_EventID event,
                                               size_t *eventValueBufferSizeBytes,
                                               uint64_t *eventValueBuffer)
{
    (void)eventGroup;
    (void)flags;
    (void)event;
    return legacy_profiler(eventValueBufferSizeBytes == NULL ? NULL : eventValueBuffer);
}

CUPTI_API CUptiResult cuptiEventGroupSetsCreate(CUcontext context, size_t eventIdArraySizeBytes,
                                                CUpti_EventID *eventIdArray,
                                                CUpti_EventGroupSets **eventGroupPasses)
{
    (void)context;
    (void)eventIdArraySizeBytes;
    return legacy_profiler(eventIdArray == NULL ? NULL : eventGroupPasses);
}

CUPTI_API CUptiResult cuptiEventGroupSetsDestroy(CUpti_EventGroupSets *eventGroupSets)
{
    return legacy_profiler(eventGroupSets);
}

CUPTI_API CUptiResult cuptiEventGroupSetEnable(CUpti_EventGroupSet *eventGroupSet)
{
    return legacy_profiler(eventGroupSet);
}

CUPTI_API CUptiResult cuptiEventGroupSetDisable(CUpti_EventGroupSet *eventGroupSet)
{
    return legacy_profiler(eventGroupSet);
}

CUPTI_API CUptiResult cuptiMetricGetIdFromName(CUdevice device, const char *metricName,
                                               CUpti_MetricID *metric)
{
    (void)device;
    return legacy_profiler(metricName == NULL ? NULL : metric);
}

CUPTI_API CUptiResult cuptiMetricGetAttribute(CUpti_MetricID metric, CUpti_MetricAttribute attrib,
                                              size_t *valueSize, void *value)
{
    (void)metric;
    (void)attrib;
    return legacy_profiler(valueSize == NULL ? NULL : value);
}

CUPTI_API CUptiResult cuptiMetricGetNumEvents(CUpti_MetricID metric, uint32_t *numEvents)
{
    (void)metric;
    return legacy_profiler(numEvents);
}

CUPTI_API CUptiResult cuptiMetricEnumEvents(CUpti_MetricID metric, size_t *eventIdArraySizeBytes,
                                            CUpti_EventID *eventIdArray)
{
    (void)metric;
    return legacy_profiler(eventIdArraySizeBytes == NULL ? NULL : eventIdArray);
}

CUPTI_API CUptiResult cuptiMetricGetValue(CUdevice device, CUpti_MetricID metric,
                                          size_t eventIdArraySizeBytes, CUpti_EventID *eventIdArray,
                                          size_t eventValueArraySizeBytes,
                                          uint64_t *eventValueArray, uint64_t timeDuration,
                                          CUpti_MetricValue *metricValue)
{
    (void)device;
    (void)metric;
    (void)eventIdArraySizeBytes;
    (void)eventValueArraySizeBytes;
    (void)timeDuration;
    return legacy_profiler(eventIdArray == NULL || eventValueArray == NULL ? NULL : metricValue);
}
