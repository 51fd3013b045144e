/* collectors/cupti.c: CUPTI, for the syncs the shim cannot see (see cupti.h). Loads libcupti
 * at the first CUDA call, subscribes to the driver and runtime domains with only the sync
 * family's callbacks enabled, times each such call from its ENTER to its EXIT callback and
 * records it through agent_enter/agent_sync/agent_leave, with frames starting at the caller of
 * the CUDA API. Also exports cuptiSubscribe/cuptiSubscribe_v2/cuptiActivityRegisterCallbacks:
 * CUPTI 13 takes one subscriber, so when another tool (torch.profiler's Kineto, Nsight) asks
 * later, syncspy steps aside first and forwards the call; that tool never sees an error caused
 * by syncspy. The callbacks run on the application's thread inside its CUDA call: no malloc,
 * no locks, no stdio there (classification may ask the driver about a pointer). */
#include "collectors/cupti.h"

#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/apis.h"
#include "common/compiler.h"
#include "common/log.h"
#include "collectors/native_stack.h"

/* ---- the loaded library ---------------------------------------------------------------------- */

struct cupti_lib {
    void *handle;
    char path[PATH_MAX];
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                CUpti_SubscriberParams *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*version)(uint32_t *);
    struct cupti_gpu_fns gpu;
};

static struct cupti_lib lib;
static CUpti_SubscriberHandle subscriber;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER; /* subscribe / step aside */
static _Atomic bool active;        /* subscribed and recording */
static _Atomic unsigned generation; /* bumped when syncspy steps aside: open calls are void */
static _Atomic bool started;

/* cuPointerGetAttribute of the loaded driver, for classifying copies. */
static CUresult (*_Atomic pointer_attribute)(void *, CUpointer_attribute, CUdeviceptr);

/* ---- per thread -------------------------------------------------------------------------------- */

/* The one CUDA call this thread's callbacks are recording (from its ENTER to its EXIT). While it
 * is open, nested callbacks (the driver calls a runtime call makes) are ignored. syncspy's own
 * flag, not the agent's guard: if CUPTI stops calling back mid-call (syncspy stepped aside), a
 * stale flag must not silence the shim on this thread. */
struct cupti_thread {
    bool open, is_sync;
    bool in_cupti;             /* inside syncspy's own call into libcupti */
    uint32_t domain, cbid, corr;
    unsigned gen;
    struct sync_call call;
    /* the last runtime and driver calls that returned on this thread (SYNCSPY_GPU=1) */
    uint32_t last_runtime_corr, last_driver_corr;
    uint64_t last_exit_ns;
};
static SYNCSPY_TLS struct cupti_thread tl;

/* ---- notices --------------------------------------------------------------------------------- */

#define SHIM_ALONE "recording through the CUDA runtime shim alone (syncs in libraries with a " \
                   "static runtime, such as cuBLAS, cuDNN and NCCL, and driver-API calls, such " \
                   "as Triton's, are not seen)"

