/* bench/bench_cuda.c: the C workloads of `make bench` (bench/run.py drives them and does the
 * statistics). Every mode prints one JSON object on stdout.
 *
 * In-process A/B: the same process calls the CUDA entry point through the agent's shim
 * (dlsym(RTLD_DEFAULT, name): the LD_PRELOADed definition) and directly in the runtime
 * (dlsym on the libcudart.so.13 handle: the runtime's own definition), in alternating batches,
 * so both arms share the machine's state at that moment; run.py takes the median of the paired
 * differences. Without LD_PRELOAD both arms are the runtime: the control (noise floor).
 *
 *   launch BATCH REPS [GAP_NS]   kernel launches (0-ns kernel), back to back or GAP_NS of host
 *                                work (a clock spin) apart
 *   sync FRAMES BATCH REPS [GAP_NS]   0-ns launch + cudaStreamSynchronize with a FRAMES-deep
 *                                native stack above the sync (the same stack every time: seen
 *                                before), back to back or GAP_NS of host work apart
 *   first FRAMES N               N syncs, each under a stack never seen before (arms alternate)
 *   cg-launch N | cg-sync FRAMES N   one batch per arm, in functions named for callgrind
 *   train STEPS LAUNCHES SYNCS HOST_NS   a training-loop imitation through the PLT (whole-process
 *                                A/B: run.py runs it with and without the agent); per step:
 *                                LAUNCHES launches, each after HOST_NS of host work (the
 *                                framework's per-op cost), SYNCS syncs spread evenly (.item()-style
 *                                4-byte device-to-host copies and stream synchronizes), then a
 *                                step mark (syncspy_step when the agent is loaded)
 *   train-ab STEPS LAUNCHES SYNCS HOST_NS   the same loop as an in-process A/B: steps alternate
 *                                between the agent's entry points (with its step mark) and the
 *                                runtime's own
 *   flood THREADS RATE SECONDS SYNC_EVERY   THREADS threads producing RATE records/s in total
 *                                (launches, and one stream sync every SYNC_EVERY records), paced
 *                                every millisecond
 * Kernel durations come from SIMCUDA_KERNEL_NS (the simulator's default duration). */
#include <dlfcn.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT ((void)0) /* no valgrind headers: run.py skips callgrind */
#endif

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*sync_fn)(cudaStream_t);

static launch_fn launch_shim, launch_direct;
static sync_fn sync_shim, sync_direct;

#define BARRIER() __asm__ volatile("" ::: "memory")
#define NOINLINE __attribute__((noinline, noclone))

static void kfn(void)
{
}

static inline unsigned long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static void resolve(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    if (!rt) {
        fprintf(stderr, "bench_cuda: libcudart.so.13 is not loaded: %s\n", dlerror());
        exit(2);
    }
    launch_direct = (launch_fn)dlsym(rt, "cudaLaunchKernel");
    sync_direct = (sync_fn)dlsym(rt, "cudaStreamSynchronize");
    launch_shim = (launch_fn)dlsym(RTLD_DEFAULT, "cudaLaunchKernel");
    sync_shim = (sync_fn)dlsym(RTLD_DEFAULT, "cudaStreamSynchronize");
    if (!launch_direct || !sync_direct || !launch_shim || !sync_shim) {
        fprintf(stderr, "bench_cuda: CUDA entry points not found\n");
        exit(2);
    }
}

static const dim3 ONE = {1, 1, 1};

static void print_array(const char *name, const double *v, long n, int last)
{
    printf("\"%s\": [", name);
    for (long i = 0; i < n; i++)
        printf("%s%.3f", i ? ", " : "", v[i]);
    printf("]%s", last ? "" : ", ");
}

/* ---- launches ----------------------------------------------------------------------------- */

static volatile unsigned long long sink;

