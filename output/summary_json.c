/* output/summary_json.c: summary.json, the one file every process leaves (DESIGN.md,
 * "Contracts"), written inside the target process at exit: no stdio FILE*, one fixed buffer
 * (output/fd_writer.h), the file put in place with a rename; no malloc but the table of the
 * report's estimates (report_estimate_shares: without memory the file goes without them). Its
 * reader is the CLI's (cli/summary_read.c). */
#include "output/summary_json.h"
#include "output/fd_writer.h"
#include "output/hints.h"
#include "output/identity_json.h"
#include "output/io.h"
#include "output/backward.h"
#include "output/report.h"
#include "output/step_list.h"

#include <stdlib.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

static void put_u64_field(struct fd_writer *w, const char *name, uint64_t v)
{
    fdw_puts(w, name);
    fdw_u64(w, v);
}

static void write_step(struct fd_writer *w, const struct rep_step *st, bool startup)
{
    put_u64_field(w, "  {\"step\": ", st->step);
    put_u64_field(w, ", \"wall_ns\": ", st->wall_ns);
    put_u64_field(w, ", \"syncs\": ", st->syncs);
    put_u64_field(w, ", \"blocked_ns\": ", st->blocked_ns);
    put_u64_field(w, ", \"launches\": ", st->launches);
    fdw_puts(w, st->partial ? ", \"partial\": true" : ", \"partial\": false");
    if (st->attributed)
        fdw_puts(w, ", \"attributed\": true");
    fdw_puts(w, startup ? ", \"startup\": true}" : "}");
}

static void write_split(struct fd_writer *w, const struct rep_split *sp)
{
    put_u64_field(w, ", \"startup_count\": ", sp->startup_count);
    put_u64_field(w, ", \"startup_blocked_ns\": ", sp->startup_ns);
    put_u64_field(w, ", \"partial_count\": ", sp->partial_count);
    put_u64_field(w, ", \"partial_blocked_ns\": ", sp->partial_ns);
}

static void write_thread(struct fd_writer *w, const struct rep_thread *t)
{
    put_u64_field(w, "  {\"tid\": ", t->tid);
    fdw_puts(w, ", \"name\": ");
    fdw_json_string(w, t->name);
    put_u64_field(w, ", \"syncs\": ", t->syncs);
    put_u64_field(w, ", \"blocked_ns\": ", t->blocked_ns);
    write_split(w, &t->split);
    fdw_puts(w, t->ends_steps ? ", \"ends_steps\": true}" : ", \"ends_steps\": false}");
}

static void write_frame(struct fd_writer *w, const struct rep_frame *f)
{
    fdw_puts(w, "    {\"function\": ");
    fdw_json_string(w, f->function);
    fdw_puts(w, ", \"module\": ");
    fdw_json_string(w, f->module);
    fdw_puts(w, ", \"file\": ");
    fdw_json_string(w, f->file);
    put_u64_field(w, ", \"line\": ", f->line);
    fdw_puts(w, f->python ? ", \"python\": true" : ", \"python\": false");
    put_u64_field(w, ", \"offset\": ", f->offset);
    if (f->mark) /* a section marker of a backward-pass sync (output/model.h) */
        fdw_puts(w, f->mark == REP_MARK_BACKWARD ? ", \"marker\": \"backward\""
                    : f->mark == REP_MARK_UNSEEN ? ", \"marker\": \"backward_unseen\""
                                                 : ", \"marker\": \"backward_caller\"");
    fdw_putc(w, '}');
}

/* The report's estimate (issue 24 item 2), in both directions: a forward site's "estimate" (the
 * syncs of steps without attribution counted for its line: its count stays exact), and an unseen
 * site's "estimated_for" (its count split between those sites, by index: the parts add up to
 * count and blocked_ns). */
struct site_estimates {
    const struct rep_estimate_share *sh;
    long n;
    uint64_t attribution_steps;
};

