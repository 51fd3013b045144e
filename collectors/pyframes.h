/* collectors/pyframes.h: the calling thread's Python frames, read from CPython's own structures
 * without the GIL and without allocating. At a CUDA call the thread normally does not hold the
 * GIL (PyTorch's bindings and ctypes release it), and taking it there can deadlock; but the
 * thread is blocked inside our hook, so its own frame chain cannot change under us. Only this
 * thread's frames are read. An interpreter whose layout is unknown gets no Python frames (one
 * notice), never a guess. */
#ifndef SYNCSPY_PYFRAMES_H
#define SYNCSPY_PYFRAMES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PYFRAMES_MAX 128

/* A Python frame inside a stack's words: two words, (PYFRAME_MARK | instruction index) then the
 * code object's address. Native return addresses never have these top bits (they would be
 * kernel addresses). */
#define PYFRAME_MARK 0xfffe000000000000ull
#define PYFRAME_MARK_MASK 0xffff000000000000ull
static inline bool pyframe_word(uintptr_t w)
{
    return (w & PYFRAME_MARK_MASK) == PYFRAME_MARK;
}

/* A section marker inside a stack's words (one word): the frames after STACK_MARK_BACKWARD are the
 * forward stack that created the autograd node then running (its name id in the low 32 bits,
 * agent/record/autograd.h), the frames after STACK_MARK_CALLER the stack of the thread that called
 * backward. A sync's own frames come first. */
#define STACK_MARK_BACKWARD 0xfffd000000000000ull
#define STACK_MARK_CALLER 0xfffc000000000000ull
/* A backward sync with no forward line: why (agent/record/autograd.h enum backward_cause, low bits). */
#define STACK_MARK_UNSEEN 0xfffb000000000000ull
static inline bool stack_mark_word(uintptr_t w)
{
    uintptr_t top = w & PYFRAME_MARK_MASK;
    return top == STACK_MARK_BACKWARD || top == STACK_MARK_CALLER || top == STACK_MARK_UNSEEN;
}

struct py_raw_frame {
    uintptr_t code;   /* PyCodeObject * */
    uint32_t lasti;   /* index of the executing instruction, in code units */
    bool group_end;   /* the outermost frame run by one C-level evaluation call */
    uint8_t zero_[3]; /* no padding: captures compare as bytes (agent/record/capture_memo.c) */
    uintptr_t frame;  /* the frame itself (PyFrameObject * or _PyInterpreterFrame *) */
};
_Static_assert(sizeof(struct py_raw_frame) == 24, "struct py_raw_frame has no padding");

/* Finds a CPython in this process and its layout; cheap after the first successful call.
 * Until an interpreter is found it looks again at most every 500 ms (now_ns: CLOCK_MONOTONIC).
 * Returns true when Python frames can be read. */
bool pyframes_ready(uint64_t now_ns);
/* The flag of a thread detecting it (a lock only ever tried), for the agent's fork handlers
 * (cleared in a fork's child). */
_Atomic bool *pyframes_detecting(void);

/* The calling thread's Python frames, innermost first (0 when the thread has none). */
int pyframes_capture(struct py_raw_frame *out, int max);
/* The same frames (max of them at most) as a kept stack's words, two a frame (PYFRAME_MARK |
 * lasti, then the code object): what a caller that keeps the stack by value needs, without the
 * frames' own records; returns the frames' count. */
int pyframes_capture_words(uintptr_t *words, int max);
/* The innermost frame's code and instruction (what a node made now is keyed by); false when the
 * thread runs no Python frame. */
bool pyframes_innermost(uintptr_t *code, uint32_t *lasti);

/* Is pc (a return address) inside CPython's evaluation loop (_PyEval_EvalFrameDefault)? */
bool pyframes_is_eval_pc(uintptr_t pc);

