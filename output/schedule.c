/* output/schedule.c: torch.profiler.schedule semantics over step numbers (see schedule.h).
 * Pure functions of their arguments: no state, no allocation. */
#include "output/schedule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum step_action schedule_action(const struct schedule *s, uint64_t step)
{
    if (s->every_step)
        return ACTION_RECORD;
    if (s->off)
        return ACTION_NONE;
    /* torch/profiler/profiler.py schedule(): skip_first steps are NONE; then, with
     * skip_first_wait, the first wait phase is skipped by shifting the step left by wait. */
    if (step < s->skip_first)
        return ACTION_NONE;
    step -= s->skip_first;
    if (s->skip_first_wait)
        step += s->wait;
    uint64_t cycle = s->wait + s->warmup + s->active;
    if (s->repeat > 0 && step / cycle >= s->repeat) /* torch: step / num_steps >= repeat */
        return ACTION_NONE;
    uint64_t mod = step % cycle;
    if (mod < s->wait)
        return ACTION_NONE;
    if (mod < s->wait + s->warmup)
        return ACTION_WARMUP;
    return mod < cycle - 1 ? ACTION_RECORD : ACTION_RECORD_AND_SAVE;
}

bool schedule_records(const struct schedule *s, uint64_t step)
{
    enum step_action a = schedule_action(s, step);
    return a == ACTION_RECORD || a == ACTION_RECORD_AND_SAVE;
}

static const char *const keys[] = {"skip_first", "skip_first_wait", "wait",
                                   "warmup",     "active",          "repeat"};

static uint64_t *field(struct schedule *s, size_t i)
{
    uint64_t *f[] = {&s->skip_first, &s->skip_first_wait, &s->wait,
                     &s->warmup,     &s->active,          &s->repeat};
    return f[i];
}

#define SCHEDULE_MAX_VALUE 1000000000ull

int schedule_parse(const char *text, struct schedule *out, char *err, size_t errlen)
{
    struct schedule s = {0};
    unsigned seen = 0;
    const char *p = text;
    if (!*p) {
        snprintf(err, errlen, "is empty");
        return -1;
    }
    if (!strcmp(p, "off")) { /* nothing recorded until asked (agent/background/control.h) */
        *out = (struct schedule){.off = true};
        return 0;
    }
    while (*p) {
        const char *eq = strchr(p, '=');
        const char *comma = strchr(p, ',');
        if (!comma)
            comma = p + strlen(p);
        if (!eq || eq > comma) {
            snprintf(err, errlen, "'%.*s' is not key=value", (int)(comma - p), p);
            return -1;
        }
        size_t klen = (size_t)(eq - p), i;
        for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (strlen(keys[i]) == klen && !strncmp(keys[i], p, klen))
                break;
        if (i == sizeof(keys) / sizeof(keys[0])) {
            snprintf(
                err, errlen,
                "unknown key '%.*s' (known: skip_first, skip_first_wait, wait, warmup, active, repeat)",
                (int)klen, p);
            return -1;
        }
        if (seen & (1u << i)) {
            snprintf(err, errlen, "'%s' given twice", keys[i]);
            return -1;
        }
        seen |= 1u << i;
        const char *v = eq + 1;
        char *end;
        errno = 0;
        unsigned long long n = (v < comma && *v >= '0' && *v <= '9') ? strtoull(v, &end, 10) : 0;
        if (v == comma || *v < '0' || *v > '9' || errno || end != comma || n > SCHEDULE_MAX_VALUE) {
            snprintf(err, errlen, "'%s=%.*s' is not an integer in 0..%llu", keys[i],
                     (int)(comma - v), v, SCHEDULE_MAX_VALUE);
            return -1;
        }
        *field(&s, i) = n;
        p = *comma ? comma + 1 : comma;
        if (*comma && !*p) {
            snprintf(err, errlen, "ends with ','");
            return -1;
        }
    }
    if (s.active == 0) { /* torch asserts active > 0 */
        snprintf(err, errlen, "needs active=N with N >= 1");
        return -1;
    }
    *out = s;
    return 0;
}

void schedule_describe(const struct schedule *s, char *buf, size_t len)
{
    if (s->every_step) {
        snprintf(buf, len, "every step");
        return;
    }
    if (s->off) {
        snprintf(buf, len, "off");
        return;
    }
    size_t n = 0;
    buf[0] = 0;
    struct schedule copy = *s;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && n < len; i++) {
        uint64_t v = *field(&copy, i);
        if (v == 0 && i != 4)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s=%llu", n ? "," : "", keys[i],
                              (unsigned long long)v);
    }
}