static void notice_once(_Atomic bool *said, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notice_once(_Atomic bool *said, const char *fmt, ...)
{
    if (atomic_exchange(said, true))
        return;
    char buf[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    agent_log("%s", buf);
}

static _Atomic bool said_unavailable, said_aside, said_gpu;

static const char *result_text(CUptiResult r)
{
    const char *s = NULL;
    if (lib.result_string && lib.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

/* ---- finding libcupti ------------------------------------------------------------------------ */

#define LOADED_MAX 512
#define RELATIVE_MAX 32

struct loaded_list {
    const char *paths[LOADED_MAX]; /* absolute: the loader's own strings, or resolved ones */
    size_t n;
    uintptr_t relative_at[RELATIVE_MAX]; /* objects the loader names relatively: an address */
    size_t nrelative;
    char resolved[RELATIVE_MAX][PATH_MAX];
};

static int list_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct loaded_list *l = data;
    const char *name = info->dlpi_name;
    if (!name || !name[0] || l->n >= LOADED_MAX)
        return 0;
    if (name[0] == '/') {
        l->paths[l->n++] = name;
        return 0;
    }
    /* found through a relative LD_LIBRARY_PATH entry: the kernel knows where it really is */
    for (int i = 0; i < info->dlpi_phnum && l->nrelative < RELATIVE_MAX; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            l->relative_at[l->nrelative++] = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            break;
        }
    return 0;
}

/* The absolute path of the file mapped at addr, from /proc/self/maps (read with a fixed buffer:
 * no stdio, no malloc). False when none. */
static bool mapped_path(uintptr_t addr, char *out, size_t len)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    static char buf[PATH_MAX + 256];
    size_t have = 0;
    bool found = false;
    for (;;) {
        ssize_t k = read(fd, buf + have, sizeof buf - 1 - have);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        have += (size_t)k;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            unsigned long lo, hi;
            int at = 0;
            if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) == 2 && at > 0 &&
                addr >= lo && addr < hi && line[at] == '/') {
                found = snprintf(out, len, "%s", line + at) < (int)len;
                break;
            }
            line = nl + 1;
        }
        if (found)
            break;
        have = strlen(line); /* the unfinished line moves to the front */
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            have = 0; /* longer than any path: drop it */
    }
    close(fd);
    return found;
}

static void resolve_relative(struct loaded_list *l)
{
    for (size_t i = 0; i < l->nrelative && l->n < LOADED_MAX; i++)
        if (mapped_path(l->relative_at[i], l->resolved[i], sizeof l->resolved[i]))
            l->paths[l->n++] = l->resolved[i];
}

/* libc's dlclose, not the agent's (agent/modules.c notes the loaded objects first: not needed
 * for the handles here, which only ever drop a reference taken a moment before). */
static int close_handle(void *h)
{
    static int (*_Atomic real)(void *);
    int (*f)(void *) = atomic_load_explicit(&real, memory_order_relaxed);
    if (!f) {
        f = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
        atomic_store_explicit(&real, f, memory_order_relaxed);
    }
    return f ? f(h) : 0;
}

static void *sym(const char *name)
{
    void *p = dlsym(lib.handle, name);
    return p && !native_stack_is_agent_pc((uintptr_t)p) ? p : NULL; /* never our own exports */
}

static bool load_one(const char *path, char *why, size_t whylen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, whylen, "cannot load libcupti: %s", e ? e : path);
        return false;
    }
    lib.handle = h;
    lib.subscribe = (__typeof__(lib.subscribe))sym("cuptiSubscribe");
    lib.subscribe_v2 = (__typeof__(lib.subscribe_v2))sym("cuptiSubscribe_v2");
    lib.unsubscribe = (__typeof__(lib.unsubscribe))sym("cuptiUnsubscribe");
    lib.enable_callback = (__typeof__(lib.enable_callback))sym("cuptiEnableCallback");
    lib.result_string = (__typeof__(lib.result_string))sym("cuptiGetResultString");
    lib.version = (__typeof__(lib.version))sym("cuptiGetVersion");
    lib.gpu.enable = (__typeof__(lib.gpu.enable))sym("cuptiActivityEnable");
    lib.gpu.disable = (__typeof__(lib.gpu.disable))sym("cuptiActivityDisable");
    lib.gpu.register_callbacks = (__typeof__(lib.gpu.register_callbacks))sym("cuptiActivityRegisterCallbacks");
    lib.gpu.flush_all = (__typeof__(lib.gpu.flush_all))sym("cuptiActivityFlushAll");
    lib.gpu.next_record = (__typeof__(lib.gpu.next_record))sym("cuptiActivityGetNextRecord");
    lib.gpu.timestamp = (__typeof__(lib.gpu.timestamp))sym("cuptiGetTimestamp");
    lib.gpu.dropped = (__typeof__(lib.gpu.dropped))sym("cuptiActivityGetNumDroppedRecords");
    if (!lib.subscribe || !lib.unsubscribe || !lib.enable_callback) {
        snprintf(why, whylen, "%s is not a CUPTI library (no cuptiSubscribe)", path);
        close_handle(h);
        memset(&lib, 0, sizeof lib);
        return false;
    }
    snprintf(lib.path, sizeof lib.path, "%s", path);
    return true;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* SYNCSPY_CUPTI=auto: the candidates of cupti_search_paths, first loadable one wins. */
