/* entry/cupti.c: CUPTI's callbacks, an entry layer beside the runtime entry points (see
 * cupti.h). Subscribes to the driver and runtime domains with only the sync family's callbacks
 * enabled, times each such call from its ENTER to its EXIT callback, decides with the one set of
 * sync rules (entry/sync_rules.h, asking the driver what a pointer is) and records it through
 * agent_enter/agent_sync/agent_leave; frames start at the caller of the CUDA API. Also exports
 * cuptiSubscribe/cuptiSubscribe_v2/cuptiActivityRegisterCallbacks: syncspy steps aside first and
 * forwards the call, so that tool never sees an error caused by syncspy. The callbacks run on
 * the application's thread inside its CUDA call: no malloc, no locks, no stdio there. */
#include "entry/cupti.h"

#include <cupti.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/record/apis.h"
#include "agent/record/gpu.h"
#include "agent/process/lifecycle.h"
#include "common/compiler.h"
#include "common/log.h"
#include "entry/cuda_driver.h"
#include "entry/cupti_load.h"
#include "entry/real.h"
#include "entry/sync_rules.h"

/* ---- the subscription -------------------------------------------------------------------------- */

/* The libcupti loaded (its functions are in the table of real symbols, entry/real.h). */
typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*subscribe_v2_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                       CUpti_SubscriberParams *);
typedef CUptiResult (*unsubscribe_fn)(CUpti_SubscriberHandle);
typedef CUptiResult (*enable_callback_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                          CUpti_CallbackId);
#define CUPTI_FN(type, name) ((type)real_cached(REAL_##name))

static char lib_path[PATH_MAX];
static CUpti_SubscriberHandle subscriber;
/* Subscribe / step aside: held across CUPTI's loading and subscription, so a fork only tries it
 * (entry/start.c). */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool active;         /* subscribed and recording */
static _Atomic unsigned generation; /* bumped when syncspy steps aside: open calls are void */
static _Atomic bool started;
static bool wanted;                /* SYNCSPY_CUPTI was not off (under state_lock) */
static _Atomic bool forked_midway; /* a fork's child: CUPTI was being set up or handed over */

/* ---- per thread -------------------------------------------------------------------------------- */

/* The one CUDA call this thread's callbacks are recording (from its ENTER to its EXIT). While it
 * is open, nested callbacks (the driver calls a runtime call makes) are ignored. syncspy's own
 * flag, not the agent's guard: if CUPTI stops calling back mid-call (syncspy stepped aside), a
 * stale flag must not silence the runtime entry points on this thread. */
struct cupti_thread {
    bool open, is_sync;
    bool in_cupti; /* inside syncspy's own call into libcupti */
    uint32_t domain, cbid, corr;
    unsigned gen;
    uintptr_t enter_frame; /* where its ENTER callback ran: a later ENTER from as high or
                                * higher up means a longjmp left that call (it never EXITed) */
    struct sync_call call;
    /* the last runtime and driver calls that returned on this thread (SYNCSPY_GPU=1) */
    uint32_t last_runtime_corr, last_driver_corr;
    uint64_t last_exit_ns;
    unsigned runtime_launches_open; /* runtime graph launches between their ENTER and EXIT (a
                                     * longjmp out of one leaves it open: that thread's driver
                                     * launches are then taken for its own and no longer counted) */
};
static SYNCSPY_TLS struct cupti_thread tl;

/* ---- notices --------------------------------------------------------------------------------- */

#define SHIM_ALONE                                                                \
    "recording through the CUDA runtime shim alone (syncs in libraries with a "   \
    "static runtime, such as cuBLAS, cuDNN and NCCL, and driver-API calls, such " \
    "as Triton's, are not seen)"

/* SYNCSPY_CUPTI=eager subscribes in every process of a wrapper chain (shells, launchers) as it
 * loads: why CUPTI is not there is said by the first process of the tree only, which leaves
 * this marker in the environment its children inherit (set while the process starts, in the
 * agent's constructor, before any thread of the program's could read the environment). 35
 * processes of one run said it 35 times (issue 22 item 10). */
#define TREE_SAID_VAR "SYNCSPY_CUPTI_SAID"
static bool tree_said; /* an ancestor said it */

