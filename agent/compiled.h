/* agent/compiled.h: the user's line of each line of torch.compile's generated code. FX writes a
 * graph's forward as Python ("<eval_with_key>.N"), each node under a comment naming the line it
 * was traced from ("# File: /path/train.py:23 in forward, code: ...", in a backward graph "#
 * Backward of forward node: File: ..."). agent/dynamo_hide.py reads those comments after each
 * compilation and hands the ranges here (the bridge in agent/pyhook.c, with the GIL); a Python
 * frame of generated code is then named by the user's line when it is first seen
 * (agent/pynames.c), on any thread, without a lock. Never the user's line for a range not
 * handed over: that frame keeps its generated name and counts as the runtime's (output/hints.c).
 * FX generates a module's code at its first call, so the ranges are asked for when a sync is
 * first seen in code that has none (pyhook_request_graphs), and frames are named by them when
 * they are written (agent/frames.c), not when first recorded. */
#ifndef SYNCSPY_COMPILED_H
#define SYNCSPY_COMPILED_H

#include <stdbool.h>
#include <stdint.h>

struct compiled_line {
    const char *key;      /* the generated code's file name: "<eval_with_key>.3" */
    uint32_t first, last; /* its lines [first, last] that the comment covers */
    const char *path;     /* the user's file, line and function (the FX comment's) */
    uint32_t line;
    const char *function;
    bool backward;        /* a backward graph's: the forward line the node came from */
    const char *origin;   /* what the report says it came from: the key, " backward" after a
                           * backward graph's (set by compiled_add) */
};

/* Whether a Python frame's file is code torch.compile generated (FX: "<eval_with_key>.N"). */
bool compiled_is_generated(const char *file);

/* Adds one range (copied). The GIL holder only (one writer); false when the table is full (the
 * range then stays unnamed, counted in compiled_dropped). */
bool compiled_add(const struct compiled_line *l);

/* The range of `file` that holds `line`, NULL when none was handed over. Any thread. */
const struct compiled_line *compiled_find(const char *file, uint32_t line);

/* Ranges refused because the table was full. */
uint32_t compiled_dropped(void);

#endif
