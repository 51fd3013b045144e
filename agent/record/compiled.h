/* agent/record/compiled.h: the user's line of each line of torch.compile's generated code. FX writes a
 * graph's forward as Python ("<eval_with_key>.N") at the module's first call and keeps each
 * line's node (GraphModule._lineno_map) and each node's stack trace (node.meta["stack_trace"]; a
 * backward graph's node carries its forward node's). When a sync is first seen in generated code
 * that has no name here, pyhook_request_graphs asks agent/step/dynamo_hide.py (a pending call) for the
 * ranges of every GraphModule not looked at yet; they come here through the bridge in
 * agent/step/pyhook.c, with the GIL. Frames are named by them when they are written (agent/background/stack_names.c),
 * on any thread, without a lock. Never the user's line for a range not handed over: that frame
 * keeps its generated name and counts as the runtime's (output/hints.c). */
#ifndef SYNCSPY_COMPILED_H
#define SYNCSPY_COMPILED_H

#include <stdbool.h>
#include <stdint.h>

struct compiled_line {
    const char *key;      /* the generated code's file name: "<eval_with_key>.3", a path */
    uint32_t first, last; /* its lines [first, last] made from one user line */
    const char *path;     /* the user's file, line and function (the node's stack trace's) */
    uint32_t line;
    const char *function;
    bool backward;      /* a backward graph's: the forward line the node came from */
    const char *origin; /* what the report says it came from: the key ("<inductor>." and 8
                           * characters of an output code's name), " backward" after a
                           * backward graph's (set by compiled_add) */
};

/* Whether a Python frame's file is code torch.compile generated (common/gencode.h: FX's
 * "<eval_with_key>.N", Inductor's output code). */
bool compiled_is_generated(const char *file);

/* Adds one range (copied). The GIL holder only (one writer); false when the table is full (the
 * range then stays unnamed; _syncspy_graphs says how many were kept under SYNCSPY_DEBUG=2). */
bool compiled_add(const struct compiled_line *l);

/* The range of `file` that holds `line`, NULL when none was handed over. Any thread. */
const struct compiled_line *compiled_find(const char *file, uint32_t line);

#endif