/* A failure that is not to be said (a start that the first CUDA call tries again, or a tree
 * that said it already): debug output only. */
static bool quiet;

static void notice_once(_Atomic bool *said, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void notice_once(_Atomic bool *said, const char *fmt, ...)
{
    if (quiet ? atomic_load(said) : atomic_exchange(said, true))
        return;
    char buf[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (quiet)
        dbg(1, "%s", buf);
    else
        agent_log("%s", buf);
}

static _Atomic bool said_unavailable, said_aside;

/* CUPTI's name for a result, from the toolkit's cupti_result.h (generated at build time). Never
 * cuptiGetResultString: it is where CUDA 13.2's libcupti recurses when it cannot start its
 * driver, after an error code it returned cleanly. */
static const struct {
    CUptiResult code;
    const char *name;
} result_names[] = {
#include "cupti_result_names.inc"
};

static const char *result_text(CUptiResult r)
{
    for (size_t i = 0; i < sizeof result_names / sizeof result_names[0]; i++)
        if (result_names[i].code == r)
            return result_names[i].name;
    return "an unknown CUPTI result";
}

/* ---- what a pointer is, as the driver says ----------------------------------------------------- */

/* Unknown host memory is pageable (cuPointerGetAttribute says CUDA_ERROR_INVALID_VALUE). */
static enum mem_kind driver_memory(const void *p)
{
    CUresult (*f)(void *, CUpointer_attribute, CUdeviceptr) =
        (__typeof__(f))real_cached(REAL_cuPointerGetAttribute); /* resolved at subscribe */
    if (!f || !p)
        return MEM_UNKNOWN;
    unsigned int managed = 0, type = 0;
    CUresult r = f(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_SUCCESS && managed)
        return MEM_MANAGED;
    r = f(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_ERROR_INVALID_VALUE)
        return MEM_PAGEABLE;
    if (r != CUDA_SUCCESS)
        return MEM_UNKNOWN;
    return type == CU_MEMORYTYPE_HOST ? MEM_PINNED : MEM_DEVICE;
}

/* The API id of a callback's function: the shim's own id when it is one of its names (a
 * statically linked cudaMemcpy is still cudaMemcpy), else api_intern's. Cached per cbid. */
static _Atomic uint32_t driver_api_ids[CUPTI_DRIVER_TRACE_CBID_SIZE]; /* id + 1, 0: not yet */
static _Atomic uint32_t runtime_api_ids[CUPTI_RUNTIME_TRACE_CBID_SIZE];

static uint32_t api_for(uint32_t domain, uint32_t cbid, const char *function_name)
{
    _Atomic uint32_t *slot = NULL;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
        slot = &driver_api_ids[cbid];
    else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
        slot = &runtime_api_ids[cbid];
    uint32_t cached = slot ? atomic_load_explicit(slot, memory_order_relaxed) : 0;
    if (cached)
        return cached - 1;
    char name[64];
    cupti_api_name(domain, function_name, name, sizeof name);
    uint32_t id = API_COUNT;
    for (uint32_t i = 0; i < API_COUNT; i++)
        if (!strcmp(api_name(i), name)) {
            id = i;
            break;
        }
    if (id == API_COUNT)
        id = api_intern(name);
    if (slot)
        atomic_store_explicit(slot, id + 1, memory_order_relaxed);
    return id;
}

/* ---- the callbacks --------------------------------------------------------------------------- */

static void on_api_enter(uint32_t domain, uint32_t cbid, const CUpti_CallbackData *d)
{
    unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    /* The shim records this call (or the agent made it), or a call this thread's callbacks
     * record is open (this is the driver call inside it, from deeper down): not ours to count
     * again. */
    if (agent_thread_busy() || (tl.open && tl.gen == gen && here < tl.enter_frame))
        return;
    if (!atomic_load_explicit(&active, memory_order_relaxed))
        return;
    struct sync_call c = {.api = api_for(domain, cbid, d->functionName)};
    tl.is_sync = sync_rules_cupti(domain, cbid, d->functionParams, driver_memory, &c);
    tl.call = c;
    tl.domain = domain;
    tl.cbid = cbid;
    tl.corr = d->correlationId;
    tl.gen = gen;
    tl.enter_frame = here;
    tl.open = true;
    tl.call.start_ns = agent_now_ns(); /* after classifying: only the call itself is timed */
}

static void note_exit(uint32_t domain, uint32_t corr, uint64_t now)
{
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        tl.last_runtime_corr = corr;
    else
        tl.last_driver_corr = corr;
    tl.last_exit_ns = now;
}

static void on_api_exit(uint32_t domain, uint32_t cbid, const CUpti_CallbackData *d)
{
    bool ours = tl.open && tl.domain == domain && tl.cbid == cbid && tl.corr == d->correlationId &&
                tl.gen == atomic_load_explicit(&generation, memory_order_relaxed);
    bool gpu = atomic_load_explicit(&agent_gpu_tracking, memory_order_relaxed);
    if (!ours) {
        if (gpu) /* a call the shim records (or a nested one): its ids, for the GPU join */
            note_exit(domain, d->correlationId, agent_now_ns());
        return;
    }
    uint64_t end = agent_now_ns();
    tl.open = false;
    if (gpu)
        note_exit(domain, d->correlationId, end);
    /* A call that failed (its CUresult / cudaError_t, both 0 on success) did not wait for the
     * device: not a sync, as in the shim. */
    if (!tl.is_sync || (d->functionReturnValue && *(const int *)d->functionReturnValue != 0))
        return;
    tl.call.end_ns = end;
    tl.call.via_cupti = true; /* frames start at the caller of the CUDA API */
    struct agent_call k;
    if (!agent_enter(&k))
        return;
    if (gpu)
        cupti_take_correlation(&tl.call);
    agent_sync(&tl.call);
    agent_leave(&k);
}

/* ---- launches through the driver API ---------------------------------------------------------- */

/* Launches the shim cannot see: the driver's (Triton's cuLaunchKernelEx, found with dlsym;
 * Inductor's static launcher, torch's driver table from cuGetProcAddress; cuBLAS and cuDNN with
 * their static runtime) and graph launches. A driver launch made inside a runtime launch (the
 * runtime launches through the driver: CUPTI reports the nested call) is the runtime launch's,
 * counted by the shim: the shim's wrapper marks its launch (entry_launch_frame), so the
 * runtime-domain callbacks of kernel launches are not enabled. A runtime launch the shim does not
 * see (a static runtime's) is counted by the driver launch inside it. Graph launches are counted
 * at the runtime's call, which brackets the driver's inside. */
enum launch_role { LAUNCH_NONE, LAUNCH_RUNTIME_GRAPH, LAUNCH_DRIVER };

static const struct {
    uint32_t domain, cbid;
    enum launch_role role;
} launch_cbids[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
     LAUNCH_RUNTIME_GRAPH},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
     LAUNCH_RUNTIME_GRAPH},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, LAUNCH_DRIVER},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, LAUNCH_DRIVER},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, LAUNCH_DRIVER},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, LAUNCH_DRIVER},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, LAUNCH_DRIVER},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
     LAUNCH_DRIVER},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, LAUNCH_DRIVER},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, LAUNCH_DRIVER},
};