/* Host work standing in for the framework's per-op cost (Python, dispatcher, allocator). */
static inline void host_work(unsigned long long ns)
{
    if (!ns)
        return;
    unsigned long long end = now_ns() + ns;
    while (now_ns() < end)
        sink++;
}

static unsigned long long launch_gap_ns; /* host work between launches (0: back to back) */

NOINLINE static double launch_batch(launch_fn f, long n)
{
    unsigned long long t0 = now_ns();
    for (long i = 0; i < n; i++) {
        host_work(launch_gap_ns);
        f((const void *)kfn, ONE, ONE, NULL, 0, 0);
        BARRIER();
    }
    return (double)(now_ns() - t0) / (double)n;
}

/* The floor of an interposed launch, for comparison: a wrapper that bumps a thread-local
 * counter (a TLS load, a branch, an increment) and forwards the call. */
static __thread unsigned long long *floor_counter;
static unsigned long long floor_count;

NOINLINE static cudaError_t launch_floor(const void *f, dim3 g, dim3 b, void **a, size_t s,
                                         cudaStream_t st)
{
    unsigned long long *c = floor_counter;
    if (__builtin_expect(c != NULL, 1))
        ++*c;
    return launch_direct(f, g, b, a, s, st);
}

static int mode_launch(long batch, long reps)
{
    double *a = calloc((size_t)reps, sizeof *a), *b = calloc((size_t)reps, sizeof *b);
    double *fl = calloc((size_t)reps, sizeof *fl);
    floor_counter = &floor_count;
    launch_batch(launch_shim, batch); /* warm: the agent's first-call work, the caches */
    launch_batch(launch_direct, batch);
    launch_batch(launch_floor, batch);
    for (long r = 0; r < reps; r++) {
        switch (r % 3) { /* every order in turn */
        case 0:
            a[r] = launch_batch(launch_shim, batch);
            b[r] = launch_batch(launch_direct, batch);
            fl[r] = launch_batch(launch_floor, batch);
            break;
        case 1:
            b[r] = launch_batch(launch_direct, batch);
            fl[r] = launch_batch(launch_floor, batch);
            a[r] = launch_batch(launch_shim, batch);
            break;
        default:
            fl[r] = launch_batch(launch_floor, batch);
            a[r] = launch_batch(launch_shim, batch);
            b[r] = launch_batch(launch_direct, batch);
            break;
        }
    }
    printf("{\"mode\": \"launch\", \"batch\": %ld, ", batch);
    print_array("shim_ns", a, reps, 0);
    print_array("floor_ns", fl, reps, 0);
    print_array("direct_ns", b, reps, 1);
    printf("}\n");
    return 0;
}

/* Named for callgrind (--toggle-collect / inclusive cost per function). */
NOINLINE void cg_launch_shim(long n)
{
    for (long i = 0; i < n; i++) {
        launch_shim((const void *)kfn, ONE, ONE, NULL, 0, 0);
        BARRIER();
    }
}

NOINLINE void cg_launch_direct(long n)
{
    for (long i = 0; i < n; i++) {
        launch_direct((const void *)kfn, ONE, ONE, NULL, 0, 0);
        BARRIER();
    }
}

/* ---- syncs under a known native stack ----------------------------------------------------- */

struct sync_ctx {
    long batch, reps;
    double *a, *b;
    long n;  /* first: syncs to make */
    int arm; /* first: the arm of the current descent */
    long done[2];
    double *t[2]; /* first: per-call ns by arm */
};

/* The sync's caller: frame 0 of the captured stack. */
static unsigned long long sync_gap_ns; /* host work before each pair (0: back to back) */

NOINLINE static double sync_batch(sync_fn s, long n)
{
    unsigned long long t0 = now_ns();
    for (long i = 0; i < n; i++) {
        host_work(sync_gap_ns);
        launch_direct((const void *)kfn, ONE, ONE, NULL, 0, 0);
        s(0);
        BARRIER();
    }
    return (double)(now_ns() - t0) / (double)n;
}

