/* output/backward.h: the rule that tells from a sync's own frames which autograd node's backward
 * was running: torch's generated nodes (torch::autograd::generated::IndexBackward0::apply) and
 * custom autograd.Functions (torch::autograd::PyNode::apply under the Function's Python
 * backward). Pure; used by the agent to learn which node types sync (agent/background/flusher.c) and by
 * the report for backward syncs whose forward line was not recorded. */
#ifndef SYNCSPY_BACKWARD_H
#define SYNCSPY_BACKWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

/* The type name of the node (as torch names it: grad_fn.name(), e.g. "IndexBackward0",
 * "MyFnBackward") whose backward runs in frames[0..n), innermost first, into out, and in *at
 * (may be NULL) the index of the frame that says so (the node's apply); false when no node runs
 * there. */
bool backward_node_of(const struct rep_frame *frames, uint32_t n, char *out, size_t cap,
                      uint32_t *at);

/* Why a backward sync has no forward line (agent/record/autograd.h enum backward_cause, recorded with
 * the sync): its key, as files carry it (the marker frame's function: "not_attributed_step",
 * "other_thread", ...), NULL for a code without one; and a key's words for the report ("made
 * in a step without attribution ..."), NULL for a key it does not know. One table. */
const char *backward_cause_key(unsigned cause);
const char *backward_cause_text(const char *key);
/* The key of the cause whose syncs the report estimates for the forward lines seen making the
 * same node at the same native stack (the steps without attribution under auto). */
#define BACKWARD_CAUSE_KEY_STEP "not_attributed_step"

#endif