static void write_estimates(struct fd_writer *w, const struct site_estimates *est, uint32_t site)
{
    uint64_t count = 0, ns = 0;
    bool from = false;
    for (long i = 0; i < est->n; i++) {
        if (est->sh[i].to == site) {
            count += est->sh[i].count;
            ns += est->sh[i].blocked_ns;
        }
        from |= est->sh[i].from == site;
    }
    if (count || ns) {
        put_u64_field(w, ", \"estimate\": {\"count\": ", count);
        put_u64_field(w, ", \"blocked_ns\": ", ns);
        put_u64_field(w, ", \"attribution_steps\": ", est->attribution_steps);
        fdw_putc(w, '}');
    }
    if (!from)
        return;
    fdw_puts(w, ", \"estimated_for\": [");
    bool first = true;
    for (long i = 0; i < est->n; i++) {
        if (est->sh[i].from != site)
            continue;
        put_u64_field(w, first ? "{\"site\": " : ", {\"site\": ", est->sh[i].to);
        put_u64_field(w, ", \"count\": ", est->sh[i].count);
        put_u64_field(w, ", \"blocked_ns\": ", est->sh[i].blocked_ns);
        fdw_putc(w, '}');
        first = false;
    }
    fdw_putc(w, ']');
}

static void write_site(struct fd_writer *w, const struct rep_site *s,
                       const struct site_estimates *est, uint32_t index)
{
    fdw_puts(w, "  {\"api\": ");
    fdw_json_string(w, s->api);
    put_u64_field(w, ", \"count\": ", s->count);
    put_u64_field(w, ", \"blocked_ns\": ", s->blocked_ns);
    put_u64_field(w, ", \"max_ns\": ", s->max_ns);
    if (s->threads)
        put_u64_field(w, ", \"threads\": ", s->threads);
    if (s->pinned)
        put_u64_field(w, ", \"after_pinned_copy\": ", s->pinned);
    write_split(w, &s->split);
    if (s->gpu_idle_syncs) { /* SYNCSPY_GPU=1 measured it */
        put_u64_field(w, ", \"gpu_idle_ns\": ", s->gpu_idle_ns);
        put_u64_field(w, ", \"gpu_idle_syncs\": ", s->gpu_idle_syncs);
        if (s->gpu_next_work) {
            fdw_puts(w, ", \"gpu_next_work\": ");
            fdw_json_string(w, s->gpu_next_work);
        }
    }
    struct rep_sections sec = rep_site_sections(s->frames, s->frames ? s->nframes : 0);
    if (sec.node) { /* a backward-pass sync: the node, for readers that skip the markers */
        fdw_puts(w, ", \"backward_node\": ");
        fdw_json_string(w, sec.node);
    }
    if (sec.unseen) { /* one without its forward line: why, as the agent recorded it */
        fdw_puts(w, ", \"unseen_cause\": ");
        fdw_json_string(w, sec.unseen);
        const char *text = backward_cause_text(sec.unseen);
        if (text) {
            fdw_puts(w, ", \"unseen_why\": ");
            fdw_json_string(w, text);
        }
    }
    write_estimates(w, est, index);
    struct site_op op; /* the operator that synced and what to do (output/hints.h) */
    hints_op(s, &op);
    fdw_puts(w, ", \"op\": ");
    fdw_json_string(w, op.op);
    if (*op.aten) {
        fdw_puts(w, ", \"aten\": ");
        fdw_json_string(w, op.aten);
        fdw_puts(w, ", \"aten_inner\": ");
        fdw_json_string(w, op.aten_inner);
    }
    if (*op.hint) {
        fdw_puts(w, ", \"hint\": ");
        fdw_json_string(w, op.hint);
    }
    if (*op.compiled) {
        fdw_puts(w, ", \"graph_break\": ");
        fdw_json_string(w, op.compiled);
    }
    if (hints_compile_work(s))
        fdw_puts(w, ", \"compile_work\": true");
    fdw_puts(w, ", \"frames\": [");
    for (uint32_t i = 0; i < s->nframes && s->frames; i++) {
        fdw_puts(w, i ? ",\n" : "\n");
        write_frame(w, &s->frames[i]);
    }
    fdw_puts(w, "]}");
}