NOINLINE static void sync_ab(struct sync_ctx *c)
{
    sync_batch(sync_shim, c->batch); /* warm: first sight of this stack happens here */
    sync_batch(sync_direct, c->batch);
    for (long r = 0; r < c->reps; r++) {
        if (r & 1) {
            c->a[r] = sync_batch(sync_shim, c->batch);
            c->b[r] = sync_batch(sync_direct, c->batch);
        } else {
            c->b[r] = sync_batch(sync_direct, c->batch);
            c->a[r] = sync_batch(sync_shim, c->batch);
        }
    }
}

NOINLINE void cg_sync_shim(long n)
{
    sync_batch(sync_shim, n);
}
NOINLINE void cg_sync_direct(long n)
{
    sync_batch(sync_direct, n);
}

typedef void (*leaf_fn)(struct sync_ctx *);

/* depth frames of descend, then leaf: every frame has its own return address. */
NOINLINE static int descend(int depth, leaf_fn leaf, struct sync_ctx *c)
{
    if (depth <= 0) {
        leaf(c);
        return 0;
    }
    int r = descend(depth - 1, leaf, c);
    BARRIER();
    return r + 1;
}

/* Under callgrind --collect-atstart=no: one uncounted warm call per arm (the first sight of
 * the stack, the first-call work), then the counted ones. */
static void cg_sync_leaf(struct sync_ctx *c)
{
    cg_sync_shim(10);
    cg_sync_direct(10);
    CALLGRIND_TOGGLE_COLLECT;
    cg_sync_shim(c->n);
    cg_sync_direct(c->n);
    CALLGRIND_TOGGLE_COLLECT;
}

/* The captured stack: the leaf's frames (leaf_frames: the sync's caller up to the leaf), the
 * descend frames, run_at_depth, main and main's callers (__libc_start_call_main,
 * __libc_start_main, _start). descend(d) makes d + 1 frames. run.py checks the captured depth
 * in summary.json. */
NOINLINE static void run_at_depth(int frames, int leaf_frames, leaf_fn leaf, struct sync_ctx *c)
{
    descend(frames - leaf_frames - 5 - 1, leaf, c);
    BARRIER();
}

static int mode_sync(int frames, long batch, long reps)
{
    struct sync_ctx c = {.batch = batch, .reps = reps};
    c.a = calloc((size_t)reps, sizeof *c.a);
    c.b = calloc((size_t)reps, sizeof *c.b);
    run_at_depth(frames, 2, sync_ab, &c); /* sync_batch <- sync_ab <- descend... */
    printf("{\"mode\": \"sync\", \"frames\": %d, \"batch\": %ld, ", frames, batch);
    print_array("shim_ns", c.a, reps, 0);
    print_array("direct_ns", c.b, reps, 1);
    printf("}\n");
    return 0;
}

/* ---- first sight: a new stack for every sync ---------------------------------------------- */

NOINLINE static void first_bottom(struct sync_ctx *c)
{
    launch_direct((const void *)kfn, ONE, ONE, NULL, 0, 0);
    sync_fn s = c->arm ? sync_shim : sync_direct;
    unsigned long long t0 = now_ns();
    s(0);
    unsigned long long t1 = now_ns();
    c->t[c->arm][c->done[c->arm]++] = (double)(t1 - t0);
}

/* Two functions that call each other or themselves by the bits of path: each call site is a
 * distinct return address, so every path is a distinct stack of the same depth. */
NOINLINE static void fa(int depth, unsigned long path, struct sync_ctx *c);
NOINLINE static void fb(int depth, unsigned long path, struct sync_ctx *c);

NOINLINE static void fa(int depth, unsigned long path, struct sync_ctx *c)
{
    if (depth <= 0)
        first_bottom(c);
    else if (path & 1)
        fa(depth - 1, path >> 1, c);
    else
        fb(depth - 1, path >> 1, c);
    BARRIER();
}

