/* agent/lifecycle.c: the one ordered lifecycle (see lifecycle.h). Everything that starts,
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
 * exits or aborts. Lock order: step lock, registry lock, site table lock, Python names lock. */
#include "agent/lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/core.h"
#include "agent/exit_model.h"
#include "agent/flusher.h"
#include "agent/gpu.h"
#include "agent/pyhook.h"
#include "agent/pynames.h"
#include "agent/sites.h"
#include "agent/steps.h"
#include "agent/syncspy.h"
#include "agent/threads.h"
#include "collectors/native_stack.h"
#include "collectors/pyframes.h"
#include "collectors/symbolize.h"
#include "common/clock.h"
#include "common/log.h"
#include "output/io.h"
#include "output/report.h"
#include "output/summary_json.h"
#include "output/trace_format.h"

struct config agent_cfg;
_Atomic int agent_state = STATE_STARTING;
static _Atomic bool cuda_seen;
static const struct agent_entry_hooks *_Atomic entry_hooks;
static _Atomic bool start_hook_pending; /* the hooks came after the start: run it at first use */
static uint64_t start_mono_ns, start_real_ns;
/* The exit report is written for a fatal signal: the program's stdio locks may be held by the
 * interrupted thread, so stdout is not flushed first. */
static _Atomic bool finishing_from_signal;

/* ---- the process's output folder -------------------------------------------------------------- */

/* mkdir -p with mode 0700 for the folders it creates (traces hold paths and symbol names). */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return errno = ENAMETOOLONG, -1;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(buf, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return errno = ENOTDIR, -1;
    return 0;
}

/* <SYNCSPY_OUT>/pid<P> or rank<R>-pid<P>, created 0700 when missing. Returns 0, or -1 with
 * errno (and buf still holding the name when it fit). */
static int process_dir(char *buf, size_t len)
{
    int n = agent_cfg.rank >= 0
                ? snprintf(buf, len, "%s/rank%d-pid%d", agent_cfg.out_dir, agent_cfg.rank, (int)getpid())
                : snprintf(buf, len, "%s/pid%d", agent_cfg.out_dir, (int)getpid());
    if (n < 0 || (size_t)n >= len) /* config_parse keeps SYNCSPY_OUT 64 bytes short of PATH_MAX */
        return errno = ENAMETOOLONG, -1;
    return make_dirs(buf);
}

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

static void agent_init(void)
{
    config_parse(&agent_cfg, plain_getenv);
    agent_debug_level = agent_cfg.debug;
    native_stack_init();
    sites_init(16u << 20);
    threads_init((size_t)agent_cfg.buffer_mb << 20);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(agent_atexit);
    start_mono_ns = clock_mono_ns();
    start_real_ns = clock_real_ns();
    steps_init(&agent_cfg.schedule, agent_cfg.trace_launches, start_mono_ns);
    atomic_store(&agent_state, STATE_RUNNING);
    const struct agent_entry_hooks *h = atomic_load(&entry_hooks);
    if (h && h->at_start)
        h->at_start(&agent_cfg);
}

void agent_init_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (atomic_load_explicit(&agent_state, memory_order_acquire) == STATE_STARTING)
        pthread_once(&once, agent_init);
}

__attribute__((constructor)) static void agent_ctor(void)
{
    agent_init_once();
}

void agent_set_entry_hooks(const struct agent_entry_hooks *hooks)
{
    atomic_store(&entry_hooks, hooks);
    /* Started already (a library's constructor called syncspy_step before ours ran): the start
     * hook runs at the first CUDA call instead. */
    if (atomic_load(&agent_state) != STATE_STARTING)
        atomic_store(&start_hook_pending, true);
}

/* ---- first use --------------------------------------------------------------------------------- */

static void start_trace(void)
{
    char dir[PATH_MAX];
    if (process_dir(dir, sizeof dir) != 0) {
        agent_output_error(dir, errno);
        return;
    }
    struct trace_file_header h = {.magic = TRACE_MAGIC,
                                  .version_major = TRACE_VERSION_MAJOR,
                                  .version_minor = TRACE_VERSION_MINOR,
                                  .header_bytes = sizeof h,
                                  .features = TRACE_FEATURE_PYTHON |
                                              (agent_cfg.trace_launches ? TRACE_FEATURE_LAUNCHES : 0),
                                  .pid = (int32_t)getpid(),
                                  .rank = agent_cfg.rank,
                                  .start_mono_ns = start_mono_ns,
                                  .start_real_ns = start_real_ns};
    schedule_describe(&agent_cfg.schedule, h.schedule, sizeof h.schedule);
    flusher_start(dir, &h, finish_on_flusher);
}

void agent_first_use(void)
{
    bool was = atomic_exchange_explicit(&cuda_seen, true, memory_order_relaxed);
    if (was)
        return;
    if (agent_cfg.warnings[0])
        write_all(2, agent_cfg.warnings, strlen(agent_cfg.warnings));
    start_trace();
    const struct agent_entry_hooks *h = atomic_load(&entry_hooks);
    if (h && h->at_start && atomic_exchange(&start_hook_pending, false))
        h->at_start(&agent_cfg);
    if (h && h->at_first_use)
        h->at_first_use(&agent_cfg);
    /* `import torch` loads torch.optim: ask for the step hook now, so it is in place before the
     * first optimizer step (it is registered at the interpreter's next safe point). */
    uint64_t now = agent_now_ns();
    if (pyframes_ready(now))
        pyhook_poll(now);
}

bool agent_cuda_seen(void)
{
    return atomic_load_explicit(&cuda_seen, memory_order_relaxed);
}

/* ---- step boundaries --------------------------------------------------------------------------- */