/* launch_cbids by callback id, one table per domain (filled once at subscribing): a callback's
 * role is one load, not a search, on every call CUPTI hands the agent. */
static uint8_t driver_roles[CUPTI_DRIVER_TRACE_CBID_SIZE],
    runtime_roles[CUPTI_RUNTIME_TRACE_CBID_SIZE];

static void fill_launch_roles(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(launch_cbids); i++) {
        uint32_t id = launch_cbids[i].cbid;
        if (launch_cbids[i].domain == CUPTI_CB_DOMAIN_DRIVER_API &&
            id < CUPTI_DRIVER_TRACE_CBID_SIZE)
            driver_roles[id] = (uint8_t)launch_cbids[i].role;
        else if (launch_cbids[i].domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
                 id < CUPTI_RUNTIME_TRACE_CBID_SIZE)
            runtime_roles[id] = (uint8_t)launch_cbids[i].role;
    }
}

static enum launch_role launch_role(uint32_t domain, uint32_t cbid)
{
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
        return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? (enum launch_role)driver_roles[cbid]
                                                   : LAUNCH_NONE;
    return cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? (enum launch_role)runtime_roles[cbid]
                                                : LAUNCH_NONE;
}

/* The kernel (or graph) and stream of a driver launch, for SYNCSPY_LAUNCHES=trace. */
static void driver_launch_target(uint32_t cbid, const void *params, const void **func,
                                 uintptr_t *stream)
{
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
        cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
        const cuLaunchKernelEx_params *p = params;
        *func = p->f;
        *stream = p->config ? (uintptr_t)p->config->hStream : 0;
    } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
               cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) {
        const cuGraphLaunch_params *p = params;
        *func = p->hGraph; /* the executable graph */
        *stream = (uintptr_t)p->hStream;
    } else { /* cuLaunchKernel and cuLaunchCooperativeKernel begin alike */
        const cuLaunchKernel_params *p = params;
        *func = p->f;
        *stream = (uintptr_t)p->hStream;
    }
}

