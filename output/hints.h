/* output/hints.h: the rules that read a site's stack: which frame is the user's (the report groups
 * sites by it) and what to do about the sync (the hint table, output/hints.c). Pure functions of
 * the report model: no state, no I/O, no allocation. */
#ifndef SYNCSPY_HINTS_H
#define SYNCSPY_HINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

/* Index of the site's innermost user frame: the first frame, innermost first, of the sync's own
 * frames that is neither the CUDA runtime, PyTorch, CPython, the C/C++ runtime nor syncspy (by
 * module basename), nor a Python frame of the standard library or of torch itself; 0 when every
 * frame is such. */
uint32_t hints_user_frame(const struct rep_site *site);
/* The innermost frame of a training framework (Lightning, Hugging Face's Trainer, Accelerate,
 * DeepSpeed; not torch's own packages) between the sync and the user's frame `user` (an index
 * of the site's own frames), or NULL: the framework's line that made the wait, which the
 * report shows under the user's (issue 35 item 2). */
const struct rep_frame *hints_framework_frame(const struct rep_site *site, uint32_t user);

/* Whether a frame is the runtime's or a framework's (not the user's), by the rules above. */
bool hints_frame_is_runtime(const struct rep_frame *f);

/* Whether a native frame is torch.compile's frame evaluation (Dynamo's eval-frame hook in
 * libtorch_python, "dynamo_..."): between two Python frames it only says "Dynamo ran this". */
bool hints_frame_is_dynamo_eval(const struct rep_frame *f);

/* A backward-pass sync (output/model.h's sections): the innermost user frame of the forward
 * stack that created its autograd node / of the stack that called backward (absolute indexes
 * into site->frames); *found false when the site has no such section or no user frame in it. */
uint32_t hints_forward_user_frame(const struct rep_site *site, bool *found);
/* Whether the sync is torch.compile's own work (compiling, loading, autotuning), not the
 * program's: kept out of the step rates, shown apart. */
bool hints_compile_work(const struct rep_site *site);
/* The backward of a compiled graph (AOTAutograd's one node, CompiledFunctionBackward): the
 * innermost frame of its own generated code named by a user line (agent/record/compiled.h), the line
 * of the forward node its code came from; *found false when there is none. */
uint32_t hints_compiled_backward_frame(const struct rep_site *site, bool *found);
uint32_t hints_caller_user_frame(const struct rep_site *site, bool *found);
/* A backward-pass sync's line, as the report's row has it: the compiled graph's forward line
 * (hints_compiled_backward_frame) when there is one, else the forward user frame. */
uint32_t hints_backward_line_frame(const struct rep_site *site, bool *found);
/* The innermost frame of the sync's own stack in code torch.compile generated that no user line
 * names (its graph was not found: agent/record/compiled.h), or NULL: the row's line is then the
 * compiled function's call, and the report says so. */
const struct rep_frame *hints_unnamed_generated(const struct rep_site *site);

/* The autograd node whose backward the site ran in (its marker, else its frames: output/backward.h)
 * into buf; false when it ran in none. */
bool hints_backward_node(const struct rep_site *site, char *buf, size_t cap);

/* The operator a site belongs to and the advice for it (output/hints.c's table). */
struct site_op {
    char op[128];         /* what the report calls it: "x[bool_mask]", "Tensor.__bool__",
                          * "torch.save", "aten::histc" (an operator with no rule), else the API */
    char aten[128];       /* the outermost ATen operator below the user frame, the one the user
                          * called ("aten::index.Tensor"); "" when the stack shows none */
    char aten_inner[128]; /* the innermost, the one that made the wait ("aten::nonzero") */
    char matched[200];    /* the exact name the rule is keyed by (a node's marker or frame for a
                          * backward-pass sync); "" when no rule applies */
    char hint[400];       /* what to do about it; "" when nothing is known beyond the API */
    char compiled[400];   /* the sync ran eagerly at a torch.compile graph break (its user frame
                          * is run by Dynamo's frame evaluation): what to do about it in
                          * compiled code; "" otherwise */
};

/* The operator and advice of a site. A sync in an autograd node's backward gets the rule of the
 * forward op that made the node (by the node's type, e.g. IndexBackward0: the boolean-mask index).
 * Any other sync: among the frames from the CUDA call to below the user frame, the first rule of
 * torch's Python functions (from the user frame inwards), then of its native bindings, then of
 * the ATen operators (from the outermost, with the innermost deciding the argument kind), then
 * of the API; an ATen operator with no rule gets a hint that names it. */
void hints_op(const struct rep_site *site, struct site_op *out);

/* Operators summed over the sites of one line (issue 35 item 1: every op of a row, in the report
 * and in `check --json`): each site's op added with its counts; an op past cap is not kept
 * (its site counted in *more). Returns the new number of sums. */
struct hints_op_sum {
    struct site_op op;
    uint64_t count, ns;
};
size_t hints_op_sum_add(struct hints_op_sum *sum, size_t n, size_t cap, const struct site_op *op,
                        uint64_t count, uint64_t ns, size_t *more);
/* The heaviest (blocked time) first. */
void hints_op_sums_sort(struct hints_op_sum *sum, size_t n);

/* Row i of the table (its exact key and what the report calls the op); false past the end. For
 * tests/unit/test_hints.c, which checks that every row has a case of its own. */
bool hints_rule_at(size_t i, const char **key, const char **op);

#endif
