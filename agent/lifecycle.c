/* agent/finish.c: at exit, turns the agent's tables into the report model (symbolizing the
 * stacks), writes <SYNCSPY_OUT>/<process folder>/summary.json and prints the report. Runs once,
 * in the FINISHING state, off every recording path: it may allocate. On an I/O error it says so
 * in one line and carries on; it never exits or aborts. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/apis.h"
#include "agent/internal.h"
#include "agent/flusher.h"
#include "common/log.h"
#include "agent/pynames.h"
#include "collectors/cupti.h"
#include "collectors/pyframes.h"
#include "agent/sites.h"
#include "collectors/symbolize.h"
#include "output/io.h"
#include "output/trace_format.h"
#include "output/report.h"
#include "output/summary_json.h"

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

int agent_process_dir(char *buf, size_t len)
{
    int n = agent_cfg.rank >= 0
                ? snprintf(buf, len, "%s/rank%d-pid%d", agent_cfg.out_dir, agent_cfg.rank, (int)getpid())
                : snprintf(buf, len, "%s/pid%d", agent_cfg.out_dir, (int)getpid());
    if (n < 0 || (size_t)n >= len) /* config_parse keeps SYNCSPY_OUT 64 bytes short of PATH_MAX */
        return errno = ENAMETOOLONG, -1;
    return make_dirs(buf);
}

static int cmp_sites(const void *a, const void *b)
{
    const struct rep_site *x = a, *y = b;
    if (x->blocked_ns != y->blocked_ns)
        return x->blocked_ns > y->blocked_ns ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return 0;
}

/* Turns a stack's words into frames: native return addresses symbolized (minus one: the call
 * instruction, not the one after it), Python frames from the names kept at capture. */
static uint32_t fill_frames(const struct stack_rec *st, struct rep_frame *frames, struct symbolizer *sym)
{
    struct stack_frame *decoded = calloc(st->depth ? st->depth : 1, sizeof *decoded);
    if (!decoded)
        return 0;
    uint32_t n = pyframes_decode(st->pcs, st->depth, decoded, st->depth);
    for (uint32_t i = 0; i < n; i++) {
        const struct stack_frame *f = &decoded[i];
        if (f->python) {
            const struct pyname *name = pynames_find(f->code, f->lasti);
            frames[i] = (struct rep_frame){.function = name ? name->function : "?",
                                           .module = "",
                                           .file = name ? name->file : "?",
                                           .line = name ? name->line : 0,
                                           .python = true};
            continue;
        }
        struct sym_info info = {0};
        if (sym)
            symbolizer_resolve(sym, f->pc - 1, &info);
        frames[i] = (struct rep_frame){.function = info.function,
                                       .module = info.module ? info.module : "[unknown]",
                                       .file = info.file,
                                       .line = info.line,
                                       .offset = sym ? info.offset : f->pc - 1};
    }
    free(decoded);
    return n;
}

/* Builds proc->sites from the site table. Everything allocated here lives until exit. */
static void fill_sites(struct rep_process *proc, struct symbolizer *sym)
{
    size_t cap = sites_count() + 16;
    struct site **all = calloc(cap, sizeof *all);
    struct rep_site *out = calloc(cap, sizeof *out);
    if (!all || !out) {
        free(all);
        free(out);
        return;
    }
    size_t n = sites_snapshot(all, cap), k = 0;
    for (size_t i = 0; i < n; i++) {
        struct site *s = all[i];
        struct rep_site *r = &out[k];
        r->api = api_name((uint32_t)s->key.api);
        r->count = atomic_load(&s->count);
        r->blocked_ns = atomic_load(&s->blocked_ns);
        r->max_ns = atomic_load(&s->max_ns);
        if (!r->count)
            continue;
        struct rep_frame *frames = calloc(s->stack->depth ? s->stack->depth : 1, sizeof *frames);
        if (!frames)
            continue;
        r->nframes = fill_frames(s->stack, frames, sym);
        r->frames = frames;
        struct cupti_site_gpu gpu;
        if (cupti_site_gpu(s->id, &gpu)) {
            r->gpu_idle_ns = gpu.idle_ns;
            r->gpu_idle_syncs = gpu.syncs;
            r->gpu_next_work = gpu.next_work;
        }
        k++;
    }
    free(all);
    qsort(out, k, sizeof *out, cmp_sites);
    proc->sites = out;
    proc->nsites = k;
}

static int open_report_fd(bool *close_it)
{
    *close_it = false;
    switch (agent_cfg.report) {
    case REPORT_OFF:
        return -1;
    case REPORT_STDOUT:
        if (!atomic_load(&agent_finishing_from_signal))
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
        if (!atomic_load(&agent_finishing_from_signal)) {
            fflush(stdout);
            fflush(stderr);
        }
        return 2;
    }
}

void agent_write_outputs(void)
{
    struct rep_process proc = {0};
    char sched[160];
    schedule_describe(&agent_cfg.schedule, sched, sizeof sched);
    proc.pid = (int)getpid();
    proc.rank = agent_cfg.rank;
    proc.schedule = sched;
    agent_steps_close_and_fill(&proc);
    proc.unattributed_syncs = agent_unattributed_syncs();
    flusher_finish(proc.unattributed_syncs); /* the trace's last records, then END */
    uint64_t lost_steps = agent_step_events_lost();
    if (lost_steps) /* never silently: the steps are in summary.json, not in the trace */
        agent_log("%llu step records found the flusher's queue full and are missing from %s "
                  "(summary.json and this report have them)", (unsigned long long)lost_steps,
                  TRACE_FILE_NAME);

    cupti_finish(); /* the last activity records: GPU idle times (SYNCSPY_GPU=1) */
    struct symbolizer *own = flusher_symbolizer() ? NULL : symbolizer_new();
    struct symbolizer *sym = own ? own : flusher_symbolizer();
    fill_sites(&proc, sym);

    char dir[PATH_MAX], summary[PATH_MAX];
    const char *summary_shown = NULL;
    if (agent_process_dir(dir, sizeof dir) != 0)
        agent_output_error(dir, errno);
    else if (summary_write_file(&proc, dir, summary, sizeof summary) != 0)
        agent_output_error(summary, errno);
    else
        summary_shown = summary;

    bool close_it;
    int fd = open_report_fd(&close_it);
    if (fd >= 0) {
        struct report_opts opts = {.top = agent_cfg.top, .summary_path = summary_shown};
        if (report_render_text(&proc, 1, &opts, fd) != 0 && fd != 2)
            agent_log("cannot write the report: %s", strerror(errno));
        if (close_it)
            close(fd);
    }
    for (size_t i = 0; i < proc.nsites; i++)
        free((void *)proc.sites[i].frames);
    free((void *)proc.sites);
    if (own)
        symbolizer_free(own);
}