static void count_launch(uint32_t domain, uint32_t cbid, const CUpti_CallbackData *d)
{
    if (agent_thread_busy() || !atomic_load_explicit(&active, memory_order_relaxed))
        return;
    agent_count_launch();
    if (atomic_load_explicit(&agent_launch_tracing, memory_order_relaxed)) {
        const void *func = NULL;
        uintptr_t stream = 0;
        if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
            driver_launch_target(cbid, d->functionParams, &func, &stream);
        agent_trace_launch(api_for(domain, cbid, d->functionName), func, stream);
    }
}

/* A runtime launch of the shim's runs below this callback (entry/cupti.h entry_launch_frame). */
static inline bool inside_interposed_launch(void)
{
    uintptr_t f = entry_launch_frame;
    return f && (uintptr_t)__builtin_frame_address(0) < f;
}

static void on_launch(enum launch_role role, uint32_t domain, uint32_t cbid,
                      const CUpti_CallbackData *d)
{
    bool enter = d->callbackSite == CUPTI_API_ENTER;
    switch (role) {
    case LAUNCH_RUNTIME_GRAPH:
        if (enter && tl.runtime_launches_open == 0)
            count_launch(domain, cbid, d);
        /* its driver launch inside is its own: */
        if (enter)
            tl.runtime_launches_open++;
        else if (tl.runtime_launches_open > 0)
            tl.runtime_launches_open--;
        break;
    case LAUNCH_DRIVER:
        if (enter && tl.runtime_launches_open == 0 && !inside_interposed_launch())
            count_launch(domain, cbid, d);
        break;
    case LAUNCH_NONE: break;
    }
}

static void enable_launches(void)
{
    fill_launch_roles();
    /* before the driver's launch callbacks come: the shim's launches mark themselves first (a
     * launch already past its check on another thread may still be counted twice, once) */
    agent_launch_marking_on();
    enable_callback_fn enable = CUPTI_FN(enable_callback_fn, cuptiEnableCallback);
    size_t failed = 0;
    for (size_t i = 0; i < ARRAY_SIZE(launch_cbids); i++)
        failed += enable(1, subscriber, (CUpti_CallbackDomain)launch_cbids[i].domain,
                         launch_cbids[i].cbid) != CUPTI_SUCCESS;
    if (failed)
        dbg(1, "CUPTI: %zu launch callbacks could not be enabled", failed);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata)
{
    (void)userdata;
    if ((domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) || !cbdata)
        return;
    const CUpti_CallbackData *d = cbdata;
    int saved = errno;
    enum launch_role role = launch_role(domain, cbid);
    if (role != LAUNCH_NONE)
        on_launch(role, domain, cbid, d);
    else if (d->callbackSite == CUPTI_API_ENTER)
        on_api_enter(domain, cbid, d);
    else
        on_api_exit(domain, cbid, d);
    errno = saved;
}

/* ---- subscribing ----------------------------------------------------------------------------- */

