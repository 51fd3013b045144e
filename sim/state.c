/* sim/state.c: the simulated runtime's configuration (SIMCUDA_* variables), its clock and its
 * one way of waiting (an absolute CLOCK_MONOTONIC sleep, never a busy wait), per-thread last
 * errors, per-entry-point call counters and debug output. It prints nothing unless
 * SIMCUDA_DEBUG is set: tests run the simulator inside processes whose output they check. */
#include "sim/sim_internal.h"
#include "sim/cupti_core.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Atomic uint64_t sim_default_kernel_ns = 1000;
_Atomic double sim_copy_bytes_per_ns = 10.0;
_Atomic double sim_device_bytes_per_ns = 2000.0;
int sim_debug_level;

static __thread cudaError_t last_error = cudaSuccess;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The linker collects every struct sim_counter of sim/cudart.c into this section. */
extern struct sim_counter __start_simcuda_counters[];
extern struct sim_counter __stop_simcuda_counters[];

/* Whole-string unsigned parse; false on anything else (sign, junk, overflow, empty). */
static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_positive_double(const char *s, double max, double *out)
{
    if (s == NULL || *s == '\0')
        return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v) || v <= 0.0 || v > max)
        return false;
    *out = v;
    return true;
}

static void read_environment(void)
{
    const char *dbg = getenv("SIMCUDA_DEBUG");
    uint64_t level;
    if (dbg != NULL && parse_u64(dbg, 9, &level))
        sim_debug_level = (int)level;

    const char *kns = getenv("SIMCUDA_KERNEL_NS");
    uint64_t ns;
    if (kns != NULL) {
        if (parse_u64(kns, 3600ull * 1000000000ull, &ns))
            atomic_store(&sim_default_kernel_ns, ns);
        else
            SIM_DBG(1, "SIMCUDA_KERNEL_NS='%s' is not a number of ns; using 1000", kns);
    }
    const char *gbps = getenv("SIMCUDA_COPY_GBPS");
    double rate;
    if (gbps != NULL) {
        /* 1 GB/s is 1 byte per ns. */
        if (parse_positive_double(gbps, 1e6, &rate))
            atomic_store(&sim_copy_bytes_per_ns, rate);
        else
            SIM_DBG(1, "SIMCUDA_COPY_GBPS='%s' is not a positive speed; using 10", gbps);
    }
    const char *dev = getenv("SIMCUDA_DEVICE_GBPS");
    if (dev != NULL) {
        if (parse_positive_double(dev, 1e6, &rate))
            atomic_store(&sim_device_bytes_per_ns, rate);
        else
            SIM_DBG(1, "SIMCUDA_DEVICE_GBPS='%s' is not a positive speed; using 2000", dev);
    }
    SIM_DBG(1, "simulated device up: kernel %llu ns, copies %.3f GB/s",
            (unsigned long long)atomic_load(&sim_default_kernel_ns),
            atomic_load(&sim_copy_bytes_per_ns));
}

void sim_init(void)
{
    pthread_once(&init_once, read_environment);
}

uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __thread unsigned long long thread_syncs;

unsigned long long sim_thread_sync_count(void)
{
    return thread_syncs;
}

void sim_wait_until(uint64_t deadline_ns)
{
    thread_syncs++;
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                          .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    /* clock_nanosleep returns the error number itself; an absolute deadline makes a restart
     * after a signal exact. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

long long sim_ns_left(uint64_t deadline_ns)
{
    uint64_t now = sim_now_ns();
    return deadline_ns > now ? (long long)(deadline_ns - now) : 0;
}

uint64_t sim_copy_ns(size_t bytes)
{
    double rate = atomic_load(&sim_copy_bytes_per_ns);
    return (uint64_t)((double)bytes / rate + 0.5);
}

void sim_enter_pure(struct sim_counter *counter)
{
    sim_init();
    atomic_fetch_add_explicit(&counter->calls, 1, memory_order_relaxed);
    SIM_DBG(2, "%s", counter->name);
}

static _Atomic bool driver_initialized;

void sim_driver_init(void)
{
    if (!atomic_load_explicit(&driver_initialized, memory_order_relaxed))
        atomic_store_explicit(&driver_initialized, true, memory_order_release);
}

bool sim_driver_is_initialized(void)
{
    return atomic_load_explicit(&driver_initialized, memory_order_acquire);
}

void sim_enter_query(struct sim_counter *counter)
{
    sim_enter_pure(counter);
    sim_driver_init();
}

/* The device's primary context: made active by the first runtime call that needs one (every
 * entry point but the queries of ENTER_QUERY), as CUDA 12+ does, or by the driver's
 * cuDevicePrimaryCtxRetain; cuDevicePrimaryCtxGetState reports it. */
static _Atomic bool ctx_active;

void sim_ctx_activate(void)
{
    bool inactive = false;
    if (!atomic_load_explicit(&ctx_active, memory_order_relaxed) &&
        atomic_compare_exchange_strong(&ctx_active, &inactive, true))
        sim_cupti_context_created(); /* CUPTI's resource callback, once */
}

bool sim_ctx_is_active(void)
{
    return atomic_load_explicit(&ctx_active, memory_order_relaxed);
}

void sim_enter(struct sim_counter *counter)
{
    sim_enter_query(counter);
    sim_ctx_activate();
}

unsigned long long sim_call_count(const char *api)
{
    if (api == NULL)
        return 0;
    for (struct sim_counter *c = __start_simcuda_counters; c < __stop_simcuda_counters; c++)
        if (strcmp(c->name, api) == 0)
            return atomic_load_explicit(&c->calls, memory_order_relaxed);
    return 0;
}

cudaError_t sim_ret(cudaError_t err)
{
    if (err != cudaSuccess && err != cudaErrorNotReady) {
        last_error = err;
        SIM_DBG(1, "returning %s", sim_error_name(err));
    }
    return err;
}

cudaError_t sim_take_last_error(bool reset)
{
    cudaError_t err = last_error;
    if (reset)
        last_error = cudaSuccess;
    return err;
}

void sim_log(int level, const char *fmt, ...)
{
    (void)level;
    char buf[512];
    int n = snprintf(buf, sizeof buf, "simcuda[%d]: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t room = sizeof buf - (size_t)n - 2; /* what vsnprintf kept, leaving room for '\n' */
    size_t len = (size_t)n + (m < 0 ? 0 : ((size_t)m < room ? (size_t)m : room));
    buf[len++] = '\n';
    for (size_t off = 0; off < len;) {
        ssize_t w = write(2, buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}