NOINLINE static void fb(int depth, unsigned long path, struct sync_ctx *c)
{
    if (depth <= 0)
        first_bottom(c);
    else if (path & 1)
        fa(depth - 1, path >> 1, c);
    else
        fb(depth - 1, path >> 1, c);
    BARRIER();
}

static int first_frames;

static void first_leaf(struct sync_ctx *c)
{
    /* frames: first_bottom, the fa/fb chain (it carries the path), first_leaf, descend x2, main,
     * and main's 3 callers. fa(d) makes d + 1 frames. */
    int chain = first_frames - 8;
    for (long i = 0; i < c->n; i++) {
        c->arm = (int)(i & 1);
        fa(chain - 1, (unsigned long)i, c);
    }
}

static int mode_first(int frames, long n)
{
    struct sync_ctx c = {.n = n};
    c.t[0] = calloc((size_t)n, sizeof(double));
    c.t[1] = calloc((size_t)n, sizeof(double));
    first_frames = frames;
    launch_shim((const void *)kfn, ONE, ONE, NULL, 0, 0); /* the agent's first-call work */
    sync_direct(0);
    descend(1, first_leaf, &c);
    printf("{\"mode\": \"first\", \"frames\": %d, ", frames);
    print_array("shim_ns", c.t[1], c.done[1], 0);
    print_array("direct_ns", c.t[0], c.done[0], 1);
    printf("}\n");
    return 0;
}

/* ---- training-loop imitation (through the PLT: whole-process A/B) -------------------------- */

static float *dev_buf;