static void enable_sync_family(void)
{
    static const uint32_t domains[] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API};
    enable_callback_fn enable = CUPTI_FN(enable_callback_fn, cuptiEnableCallback);
    size_t failed = 0;
    for (size_t k = 0; k < 2; k++) {
        const uint32_t *ids;
        size_t n = sync_rules_cupti_cbids(domains[k], &ids);
        for (size_t i = 0; i < n; i++)
            failed +=
                enable(1, subscriber, (CUpti_CallbackDomain)domains[k], ids[i]) != CUPTI_SUCCESS;
    }
    if (failed)
        dbg(1, "CUPTI: %zu callbacks could not be enabled", failed);
}

static bool subscribe(void)
{
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = "";
    CUpti_SubscriberParams params = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                     .subscriberName = "syncspy",
                                     .oldSubscriberName = old,
                                     .oldSubscriberSize = sizeof old};
    subscribe_v2_fn v2 = CUPTI_FN(subscribe_v2_fn, cuptiSubscribe_v2);
    CUptiResult r = v2 ? v2(&subscriber, on_callback, NULL, &params)
                       : CUPTI_FN(subscribe_fn, cuptiSubscribe)(&subscriber, on_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        notice_once(&said_unavailable, "no CUPTI (in use by another tool: %s): " SHIM_ALONE,
                    old[0] ? old : "a profiler, Nsight or a debugger");
        return false;
    }
    if (r != CUPTI_SUCCESS) {
        notice_once(&said_unavailable, "no CUPTI (%s refused a subscriber: %s): " SHIM_ALONE,
                    lib_path, result_text(r));
        return false;
    }
    real_resolve(REAL_cuPointerGetAttribute); /* the driver in use, for the copy rules */
    /* the skipped frames of a CUPTI-delivered call: the CUDA objects it came through */
    static const char *const objects[] = {"libcupti.so", "libcuda.so", "libcudart.so"};
    agent_skip_objects(objects, 3);
    enable_sync_family();
    enable_launches();
    atomic_store(&active, true);
    dbg(1, "CUPTI: %s subscribed (driver and runtime syncs)", lib_path);
    return true;
}

/* ---- the driver gate ---------------------------------------------------------------------- */

/* Whether the loaded libcupti may be subscribed now (entry/cuda_driver.h says why not always):
 * the simulator's CUPTI needs no driver; NVIDIA's needs one it can start: the program's, once
 * initialized with a device, or before that one whose kernel driver reports a GPU. A driver
 * older than that CUPTI's CUDA is never usable (why says so). */
enum gate { GATE_OPEN, GATE_WAIT, GATE_NEVER };

static enum gate driver_gate(char *why, size_t len)
{
    if (real_cupti_symbol("simcupti_runs_without_driver"))
        return GATE_OPEN;
    int min = cuda_cupti_min_driver(lib_path);
    if (cuda_driver_devices() > 0) {
        int v = cuda_driver_version();
        if (v >= min)
            return GATE_OPEN;
        snprintf(why, len, "%s is for CUDA %d; the driver is for CUDA %d.%d", lib_path, min / 1000,
                 v / 1000, v % 1000 / 10);
        return GATE_NEVER;
    }
    return min > 0 && cuda_driver_installed(min) ? GATE_OPEN : GATE_WAIT;
}

/* CUPTI is loaded and waits for the program's driver: cupti_retry subscribes after a CUDA call
 * that succeeded (the runtime initialized its driver by then). */
_Atomic bool cupti_waiting_for_driver;

enum start { START_ON, START_WAITING, START_NONE };

/* Subscribes if the gate is open; says why not when it never will. Under state_lock, CUPTI
 * loaded. */
static enum start subscribe_if_usable(void)
{
    char why[PATH_MAX + 160];
    switch (driver_gate(why, sizeof why)) {
    case GATE_OPEN:
        atomic_store(&cupti_waiting_for_driver, false);
        return subscribe() ? START_ON : START_NONE;
    case GATE_NEVER:
        atomic_store(&cupti_waiting_for_driver, false);
        notice_once(&said_unavailable, "no CUPTI (%s): " SHIM_ALONE, why);
        return START_NONE;
    case GATE_WAIT: break;
    }
    if (!atomic_exchange(&cupti_waiting_for_driver, true))
        dbg(1, "CUPTI: %s loaded; subscribed once the program's CUDA driver is initialized",
            lib_path);
    return START_WAITING;
}

/* Loads and subscribes (or waits for the driver); START_NONE (said, unless quiet) when CUPTI is
 * not there. Under state_lock. */
