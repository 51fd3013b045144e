/* agent/record/budget_counts.h: the counts behind sync budgets (the syncspy_tally_* functions of
 * agent/syncspy.h; python/syncspy's budget() and pytest plugin): while a budget region is open
 * anywhere in the process, each recorded sync is also counted per (thread, site) in a table of
 * its own thread. Lock-free: only the owning thread writes its table, any thread reads it. With
 * no region open the recording path pays one relaxed load and a branch (agent/record/core.c). */
#ifndef SYNCSPY_TALLIES_H
#define SYNCSPY_TALLIES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Distinct sites one thread's table itemizes while regions are open; the syncs of any further
 * site are counted together (site 0). */
#define TALLY_SLOTS 64

struct tally_slot {
    _Atomic uint32_t site; /* site id (agent/record/sites.h), 0: free; set once, after its counts */
    _Atomic uint64_t syncs, ns;
};

/* One thread's table. Its counts belong to the counting epoch in `epoch` (an epoch runs from a
 * region opened while none was open until the last open one closes); the owner clears the table
 * at its first sync of a new epoch, and readers take a table of another epoch as empty. A table
 * belongs to one thread for good: when its thread exits it is handed to a later one only once
 * its epoch is over (agent/record/threads.c), so no region ever sees two threads' syncs in one table. */
struct tally_table {
    _Atomic uint64_t epoch;
    uint32_t index;       /* 1-based, in order of creation (syncspy_tally.thread) */
    _Atomic uint32_t tid; /* the owner, set when it takes the table (before any epoch of its) */
    char name[16];        /* its name, likewise */
    _Atomic uint64_t other_syncs, other_ns; /* syncs of no site (tables full) or of no free slot */
    struct tally_slot slot[TALLY_SLOTS];
    struct tally_table
        *next;  /* every table ever made (agent/record/threads.c); set before it is seen */
    bool owned; /* a live thread's (agent/record/threads.c, under its registry lock) */
};

/* The counting state: the epoch in the high 32 bits, the regions open now (in the whole
 * process, syncspy_tally_begin/end) in the low 32. The recording path tests the low half. */
extern _Atomic uint64_t budget_counts_state;

static inline uint32_t budget_counts_open(uint64_t state)
{
    return (uint32_t)state;
}

static inline uint64_t budget_counts_epoch(uint64_t state)
{
    return state >> 32;
}

/* Whether a table whose thread exited may pass to another thread: its epoch is over. */
bool budget_counts_reusable(const struct tally_table *t);

/* One sync of the table's thread (the caller, its owner) at site (0: it has none), blocked ns
 * long. Only while a region is open (the caller checks budget_counts_state). */
void budget_counts_add(struct tally_table *t, uint32_t site, uint64_t ns);

/* A fork's child starts with no region open (the regions were the parent's threads'). */
void budget_counts_atfork_child(void);

#endif
