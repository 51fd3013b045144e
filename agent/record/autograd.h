/* agent/record/autograd.h: backward-pass syncs named by the forward line that made them. A sync made while
 * an autograd node runs (in the engine's thread) gets the node's name and the Python stack that
 * created the node in forward appended to its stack words (collectors/pyframes.h's section
 * markers), and the stack of the thread that called backward. How the agent learns which node
 * runs: through torch's anomaly mode where it can (agent/record/autograd_nodes.h: a Node constructor
 * keeps its forward stack, get_current_node() finds it at the sync), else Python code of the agent's own (agent/step/autograd_attr.py, installed with the optimizer
 * step hook by agent/step/pyhook.c) pushes a TorchFunctionMode for an attribution step, tags every
 * node an op makes (walking next_functions) of the types seen syncing with its forward stack (autograd_capture_python) and hooks
 * them (pre hook: autograd_enter, post hook: autograd_leave). This module keeps the tables;
 * SYNCSPY_BACKWARD decides when attribution runs (see autograd_plan). */
#ifndef SYNCSPY_AUTOGRAD_H
#define SYNCSPY_AUTOGRAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/config.h" /* enum backward_mode (SYNCSPY_BACKWARD) */

#define AUTOGRAD_EVERY_STEPS 100

/* The tables' lock, for the fork handlers (agent/process/fork_locks.h: taken around fork()). */
pthread_mutex_t *autograd_lock(void);
/* The id (>= 1) of an autograd node type's name, interned; 0 when the table is full. */
uint32_t autograd_name_id(const char *name);
/* The name of an id, or NULL. */
const char *autograd_name(uint32_t id);

/* The calling thread's Python frames, innermost first, without the agent's own Python frames
 * (those of agent/step/autograd_attr.py), kept in a table: their id (>= 1), or 0 when none could be
 * kept. Their names are resolved now, while the frames run. Call with the GIL held. */
uint32_t autograd_capture_python(void);
/* The same, called from no Python code of the agent's (a Node constructor: autograd_nodes.h). */
uint32_t autograd_capture_python_outside(void);

/* The innermost frame of kept stack `id` (where its node was made); false when none. No lock. */
bool autograd_kept_innermost(uint32_t id, uintptr_t *code, uint32_t *lasti);

/* Why a backward sync has no forward line, as the agent knew it when the sync was made: a
 * marker (STACK_MARK_UNSEEN | cause) among its stack words, named by output/backward.h
 * (backward_cause_key). NONE: the step is an attribution step (the state), nothing missing. */
enum backward_cause {
    BACKWARD_CAUSE_NONE = 0,
    BACKWARD_CAUSE_STEP = 1,      /* sampled: this step was not an attribution step */
    BACKWARD_CAUSE_COMPILE = 2,   /* torch.compile in use: attribution stepped aside */
    BACKWARD_CAUSE_OFF = 3,       /* SYNCSPY_BACKWARD=off */
    BACKWARD_CAUSE_NO_HOOK = 4,   /* no optimizer step seen yet (start-up, or no torch.optim) */
    BACKWARD_CAUSE_UNTAGGED = 5,  /* attribution step, but the node was not hooked (its type not
                                   * yet seen syncing when the step began) */
    BACKWARD_CAUSE_THREAD = 6,    /* not made by this step's ops on the training thread: in
                                   * another thread (or before the step) */
    BACKWARD_CAUSE_NO_OP = 7,     /* made on the training thread in this step, by no Python op */
    BACKWARD_CAUSE_BROKEN = 8,    /* attribution stopped: this torch is not as expected */
    BACKWARD_CAUSE_UNWATCHED = 9, /* attribution step (the anomaly engine, autograd_nodes.h), but
                                   * the node was made while it did not watch: inside a backward
                                   * call, or before attribution began */
    BACKWARD_CAUSE_NO_RING = 10,  /* made in a thread the anomaly engine kept no stacks for: every
                                   * ring was held by a live thread (autograd_nodes.c RINGS_MAX) */
    BACKWARD_CAUSE_RING_REUSED = 11, /* made in a thread that ended, whose ring a newer thread
                                      * took before this node's backward ran */
    BACKWARD_CAUSES
};

/* Node hooks, on the engine's thread with the GIL: the node of name id `name` created by forward
 * stack `forward` (0: none known, for `cause`) runs now / is done. */
void autograd_enter(uint32_t forward, uint32_t name, uint32_t cause);
void autograd_leave(void);

/* From agent/step/autograd_attr.py at each step end: the state of the step now beginning (NONE: it is
 * attributed; else why not). */
void autograd_set_state(uint32_t cause);
/* Start-up is attributed (agent/step/pyhook.c, when the hook is registered and node creation is
 * watched from the sequence number hook): state NONE until the first step end sets one. */
void autograd_start_up(void);
/* Whether the step now ending was attributed (agent/step/steps.c, for its step record): start-up is
 * not counted among the attribution steps (it is not a training step, nor in the rates). */
bool autograd_step_attributed(void);

/* Around a backward call (Tensor.backward, torch.autograd.backward/grad), on the thread that
 * makes it: its stack is the caller's section of the backward syncs meanwhile. */
void autograd_caller_begin(void);
void autograd_caller_end(void);

/* The node running on a sync's thread as the sequence number hook's engine knows it
 * (agent/record/autograd_nodes.h nodes_current): the forward stack kept for it (0: none, for
 * cause), its type's name id. */
struct backward_node {
    uint32_t forward, name, cause;
};

/* On the recording path (the sync's thread, no lock, no allocation): when a node runs on this
 * thread (node: the engine's, NULL when it knows none; else the mode engine's hooks'), appends
 * its section markers and the kept stacks to words[0..n); on autograd's own thread
 * (autograd_thread: torch names it pt_autograd_<device>; every sync there is a backward sync)
 * with no node known, one STACK_MARK_UNSEEN marker saying why. Returns the new length (at most
 * max). */
int autograd_append(uintptr_t *words, int n, int max, bool autograd_thread,
                    const struct backward_node *node);
/* Whether autograd_append may add anything to a capture with these arguments (false: the capture
 * is the same site whenever its stacks are, agent/record/capture_memo.h). */
bool autograd_appends(bool autograd_thread, const struct backward_node *node);

/* The flusher saw a new stack whose own frames run the backward of node type `name`. */
void autograd_seen(const char *name);

/* At each step end, from agent/step/pyhook.c's optimizer step hook (under auto, after the flusher
 * named the stacks made since the last plan, so that a type seen syncing is in it whatever the
 * flusher's pace): whether the step now beginning is to be attributed (recorded by the schedule,
 * and new types seen or AUTOGRAD_EVERY_STEPS active steps since the last attribution, or mode
 * all); if so, buf gets the node types to tag, "<name>,<name>..." ("*": every one), at most cap
 * bytes, NUL-terminated (empty when not). nodes_watched: node creation is watched from the
 * sequence number hook (agent/record/autograd_nodes.h nodes_hooked), where auto is all. */
bool autograd_plan(char *buf, size_t cap, bool nodes_watched);

/* At the start (SYNCSPY_BACKWARD), and in a fork's child (it keeps the tables). */
void autograd_init(enum backward_mode mode);

#endif
