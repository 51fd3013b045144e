/* agent/background/report_model.c: the site table as the report model, at exit (see report_model.h). Off every
 * recording path: it may allocate; on allocation failure a site is left out, never a crash. */
#include "agent/background/report_model.h"

#include <stdlib.h>
#include <string.h>

#include "agent/record/apis.h"
#include "agent/background/stack_names.h"
#include "agent/record/sites.h"
#include "agent/record/threads.h"
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

void report_model_sites(struct rep_process *proc, struct symbolizer *sym)
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
        /* read while other threads may still add: the longest is never more than all together */
        r->max_ns = s->max_ns < s->blocked_ns ? s->max_ns : s->blocked_ns;
        /* the run's last step is still open at exit (steps_finish closed it as partial) */
        r->split = rep_split_of(&s->phase, proc->steps_seen ? proc->steps_seen - 1 : 0, true);
        r->threads = s->threads;
        r->pinned = s->pinned < s->count ? s->pinned : s->count;
        if (!r->count)
            continue;
        uint32_t room = s->depth ? s->depth : 1;
        struct rep_frame *frames = calloc(room, sizeof *frames);
        if (!frames)
            continue;
        r->nframes = stack_names_frames(s->words, s->depth, sym, frames, room);
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

void report_model_threads(struct rep_process *proc, uint32_t marker_tid)
{
    size_t n;
    struct thread_info *t = threads_snapshot(&n); /* every thread: summary.json lists them all */
    struct rep_thread *out = calloc(n ? n : 1, sizeof *out);
    char(*names)[16] = calloc(n ? n : 1, sizeof *names);
    if (!t || !out || !names) {
        free(t);
        free(out);
        free(names);
        return;
    }
    uint64_t last = proc->steps_seen ? proc->steps_seen - 1 : 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(names[i], t[i].name, sizeof names[i]);
        out[i] = (struct rep_thread){.tid = t[i].tid,
                                     .name = names[i],
                                     .syncs = t[i].phase.count,
                                     .blocked_ns = t[i].phase.ns,
                                     .split = rep_split_of(&t[i].phase, last, true),
                                     .ends_steps = t[i].tid && t[i].tid == marker_tid};
    }
    free(t);
    proc->threads = out;
    proc->nthreads = n;
    proc->owned_names = names;
}

void report_model_free(struct rep_process *proc)
{
    free((void *)proc->threads);
    free(proc->owned_names);
    proc->threads = NULL;
    proc->nthreads = 0;
    for (size_t i = 0; i < proc->nsites; i++)
        free((void *)proc->sites[i].frames);
    free((void *)proc->sites);
    proc->sites = NULL;
    proc->nsites = 0;
    free((void *)proc->recompiles);
    free(proc->owned_recompiles);
    proc->recompiles = NULL;
    proc->nrecompiles = 0;
    proc->owned_recompiles = NULL;
}
