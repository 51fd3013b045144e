/* agent/process/lifecycle.c: the one ordered lifecycle (see lifecycle.h). Everything that starts,
 * flushes or finishes happens here, in this order:
 *   start       config, collectors, tables, threads, fork handlers, atexit, step 0; RUNNING;
 *               the entry layer's start hook
 *   first use   the configuration's warnings, the output folder, the flusher (trace.bin), the
 *               entry layer's first-use hook (signal handler, CUPTI), the Python step hook
 *   step end    a step that was recorded is flushed at once
 *   finish      FINISHING; the last step closed; the flusher stopped (unless this is its own
 *               thread) and trace.bin closed with its END record; the GPU records settled;
 *               summary.json; the report; OFF
 * Start and first use run inside the first CUDA call; finish runs once, off every recording
 * path, and may allocate. On an I/O error it says so in one line and carries on; it never
 * exits or aborts. Lock order: the list of locks a fork takes (fork_locks, below). */
#include "agent/process/lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/background/budgets.h"
#include "agent/background/control.h"
#include "agent/background/flusher.h"
#include "agent/background/identity.h"
#include "agent/background/process_dir.h"
#include "agent/background/report_model.h"
#include "agent/process/fork_locks.h"
#include "agent/record/apis.h"
#include "agent/record/autograd.h"
#include "agent/record/autograd_nodes.h"
#include "agent/record/budget_counts.h"
#include "agent/record/core.h"
#include "agent/record/gpu.h"
#include "agent/record/pyapi.h"
#include "agent/record/python_names.h"
#include "agent/record/sites.h"
#include "agent/record/threads.h"
#include "agent/record/upcalls.h"
#include "agent/step/pyhook.h"
#include "agent/step/recompiles.h"
#include "agent/step/steps.h"
#include "agent/syncspy.h"
#include "collectors/gpu.h"
#include "collectors/loader_gate.h"
#include "collectors/native_stack.h"
#include "collectors/pyframes.h"
#include "collectors/safe_read.h"
#include "collectors/stack_cache.h"
#include "collectors/symbolize.h"
#include "common/clock.h"
#include "common/log.h"
#include "output/io.h"
#include "output/report.h"
#include "output/summary_json.h"
#include "output/trace_format.h"

/* rank, node, host, job id from the launcher's variables (agent/background/identity.h), read at load */
static struct identity agent_id;
static _Atomic bool cuda_seen;
static const struct agent_entry_hooks *_Atomic entry_hooks;
static _Atomic bool start_hook_pending; /* the hooks came after the start: run it at first use */
static uint64_t start_mono_ns, start_real_ns;
/* The exit report is written for a fatal signal: the program's stdio locks may be held by the
 * interrupted thread, so stdout is not flushed first. */
static _Atomic bool finishing_from_signal;

/* The process the agent's state belongs to: a vfork child (which shares the parent's memory and
 * ran no fork handler) differs from it. */
static _Atomic pid_t agent_pid;

/* ---- start ------------------------------------------------------------------------------------- */

static void finish_on_flusher(void);

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void agent_atexit(void)
{
    agent_finish_now();
}

static const char *plain_getenv(const char *name)
{
    return getenv(name);
}

/* SYNCSPY_SETTINGS_FROM: which variables `syncspy run` took from pyproject.toml's
 * [tool.syncspy] (VAR=FILE:LINE;...), recorded in summary.json as given (a JSON string). */
static char settings_from[1024];

static void agent_init(void)
{
    config_parse(&agent_cfg, plain_getenv);
    const char *from = getenv("SYNCSPY_SETTINGS_FROM");
    if (from)
        snprintf(settings_from, sizeof settings_from, "%s", from);
    struct utsname un;
    identity_parse(&agent_id, plain_getenv, uname(&un) == 0 ? un.nodename : NULL, &agent_cfg);
    agent_debug_level = agent_cfg.debug;
    native_stack_init();
    stack_cache_set_enabled(agent_cfg.stack_cache);
    sites_init(16u << 20);
    threads_init((size_t)agent_cfg.buffer_mb << 20);
    autograd_init(agent_cfg.backward);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(agent_atexit);
    atomic_store(&agent_pid, getpid());
    start_mono_ns = clock_mono_ns();
    start_real_ns = clock_real_ns();
    steps_init(&agent_cfg.schedule, agent_cfg.trace_launches, start_mono_ns);
    atomic_store(&agent_state, STATE_RUNNING);
    const struct agent_entry_hooks *h = atomic_load(&entry_hooks);
    if (h && h->at_start)
        h->at_start(&agent_cfg);
}

