/* agent/background/stack_names.h: a stack's words as frames, the one place addresses become names: a native
 * return address through the symbolizer (minus one: the call instruction, not the one after it),
 * a Python frame through the names kept while it ran (agent/record/python_names.h). For the trace (the
 * flusher's namer) and for summary.json and the report at exit (agent/background/report_model.c). Off every
 * recording path: it may allocate and read files. */
#ifndef SYNCSPY_FRAMES_H
#define SYNCSPY_FRAMES_H

#include <stdint.h>

#include "output/model.h"
#include "output/trace_writer.h"

struct symbolizer;

/* The frames of a stack's words (collectors/pyframes.h), innermost first, as the trace's frame
 * keys: at most max; returns how many. */
uint32_t stack_names_keys(const uintptr_t *words, uint32_t depth, struct tw_frame_key *keys,
                          uint32_t max);

/* The names of one frame (sym may be NULL: native frames then keep only their address). Strings
 * are owned by the symbolizer or the Python names table and live until exit. */
void stack_names_resolve(struct tw_frame_key key, struct symbolizer *sym, struct rep_frame *out);

/* stack_names_keys then stack_names_resolve for each: at most max frames into out; returns how many. */
uint32_t stack_names_frames(const uintptr_t *words, uint32_t depth, struct symbolizer *sym,
                            struct rep_frame *out, uint32_t max);

#endif
