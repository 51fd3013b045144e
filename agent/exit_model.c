/* agent/exit_model.c: the site table as the report model, at exit (see exit_model.h). Off every
 * recording path: it may allocate; on allocation failure a site is left out, never a crash. */
#include "agent/exit_model.h"

#include <stdlib.h>

#include "agent/apis.h"
#include "agent/frames.h"
#include "agent/sites.h"
#include "collectors/gpu.h"

static int cmp_sites(const void *a, const void *b)
{
    const struct rep_site *x = a, *y = b;
    if (x->blocked_ns != y->blocked_ns)
        return x->blocked_ns > y->blocked_ns ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return 0;
}

void exit_model_sites(struct rep_process *proc, struct symbolizer *sym)
{
    size_t cap = sites_count() + 16;
    struct site_info *all = calloc(cap, sizeof *all);
    struct rep_site *out = calloc(cap, sizeof *out);
    if (!all || !out) {
        free(all);
        free(out);
        return;
    }
    size_t n = sites_snapshot(all, cap), k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct site_info *s = &all[i];
        struct rep_site *r = &out[k];
        r->api = api_name(s->api);
        r->count = s->count;
        r->blocked_ns = s->blocked_ns;
        r->max_ns = s->max_ns;
        if (!r->count)
            continue;
        /* the step still open at exit is the last one begun */
        if (proc->steps_seen && s->last_step == proc->steps_seen && s->count >= s->count_before) {
            r->partial_count = s->count - s->count_before;
            r->partial_blocked_ns = s->blocked_ns - s->blocked_before;
        }
        uint32_t room = s->depth ? s->depth : 1;
        struct rep_frame *frames = calloc(room, sizeof *frames);
        if (!frames)
            continue;
        r->nframes = frames_of_stack(s->words, s->depth, sym, frames, room);
        r->frames = frames;
        struct gpu_site_idle gpu;
        if (gpu_site(s->id, &gpu)) {
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

void exit_model_free(struct rep_process *proc)
{
    for (size_t i = 0; i < proc->nsites; i++)
        free((void *)proc->sites[i].frames);
    free((void *)proc->sites);
    proc->sites = NULL;
    proc->nsites = 0;
}
