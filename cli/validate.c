/* cli/validate.c: the self-contradictions a reader refuses (see validate.h). Only relations the
 * agent's writers always keep are checked: summary.json's totals are the sums of its step log
 * (agent/step/steps.c, under the step lock); a count's parts (start-up, the open step, the longest
 * sync) are never more than the count; steps are listed once each, in order, the open one
 * last. trace.bin's site and thread totals are live snapshots of racing counters: its reader
 * clamps their parts (rep_split_of, cli/trace_read.c) before they come here. CLI only. */
#include "cli/validate.h"

#include <stdarg.h>
#include <stdio.h>

static bool say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool say(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return true;
}

typedef unsigned long long ull;

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static bool steps_contradict(const struct rep_process *p, char *why, size_t n)
{
    uint64_t listed = p->steps ? p->nsteps : 0;
    uint64_t want = sat_add(sat_add(listed, p->steps_omitted), p->steps_lost);
    if (p->active_steps != want)
        return say(why, n, "active_steps is %llu but it lists %llu step%s%s%s",
                   (ull)p->active_steps, (ull)listed, listed == 1 ? "" : "s",
                   p->steps_omitted ? " and says more are omitted" : "",
                   p->steps_lost ? " and says more were lost" : "");
    uint64_t syncs = 0, blocked = 0, launches = 0, wall = 0;
    for (size_t i = 0; i < listed; i++) {
        const struct rep_step *s = &p->steps[i];
        if (i && s->step <= p->steps[i - 1].step)
            return say(why, n, "step %llu is listed %s", (ull)s->step,
                       s->step == p->steps[i - 1].step ? "twice" : "after a later one");
        if (s->step >= p->steps_seen)
            return say(why, n, "step %llu is listed but steps_seen is %llu", (ull)s->step,
                       (ull)p->steps_seen);
        if (s->partial && i + 1 < listed)
            return say(why, n,
                       "step %llu is the step still open at exit (partial) but is not "
                       "the last one listed",
                       (ull)s->step);
        syncs = sat_add(syncs, s->syncs);
        blocked = sat_add(blocked, s->blocked_ns);
        launches = sat_add(launches, s->launches);
        wall = sat_add(wall, s->wall_ns);
    }
    if (p->active_steps > p->steps_seen)
        return say(why, n, "active_steps is %llu, more than the %llu steps seen (steps_seen)",
                   (ull)p->active_steps, (ull)p->steps_seen);
    /* the totals count every active step: exactly the listed ones when none is missing */
    bool exact = !p->steps_omitted && !p->steps_lost;
    const struct {
        const char *name;
        uint64_t total, sum;
    } t[] = {{"syncs", p->syncs, syncs},
             {"blocked_ns", p->blocked_ns, blocked},
             {"launches", p->launches, launches},
             {"wall_ns", p->wall_ns, wall}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (exact ? t[i].total != t[i].sum : t[i].total < t[i].sum)
            return say(why, n, "its %s total is %llu but its steps add up to %llu", t[i].name,
                       (ull)t[i].total, (ull)t[i].sum);
    return false;
}

static bool split_contradicts(const struct rep_split *s, uint64_t count, uint64_t ns,
                              const char *what, char *why, size_t n)
{
    if (s->startup_count > count || s->partial_count > count)
        return say(why, n,
                   "%s has %llu syncs but %llu of them in start-up and %llu in the open step", what,
                   (ull)count, (ull)s->startup_count, (ull)s->partial_count);
    if (s->startup_ns > ns || s->partial_ns > ns)
        return say(why, n,
                   "%s was blocked %llu ns but %llu ns of it in start-up and %llu ns in the "
                   "open step",
                   what, (ull)ns, (ull)s->startup_ns, (ull)s->partial_ns);
    return false;
}

static bool contradicting_sites(const struct rep_process *p, char *why, size_t n)
{
    char what[64];
    for (size_t i = 0; p->sites && i < p->nsites; i++) {
        const struct rep_site *s = &p->sites[i];
        snprintf(what, sizeof what, "site %zu (%.30s)", i + 1, s->api ? s->api : "");
        if (s->max_ns > s->blocked_ns)
            return say(why, n,
                       "%s has its longest sync (%llu ns) longer than all of them together "
                       "(%llu ns)",
                       what, (ull)s->max_ns, (ull)s->blocked_ns);
        if (!s->count && s->blocked_ns)
            return say(why, n, "%s has no syncs but %llu ns blocked in them", what,
                       (ull)s->blocked_ns);
        if (s->gpu_idle_syncs > s->count)
            return say(why, n, "%s has %llu syncs but %llu of them followed by GPU idle time", what,
                       (ull)s->count, (ull)s->gpu_idle_syncs);
        if (s->pinned > s->count)
            return say(why, n, "%s has %llu syncs but %llu of them after a pinned copy", what,
                       (ull)s->count, (ull)s->pinned);
        if (split_contradicts(&s->split, s->count, s->blocked_ns, what, why, n))
            return true;
    }
    for (size_t i = 0; p->threads && i < p->nthreads; i++) {
        const struct rep_thread *t = &p->threads[i];
        snprintf(what, sizeof what, "thread %u", t->tid);
        if (split_contradicts(&t->split, t->syncs, t->blocked_ns, what, why, n))
            return true;
    }
    return false;
}

bool cli_contradiction(const struct rep_process *p, char *why, size_t n)
{
    return steps_contradict(p, why, n) || contradicting_sites(p, why, n);
}