static bool load_auto(char *why, size_t whylen)
{
    static struct loaded_list loaded; /* once, under state_lock: off the recording path's stack */
    static char candidates[CUPTI_CANDIDATES_MAX][PATH_MAX];
    loaded.n = loaded.nrelative = 0;
    dl_iterate_phdr(list_loaded, &loaded);
    resolve_relative(&loaded);
    const char *home = getenv("CUDA_HOME");
    struct cupti_search in = {loaded.paths, loaded.n, home && *home ? home : NULL};
    size_t n = cupti_search_paths(&in, candidates, CUPTI_CANDIDATES_MAX);
    snprintf(why, whylen, "no libcupti found (beside libcudart, in a CUPTI wheel, under CUDA_HOME "
             "or on the loader's path)");
    for (size_t i = 0; i < n; i++) {
        bool bare = candidates[i][0] != '/';
        if (!bare && !is_file(candidates[i]))
            continue;
        char err[PATH_MAX + 128];
        if (load_one(candidates[i], err, sizeof err))
            return true;
        if (!bare) /* an existing file that does not load is worth naming */
            snprintf(why, whylen, "%s", err);
        dbg(2, "CUPTI: %s", err);
    }
    return false;
}

/* ---- classification helpers ------------------------------------------------------------------ */

static void resolve_driver(void)
{
    if (atomic_load_explicit(&pointer_attribute, memory_order_relaxed))
        return;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD); /* only the copy in use */
    if (!h)
        return;
    void *f = dlsym(h, "cuPointerGetAttribute");
    close_handle(h);
    if (f && !native_stack_is_agent_pc((uintptr_t)f))
        atomic_store(&pointer_attribute, (__typeof__(pointer_attribute))f);
}

/* What the driver says p is: unknown host memory is pageable (CUDA_ERROR_INVALID_VALUE). */
static enum cupti_mem memory_of(const void *p)
{
    CUresult (*f)(void *, CUpointer_attribute, CUdeviceptr) =
        atomic_load_explicit(&pointer_attribute, memory_order_relaxed);
    if (!f || !p)
        return CUPTI_MEM_UNKNOWN;
    unsigned int managed = 0, type = 0;
    CUresult r = f(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_SUCCESS && managed)
        return CUPTI_MEM_MANAGED;
    r = f(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_ERROR_INVALID_VALUE)
        return CUPTI_MEM_PAGEABLE;
    if (r != CUDA_SUCCESS)
        return CUPTI_MEM_UNKNOWN;
    return type == CU_MEMORYTYPE_HOST ? CUPTI_MEM_PINNED : CUPTI_MEM_DEVICE;
}

/* The API id of a callback's function: the shim's own id when it is one of its names (a
 * statically linked cudaMemcpy is still cudaMemcpy), else api_intern's. Cached per cbid. */
static _Atomic uint32_t driver_api_ids[CUPTI_DRIVER_TRACE_CBID_SIZE];  /* id + 1, 0: not yet */
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
    /* The shim records this call (or the agent made it), or a call this thread's callbacks
     * record is open (this is the driver call inside it): not ours to count again. */
    if (agent_thread_busy() || (tl.open && tl.gen == gen))
        return;
    if (!atomic_load_explicit(&active, memory_order_relaxed))
        return;
    struct sync_call c = {.api = api_for(domain, cbid, d->functionName)};
    tl.is_sync = cupti_classify(domain, cbid, d->functionParams, memory_of, &c);
    tl.call = c;
    tl.domain = domain;
    tl.cbid = cbid;
    tl.corr = d->correlationId;
    tl.gen = gen;
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
    bool gpu = atomic_load_explicit(&cupti_gpu_tracking, memory_order_relaxed);
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
    if (!agent_enter())
        return;
    native_stack_skip_cuda = true; /* frames start at the caller of the CUDA API */
    agent_sync(&tl.call);
    native_stack_skip_cuda = false;
    agent_leave();
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    if ((domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) || !cbdata)
        return;
    const CUpti_CallbackData *d = cbdata;
    int saved = errno;
    if (d->callbackSite == CUPTI_API_ENTER)
        on_api_enter(domain, cbid, d);
    else
        on_api_exit(domain, cbid, d);
    errno = saved;
}