/* Who and what was recorded: version, process, identity, schedule, the recorded ranges. */
static void write_process(struct fd_writer *w, const struct rep_process *p)
{
    fdw_puts(w, "{\"version\": ");
    fdw_u64(w, SUMMARY_VERSION);
    fdw_puts(w, ", \"tool\": \"syncspy\", \"pid\": ");
    fdw_u64(w, p->pid > 0 ? (uint64_t)p->pid : 0);
    fdw_puts(w, ", \"rank\": ");
    if (p->rank >= 0)
        fdw_u64(w, (uint64_t)p->rank);
    else
        fdw_puts(w, "null");
    identity_write_json(w, p);
    fdw_puts(w, ",\n \"schedule\": ");
    fdw_json_string(w, p->schedule);
    /* the recorded steps as ranges, each with its cause (output/model.h rep_range) */
    fdw_puts(w, ",\n \"recorded\": [");
    for (size_t i = 0; i < p->nranges && p->ranges; i++) {
        put_u64_field(w, i ? ", {\"first\": " : "{\"first\": ", p->ranges[i].first);
        put_u64_field(w, ", \"last\": ", p->ranges[i].last);
        fdw_puts(w, ", \"cause\": ");
        fdw_json_string(w, rep_cause_name(p->ranges[i].cause));
        fdw_putc(w, '}');
    }
    fdw_putc(w, ']');
    if (p->ranges_omitted)
        put_u64_field(w, ", \"recorded_omitted\": ", p->ranges_omitted);
}

/* The totals of the active steps, then start-up and how the steps were marked. */
static void write_totals(struct fd_writer *w, const struct rep_process *p)
{
    put_u64_field(w, ",\n \"steps_seen\": ", p->steps_seen);
    put_u64_field(w, ", \"active_steps\": ", p->active_steps);
    put_u64_field(w, ", \"steps_omitted\": ", p->steps_omitted);
    put_u64_field(w, ",\n \"wall_ns\": ", p->wall_ns);
    put_u64_field(w, ", \"syncs\": ", p->syncs);
    put_u64_field(w, ", \"blocked_ns\": ", p->blocked_ns);
    put_u64_field(w, ", \"launches\": ", p->launches);
    put_u64_field(w, ", \"unattributed_syncs\": ", p->unattributed_syncs);
    put_u64_field(w, ", \"attribution_steps\": ", p->attribution_steps);
    /* start-up: step 0, from the process's start to the first step mark (not a training step) */
    fdw_puts(w, ",\n \"startup\": ");
    if (p->startup_closed) {
        put_u64_field(w, "{\"step\": ", 0);
        put_u64_field(w, ", \"wall_ns\": ", p->startup.wall_ns);
        put_u64_field(w, ", \"syncs\": ", p->startup.syncs);
        put_u64_field(w, ", \"blocked_ns\": ", p->startup.blocked_ns);
        put_u64_field(w, ", \"launches\": ", p->startup.launches);
        fdw_putc(w, '}');
    } else {
        fdw_puts(w, "null");
    }
    fdw_puts(w, ", \"step_source\": ");
    if (p->step_source)
        fdw_json_string(w, p->step_source);
    else
        fdw_puts(w, "null");
    fdw_puts(w, p->no_step_hook ? ", \"no_step_hook\": true" : ", \"no_step_hook\": false");
    put_u64_field(w, ", \"optimizers\": ", p->optimizers);
    put_u64_field(w, ", \"optimizers_max\": ", p->optimizers_max);
    if (p->settings_from) {
        fdw_puts(w, ", \"settings_from\": ");
        fdw_json_string(w, p->settings_from);
    }
    if (p->trace_lost_errno > 0) /* trace.bin lost data from its first failed write on */
        put_u64_field(w, ", \"trace_lost_errno\": ", (uint64_t)p->trace_lost_errno);
}

