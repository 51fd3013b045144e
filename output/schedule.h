/* output/schedule.h: which steps are recorded, with exactly torch.profiler.schedule's
 * semantics (skip_first, skip_first_wait, wait, warmup, active, repeat). Pure functions. */
#ifndef SYNCSPY_SCHEDULE_H
#define SYNCSPY_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum step_action { ACTION_NONE, ACTION_WARMUP, ACTION_RECORD, ACTION_RECORD_AND_SAVE };

struct schedule {
    bool every_step; /* no SYNCSPY_SCHEDULE: every step is recorded */
    bool off;        /* SYNCSPY_SCHEDULE=off: no step, until `syncspy start` or syncspy.start() */
    uint64_t skip_first, skip_first_wait, wait, warmup, active, repeat;
};

/* torch.profiler.schedule(...)(step) */
enum step_action schedule_action(const struct schedule *s, uint64_t step);
/* The step is recorded (RECORD or RECORD_AND_SAVE). */
bool schedule_records(const struct schedule *s, uint64_t step);
/* Parses "skip_first=10,wait=1,warmup=1,active=3,repeat=2" (keys in any order, each once;
 * active required and > 0, the others default to 0), or "off" (no step is recorded until asked:
 * agent/background/control.h). Returns 0, or -1 with a reason in err. */
int schedule_parse(const char *text, struct schedule *out, char *err, size_t errlen);
/* "wait=1,warmup=1,active=3,repeat=2", "every step" or "off". */
void schedule_describe(const struct schedule *s, char *buf, size_t len);

#endif
