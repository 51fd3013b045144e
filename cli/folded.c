/* cli/folded.c: `syncspy export --folded` (see folded.h): one line per sync site, its frames
 * outermost first then its API, weighted by blocked ns in the steps the report counts; one
 * subtree per process when several are merged. CLI only; writes through an fd_writer to the fd it is given. */
#include "cli/folded.h"
#include "output/fd_writer.h"
#include "output/report.h"

/* A frame name in the folded format: ';' separates frames and a line ends the stack, so both
 * (and other C0 control characters) become ':' or ' '; the shown writer escapes DEL, the C1
 * controls and bytes that are not UTF-8, and keeps other UTF-8 whole. */
static void folded_text(struct fd_writer *w, const char *s)
{
    const char *run = s;
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c != '\0' && c != ';' && c >= 0x20)
            continue;
        fdw_write(w, run, (size_t)(p - run));
        if (c == '\0')
            return;
        fdw_putc(w, c == ';' ? ':' : ' ');
        run = p + 1;
    }
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
        folded_text(w, rep_base_name(f->module));
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

int cli_export_folded(const struct cli_set *set, bool include_startup, int fd)
{
    struct fd_writer w;
    fdw_init(&w, fd);
    fdw_set_shown(&w); /* OUT may be - on a terminal: DEL, C1 and bytes not UTF-8 escaped */
    const struct rep_process *procs = set->procs;
    size_t n = set->n;
    for (size_t p = 0; p < n; p++) {
        for (size_t i = 0; i < procs[p].nsites && procs[p].sites; i++) {
            const struct rep_site *s = &procs[p].sites[i];
            uint64_t count, ns;
            report_site_counts(&procs[p], s, include_startup, &count, &ns);
            if (!count) /* a site of start-up (or of the open step) only */
                continue;
            if (n > 1) /* one subtree per process when several are merged */
                folded_process(&w, &procs[p]);
            for (uint32_t k = s->frames ? s->nframes : 0; k > 0; k--) { /* outermost first */
                folded_frame(&w, &s->frames[k - 1]);
                fdw_putc(&w, ';');
            }
            folded_text(&w, s->api && *s->api ? s->api : "?");
            fdw_putc(&w, ' ');
            fdw_u64(&w, ns);
            fdw_putc(&w, '\n');
        }
    }
    return fdw_flush(&w);
}