/* ---- subscribing ----------------------------------------------------------------------------- */

static void enable_sync_family(void)
{
    static const uint32_t domains[] = {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API};
    size_t failed = 0;
    for (size_t k = 0; k < 2; k++) {
        const uint32_t *ids;
        size_t n = cupti_sync_cbids(domains[k], &ids);
        for (size_t i = 0; i < n; i++)
            failed += lib.enable_callback(1, subscriber, (CUpti_CallbackDomain)domains[k], ids[i]) !=
                      CUPTI_SUCCESS;
    }
    if (failed)
        dbg(1, "CUPTI: %zu callbacks could not be enabled", failed);
}

/* The skipped frames of a CUPTI-delivered call: the CUDA objects it came through. */
static void set_skip_ranges(void)
{
    static const char *const objects[] = {"libcupti.so", "libcuda.so", "libcudart.so"};
    struct native_range r[NATIVE_SKIP_RANGES_MAX];
    int n = native_stack_object_ranges(objects, 3, r, NATIVE_SKIP_RANGES_MAX);
    native_stack_set_skip_ranges(r, n);
}

static void start_gpu(void)
{
    uint32_t v = 0;
    const char *why = NULL;
    if (!lib.version || lib.version(&v) != CUPTI_SUCCESS || v / 10000 != CUPTI_API_VERSION / 10000)
        why = "its activity records are read as CUDA 13's, and this libcupti is another release";
    else
        why = cupti_gpu_start(&lib.gpu);
    if (why)
        notice_once(&said_gpu, "SYNCSPY_GPU=1: no GPU idle times: %s", why);
}

static void subscribe(void)
{
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = "";
    CUpti_SubscriberParams params = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                     .subscriberName = "syncspy",
                                     .oldSubscriberName = old,
                                     .oldSubscriberSize = sizeof old};
    CUptiResult r = lib.subscribe_v2 ? lib.subscribe_v2(&subscriber, on_callback, NULL, &params)
                                     : lib.subscribe(&subscriber, on_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        notice_once(&said_unavailable, "no CUPTI (in use by another tool: %s): " SHIM_ALONE,
                    old[0] ? old : "a profiler, Nsight or a debugger");
        return;
    }
    if (r != CUPTI_SUCCESS) {
        notice_once(&said_unavailable, "no CUPTI (%s refused a subscriber: %s): " SHIM_ALONE, lib.path,
                    result_text(r));
        return;
    }
    resolve_driver();
    set_skip_ranges();
    enable_sync_family();
    atomic_store(&active, true);
    dbg(1, "CUPTI: %s subscribed (driver and runtime syncs)", lib.path);
}

void cupti_start(const struct config *cfg)
{
    if (atomic_exchange(&started, true))
        return;
    pthread_mutex_lock(&state_lock);
    tl.in_cupti = true; /* loading and subscribing: a cuptiSubscribe meanwhile is not another tool's */
    if (cfg->cupti == CUPTI_OFF) {
        notice_once(&said_unavailable, "no CUPTI (SYNCSPY_CUPTI=off): " SHIM_ALONE);
    } else {
        char why[PATH_MAX + 160];
        bool ok = cfg->cupti == CUPTI_PATH ? load_one(cfg->cupti_path, why, sizeof why)
                                           : load_auto(why, sizeof why);
        if (ok)
            subscribe();
        else
            notice_once(&said_unavailable, "no CUPTI (%s): " SHIM_ALONE, why);
    }
    if (cfg->gpu && atomic_load(&active))
        start_gpu();
    else if (cfg->gpu)
        notice_once(&said_gpu, "SYNCSPY_GPU=1 needs CUPTI: no GPU idle times");
    tl.in_cupti = false;
    pthread_mutex_unlock(&state_lock);
}