static enum start start_locked(const struct config *cfg)
{
    tl.in_cupti =
        true; /* loading and subscribing: a cuptiSubscribe meanwhile is not another tool's */
    enum start st = START_NONE;
    wanted = cfg->cupti != CUPTI_OFF;
    if (cfg->cupti == CUPTI_OFF) {
        notice_once(&said_unavailable, "no CUPTI (SYNCSPY_CUPTI=off): " SHIM_ALONE);
    } else {
        char why[PATH_MAX + 160];
        if (cupti_load(cfg, lib_path, sizeof lib_path, why, sizeof why))
            st = subscribe_if_usable();
        else
            notice_once(&said_unavailable, "no CUPTI (%s): " SHIM_ALONE, why);
    }
    tl.in_cupti = false;
    return st;
}

/* SYNCSPY_GPU=1's collector starts with the subscription, or hears there is none. */
static void tell_agent(enum start st)
{
    if (st != START_WAITING)
        agent_cupti_ready(st == START_ON ? real_cupti_symbol : NULL);
}

void cupti_start(const struct config *cfg)
{
    if (atomic_exchange(&started, true)) {
        if (atomic_exchange(&forked_midway, false)) /* this process's first CUDA call */
            notice_once(&said_unavailable,
                        "no CUPTI in this process (forked while another thread was setting CUPTI "
                        "up or handing it over): " SHIM_ALONE);
        return;
    }
    pthread_mutex_lock(&state_lock);
    quiet = cfg->cupti == CUPTI_EAGER && tree_said;
    tell_agent(start_locked(cfg));
    quiet = false;
    pthread_mutex_unlock(&state_lock);
}

void cupti_start_eager(const struct config *cfg)
{
    const char *v = getenv(TREE_SAID_VAR);
    tree_said = v && *v;
    cupti_start(cfg);
    if (!tree_said && atomic_load(&said_unavailable) && cfg->cupti == CUPTI_EAGER)
        setenv(TREE_SAID_VAR, "1", 1);
}

void cupti_start_early(const struct config *cfg, const char *cudart)
{
    if (cfg->cupti == CUPTI_OFF || atomic_load(&started))
        return;
    pthread_mutex_lock(&state_lock);
    if (!atomic_load(&started)) {
        quiet = true;
        cupti_load_expect(cudart);
        enum start st = start_locked(cfg);
        if (st != START_NONE) { /* else the first CUDA call tries again, and says why not */
            atomic_store(&started, true);
            tell_agent(st);
            dbg(1,
                "CUPTI: %s as a libcudart is loaded with dlopen (its calls may never reach the "
                "shim)",
                st == START_ON ? "subscribed" : "loaded");
        }
        quiet = false;
    }
    pthread_mutex_unlock(&state_lock);
}

pthread_mutex_t *cupti_state_lock(void)
{
    return &state_lock;
}

/* The child has its own subscription state: the parent's (subscribed or not, waiting for the
 * driver or not, stepped aside or not) as fork() copied it, with CUPTI's own state, which lives
 * in the same memory (the simulator's does; NVIDIA's CUPTI and driver do not support a child
 * that uses CUDA after its parent initialized it). The callbacks CUPTI makes in the child are the
 * child's calls and record into the child's own tables (reset by the agent's fork handlers):
 * nothing is subscribed again (that would be a second subscriber) and nothing of the parent's is
 * counted. Where another thread held the lock, it was inside CUPTI's loading, subscription or
 * hand-over: how far it got, and CUPTI's own locks, are unknown, so the child never calls into
 * libcupti and ignores its callbacks (the shim records alone; said at its first CUDA call). */
void cupti_atfork_child(bool lock_taken)
{
    quiet = false;
    if (lock_taken || !wanted)
        return;
    atomic_store(&started, true); /* also where it was a first try (cupti_start_early) */
    atomic_store(&active, false);
    atomic_fetch_add(&generation, 1); /* a call open on the forking thread is void */
    atomic_store(&cupti_waiting_for_driver, false);
    atomic_store(&forked_midway, true);
}

