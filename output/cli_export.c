/* output/cli_export.c: `syncspy export`: summary.json sites as folded stacks (flamegraph.pl,
 * speedscope, inferno) and active steps as Chrome trace events (Perfetto, chrome://tracing).
 * CLI only; writes through an fd_writer to the fd it is given. */
#include "output/cli.h"
#include "output/json.h"

#include <stdio.h>
#include <string.h>

/* ---- folded stacks ------------------------------------------------------------------------ */

/* A frame name in the folded format: ';' separates frames and a line ends the stack, so both
 * (and other control characters) become ' ' or ':'. */
static void folded_text(struct fd_writer *w, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == ';')
            fdw_putc(w, ':');
        else if (*p < 0x20)
            fdw_putc(w, ' ');
        else
            fdw_putc(w, (char)*p);
    }
}

static const char *base_name(const char *path)
{
    const char *s = path ? path : "", *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

static void folded_frame(struct fd_writer *w, const struct rep_frame *f)
{
    char buf[128];
    const char *fn = f->function ? f->function : "";
    if (f->python) {
        folded_text(w, *fn ? fn : "??");
        fdw_puts(w, " (");
        folded_text(w, f->file && *f->file ? f->file : "?");
        fdw_printf(w, ":%u)", f->line);
    } else if (*fn) {
        report_display_name(fn, buf, sizeof buf);
        folded_text(w, buf);
    } else if (f->module && *f->module) {
        folded_text(w, base_name(f->module));
        fdw_printf(w, "+0x%llx", (unsigned long long)f->offset);
    } else {
        fdw_puts(w, "??");
    }
}

static void folded_process(struct fd_writer *w, const struct rep_process *p)
{
    if (p->rank >= 0)
        fdw_printf(w, "rank%d-pid%d;", p->rank, p->pid);
    else
        fdw_printf(w, "pid%d;", p->pid);
}

int cli_export_folded(const struct rep_process *procs, size_t n, int fd)
{
    struct fd_writer w;
    fdw_init(&w, fd);
    for (size_t p = 0; p < n; p++) {
        for (size_t i = 0; i < procs[p].nsites; i++) {
            const struct rep_site *s = &procs[p].sites[i];
            if (n > 1) /* one subtree per process when several are merged */
                folded_process(&w, &procs[p]);
            for (uint32_t k = s->nframes; k > 0; k--) { /* outermost first */
                folded_frame(&w, &s->frames[k - 1]);
                fdw_putc(&w, ';');
            }
            folded_text(&w, s->api && *s->api ? s->api : "?");
            fdw_putc(&w, ' ');
            fdw_u64(&w, s->blocked_ns);
            fdw_putc(&w, '\n');
        }
    }
    return fdw_flush(&w);
}

/* ---- Chrome trace events ------------------------------------------------------------------ */

/* ns as microseconds with three decimals (the trace format's unit). */
static void put_us(struct fd_writer *w, uint64_t ns)
{
    fdw_u64(w, ns / 1000);
    fdw_printf(w, ".%03u", (unsigned)(ns % 1000));
}

static void chrome_metadata(struct fd_writer *w, const struct rep_process *p, size_t index)
{
    char name[64];
    if (p->rank >= 0)
        snprintf(name, sizeof name, "rank %d (pid %d)", p->rank, p->pid);
    else
        snprintf(name, sizeof name, "pid %d", p->pid);
    fdw_printf(w, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, "
               "\"args\": {\"name\": ", p->pid);
    fdw_json_string(w, name);
    fdw_printf(w, "}},\n{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, "
               "\"tid\": 0, \"args\": {\"sort_index\": %zu}},\n", p->pid, index);
    fdw_printf(w, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": 1, "
               "\"args\": {\"name\": \"steps\"}}", p->pid);
}

static void chrome_step(struct fd_writer *w, const struct rep_process *p,
                        const struct rep_step *st, uint64_t ts_ns)
{
    fdw_printf(w, ",\n{\"ph\": \"X\", \"cat\": \"step\", \"name\": \"step %llu\", \"pid\": %d, "
               "\"tid\": 1, \"ts\": ", (unsigned long long)st->step, p->pid);
    put_us(w, ts_ns);
    fdw_puts(w, ", \"dur\": ");
    put_us(w, st->wall_ns);
    fdw_printf(w, ", \"args\": {\"step\": %llu, \"syncs\": %llu, \"blocked_ns\": %llu, "
               "\"launches\": %llu, \"partial\": %s}}",
               (unsigned long long)st->step, (unsigned long long)st->syncs,
               (unsigned long long)st->blocked_ns, (unsigned long long)st->launches,
               st->partial ? "true" : "false");
    /* a counter track: blocked time per step, readable at a glance above the slices */
    fdw_printf(w, ",\n{\"ph\": \"C\", \"name\": \"blocked per step (us)\", \"pid\": %d, "
               "\"ts\": ", p->pid);
    put_us(w, ts_ns);
    fdw_puts(w, ", \"args\": {\"blocked_us\": ");
    put_us(w, st->blocked_ns);
    fdw_puts(w, "}}");
}

int cli_export_chrome(const struct rep_process *procs, size_t n, int fd)
{
    struct fd_writer w;
    fdw_init(&w, fd);
    fdw_puts(&w, "{\"traceEvents\": [\n");
    for (size_t p = 0; p < n; p++) {
        if (p)
            fdw_puts(&w, ",\n");
        chrome_metadata(&w, &procs[p], p);
        uint64_t ts = 0; /* active steps laid end to end: summary.json has no start times */
        for (size_t i = 0; i < procs[p].nsteps; i++) {
            chrome_step(&w, &procs[p], &procs[p].steps[i], ts);
            ts = ts + procs[p].steps[i].wall_ns < ts ? ts : ts + procs[p].steps[i].wall_ns;
        }
    }
    fdw_puts(&w, "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"tool\": \"syncspy\", "
                 "\"version\": \"" SYNCSPY_VERSION "\", \"note\": \"active steps from "
                 "summary.json laid end to end; per-sync events come with trace files\"}}\n");
    return fdw_flush(&w);
}