/* 3.12+ builds whose evaluation loop is not all inside _PyEval_EvalFrameDefault's symbol (GCC's
 * hot/cold partitioning moves the loop into an unnamed ".cold" part: Debian's 3.14 executable):
 * when a capture with Python frames found none of the loop's pcs in its native stack, returns
 * the address of the innermost evaluation call's entry frame, a local of that call on the C
 * stack, for the caller to find the function whose native frame holds it
 * (native_stack_function_holding) and hand its range to pyframes_learn_eval_range (0, 0 when
 * none was found). 0 when nothing is to be learnt: a few attempts per process, one at a time. */
uintptr_t pyframes_eval_range_wanted(const uintptr_t *native, int n_native, int n_py);
void pyframes_learn_eval_range(uintptr_t lo, uintptr_t hi);
/* Whether any of native[0..n_native) is inside a known evaluation loop (a merge then places every
 * Python frame by its loop, and no range learnt later changes it). */
bool pyframes_stack_shows_eval(const uintptr_t *native, int n_native);
/* Counts the ranges learnt so far: a merge made under one count may differ under the next. */
uint32_t pyframes_eval_generation(void);

/* Merges native return addresses (innermost first) with Python frames: each evaluation-loop
 * frame is replaced by the group of Python frames it runs; Python frames left over (when the
 * native stack did not show their evaluation loop) go after the innermost native frames that
 * precede the first loop, in order. Returns the number of words written to out (at most
 * max_words; a Python frame takes two words). */
int pyframes_merge(const uintptr_t *native, int n_native, const struct py_raw_frame *py, int n_py,
                   uintptr_t *out, int max_words);

/* One frame of a stack's words: a native return address, a Python frame, or a section marker. */
struct stack_frame {
    bool python;
    uintptr_t mark; /* a section marker word (STACK_MARK_*), else 0 */
    uintptr_t pc;   /* native: the return address */
    uintptr_t code; /* python: the code object */
    uint32_t lasti; /* python: instruction index */
};
/* Decodes words[0..n) into at most max frames; returns how many. */
uint32_t pyframes_decode(const uintptr_t *words, uint32_t n, struct stack_frame *out, uint32_t max);

/* Whether `code`'s file name is `name` (ASCII, shorter than 64 bytes): the file alone, without
 * resolving a line (what pyframes_resolve costs most: the line table). */
bool pyframes_file_is(uintptr_t code, const char *name);

/* Names of a Python frame, read from its live code object (call on the capturing thread, while
 * the frame still runs). Strings are cut to fit; returns 0, or -1 when the object does not look
 * like a code object. */
int pyframes_resolve(uintptr_t code, uint32_t lasti, char *file, size_t file_len, char *func,
                     size_t func_len, uint32_t *line);

/* True when code objects carry no qualified name (CPython 3.9 and 3.10: no co_qualname) and
 * pyframes_qualname must derive it. */
bool pyframes_derives_qualnames(void);

/* 3.9/3.10: the qualified name of frames[i] (a capture of the calling thread's frames, still
 * running: call inside the CUDA call that captured them), as CPython 3.11 would name it
 * ("Loss.forward", "outer.<locals>.inner"), written to func. Found from the function that owns
 * the code: the code's constant in an outer frame's code (nested functions, lambdas,
 * comprehensions), the class of the frame's first argument and its MRO (methods, class
 * methods), the frame's module globals (functions, classes, static methods, properties,
 * functools.wraps wrappers, functions nested in them). Reads the frame's own locals and the
 * dictionaries it leads to, bounded; never calls Python. False when no owner was found (the
 * plain name stands) or on other versions. */
bool pyframes_qualname(const struct py_raw_frame *frames, int n, int i, char *func,
                       size_t func_len);

/* True when a CPython was found whose frames this code cannot read (said once by the agent). */
bool pyframes_unsupported(void);

/* "CPython 3.11" or why Python frames are off; for notices. */
const char *pyframes_status(void);

/* Line of instruction index `lasti` (code units) from a code object's line table, in the
 * format of the given layout (py_line_table). Pure function; exposed for unit tests. -1 when
 * the instruction has no line. */
int pyframes_line_for(int format, const uint8_t *table, size_t len, int firstlineno,
                      uint32_t lasti);

#endif