NOINLINE static float item(void) /* loss.item(): 4 bytes to pageable host memory */
{
    float v;
    cudaMemcpy(&v, dev_buf, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}

NOINLINE static void wait_stream(void)
{
    cudaStreamSynchronize(0);
}

NOINLINE static void train_step(long launches, long syncs, unsigned long long host_ns)
{
    long every = syncs ? launches / syncs : launches + 1, s = 0;
    for (long i = 0; i < launches; i++) {
        host_work(host_ns);
        cudaLaunchKernel((const void *)kfn, ONE, ONE, NULL, 0, 0);
        if (syncs && (i + 1) % every == 0 && s < syncs) {
            if (s++ & 1)
                wait_stream();
            else
                sink += (unsigned long long)item();
        }
    }
}

static int mode_train(long steps, long launches, long syncs, unsigned long long host_ns)
{
    void (*mark)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncspy_step");
    if (cudaMalloc((void **)&dev_buf, 4096) != cudaSuccess) {
        fprintf(stderr, "bench_cuda: cudaMalloc failed\n");
        return 1;
    }
    double *t = calloc((size_t)steps, sizeof *t);
    unsigned long long start = now_ns();
    for (long s = 0; s < steps; s++) {
        unsigned long long t0 = now_ns();
        train_step(launches, syncs, host_ns);
        if (mark)
            mark();
        t[s] = (double)(now_ns() - t0);
    }
    double total = (double)(now_ns() - start);
    cudaFree(dev_buf);
    printf("{\"mode\": \"train\", \"agent\": %s, \"total_ns\": %.0f, ", mark ? "true" : "false",
           total);
    print_array("step_ns", t, steps, 1);
    printf("}\n");
    return 0;
}

/* The same loop as an in-process A/B: steps alternate between the agent's entry points (and
 * its step mark) and the runtime's own, so both arms see the machine in the same state. */
typedef cudaError_t (*memcpy_fn)(void *, const void *, size_t, enum cudaMemcpyKind);
struct cuda_set {
    launch_fn launch;
    memcpy_fn memcpy;
    sync_fn sync;
    void (*mark)(void);
};

NOINLINE static float item_ab(const struct cuda_set *c)
{
    float v;
    c->memcpy(&v, dev_buf, sizeof v, cudaMemcpyDeviceToHost);
    return v;
}

NOINLINE static void wait_stream_ab(const struct cuda_set *c)
{
    c->sync(0);
}

NOINLINE static void train_step_ab(const struct cuda_set *c, long launches, long syncs,
                                   unsigned long long host_ns)
{
    long every = syncs ? launches / syncs : launches + 1, s = 0;
    for (long i = 0; i < launches; i++) {
        host_work(host_ns);
        c->launch((const void *)kfn, ONE, ONE, NULL, 0, 0);
        if (syncs && (i + 1) % every == 0 && s < syncs) {
            if (s++ & 1)
                wait_stream_ab(c);
            else
                sink += (unsigned long long)item_ab(c);
        }
    }
    if (c->mark)
        c->mark();
}

static int mode_train_ab(long steps, long launches, long syncs, unsigned long long host_ns)
{
    void *rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    struct cuda_set shim = {launch_shim, (memcpy_fn)dlsym(RTLD_DEFAULT, "cudaMemcpy"), sync_shim,
                            (void (*)(void))dlsym(RTLD_DEFAULT, "syncspy_step")};
    struct cuda_set direct = {launch_direct, rt ? (memcpy_fn)dlsym(rt, "cudaMemcpy") : NULL,
                              sync_direct, NULL};
    if (!shim.memcpy || !direct.memcpy || cudaMalloc((void **)&dev_buf, 4096) != cudaSuccess) {
        fprintf(stderr, "bench_cuda: no cudaMemcpy or cudaMalloc failed\n");
        return 1;
    }
    double *a = calloc((size_t)steps, sizeof *a), *b = calloc((size_t)steps, sizeof *b);
    for (int w = 0; w < 2; w++) { /* warm: first sight of the stacks */
        train_step_ab(&shim, launches, syncs, host_ns);
        train_step_ab(&direct, launches, syncs, host_ns);
    }
    for (long s = 0; s < steps; s++) {
        for (int k = 0; k < 2; k++) {
            int arm = (int)((s + k) & 1); /* ABBA... */
            unsigned long long t0 = now_ns();
            train_step_ab(arm ? &shim : &direct, launches, syncs, host_ns);
            (arm ? a : b)[s] = (double)(now_ns() - t0);
        }
    }
    cudaFree(dev_buf);
    printf("{\"mode\": \"train-ab\", \"agent\": %s, ", shim.mark ? "true" : "false");
    print_array("shim_ns", a, steps, 0);
    print_array("direct_ns", b, steps, 1);
    printf("}\n");
    return 0;
}

/* ---- flood: many threads producing records at a set rate --------------------------------- */

struct flood_arg {
    double per_ms; /* records per millisecond for this thread */
    double seconds;
    long sync_every;
    unsigned long long start;
    long launches, syncs, behind_ms, skipped_ms;
};

NOINLINE static void flood_sync(void)
{
    cudaStreamSynchronize(cudaStreamPerThread);
}

static void *flood_thread(void *p)
{
    struct flood_arg *a = p;
    unsigned long long tick = a->start, end = a->start + (unsigned long long)(a->seconds * 1e9);
    double owed = 0;
    long k = 0;
    while (tick < end) {
        owed += a->per_ms;
        long n = (long)owed;
        owed -= (double)n;
        for (long i = 0; i < n; i++) {
            if (a->sync_every && ++k % a->sync_every == 0) {
                flood_sync();
                a->syncs++;
            } else {
                cudaLaunchKernel((const void *)kfn, ONE, ONE, NULL, 0, cudaStreamPerThread);
                a->launches++;
            }
        }
        tick += 1000000ull;
        unsigned long long now = now_ns();
        if (now > tick) {
            a->behind_ms++;
            if (now > tick + 2000000ull) {
                /* More than 2 ms late (descheduled): skip the missed ticks rather than burst at
                 * many times the rate; the rate printed says what was produced. */
                a->skipped_ms += (long)((now - tick) / 1000000ull);
                tick += (now - tick) / 1000000ull * 1000000ull;
            }
            continue; /* late: no sleep */
        }
        struct timespec ts = {.tv_sec = (time_t)(tick / 1000000000ull),
                              .tv_nsec = (long)(tick % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    return NULL;
}

static int mode_flood(int threads, double rate, double seconds, long sync_every)
{
    pthread_t th[256];
    struct flood_arg args[256];
    if (threads < 1 || threads > 256)
        return 2;
    cudaFree(NULL); /* runtime and agent up before the clock starts */
    unsigned long long start = now_ns() + 20000000ull;
    for (int i = 0; i < threads; i++) {
        args[i] = (struct flood_arg){.per_ms = rate / threads / 1000.0,
                                     .seconds = seconds,
                                     .sync_every = sync_every,
                                     .start = start};
        pthread_create(&th[i], NULL, flood_thread, &args[i]);
    }
    long launches = 0, syncs = 0, behind = 0, skipped = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        launches += args[i].launches;
        syncs += args[i].syncs;
        behind += args[i].behind_ms;
        skipped += args[i].skipped_ms;
    }
    double wall = (double)(now_ns() - start) / 1e9;
    printf(
        "{\"mode\": \"flood\", \"threads\": %d, \"target_rate\": %.0f, \"seconds\": %.3f, "
        "\"launches\": %ld, \"syncs\": %ld, \"rate\": %.0f, \"behind_ms\": %ld, \"skipped_ms\": %ld}\n",
        threads, rate, wall, launches, syncs, (double)(launches + syncs) / wall, behind, skipped);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: bench_cuda launch|sync|first|cg-launch|cg-sync|train|flood ARGS (see bench/bench_cuda.c)\n");
        return 2;
    }
    const char *m = argv[1];
#define ARG(i, d) (argc > (i) ? atol(argv[i]) : (d))
    if (!strcmp(m, "train"))
        return mode_train(ARG(2, 50), ARG(3, 2000), ARG(4, 20), (unsigned long long)ARG(5, 0));
    if (!strcmp(m, "flood"))
        return mode_flood((int)ARG(2, 16), argc > 3 ? atof(argv[3]) : 5e6,
                          argc > 4 ? atof(argv[4]) : 10, ARG(5, 100));
    cudaFree(NULL); /* loads the runtime's state; not timed */
    resolve();
    if (!strcmp(m, "train-ab"))
        return mode_train_ab(ARG(2, 100), ARG(3, 2000), ARG(4, 20), (unsigned long long)ARG(5, 0));
    if (!strcmp(m, "launch")) {
        launch_gap_ns = (unsigned long long)ARG(4, 0);
        return mode_launch(ARG(2, 1000), ARG(3, 200));
    }
    if (!strcmp(m, "sync")) {
        sync_gap_ns = (unsigned long long)ARG(5, 0);
        return mode_sync((int)ARG(2, 24), ARG(3, 200), ARG(4, 200));
    }
    if (!strcmp(m, "first"))
        return mode_first((int)ARG(2, 24), ARG(3, 2000));
    if (!strcmp(m, "cg-launch")) {
        long n = ARG(2, 100000);
        cg_launch_shim(1000); /* warm, not counted (callgrind --collect-atstart=no) */
        cg_launch_direct(1000);
        CALLGRIND_TOGGLE_COLLECT;
        cg_launch_shim(n);
        cg_launch_direct(n);
        CALLGRIND_TOGGLE_COLLECT;
        return 0;
    }
    if (!strcmp(m, "cg-sync")) {
        struct sync_ctx c = {.n = ARG(3, 2000)};
        run_at_depth((int)ARG(2, 24), 3, cg_sync_leaf,
                     &c); /* sync_batch <- cg_sync_shim <- cg_sync_leaf */
        return 0;
    }
    fprintf(stderr, "bench_cuda: unknown mode %s\n", m);
    return 2;
}