void agent_step(bool explicit_mark)
{
    agent_init_once();
    if (atomic_load_explicit(&agent_state, memory_order_relaxed) != STATE_RUNNING)
        return;
    uint64_t now = agent_now_ns();
    agent_guard_enter();
    bool active_ended = steps_mark(now, explicit_mark);
    agent_guard_leave();
    if (active_ended)
        flusher_step_ended(now); /* a recorded step ended: its records to disk soon */
    dbg(2, "step %llu begins (%s)", (unsigned long long)atomic_load(&steps_now),
        explicit_mark ? "explicit mark" : "automatic");
}

SYNCSPY_EXPORT void syncspy_step(void)
{
    int saved = errno;
    agent_step(true);
    errno = saved;
}

/* ---- finish ------------------------------------------------------------------------------------ */

static int open_report_fd(bool *close_it)
{
    *close_it = false;
    switch (agent_cfg.report) {
    case REPORT_OFF:
        return -1;
    case REPORT_STDOUT:
        if (!atomic_load(&finishing_from_signal))
            fflush(stdout); /* what exit() would flush anyway, so the program's output stays first */
        return 1;
    case REPORT_FILE: {
        int fd = io_open(agent_cfg.report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            agent_log("cannot write the report to %s: %s; writing it to stderr", agent_cfg.report_path,
                      strerror(errno));
            return 2;
        }
        *close_it = true;
        return fd;
    }
    case REPORT_STDERR:
    default:
        /* The program's buffered output would be flushed by exit() right after us anyway:
         * flushing it first keeps the report last when stdout and stderr share a terminal. Not
         * for a fatal signal: the interrupted thread may hold the stdio locks. */
        if (!atomic_load(&finishing_from_signal)) {
            fflush(stdout);
            fflush(stderr);
        }
        return 2;
    }
}

static void write_report(const struct rep_process *proc, const char *summary_shown)
{
    bool close_it;
    int fd = open_report_fd(&close_it);
    if (fd < 0)
        return;
    struct report_opts opts = {.top = agent_cfg.top, .summary_path = summary_shown};
    if (report_render_text(proc, 1, &opts, fd) != 0 && fd != 2)
        agent_log("cannot write the report: %s", strerror(errno));
    if (close_it)
        close(fd);
}

/* The outputs, in order. on_flusher: this is the flusher thread (a fatal signal's exit). */
static void write_outputs(bool on_flusher)
{
    struct rep_process proc = {0};
    char sched[160];
    schedule_describe(&agent_cfg.schedule, sched, sizeof sched);
    proc.pid = (int)getpid();
    proc.rank = agent_cfg.rank;
    proc.schedule = sched;
    steps_finish(&proc, agent_now_ns());
    proc.unattributed_syncs = agent_unattributed_syncs();

    /* trace.bin: the last records, then END */
    if (!on_flusher)
        flusher_stop();
    flusher_close(proc.unattributed_syncs);
    uint64_t lost_steps = steps_events_lost();
    if (lost_steps) /* never silently: the steps are in summary.json, not in the trace */
        agent_log("%llu step records found the flusher's queue full and are missing from %s "
                  "(summary.json and this report have them)", (unsigned long long)lost_steps,
                  TRACE_FILE_NAME);

    agent_gpu_finish(); /* the last activity records: GPU idle times (SYNCSPY_GPU=1) */
    struct symbolizer *own = flusher_symbolizer() ? NULL : symbolizer_new();
    exit_model_sites(&proc, own ? own : flusher_symbolizer());

    char dir[PATH_MAX], summary[PATH_MAX];
    const char *summary_shown = NULL;
    if (process_dir(dir, sizeof dir) != 0)
        agent_output_error(dir, errno);
    else if (summary_write_file(&proc, dir, summary, sizeof summary) != 0)
        agent_output_error(summary, errno);
    else
        summary_shown = summary;
    write_report(&proc, summary_shown);

    exit_model_free(&proc);
    if (own)
        symbolizer_free(own);
}

static void finish(bool on_flusher)
{
    int expected = STATE_RUNNING;
    if (!atomic_compare_exchange_strong(&agent_state, &expected, STATE_FINISHING))
        return;
    int saved = errno;
    agent_tls.guard++; /* CUDA calls made while writing the report are not ours to record */
    if (agent_cuda_seen())
        write_outputs(on_flusher);
    agent_tls.guard--;
    atomic_store(&agent_state, STATE_OFF);
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

void agent_finish_from_signal(int timeout_ms)
{
    if (!agent_cuda_seen())
        return;
    atomic_store(&finishing_from_signal, true);
    flusher_request_finish(timeout_ms);
}

void agent_flush_soon(void)
{
    flusher_kick();
}

void agent_before_dlclose(void)
{
    if (agent_cuda_seen() && atomic_load(&agent_state) == STATE_RUNNING)
        flusher_note_modules();
}

/* ---- fork -------------------------------------------------------------------------------------- */

/* Locks are taken in the documented order before fork so the child gets them in a consistent
 * state; the child starts clean (its own pid, no steps, no sites, no threads, no trace). */
static void fork_prepare(void)
{
    steps_atfork_prepare();
    threads_atfork_prepare();
    sites_atfork_prepare();
    pynames_atfork_prepare();
}

static void fork_parent(void)
{
    pynames_atfork_parent();
    sites_atfork_parent();
    threads_atfork_parent();
    steps_atfork_parent();
}

static void fork_child(void)
{
    flusher_atfork_child();
    pyhook_atfork_child();
    pynames_atfork_child();
    sites_atfork_child();
    threads_atfork_child();
    agent_core_atfork_child();
    agent_gpu_atfork_child();
    start_mono_ns = clock_mono_ns();
    start_real_ns = clock_real_ns();
    steps_atfork_child(start_mono_ns);
    atomic_store(&cuda_seen, false);
}