/* The layers below ask the ones above only through this table (agent/record/upcalls.h). */
static const struct agent_upcalls upcalls_table = {
    .start = agent_init_once,
    .first_use = agent_first_use,
    .optimizer_step = agent_optimizer_step,
    .optimizer_step_split = agent_optimizer_step_split,
    .optimizer_cut = agent_optimizer_cut,
    .kick_flusher = flusher_kick,
    .flush_now = flusher_flush_now,
    .poll_python = pyhook_poll,
    .wait_python = pyhook_wait_slow,
    .request_graphs = pyhook_request_graphs,
};

void agent_init_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    agent_set_upcalls(&upcalls_table);
    if (atomic_load_explicit(&agent_state, memory_order_acquire) == STATE_STARTING)
        pthread_once(&once, agent_init);
}

__attribute__((constructor)) static void agent_ctor(void)
{
    agent_init_once();
}

void agent_set_entry_hooks(const struct agent_entry_hooks *hooks)
{
    agent_set_upcalls(&upcalls_table); /* before the first interposed call can record */
    atomic_store(&entry_hooks, hooks);
    /* Started already (a library's constructor called syncspy_step before ours ran): the start
     * hook runs at the first CUDA call instead. */
    if (atomic_load(&agent_state) != STATE_STARTING)
        atomic_store(&start_hook_pending, true);
}

/* ---- first use --------------------------------------------------------------------------------- */

/* False when the output folder is refused: the process then records nothing. */
static bool start_trace(void)
{
    int dirfd = -1;
    const char *tried, *dir = process_dir_open(&agent_id, &tried, &dirfd);
    if (!dir)
        say_no_folder(tried, errno); /* the flusher still runs: the report for a signal */
    if (process_dir_refused())
        return false;
    struct trace_file_header_v13 hv = {0};
    struct trace_file_header *hp = &hv.h;
    *hp = (struct trace_file_header){
        .magic = TRACE_MAGIC,
        .version_major = TRACE_VERSION_MAJOR,
        .version_minor = TRACE_VERSION_MINOR,
        .header_bytes = sizeof hv,
        .features = TRACE_FEATURE_PYTHON | TRACE_FEATURE_BACKWARD | TRACE_FEATURE_IDENTITY |
                    (agent_cfg.trace_launches ? TRACE_FEATURE_LAUNCHES : 0),
        .pid = (int32_t)getpid(),
        .rank = agent_id.rank,
        .start_mono_ns = start_mono_ns,
        .start_real_ns = start_real_ns};
    schedule_describe(&agent_cfg.schedule, hp->schedule, sizeof hp->schedule);
    hv.id.local_rank = agent_id.local_rank;
    hv.id.world_size = agent_id.world_size;
    hv.id.node = agent_id.node;
    _Static_assert(sizeof hv.id.host > IDENTITY_HOST_MAX && sizeof hv.id.job_id > IDENTITY_JOB_MAX,
                   "identity fits");
    memcpy(hv.id.host, agent_id.host, strlen(agent_id.host) + 1);
    memcpy(hv.id.job_id, agent_id.job_id, strlen(agent_id.job_id) + 1);
    if (agent_id.launcher)
        snprintf(hv.id.launcher, sizeof hv.id.launcher, "%s", agent_id.launcher);
    flusher_start(dirfd, dir, hp, (uint64_t)agent_cfg.trace_mb << 20, finish_on_flusher);
    return true;
}

/* The process's first CUDA call's work: the trace, CUPTI's loading (its path search, dlopen
 * and CUPTI's own start), the signal handler, the search for a CPython. */
static void first_use_work(void)
{
    if (agent_cfg.warnings[0])
        log_write(agent_cfg.warnings, strlen(agent_cfg.warnings));
    const char *no_stacks = native_stack_unavailable();
    if (no_stacks)
        agent_log("%s", no_stacks);
    symbolizer_load_helpers(); /* here, before the flusher exists: never a dlopen there (fork) */
    if (!start_trace()) {
        /* a folder another user could redirect: the agent steps aside, the program goes on as
         * without it (no handler, no CUPTI, no report; every CUDA call forwarded untouched) */
        atomic_store(&agent_state, STATE_OFF);
        return;
    }
    const struct agent_entry_hooks *h = atomic_load(&entry_hooks);
    if (h && h->at_start && atomic_exchange(&start_hook_pending, false))
        h->at_start(&agent_cfg);
    if (h && h->at_first_use)
        h->at_first_use(&agent_cfg);
    pyframes_ready(agent_now_ns());
}

/* Stack the first call's work runs on: dlopen and CUPTI's start need tens of KiB, which the
 * calling thread may not have (issue 22: a 32 KiB thread crashed in it). */
#define FIRST_USE_STACK_BYTES (1u << 20)

/* Calls fn with rsp at top (16-byte aligned), then comes back to this stack. Not makecontext:
 * no signal mask system calls, and ASan (the test build) warns once at every swapcontext.
 * Debuggers see no frames above fn while it runs; nothing unwinds through it (no capture is
 * made there, no exception crosses it). */
