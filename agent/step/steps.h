/* agent/step/steps.h: training steps. Step boundaries close the current step and begin the next; the
 * schedule (output/schedule.h) says which steps are recorded. Active steps are kept in a log for
 * summary.json and the report, every ended step is queued for the trace. The recording paths
 * read two atomics (steps_active, steps_now) and add to two counters, nothing else. */
#ifndef SYNCSPY_STEPS_H
#define SYNCSPY_STEPS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/record/step_now.h"
#include "output/schedule.h"
#include "output/model.h"
#include "output/trace_writer.h"

/* steps_active, steps_now and the open step's syncs: agent/record/step_now.h, which the steps
 * write at each boundary and the recording paths read. */

/* Step 0 begins at now (the agent's start, or a forked child's). trace_launches:
 * SYNCSPY_LAUNCHES=trace (agent_launch_tracing follows the active steps). */
void steps_init(const struct schedule *schedule, bool trace_launches, uint64_t now);

/* A step boundary at now. explicit_mark: syncspy_step(); otherwise an automatic source (the
 * optimizer hook), ignored once an explicit mark was seen. Returns STEPS_MARK_ACTIVE_ENDED when
 * an active step ended (its records are worth flushing soon), STEPS_MARK_QUEUE_DEEP when the
 * queue of ended steps wants a drain now. A mark made while the same thread is in steps_mark
 * (from a signal handler) is ignored (returns 0): the step lock is held by the code it
 * interrupted. */
#define STEPS_MARK_ACTIVE_ENDED 1u
#define STEPS_MARK_QUEUE_DEEP 2u
#define STEPS_MARK_REQUEST_APPLIED 4u /* a start/stop request took effect: acknowledge it soon */
/* optimizers: how many optimizers stepped in the step this mark ends (the optimizer hook's
 * count, agent/step/pyhook.c; 0 for an explicit mark) */
unsigned steps_mark(uint64_t now, bool explicit_mark, unsigned optimizers);

/* A place where the open step may turn out to have ended (an optimizer's first step, before it
 * is known whether it steps beside the others or after them): the step's time and figures so far
 * are kept, until the next mark. steps_mark_split then makes two automatic marks, the first at
 * that cut (its figures; optimizers_before: the optimizers that stepped in that step), the second
 * at now (what came after the cut); one at now alone when no cut was kept in this step. The
 * records made between the two keep the earlier step's number. */
void steps_cut_here(uint64_t now);
unsigned steps_mark_split(uint64_t now, unsigned optimizers_before, unsigned optimizers);

/* At exit: closes the step still open (recorded as partial, and only if anything happened in
 * it) and fills the step fields of proc (proc->steps and proc->ranges stay owned here): the
 * totals, start-up (step 0, when a mark ended it), how steps were marked, which were recorded
 * and why. */
void steps_finish(struct rep_process *proc, uint64_t now);

/* Steps begun so far that the schedule does not record, the current one included (lock-free). */
uint64_t steps_unrecorded(void);

/* The thread that made the latest step mark (0: none yet). */
uint32_t steps_marker_tid(void);

/* The ended steps queued for the trace: takes at most max, oldest first. */
size_t steps_take_events(struct tw_step *out, size_t max);
/* Step events that found the queue at its cap (the trace misses them; summary.json and the
 * report do not), with the totals of the active ones among them (the trace's STEPS_LOST). */
struct steps_lost {
    uint64_t records, active, syncs, blocked_ns, launches, wall_ns;
};
struct steps_lost steps_events_lost(void);

/* ---- recording on request (agent/background/control.h: `syncspy start/stop`, syncspy.start()/stop()) ----
 * A request waits for the next step boundary (the last one made before it wins); there a start
 * records the steps that begin from it on (steps N+1 .. N+k when step N ended; k 0: until a
 * stop), besides the schedule's, and a stop ends what a start began. */
enum steps_command { STEPS_START = 1, STEPS_STOP = 2 };
#define STEPS_REQUEST_ID_MAX 64
struct steps_request {
    uint8_t command;                   /* enum steps_command */
    uint8_t cause;                     /* enum rep_cause: REP_CAUSE_START or REP_CAUSE_PY_START */
    uint64_t steps;                    /* a start's count (0: until a stop) */
    char id[STEPS_REQUEST_ID_MAX + 1]; /* the requester's token, acknowledged with it */
};
void steps_request(const struct steps_request *r);
/* A request waits for its step boundary. */
bool steps_request_pending(void);
/* The latest request applied at a boundary. */
struct steps_applied {
    uint64_t seq; /* 1, 2, ... for each request applied (0: none yet) */
    struct steps_request req;
    uint64_t step; /* the step that ended at the boundary */
    /* a start: the steps it records (last UINT64_MAX: until a stop); a stop: the steps the
     * start it ended recorded (0, 0: none was recording) */
    uint64_t first, last;
};
struct steps_applied steps_applied(void);

/* The step lock, for the fork handlers (agent/process/fork_locks.h: taken around fork(), before the
 * registry lock). */
pthread_mutex_t *steps_lock(void);
/* In a fork's child (the lock free again): it starts at step 0 again, at now. */
void steps_atfork_child(uint64_t now);

#endif