/* torch.compile's recompilations: where, how often, in the steps, and Dynamo's reason. */
static void write_recompiles(struct fd_writer *w, const struct rep_process *p)
{
    fdw_puts(w, ",\n \"recompiles\": [");
    for (size_t i = 0; i < p->nrecompiles && p->recompiles; i++) {
        const struct rep_recompile *r = &p->recompiles[i];
        fdw_puts(w, i ? ",\n{\"function\": " : "\n{\"function\": ");
        fdw_json_string(w, r->function);
        fdw_puts(w, ", \"file\": ");
        fdw_json_string(w, r->file);
        put_u64_field(w, ", \"line\": ", r->line);
        put_u64_field(w, ", \"count\": ", r->count);
        put_u64_field(w, ", \"in_steps\": ", r->in_steps);
        fdw_puts(w, ", \"reason\": ");
        fdw_json_string(w, r->reason);
        fdw_putc(w, '}');
    }
    fdw_putc(w, ']');
}

/* The sites, each with its share of the estimated backward syncs (report_estimate_shares). */
static void write_sites(struct fd_writer *w, const struct rep_process *p)
{
    fdw_puts(w, ",\n \"sites\": [");
    struct rep_estimate_share *shares = NULL;
    long nshares = report_estimate_shares(p, &shares);
    struct site_estimates est = {shares, nshares > 0 ? nshares : 0, p->attribution_steps};
    for (size_t i = 0; i < p->nsites && p->sites; i++) {
        fdw_puts(w, i ? ",\n" : "\n");
        write_site(w, &p->sites[i], &est, (uint32_t)i);
    }
    fdw_putc(w, ']');
    free(shares);
}

int summary_write_json(const struct rep_process *p, int fd)
{
    struct fd_writer w; /* 8 KiB of stack; no heap inside the target process */
    fdw_init(&w, fd);
    write_process(&w, p);
    write_totals(&w, p);
    fdw_puts(&w, ",\n \"threads\": [");
    for (size_t i = 0; i < p->nthreads && p->threads; i++) {
        fdw_puts(&w, i ? ",\n" : "\n");
        write_thread(&w, &p->threads[i]);
    }
    fdw_putc(&w, ']');
    write_recompiles(&w, p);
    fdw_puts(&w, ",\n \"steps\": [");
    struct rep_step_cursor steps;
    struct rep_step st;
    rep_steps_begin(&steps, p);
    for (size_t i = 0; rep_steps_next(&steps, &st); i++) {
        fdw_puts(&w, i ? ",\n" : "\n");
        write_step(&w, &st, p->startup_closed && st.step == 0);
    }
    fdw_putc(&w, ']');
    write_sites(&w, p);
    fdw_puts(&w, "}\n");
    return fdw_flush(&w);
}

/* Writes summary.json through a temporary file created with O_EXCL|O_NOFOLLOW, then renames it
 * into place, both relative to the folder's descriptor: a planted symlink (of the file or of
 * the folder) is never followed and a reader never sees half a file. */
int summary_write_file(const struct rep_process *proc, int dirfd, const char *dir, char *path,
                       size_t pathlen)
{
    char tmp[64];
    int n1 = snprintf(path, pathlen, "%s/" SUMMARY_FILE_NAME, dir);
    snprintf(tmp, sizeof tmp, "." SUMMARY_FILE_NAME ".%d.tmp", (int)getpid());
    if (n1 < 0 || (size_t)n1 >= pathlen)
        return errno = ENAMETOOLONG, -1;
    unlinkat(dirfd, tmp, 0);
    int fd = io_openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       OUTPUT_FILE_MODE);
    if (fd < 0)
        return -1;
    int rc = summary_write_json(proc, fd);
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && renameat(dirfd, tmp, dirfd, SUMMARY_FILE_NAME) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc != 0)
        unlinkat(dirfd, tmp, 0);
    errno = err;
    return rc;
}