static void call_on_stack(void (*fn)(void), void *top)
{
#if defined(__x86_64__)
    __asm__ volatile("mov %%rsp, %%rbx\n\t"
                     "mov %0, %%rsp\n\t"
                     "call *%1\n\t"
                     "mov %%rbx, %%rsp"
                     :
                     : "r"(top), "r"(fn)
                     : "rbx", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "xmm0",
                       "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
#else
    (void)top;
    fn();
#endif
}

/* fn on a stack of the agent's own, on the calling thread (see agent_first_use). */
static void run_on_own_stack(void (*fn)(void))
{
    char *stack = mmap(NULL, FIRST_USE_STACK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack != MAP_FAILED) {
        bool agents = agent_tls.agent_thread;
        agent_tls.agent_thread = true;
        call_on_stack(fn, stack + FIRST_USE_STACK_BYTES);
        agent_tls.agent_thread = agents;
        munmap(stack, FIRST_USE_STACK_BYTES);
    } else {
        fn();
    }
}

void agent_run_entry_work(void (*fn)(void))
{
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return;
    struct agent_work w;
    struct agent_hold h;
    agent_work_begin(&w);
    agent_hold_signals(&h);
    run_on_own_stack(fn);
    agent_release_signals(&h);
    agent_work_end(&w);
}

void agent_first_use(void)
{
    bool was = atomic_exchange_explicit(&cuda_seen, true, memory_order_relaxed);
    if (was)
        return;
    /* On a stack of the agent's own, on the calling thread: not on another thread, which would
     * wait forever for the loader's lock when the first CUDA call comes from a library's
     * constructor (dlopen holds it; CUPTI's loading takes it). The marks of agent work are on
     * the thread's own stack, whose addresses say nothing about this one: meanwhile the thread
     * counts as the agent's (every CUDA call it makes is forwarded, as inside any agent work).
     * Signals stay held as the caller held them. Where no stack can be had, the work runs here. */
    run_on_own_stack(first_use_work);
    /* `import torch` loads torch.optim: ask for the step hook now, so it is in place before the
     * first optimizer step (it is registered at the interpreter's next safe point). */
    pyhook_poll(agent_now_ns());
}

bool agent_cuda_seen(void)
{
    return atomic_load_explicit(&cuda_seen, memory_order_relaxed);
}

/* ---- step boundaries --------------------------------------------------------------------------- */

/* split: an automatic mark at the kept cut first (steps_mark_split), optimizers_before its count */
static void step_mark(bool explicit_mark, unsigned optimizers, bool split,
                      unsigned optimizers_before)
{
    agent_init_once();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return;
    uint64_t now = agent_now_ns();
    struct agent_work w;
    struct agent_hold h;
    agent_work_begin(&w);
    /* The step lock, the registry lock: signals held for syncspy_step(), which any C program may
     * call, so that a handler of its own that longjmps out cannot leave them taken. Not for the
     * optimizer hook (issue 26 item 3: the pair of rt_sigprocmask calls was ~1.5 us of a step's
     * end on a loaded VM): it runs inside the interpreter's own code, with the GIL, where a
     * handler that longjmps breaks the interpreter, agent or none; the agent's SIGTERM/SIGINT
     * handler waits for this agent work to end (agent_defer_signal), and a handler that marks a
     * step while this thread marks one is ignored (steps_mark) instead of waiting on itself. */
    if (explicit_mark)
        agent_hold_signals(&h);
    unsigned ended = split ? steps_mark_split(now, optimizers_before, optimizers)
                           : steps_mark(now, explicit_mark, optimizers);
    if (explicit_mark)
        agent_release_signals(&h);
    if (ended & (STEPS_MARK_QUEUE_DEEP | STEPS_MARK_REQUEST_APPLIED))
        flusher_kick(); /* many steps queued: drained now, never lost to a late flusher; a
                         * request applied: acknowledged now (agent/background/control.h) */
    else if (ended & STEPS_MARK_ACTIVE_ENDED)
        flusher_step_ended(now); /* a recorded step ended: its records to disk soon */
    dbg(2, "step %llu begins (%s)", (unsigned long long)atomic_load(&steps_now),
        explicit_mark ? "explicit mark" : "automatic");
    agent_work_end(&w);
}

void agent_step(bool explicit_mark)
{
    step_mark(explicit_mark, 0, false, 0);
}

void agent_optimizer_step(unsigned optimizers)
{
    step_mark(false, optimizers, false, 0);
}

void agent_optimizer_step_split(unsigned optimizers_before, unsigned optimizers)
{
    step_mark(false, optimizers, true, optimizers_before);
}

void agent_optimizer_cut(void)
{
    agent_init_once();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return;
    struct agent_work w;
    agent_work_begin(&w);
    steps_cut_here(agent_now_ns());
    agent_work_end(&w);
}

/* ---- finish ------------------------------------------------------------------------------------ */

#define SUMMARY_STEP_BYTES_MAX 200 /* one step's line in summary.json, at most */

/* SYNCSPY_TRACE_MB bounds the whole process folder: summary.json lists no more steps than fit in
 * what trace.bin left of the bound (at least the eighth the trace keeps for it,
 * TW_SUMMARY_SHARE); the others are counted in steps_omitted, the totals stay exact. What the
 * file holds besides its steps is measured by writing it once without them (into memory). */
static void summary_fit_bound(struct rep_process *proc, int dirfd)
{
    uint64_t bound = (uint64_t)agent_cfg.trace_mb << 20;
    if (!bound || !proc->nsteps)
        return;
    struct stat st;
    uint64_t trace =
        fstatat(dirfd, TRACE_FILE_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)st.st_size : 0;
    uint64_t room = bound / TW_SUMMARY_SHARE;
    if (trace < bound - room)
        room = bound - trace;
    if ((uint64_t)proc->nsteps * SUMMARY_STEP_BYTES_MAX + 65536 <= room)
        return; /* fits whatever the rest holds (a sixteenth of it: 64 KiB) */
    int fd = memfd_create("syncspy-summary", MFD_CLOEXEC);
    if (fd < 0)
        return;
    size_t n = proc->nsteps;
    proc->nsteps = 0;
    int rc = summary_write_json(proc, fd);
    off_t rest = lseek(fd, 0, SEEK_END);
    close(fd);
    proc->nsteps = n;
    if (rc != 0 || rest < 0)
        return;
    uint64_t fit =
        (uint64_t)rest + 2 < room ? (room - (uint64_t)rest - 2) / SUMMARY_STEP_BYTES_MAX : 0;
    if (fit >= n)
        return;
    proc->steps_omitted += n - fit; /* said in the report's header, as the memory cap's are */
    proc->nsteps = fit;
}

#define REPORT_WRITE_TIMEOUT_MS 2000 /* a reader that takes no more of the report */

/* Where the report goes: 1, 2 or a file's descriptor (*close_it), -1 for none. The file is opened
 * O_NONBLOCK: a fifo with no reader fails at once (ENXIO) instead of hanging the exit, and one
 * whose reader stops reading is waited for at most REPORT_WRITE_TIMEOUT_MS. */
static int open_report_fd(bool *close_it)
{
    *close_it = false;
    /* The program's buffered output would be flushed by exit() right after us anyway: flushing
     * it first keeps the report last when stdout and stderr share a terminal. Not for a fatal
     * signal: the interrupted thread may hold the stdio locks. */
    if (agent_cfg.report != REPORT_OFF && !atomic_load(&finishing_from_signal)) {
        fflush(stdout);
        if (agent_cfg.report == REPORT_STDERR)
            fflush(stderr);
    }
    switch (agent_cfg.report) {
    case REPORT_OFF: return -1;
    case REPORT_STDOUT: return 1;
    case REPORT_FILE: {
        int fd = io_openat(AT_FDCWD, agent_cfg.report_path,
                           O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, OUTPUT_FILE_MODE);
        if (fd < 0) {
            agent_log("cannot write the report to %s: %s; writing it to stderr",
                      agent_cfg.report_path, strerror(errno));
            return 2;
        }
        *close_it = true;
        return fd;
    }
    case REPORT_STDERR:
    default: return 2;
    }
}

/* The report, to where SYNCSPY_REPORT says; when that fails (a full disk, /dev/full, a pipe with
 * no reader, a reader that stopped reading) it says so in one line and goes to stderr instead.
 * A write to a pipe whose reader is gone raises no SIGPIPE for the program. */
static void write_report(const struct rep_process *proc, const char *summary_shown)
{
    struct quiet_pipe q;
    quiet_pipe_begin(&q);
    bool close_it;
    int fd = open_report_fd(&close_it);
    struct report_opts opts = {.top = agent_cfg.top,
                               .summary_path = summary_shown,
                               .write_timeout_ms = REPORT_WRITE_TIMEOUT_MS,
                               .color = fd >= 0 && report_color_wanted(agent_cfg.color, fd),
                               .own_line = fd == 1 || fd == 2};
    bool epipe = false;
    if (fd >= 0 && report_render_text(proc, 1, &opts, fd) != 0) {
        int err = errno;
        epipe = err == EPIPE;
        if (fd != 2) {
            agent_log("cannot write the report to %s: %s; writing it to stderr",
                      fd == 1 ? "stdout" : agent_cfg.report_path, strerror(err));
            opts.color = report_color_wanted(agent_cfg.color, 2);
            opts.own_line = true;
            if (report_render_text(proc, 1, &opts, 2) != 0)
                epipe |= errno == EPIPE;
        }
    }
    if (close_it)
        close(fd);
    quiet_pipe_end(&q, epipe);
}

/* The outputs, in order. on_flusher: this is the flusher thread (a fatal signal's exit). */
/* The process's identity and settings, as summary.json and the report head them. */
static void describe_process(struct rep_process *proc, char *sched, size_t cap)
{
    schedule_describe(&agent_cfg.schedule, sched, cap);
    proc->pid = (int)getpid();
    proc->rank = agent_id.rank;
    proc->local_rank = agent_id.local_rank;
    proc->world_size = agent_id.world_size;
    proc->node = agent_id.node;
    proc->host = agent_id.host[0] ? agent_id.host : NULL;
    proc->job_id = agent_id.job_id[0] ? agent_id.job_id : NULL;
    proc->launcher = agent_id.launcher;
    proc->schedule = sched;
    proc->settings_from = settings_from[0] ? settings_from : NULL;
}

/* What the timeline misses (counts stay exact): into proc, and said on stderr once, as `syncspy
 * report` says it. */
static void count_what_the_trace_misses(struct rep_process *proc)
{
    threads_dropped(&proc->syncs_dropped, &proc->launches_dropped);
    proc->syncs_dropped += agent_records_without_ring();
    uint64_t short_stacks = native_stack_short_captures();
    if (short_stacks) /* said here, not at the capture: that thread had no stack to spare */
        agent_log("%llu syncs came with less than %d KiB of their thread's stack left: they are "
                  "counted without their native frames (\"no stack\")",
                  (unsigned long long)short_stacks, NATIVE_STACK_ROOM_KIB);
    uint64_t fork_stacks = native_stack_fork_captures();
    if (fork_stacks)
        agent_log("%llu syncs came while the process forked, when unwinding could leave the "
                  "child the loader's lock: they are counted without their native frames",
                  (unsigned long long)fork_stacks);
    uint64_t lost_steps = steps_events_lost().records;
    if (lost_steps) /* never silently: the steps are in summary.json, not in the trace */
        agent_log("%llu step records found the flusher's queue full and are missing from %s "
                  "(summary.json and this report have them; the trace counts them)",
                  (unsigned long long)lost_steps, TRACE_FILE_NAME);
}

/* summary.json in the process folder, bounded by SYNCSPY_TRACE_MB: its path in summary (cap
 * bytes) when written, else NULL (said on stderr). */
static const char *write_summary(struct rep_process *proc, char *summary, size_t cap)
{
    int dirfd = -1;
    const char *tried, *dir = process_dir_open(&agent_id, &tried, &dirfd);
    if (!dir) {
        say_no_folder(tried, errno);
        return NULL;
    }
    summary_fit_bound(proc, dirfd);
    if (summary_write_file(proc, dirfd, dir, summary, cap) == 0)
        return summary;
    int err = errno;
    agent_output_error(summary, err);
    if (proc->trace_lost_errno) /* said once above may have been the trace's line only */
        agent_log("%s could not be written either (%s): this report is the only complete "
                  "record of the run",
                  summary, strerror(err));
    return NULL;
}

static void write_outputs(bool on_flusher)
{
    struct rep_process proc = {0};
    char sched[160];
    describe_process(&proc, sched, sizeof sched);
    steps_finish(&proc, agent_now_ns());
    proc.unattributed_syncs = agent_unattributed_syncs();

    /* trace.bin: the last records, then END */
    if (!on_flusher)
        flusher_stop();
    flusher_close(proc.unattributed_syncs, proc.steps_seen);
    proc.trace_lost_errno = flusher_trace_lost(); /* into summary.json and the report */
    count_what_the_trace_misses(&proc);

    agent_gpu_finish(); /* the last activity records: GPU idle times (SYNCSPY_GPU=1) */
    struct symbolizer *own = flusher_symbolizer() ? NULL : symbolizer_new();
    report_model_sites(&proc, own ? own : flusher_symbolizer());
    report_model_threads(&proc, steps_marker_tid());
    recompiles_model(&proc);
    proc.no_step_hook =
        agent_cfg.step_mode == STEP_AUTO && !proc.step_source && pyhook_never_found_optim();

    char summary[PATH_MAX];
    write_report(&proc, write_summary(&proc, summary, sizeof summary));

    report_model_free(&proc);
    if (own)
        symbolizer_free(own);
}

/* SYNCSPY_DEBUG=1: how the native stacks were taken (this thread's and the exited threads'). */
static void say_stack_cache(void)
{
    struct stack_cache_stats mine, gone;
    stack_cache_stats(&mine);
    stack_cache_stats_exited(&gone);
    dbg(1,
        "native stacks: %llu from the stack cache, %llu unwound (%llu could not be cached); "
        "this thread and the threads that exited",
        (unsigned long long)(mine.hits + gone.hits),
        (unsigned long long)(mine.misses + gone.misses),
        (unsigned long long)(mine.uncacheable + gone.uncacheable));
    dbg(1, "sites: %llu syncs found theirs in the thread's capture memo",
        (unsigned long long)agent_capture_memo_hits());
    uint64_t kept, found, missed;
    nodes_stats(&kept, &found, &missed);
    if (kept || found || missed)
        dbg(1,
            "backward attribution (%s): %llu nodes' forward stacks kept; at backward syncs %llu "
            "found, %llu not",
            nodes_hooked() ? "the sequence number hook" : "anomaly mode", (unsigned long long)kept,
            (unsigned long long)found, (unsigned long long)missed);
}

/* ---- the one finish, and the callers that come while it runs ---------------------------------- */

/* A caller that comes second (another thread's exit() or _exit while one of them, or the flusher
 * for it, writes the outputs) waits for that finish: libc's _exit at once would end the process
 * under the writer (issue 36: exit() racing 8 _exit calls left no summary.json in 20 runs of 20;
 * 64 staggered _exit calls in 17 of 20). Bounded: until the first caller's own deadline when it
 * set one (_exit's; 50 ms more, which the first caller's own exit ends), else FINISH_WAIT_MS
 * from the later caller's arrival. */
#define FINISH_WAIT_MS 5000
static _Atomic pid_t finish_tid;       /* the thread that runs finish(): never waits for itself */
static _Atomic bool finish_by_flusher; /* ... and whether it is the flusher (else exit()'s) */
static _Atomic uint64_t finish_deadline_ns; /* until when later callers wait (0: none set) */
static _Atomic bool gave_up_said;           /* callers that give up together: one line */

static pid_t own_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

/* Waits until the finish another thread runs is over (the state OFF) or deadline_ns; returns how
 * many ms it waited, or -1 when it gave up. Async-signal-safe: clock_gettime and nanosleep. */
static long wait_finish_over(uint64_t start_ns, uint64_t deadline_ns)
{
    for (;;) {
        uint64_t now = clock_mono_ns();
        if (atomic_load(&agent_state) == STATE_OFF)
            return (long)((now - start_ns) / 1000000u);
        if (now >= deadline_ns)
            return -1;
        struct timespec t = {0, 1000000}; /* 1 ms: what a later caller adds at most */
        nanosleep(&t, NULL);
    }
}

/* A later caller: waits for the finish in progress (unless this thread is its writer: an exit()
 * whose thread took a signal whose handler calls _exit, or the flusher), says so if it gave up. */
static void later_caller_waits(uint64_t start_ns, int timeout_ms, const char *what)
{
    if (agent_tls.agent_thread || atomic_load(&finish_tid) == own_tid())
        return;
    uint64_t deadline = atomic_load(&finish_deadline_ns);
    if (deadline) /* the first caller gives up first (and says so), then ends the process */
        deadline += 50 * 1000000u;
    else
        deadline = start_ns + (uint64_t)timeout_ms * 1000000u;
    if (wait_finish_over(start_ns, deadline) < 0 && !atomic_exchange(&gave_up_said, true))
        agent_log("%s ended the process while another thread still wrote the outputs (waited "
                  "%llu ms for it): summary.json and the trace may miss their last records",
                  what, (unsigned long long)((clock_mono_ns() - start_ns) / 1000000u));
}

static void finish(bool on_flusher)
{
    int expected = STATE_RUNNING;
    uint64_t start = clock_mono_ns();
    if (!atomic_compare_exchange_strong(&agent_state, &expected, STATE_FINISHING)) {
        /* exit() (the atexit handler) while another thread's _exit or a signal has the flusher
         * write them: exit() goes on to libc's _exit after this */
        if (expected == STATE_FINISHING && !on_flusher)
            later_caller_waits(start, FINISH_WAIT_MS, "exit()");
        return;
    }
    atomic_store(&finish_tid, own_tid());
    atomic_store(&finish_by_flusher, on_flusher);
    int saved = errno;
    struct agent_work w; /* CUDA calls made while writing the report are not ours to record */
    agent_work_begin(&w);
    if (agent_cuda_seen()) {
        struct quiet_pipe q; /* a write past RLIMIT_FSIZE raises no SIGXFSZ for the program */
        quiet_pipe_begin(&q);
        write_outputs(on_flusher);
        say_stack_cache();
        quiet_pipe_end(&q, false);
    }
    atomic_store(&agent_state, STATE_OFF);
    agent_work_end(&w);
    errno = saved;
}

void agent_finish_now(void)
{
    finish(false);
}

static void finish_on_flusher(void)
{
    finish(true);
}

/* ---- from the entry layer ---------------------------------------------------------------------- */

static _Atomic bool finish_asked; /* by a signal: later signals do not wait again */

void agent_finish_from_signal(int timeout_ms)
{
    if (!agent_cuda_seen() || atomic_exchange(&finish_asked, true))
        return;
    /* The exit path runs already (exit() was called): the signal ends the process now, as it
     * would without the agent; the trace holds everything up to the last flush. */
    if (atomic_load(&agent_state) != STATE_RUNNING)
        return;
    atomic_store(&finishing_from_signal, true);
    flusher_request_finish(timeout_ms);
}

void agent_finish_at_quick_exit(int timeout_ms)
{
    int state = atomic_load(&agent_state);
    if (!agent_cuda_seen() || (state != STATE_RUNNING && state != STATE_FINISHING))
        return;
    if (getpid() != atomic_load(&agent_pid))
        return; /* a vfork child, in its parent's memory */
    uint64_t start = clock_mono_ns();
    /* _exit discards stdio buffers: the report must not flush them (the program's output stays
     * as it would be). The caller may be a handler that interrupted any code, agent code or a
     * sync included: it only waits; the flusher thread writes (agent locks are held with
     * signals blocked, so none is held under this handler). Every later caller (another
     * thread's _exit, issues 22 and 36; a handler's; one that comes while exit() writes) waits
     * for that one finish (later_caller_waits), bounded by the first caller's deadline. */
    if (atomic_exchange(&finish_asked, true) || state == STATE_FINISHING) {
        later_caller_waits(start, timeout_ms, "_exit");
        return;
    }
    atomic_store(&finish_deadline_ns, start + (uint64_t)timeout_ms * 1000000u);
    atomic_store(&finishing_from_signal, true);
    bool had_thread = flusher_running();
    if (had_thread) {
        /* the flusher answers when it wrote them, or when it found exit()'s finish running on
         * another thread: then that one is waited for too, within the same bound */
        flusher_request_finish(timeout_ms);
        if (wait_finish_over(start, start + (uint64_t)timeout_ms * 1000000u) >= 0)
            return;
    }
    if (atomic_exchange(&gave_up_said, true))
        return;
    unsigned long long ms = (clock_mono_ns() - start) / 1000000u;
    if (!had_thread)
        agent_log("the process ended through _exit with no flusher thread to write its outputs "
                  "(it could not be started): no summary.json and no report; the trace holds what "
                  "was written before");
    else
        agent_log("the process ended through _exit before its outputs were written: %s after %llu "
                  "ms (the bound): summary.json and the trace may miss their last records",
                  atomic_load(&agent_state) == STATE_FINISHING && !atomic_load(&finish_by_flusher)
                      ? "another thread's exit() was still writing them"
                      : "the flusher thread was still writing them",
                  ms);
}

void agent_after_dlclose(void)
{
    stack_cache_forget_all(); /* one atomic add: whatever the agent's state */
}

void agent_before_dlclose(void)
{
    if (!agent_cuda_seen() || atomic_load(&agent_state) != STATE_RUNNING)
        return;
    /* The agent's own dlclose (the symbolizer's, on the flusher thread inside a drain) or one
     * made inside a CUDA call: nothing of the program's to note, and the drain's lock is held. */
    if (agent_thread_busy())
        return;
    struct agent_work w;
    struct agent_hold h;
    agent_work_begin(&w);
    agent_hold_signals(&h); /* the flusher's lock */
    flusher_note_modules();
    agent_release_signals(&h);
    agent_work_end(&w);
}

/* ---- fork -------------------------------------------------------------------------------------- */

/* Every lock of the agent and the collectors, in the one lock order: a thread holding one takes
 * only locks after it (the drains' lock first, the flusher taking the others under it; the step,
 * registry, site table and Python names locks nested in that order; then the leaves, each held
 * for a few loads and stores with no other lock taken under it). fork_prepare takes them in this
 * order (agent/process/fork_locks.h says how each kind is treated), so a thread that holds one and waits
 * for a later one is waited for, and never waits for the forking thread. None is held across a
 * call that waits for glibc's atfork lock (fork, pthread_atfork, a dlopen whose constructors may
 * register handlers), which the forking thread holds meanwhile, nor across a wait for the GIL.
 * The entry layer's locks have handlers of their own (entry/start.c). */
enum {
    LOCK_FLUSH,
    LOCK_DESCRIBE,
    LOCK_STEP,
    LOCK_REGISTRY,
    LOCK_SITES,
    LOCK_PYNAMES,
    LOCK_RECOMPILES,
    LOCK_AUTOGRAD,
    LOCK_NODES,
    LOCK_APIS,
    LOCK_FLUSHER_CALL,
    LOCK_GPU,
    LOCK_PYAPI,
    LOCK_PYFRAMES,
    LOCK_SAFE_READ,
    LOCK_LOADER,
    LOCKS
};
/* GCC 12's libasan does not lock its allocator around fork: a child forked while the flusher
 * allocates (under its lock) would block in its first malloc (LLVM 16 and GCC 13 lock it). The
 * ASan build waits for the drain; the program's fork otherwise never does. */
#if defined(__SANITIZE_ADDRESS__)
#define FLUSH_FORK_WAIT_MS 10000
#else
#define FLUSH_FORK_WAIT_MS 0
#endif
static const struct fork_lock fork_locks[LOCKS] = {
    [LOCK_FLUSH] = {"flusher drains", FORK_LOCK_TRY, flusher_lock, NULL, FLUSH_FORK_WAIT_MS},
    [LOCK_DESCRIBE] = {"site descriptions", FORK_LOCK_TRY, budgets_request_lock, NULL, 0},
    [LOCK_STEP] = {"steps", FORK_LOCK_WAIT, steps_lock, NULL, 0},
    [LOCK_REGISTRY] = {"thread registry", FORK_LOCK_WAIT, threads_registry_lock, NULL, 0},
    [LOCK_SITES] = {"site table", FORK_LOCK_WAIT, sites_table_lock, NULL, 0},
    [LOCK_PYNAMES] = {"Python names", FORK_LOCK_WAIT, python_names_lock, NULL, 0},
    [LOCK_RECOMPILES] = {"recompilations", FORK_LOCK_WAIT, recompiles_lock, NULL, 0},
    [LOCK_AUTOGRAD] = {"autograd tables", FORK_LOCK_WAIT, autograd_lock, NULL, 0},
    [LOCK_NODES] = {"autograd nodes", FORK_LOCK_WAIT, nodes_lock, NULL, 0},
    [LOCK_APIS] = {"API names", FORK_LOCK_WAIT, apis_lock, NULL, 0},
    [LOCK_FLUSHER_CALL] = {"flusher calls", FORK_LOCK_WAIT, flusher_call_lock, NULL, 0},
    [LOCK_GPU] = {"GPU activity records", FORK_LOCK_WAIT, gpu_records_lock, NULL, 0},
    [LOCK_PYAPI] = {"CPython API lookup", FORK_LOCK_FLAG, NULL, pyapi_resolving, 0},
    [LOCK_PYFRAMES] = {"CPython detection", FORK_LOCK_FLAG, NULL, pyframes_detecting, 0},
    [LOCK_SAFE_READ] = {"safe read pipe", FORK_LOCK_FLAG, NULL, safe_read_pipe_busy, 0},
    [LOCK_LOADER] = {"loader sections", FORK_LOCK_GATE, NULL, NULL, 0, loader_gate_close,
                     loader_gate_open, loader_gate_atfork_child},
};
static bool fork_taken[LOCKS]; /* by fork_prepare: glibc runs one fork's handlers at a time */
/* The forking thread's signals are held from the start of its prepare to the end of parent or
 * child: a handler of its own that reached the agent (a CUDA call, syncspy_step, an exit() whose
 * atexit handler finishes) would wait for a lock this thread holds. */
static struct agent_hold fork_hold;

const struct fork_lock *agent_fork_locks(size_t *n)
{
    *n = LOCKS;
    return fork_locks;
}

static void fork_prepare(void)
{
    agent_hold_signals(&fork_hold);
    fork_locks_prepare(fork_locks, LOCKS, fork_taken);
}

static void fork_parent(void)
{
    fork_locks_parent(fork_locks, LOCKS, fork_taken);
    agent_release_signals(&fork_hold);
}

/* The child starts clean: its own pid, no steps, no sites, no threads, no trace. Its one thread
 * (the one that forked) first makes every lock free, then each module resets its state. */
static void fork_child(void)
{
    fork_locks_child(fork_locks, LOCKS, fork_taken);
    flusher_atfork_child(fork_taken[LOCK_FLUSH]);
    control_atfork_child();
    pyhook_atfork_child();
    nodes_atfork_child();
    python_names_atfork_child();
    recompiles_atfork_child();
    sites_atfork_child();
    threads_atfork_child();
    stack_cache_atfork_child();
    native_stack_atfork_child();
    safe_read_atfork_child();
    budget_counts_atfork_child();
    agent_core_atfork_child();
    agent_gpu_atfork_child();
    start_mono_ns = clock_mono_ns();
    start_real_ns = clock_real_ns();
    steps_atfork_child(start_mono_ns);
    atomic_store(&agent_pid, getpid());
    process_dir_atfork_child(); /* the child writes its own folder */
    atomic_store(&finish_asked, false);
    atomic_store(&finish_tid, 0);
    atomic_store(&finish_by_flusher, false);
    atomic_store(&finish_deadline_ns, 0);
    atomic_store(&gave_up_said, false);
    atomic_store(&cuda_seen, false);
    agent_release_signals(&fork_hold);
}
