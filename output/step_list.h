/* output/step_list.h: a process's listed steps (rep_process), read in order whichever way they
 * are held: an array of struct rep_step (the CLI's readers, the tests), or the agent's packed
 * list, which its step mark appends to (agent/step/steps.c: ~11 bytes a step instead of 48; a
 * list of 65,536 steps is 0.7 MiB, not 3 MiB). Appending takes no lock and calls no malloc (the
 * caller's memory and lock); reading is for the exit's writers, the CLI's and the agent's. */
#ifndef SYNCSPY_STEP_LIST_H
#define SYNCSPY_STEP_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

/* One step packed, at most: five LEB128 varints of 64 bits (10 bytes each) and a flag byte. */
#define STEP_LIST_BYTES_MAX 51

/* The packed list: for each step, the varints of its distance from the step after the one
 * before it, wall_ns, syncs, blocked_ns and launches, then its flags. */
struct step_list {
    uint8_t *bytes;     /* the caller's: room for STEP_LIST_BYTES_MAX bytes a step appended */
    size_t len;         /* bytes used */
    size_t n;           /* steps in it */
    uint64_t next_step; /* the step after the last one appended (0 when none was) */
};

/* Appends st, whose step comes after the last one's. */
void step_list_append(struct step_list *l, const struct rep_step *st);

/* Reads p's listed steps in order (steps[], else step_list): begin, then next until it returns
 * false, after p->nsteps of them. */
struct rep_step_cursor {
    const struct rep_process *p;
    size_t i, off;
    uint64_t next_step;
};
void rep_steps_begin(struct rep_step_cursor *c, const struct rep_process *p);
bool rep_steps_next(struct rep_step_cursor *c, struct rep_step *out);

/* How many steps p lists: nsteps, or 0 when it holds no list. */
size_t rep_steps_listed(const struct rep_process *p);
/* Listed step i into *out (a packed list is read from its start: for the few the report asks
 * for). False when i is not listed. */
bool rep_step_at(const struct rep_process *p, size_t i, struct rep_step *out);

#endif
