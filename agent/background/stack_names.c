/* agent/background/stack_names.c: stack words -> frames (see stack_names.h). Runs on the flusher thread and at exit:
 * may allocate (the symbolizer does), never on an application thread's CUDA call. */
#include "agent/background/stack_names.h"

#include <stdlib.h>

#include "agent/record/autograd.h"
#include "agent/record/compiled.h"
#include "agent/step/pyhook.h"
#include "agent/record/python_names.h"
#include "collectors/pyframes.h"
#include "collectors/symbolize.h"
#include "output/backward.h"

#define PYTHON_KEY (1ull << 63)
#define MARK_KEY (1ull << 62)            /* a section marker (collectors/pyframes.h STACK_MARK_*) */
#define FRAMES_ON_STACK TRACE_MAX_FRAMES /* more than any captured stack has (512 words) */

uint32_t stack_names_keys(const uintptr_t *words, uint32_t depth, struct tw_frame_key *keys,
                          uint32_t max)
{
    struct stack_frame stack[FRAMES_ON_STACK];
    struct stack_frame *decoded = max <= FRAMES_ON_STACK ? stack : malloc(max * sizeof *decoded);
    if (!decoded)
        return 0;
    uint32_t n = pyframes_decode(words, depth, decoded, max);
    for (uint32_t i = 0; i < n; i++) {
        const struct stack_frame *f = &decoded[i];
        keys[i] = f->python ? (struct tw_frame_key){f->code, f->lasti | PYTHON_KEY}
                  : f->mark ? (struct tw_frame_key){f->mark, MARK_KEY}
                            : (struct tw_frame_key){f->pc, 0};
    }
    if (decoded != stack)
        free(decoded);
    return n;
}

/* A frame of torch.compile's generated code: the user's line it came from (module: the code),
 * else asked for (once per generated file) and left as it is. */
static void name_generated(struct rep_frame *out)
{
    const struct compiled_line *c = compiled_find(out->file, out->line);
    if (!c) {
        pyhook_request_graphs(out->file);
        return;
    }
    out->function = c->function;
    out->file = c->path;
    out->line = c->line;
    out->module = c->origin;
}

void stack_names_resolve(struct tw_frame_key key, struct symbolizer *sym, struct rep_frame *out)
{
    if (key.b & PYTHON_KEY) {
        const struct pyname *name = python_names_find((uintptr_t)key.a, (uint32_t)key.b);
        *out = (struct rep_frame){.function = name ? name->function : "?",
                                  .module = "",
                                  .file = name ? name->file : "?",
                                  .line = name ? name->line : 0,
                                  .python = true};
        if (name && compiled_is_generated(name->file))
            name_generated(out);
        return;
    }
    if (key.b & MARK_KEY) {
        uint64_t top = key.a & PYFRAME_MARK_MASK;
        bool node = top == STACK_MARK_BACKWARD, unseen = top == STACK_MARK_UNSEEN;
        const char *name = node     ? autograd_name((uint32_t)key.a)
                           : unseen ? backward_cause_key((uint32_t)key.a)
                                    : NULL;
        *out = (struct rep_frame){.function = name ? name : "",
                                  .module = "",
                                  .file = "",
                                  .mark = node     ? REP_MARK_BACKWARD
                                          : unseen ? REP_MARK_UNSEEN
                                                   : REP_MARK_CALLER};
        return;
    }
    uintptr_t pc = (uintptr_t)key.a;
    struct sym_info info = {0};
    if (sym)
        symbolizer_resolve(sym, pc - 1, &info); /* the call, not the return address */
    *out = (struct rep_frame){.function = info.function,
                              .module = info.module ? info.module : "[unknown]",
                              .file = info.file,
                              .line = info.line,
                              .offset = sym ? info.offset : pc - 1};
}

uint32_t stack_names_frames(const uintptr_t *words, uint32_t depth, struct symbolizer *sym,
                            struct rep_frame *out, uint32_t max)
{
    struct tw_frame_key stack[FRAMES_ON_STACK];
    struct tw_frame_key *keys = max <= FRAMES_ON_STACK ? stack : malloc(max * sizeof *keys);
    if (!keys)
        return 0;
    uint32_t n = stack_names_keys(words, depth, keys, max);
    for (uint32_t i = 0; i < n; i++)
        stack_names_resolve(keys[i], sym, &out[i]);
    if (keys != stack)
        free(keys);
    return n;
}