void cupti_finish(void)
{
    if (!atomic_load(&started))
        return;
    cupti_gpu_finish();
}

void cupti_gpu_note(uint32_t site_id, const struct sync_call *call)
{
    uint32_t runtime_corr = 0, driver_corr = 0;
    if (tl.last_exit_ns >= call->start_ns) { /* the calls that returned inside this one */
        runtime_corr = tl.last_runtime_corr;
        driver_corr = tl.last_driver_corr;
    }
    tl.last_runtime_corr = tl.last_driver_corr = 0;
    tl.last_exit_ns = 0;
    cupti_gpu_sync(site_id, call->end_ns, runtime_corr, driver_corr);
}

/* ---- another CUPTI client ---------------------------------------------------------------------- */

/* Another client wants CUPTI: syncspy's activity collection and subscription go first (CUPTI 13
 * takes one subscriber), once; the shim carries on. */
static void step_aside(const char *what, bool activity_only)
{
    if (!atomic_load(&started))
        return;
    pthread_mutex_lock(&state_lock);
    tl.in_cupti = true;
    if (atomic_load(&cupti_gpu_tracking)) {
        cupti_gpu_stop(); /* the records so far are delivered first */
        notice_once(&said_gpu, "another CUPTI client calls %s: no GPU idle times from now on", what);
    }
    if (!activity_only && atomic_exchange(&active, false)) {
        atomic_fetch_add(&generation, 1);
        lib.unsubscribe(subscriber);
        notice_once(&said_aside, "another tool subscribes to CUPTI (torch.profiler, Nsight, ...): "
                    "syncspy hands CUPTI over to it and from now on is " SHIM_ALONE);
    }
    tl.in_cupti = false;
    pthread_mutex_unlock(&state_lock);
}

/* The definition the caller would have reached without syncspy preloaded: its own object's
 * dependency tree first (a library that links libcupti), then the global scope after syncspy,
 * then the libcupti syncspy loaded. */
static void *next_definition(const char *name, const void *caller)
{
    Dl_info info;
    if (caller && dladdr(caller, &info) && info.dli_fname && info.dli_fname[0]) {
        void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            void *f = dlsym(h, name);
            close_handle(h);
            if (f && !native_stack_is_agent_pc((uintptr_t)f))
                return f;
        }
    }
    void *f = dlsym(RTLD_NEXT, name);
    if (f && !native_stack_is_agent_pc((uintptr_t)f))
        return f;
    return lib.handle ? sym(name) : NULL;
}

SYNCSPY_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc callback,
                                          void *userdata)
{
    const void *caller = __builtin_return_address(0);
    if (!tl.in_cupti)
        step_aside("cuptiSubscribe", false);
    __typeof__(&cuptiSubscribe) real = (__typeof__(&cuptiSubscribe))next_definition("cuptiSubscribe", caller);
    return real ? real(sub, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

SYNCSPY_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc callback,
                                             void *userdata, CUpti_SubscriberParams *params)
{
    const void *caller = __builtin_return_address(0);
    if (!tl.in_cupti)
        step_aside("cuptiSubscribe_v2", false);
    __typeof__(&cuptiSubscribe_v2) real =
        (__typeof__(&cuptiSubscribe_v2))next_definition("cuptiSubscribe_v2", caller);
    return real ? real(sub, callback, userdata, params) : CUPTI_ERROR_NOT_INITIALIZED;
}

SYNCSPY_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                          CUpti_BuffersCallbackCompleteFunc complete)
{
    const void *caller = __builtin_return_address(0);
    if (!tl.in_cupti)
        step_aside("cuptiActivityRegisterCallbacks", true);
    __typeof__(&cuptiActivityRegisterCallbacks) real = (__typeof__(&cuptiActivityRegisterCallbacks))
        next_definition("cuptiActivityRegisterCallbacks", caller);
    return real ? real(request, complete) : CUPTI_ERROR_NOT_INITIALIZED;
}