/* On the agent's own stack (agent_run_entry_work). */
static void retry_work(void)
{
    if (pthread_mutex_trylock(&state_lock) != 0)
        return; /* another thread starts or retries: it decides */
    if (atomic_load(&cupti_waiting_for_driver)) {
        tl.in_cupti = true;
        enum start st = subscribe_if_usable();
        tl.in_cupti = false;
        tell_agent(st);
    }
    pthread_mutex_unlock(&state_lock);
}

void cupti_retry(void)
{
    if (!atomic_load_explicit(&cupti_waiting_for_driver, memory_order_relaxed))
        return;
    int saved = errno;
    agent_run_entry_work(retry_work);
    errno = saved;
}

void cupti_take_correlation(struct sync_call *call)
{
    call->runtime_corr = call->driver_corr = 0;
    if (tl.last_exit_ns >= call->start_ns) { /* the calls that returned inside this one */
        call->runtime_corr = tl.last_runtime_corr;
        call->driver_corr = tl.last_driver_corr;
    }
    tl.last_runtime_corr = tl.last_driver_corr = 0;
    tl.last_exit_ns = 0;
}

/* ---- another CUPTI client ---------------------------------------------------------------------- */

/* Another client wants CUPTI: syncspy's activity collection and subscription go first (CUPTI 13
 * takes one subscriber), once; the runtime entry points carry on. */
static void step_aside(const char *what, bool activity_only)
{
    if (!atomic_load(&started))
        return;
    pthread_mutex_lock(&state_lock);
    tl.in_cupti = true;
    agent_cupti_leaving(what); /* SYNCSPY_GPU=1's records so far are delivered first */
    if (!activity_only && atomic_exchange(&active, false)) {
        atomic_fetch_add(&generation, 1);
        CUPTI_FN(unsubscribe_fn, cuptiUnsubscribe)(subscriber);
        notice_once(&said_aside, "another tool subscribes to CUPTI (torch.profiler, Nsight, ...): "
                                 "syncspy hands CUPTI over to it and from now on is " SHIM_ALONE);
    }
    tl.in_cupti = false;
    pthread_mutex_unlock(&state_lock);
}

SYNCSPY_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc callback,
                                          void *userdata)
{
    const void *caller = __builtin_return_address(0);
    if (!tl.in_cupti)
        step_aside("cuptiSubscribe", false);
    __typeof__(&cuptiSubscribe) real =
        (__typeof__(&cuptiSubscribe))real_next_for_caller("cuptiSubscribe", caller);
    return real ? real(sub, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

SYNCSPY_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub,
                                             CUpti_CallbackFunc callback, void *userdata,
                                             CUpti_SubscriberParams *params)
{
    const void *caller = __builtin_return_address(0);
    if (!tl.in_cupti)
        step_aside("cuptiSubscribe_v2", false);
    __typeof__(&cuptiSubscribe_v2) real =
        (__typeof__(&cuptiSubscribe_v2))real_next_for_caller("cuptiSubscribe_v2", caller);
    return real ? real(sub, callback, userdata, params) : CUPTI_ERROR_NOT_INITIALIZED;
}

SYNCSPY_EXPORT CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete)
{
    const void *caller = __builtin_return_address(0);
    if (!tl.in_cupti)
        step_aside("cuptiActivityRegisterCallbacks", true);
    __typeof__(&cuptiActivityRegisterCallbacks) real =
        (__typeof__(&cuptiActivityRegisterCallbacks))real_next_for_caller(
            "cuptiActivityRegisterCallbacks", caller);
    return real ? real(request, complete) : CUPTI_ERROR_NOT_INITIALIZED;
}

/* ---- names (pure) --------------------------------------------------------------------------- */

void cupti_api_name(uint32_t domain, const char *function_name, char *out, size_t len)
{
    if (len == 0)
        return;
    const char *name = function_name && *function_name ? function_name : "?";
    size_t n = strlen(name);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        /* "_v" and four or more digits at the end: CUPTI's version suffix, not the name */
        size_t d = n;
        while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
            d--;
        if (n - d >= 4 && d >= 3 && name[d - 1] == 'v' && name[d - 2] == '_')
            n = d - 2;
    }
    if (n >= len)
        n = len - 1;
    memcpy(out, name, n);
    out[n] = 0;
}
