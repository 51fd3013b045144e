/* agent/autograd.h: backward-pass syncs named by the forward line that made them. A sync made while
 * an autograd node runs (in the engine's thread) gets the node's name and the Python stack that
 * created the node in forward appended to its stack words (collectors/pyframes.h's section
 * markers), and the stack of the thread that called backward. How the agent learns which node
 * runs: Python code of the agent's own (agent/autograd_attr.py, installed with the optimizer
 * step hook by agent/pyhook.c) pushes a TorchFunctionMode for an attribution step, tags every
 * node an op makes (walking next_functions) of the types seen syncing with its forward stack (autograd_capture_python) and hooks
 * them (pre hook: autograd_enter, post hook: autograd_leave). This module keeps the tables;
 * SYNCSPY_BACKWARD decides when attribution runs (see autograd_plan). */
#ifndef SYNCSPY_AUTOGRAD_H
#define SYNCSPY_AUTOGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SYNCSPY_BACKWARD: auto (default: the node types seen syncing are attributed in the step after
 * one is first seen, then every AUTOGRAD_EVERY_STEPS active steps), all (every node type in every
 * active step: costly, for a short run that must name every backward sync), off. */
enum backward_mode { BACKWARD_AUTO, BACKWARD_ALL, BACKWARD_OFF };
#define AUTOGRAD_EVERY_STEPS 100

/* The id (>= 1) of an autograd node type's name, interned; 0 when the table is full. */
uint32_t autograd_name_id(const char *name);
/* The name of an id, or NULL. */
const char *autograd_name(uint32_t id);

/* The calling thread's Python frames, innermost first, without the agent's own Python frames
 * (those of agent/autograd_attr.py), kept in a table: their id (>= 1), or 0 when none could be
 * kept. Their names are resolved now, while the frames run. Call with the GIL held. */
uint32_t autograd_capture_python(void);

/* Node hooks, on the engine's thread with the GIL: the node of name id `name` created by forward
 * stack `forward` runs now / is done. */
void autograd_enter(uint32_t forward, uint32_t name);
void autograd_leave(void);

/* Around a backward call (Tensor.backward, torch.autograd.backward/grad), on the thread that
 * makes it: its stack is the caller's section of the backward syncs meanwhile. */
void autograd_caller_begin(void);
void autograd_caller_end(void);

/* On the recording path (the sync's thread, no lock, no allocation): when a node runs on this
 * thread, appends its section markers and the kept stacks to words[0..n); returns the new
 * length (at most max). */
int autograd_append(uintptr_t *words, int n, int max);

/* The flusher saw a new stack whose own frames run the backward of node type `name`. */
void autograd_seen(const char *name);

/* For agent/autograd_attr.py at each step end (under auto, after the flusher named the stacks
 * made since the last plan, so that a type seen syncing is in it whatever the flusher's pace): "<generation>|<mode>|<attribute>|<name>,<name>...":
 * generation grows when a new node type is seen; mode 0 off, 1 auto, 2 all; attribute 1 when
 * the step now beginning is to be attributed (recorded by the schedule, and new types seen or
 * AUTOGRAD_EVERY_STEPS active steps since the last attribution, or mode all); the names are the
 * node types to tag ("*": every one). Writes at most cap bytes, NUL-terminated. */
void autograd_plan(char *buf, size_t cap);

/* At the start (SYNCSPY_BACKWARD), and in a fork's child (it keeps the tables). */
void autograd_init(enum backward_mode mode);

#endif
