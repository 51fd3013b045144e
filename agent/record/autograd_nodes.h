/* agent/record/autograd_nodes.h: the engine of backward attribution built on torch's anomaly mode
 * (issue 26 item 2): with anomaly mode on, every autograd Node constructor calls
 * torch.fx.traceback.format_stack() (PyAnomalyMetadata::store_stack, libtorch_python); the agent
 * puts a C function there that keeps the creating thread's Python stack under the node's key
 * (forward thread id, sequence number: at::RecordFunction::currentThreadId(),
 * at::sequence_number::peek() - 1) in a bounded ring per thread (RINGS_MAX of them, a ring given
 * up when its thread ends and reused by a newer one). At a sync, the node the
 * engine runs on this thread (torch::autograd::get_current_node()) gives that key back: nothing
 * runs per node in backward, nothing per op that makes no node. Offsets inside torch's Node are
 * calibrated once from nodes of known sequence number; anything unexpected turns it off (the
 * TorchFunctionMode path of agent/step/autograd_attr.py is then used). x86-64 only (the sret ABI of
 * get_current_node). */
#ifndef SYNCSPY_AUTOGRAD_NODES_H
#define SYNCSPY_AUTOGRAD_NODES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/record/pyapi.h"

/* With the GIL: resolves torch's symbols (libtorch_cpu already loaded) and checks offsets from
 * `fns` (a list of C++ grad_fn objects made on this thread, CPU), whose sequence numbers are
 * `seqs`; true when every check passed. */
bool nodes_calibrate(PyObject *fns, PyObject *seqs);
/* In a custom Function's backward during calibration (on the engine's thread): finds where the
 * running PyNode keeps its Python object `ctx`; true when found. */
bool nodes_probe_pynode(PyObject *ctx);
/* Whether calibration succeeded (the engine can be used). */
bool nodes_ready(void);
/* Whether calibration saw torch's Node constructors call the interposed
 * at::sequence_number::get_and_increment (entry/torch_seq.c): then the stacks are kept from
 * there, anomaly mode is never turned on and format_stack never replaced. */
bool nodes_hooked(void);
/* From the interposed get_and_increment, on the thread making a node numbered seq (no GIL
 * needed: only this thread's own frames are read): its stack kept while the engine is on. */
void nodes_made(uint64_t seq);
/* Whether the sequence number hook keeps every node's stack (true: start-up, and steps that are
 * not all attributed), or only those made where a node was seen syncing or first seen lately
 * (autograd_nodes.c "origins"): set as an attribution step begins (agent/step/pyhook.c). */
void nodes_keep_every_node(bool every);
/* The interposer found no definition of torch's to call (it numbers nodes itself): the hook is
 * never used for attribution. */
void nodes_hook_unusable(void);

/* Turns the anomaly engine on (true: torch's AnomalyMode on, check_nan off) or off (back as it
 * was); false when it cannot (not ready, or the program turned anomaly mode on itself). */
bool nodes_set_active(bool on);
bool nodes_active(void);
/* Around a backward call on its thread: anomaly mode off meanwhile (torch prints an "Error
 * detected in ..." warning for a node that raises, and parents nodes made in backward), on again
 * after. Return value of begin: whether end must restore it. */
bool nodes_backward_begin(void);
void nodes_backward_end(bool restore);

/* The replacement of torch.fx.traceback.format_stack: the original (delegated to when the
 * program's own anomaly mode or fx's node metadata is on), the module's dict. */
void nodes_set_format_stack(PyObject *original, PyObject *fx_dict, PyObject *py_true);
PyObject *nodes_format_stack(PyObject *self, PyObject *args);

/* On the recording path (no lock, no allocation): the node running on this thread, if any, and
 * the forward stack kept for it. Returns true when a node runs; *forward 0 when none was kept
 * (*cause then BACKWARD_CAUSE_NO_RING or _RING_REUSED when its thread's ring says why, else 0),
 * *name its type's name id (0: unknown). */
bool nodes_current(uint32_t *forward, uint32_t *name, uint32_t *cause);

/* The rings' and types' lock, for the fork handlers (agent/process/fork_locks.h: taken around fork()). */
pthread_mutex_t *nodes_lock(void);
/* In a fork's child: the rings of the parent's other threads (gone in the child) are free. */
void nodes_atfork_child(void);

/* Counters, for SYNCSPY_DEBUG and the bench. */
void nodes_stats(uint64_t *stored, uint64_t *found, uint64_t *missed);

#endif
