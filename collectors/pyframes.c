/* collectors/pyframes.c: Python frames without the GIL (see pyframes.h). Runs on the
 * application's thread inside a CUDA call: no malloc, no locks on the capture path (detection
 * uses a trylock), reads only the calling thread's own frames and the code objects they run,
 * every object's type checked against CPython's own type objects before it is read. */
#include "collectors/pyframes.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "collectors/pylayout.h"
#include "collectors/safe_read.h"
#include "common/compiler.h"

enum { PY_UNKNOWN, PY_READY, PY_UNSUPPORTED };

#define EVAL_MORE_MAX 4
#define EVAL_LEARN_ATTEMPTS 3

/* 3.12+: the innermost evaluation call's entry frame seen by this thread's last capture. */
static SYNCSPY_TLS uintptr_t last_entry_frame;

static struct {
    _Atomic int state;
    _Atomic uint64_t next_try_ns;
    _Atomic bool detecting; /* a thread is detecting (a lock only ever tried) */
    struct py_layout layout;
    void *(*this_tstate)(void);
    uintptr_t eval_lo, eval_hi;
    /* more of the evaluation loop's code, learnt from a live stack (pyframes_learn_eval_range) */
    struct {
        uintptr_t lo, hi;
    } eval_more[EVAL_MORE_MAX];
    _Atomic int n_eval_more;
    _Atomic int eval_learning; /* attempts made (EVAL_LEARN_ATTEMPTS at most), one at a time */
    _Atomic bool eval_learning_now;
    uintptr_t code_type, unicode_type, bytes_type;
    /* 3.9/3.10 qualified names (layout.qual.derive) */
    uintptr_t function_type, tuple_type, dict_type, cell_type, staticmethod_type, classmethod_type,
        property_type;
    int (*gil_check)(void); /* PyGILState_Check: 1 when this thread holds the GIL */
    char status[128];
} py = {.status = "no CPython in this process"};

#define RETRY_NS 500000000ull

static inline uintptr_t load_ptr(uintptr_t base, int32_t off)
{
    uintptr_t v;
    memcpy(&v, (const void *)(base + (uintptr_t)off), sizeof v);
    return v;
}

static inline int32_t load_i32(uintptr_t base, int32_t off)
{
    int32_t v;
    memcpy(&v, (const void *)(base + (uintptr_t)off), sizeof v);
    return v;
}

static inline int64_t load_i64(uintptr_t base, int32_t off)
{
    int64_t v;
    memcpy(&v, (const void *)(base + (uintptr_t)off), sizeof v);
    return v;
}

static inline bool has_type(uintptr_t obj, uintptr_t type)
{
    return obj && (obj & 7) == 0 && type && load_ptr(obj, py.layout.object_type) == type;
}

static uint32_t python_version(void)
{
    const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11+ */
    if (hex)
        return (uint32_t)((*hex >> 24) << 8 | ((*hex >> 16) & 0xff));
    const char *(*get)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    unsigned major, minor;
    if (get && sscanf(get(), "%u.%u", &major, &minor) == 2)
        return major << 8 | minor;
    return 0;
}

static bool size_eval_loop(void *eval)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || sym->st_size == 0)
        return false;
    py.eval_lo = (uintptr_t)eval;
    py.eval_hi = py.eval_lo + sym->st_size;
    return true;
}

/* The type objects the qualified-name search checks objects against (all exported data). */
static bool find_owner_types(void)
{
    py.function_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyFunction_Type");
    py.tuple_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyTuple_Type");
    py.dict_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyDict_Type");
    py.cell_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCell_Type");
    py.staticmethod_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyStaticMethod_Type");
    py.classmethod_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyClassMethod_Type");
    py.property_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyProperty_Type");
    /* safe without the GIL (it only compares thread states); absent: every search is careful */
    py.gil_check = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
    return py.function_type && py.tuple_type && py.dict_type && py.cell_type &&
           py.staticmethod_type && py.classmethod_type && py.property_type;
}

static int detect(void)
{
    int (*initialized)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (!initialized || !initialized())
        return PY_UNKNOWN; /* not Python, or not yet: look again later */
    uint32_t v = python_version();
    const struct py_layout *builtin = py_layout_builtin(v);
    if (builtin) {
        py.layout = *builtin;
    } else {
        void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
        if (v < 0x030D || !runtime || py_layout_from_debug_offsets(runtime, v, &py.layout) != 0) {
            snprintf(py.status, sizeof py.status,
                     "CPython %u.%u: frame layout unknown to this syncspy; native frames only",
                     v >> 8, v & 0xff);
            return PY_UNSUPPORTED;
        }
    }
    py.this_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    py.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    py.unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    py.bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    if (!py.this_tstate || !py.code_type || !py.unicode_type || !py.bytes_type || !eval ||
        !size_eval_loop(eval)) {
        snprintf(py.status, sizeof py.status,
                 "CPython %u.%u: interpreter symbols not found; native frames only", v >> 8,
                 v & 0xff);
        return PY_UNSUPPORTED;
    }
    if (py.layout.qual.derive)
        py.layout.qual.derive = find_owner_types();
    snprintf(py.status, sizeof py.status, "CPython %u.%u", v >> 8, v & 0xff);
    return PY_READY;
}

bool pyframes_ready(uint64_t now_ns)
{
    int st = atomic_load_explicit(&py.state, memory_order_acquire);
    if (st != PY_UNKNOWN)
        return st == PY_READY;
    if (now_ns < atomic_load_explicit(&py.next_try_ns, memory_order_relaxed))
        return false;
    if (atomic_exchange_explicit(&py.detecting, true, memory_order_acquire))
        return false; /* another thread is looking: never wait on the sync path */
    st = atomic_load_explicit(&py.state, memory_order_relaxed);
    if (st == PY_UNKNOWN && now_ns >= atomic_load_explicit(&py.next_try_ns, memory_order_relaxed)) {
        atomic_store_explicit(&py.next_try_ns, now_ns + RETRY_NS, memory_order_relaxed);
        st = detect();
        atomic_store_explicit(&py.state, st, memory_order_release);
    }
    atomic_store_explicit(&py.detecting, false, memory_order_release);
    return st == PY_READY;
}

_Atomic bool *pyframes_detecting(void)
{
    return &py.detecting;
}

bool pyframes_unsupported(void)
{
    return atomic_load_explicit(&py.state, memory_order_acquire) == PY_UNSUPPORTED;
}

const char *pyframes_status(void)
{
    return py.status;
}

bool pyframes_is_eval_pc(uintptr_t pc)
{
    /* pc is a return address: the call instruction ends at pc, so pc itself may be the end */
    if (pc > py.eval_lo && pc <= py.eval_hi)
        return true;
    int n = atomic_load_explicit(&py.n_eval_more, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (pc > py.eval_more[i].lo && pc <= py.eval_more[i].hi)
            return true;
    return false;
}

uintptr_t pyframes_eval_range_wanted(const uintptr_t *native, int n_native, int n_py)
{
    uintptr_t entry = last_entry_frame;
    if (!entry || n_py <= 0 || n_native <= 0 ||
        atomic_load_explicit(&py.eval_learning, memory_order_relaxed) >= EVAL_LEARN_ATTEMPTS)
        return 0;
    if (pyframes_stack_shows_eval(native, n_native))
        return 0; /* the loop is known where this stack runs */
    if (atomic_exchange_explicit(&py.eval_learning_now, true, memory_order_acquire))
        return 0; /* another thread is learning */
    atomic_fetch_add_explicit(&py.eval_learning, 1, memory_order_relaxed);
    return entry;
}

bool pyframes_stack_shows_eval(const uintptr_t *native, int n_native)
{
    for (int i = 0; i < n_native; i++)
        if (pyframes_is_eval_pc(native[i]))
            return true;
    return false;
}

uint32_t pyframes_eval_generation(void)
{
    return (uint32_t)atomic_load_explicit(&py.n_eval_more, memory_order_acquire);
}

void pyframes_learn_eval_range(uintptr_t lo, uintptr_t hi)
{
    int n = atomic_load_explicit(&py.n_eval_more, memory_order_relaxed);
    if (lo < hi && n < EVAL_MORE_MAX && !(lo < py.eval_hi && hi > py.eval_lo)) {
        py.eval_more[n].lo = lo;
        py.eval_more[n].hi = hi;
        atomic_store_explicit(&py.n_eval_more, n + 1, memory_order_release);
    }
    atomic_store_explicit(&py.eval_learning_now, false, memory_order_release);
}

/* The first Python frame of the thread, or 0. */
static uintptr_t current_frame(void)
{
    const struct py_layout *L = &py.layout;
    uintptr_t ts = (uintptr_t)py.this_tstate();
    if (!ts)
        return 0;
    if (L->frames == PY_FRAMES_OBJECTS)
        return load_ptr(ts, L->tstate_frame);
    if (L->tstate_cframe >= 0) {
        uintptr_t cf = load_ptr(ts, L->tstate_cframe);
        return cf ? load_ptr(cf, L->cframe_current_frame) : 0;
    }
    return load_ptr(ts, L->tstate_current_frame);
}

/* The walk of pyframes_capture and pyframes_capture_words, specialised for each by the
 * compiler: frames into out[] (words NULL), or as kept-stack words (out NULL: two a frame,
 * PYFRAME_MARK | lasti then the code). The layout's offsets and the code type are read once
 * into locals: a store through out or words may alias them otherwise, and the walk would reload
 * each per frame. The frames of 3.11+ (the loop a capture runs at every sync: ~17 frames in the
 * seed-003 loop) are walked by a loop of their own. */
static inline __attribute__((always_inline)) int walk(struct py_raw_frame *out, uintptr_t *words,
                                                      int max)
{
    const struct py_layout *L = &py.layout;
    if (atomic_load_explicit(&py.state, memory_order_acquire) != PY_READY)
        return 0;
    uintptr_t f = current_frame();
    int n = 0;
    last_entry_frame = 0;
    const int32_t previous = L->iframe_previous, owner_at = L->iframe_owner,
                  entry_at = L->iframe_is_entry, cstack = L->owner_cstack, code_at = L->iframe_code,
                  instr_at = L->iframe_instr, type_at = L->object_type;
    const uintptr_t tag = L->iframe_code_tag_bits, adaptive = (uintptr_t)L->code_code_adaptive,
                    code_type = py.code_type;
    if (!code_type || max <= 0)
        return 0;
    int budget = 4 * PYFRAMES_MAX;
#define PUT(code_, lasti_, objects_, frame_)                                                     \
    do {                                                                                         \
        if (words) {                                                                             \
            words[2 * n] = PYFRAME_MARK | (lasti_);                                              \
            words[2 * n + 1] = (code_);                                                          \
            n++;                                                                                 \
        } else {                                                                                 \
            out[n++] = (struct py_raw_frame){                                                    \
                .code = (code_), .lasti = (lasti_), .group_end = (objects_), .frame = (frame_)}; \
        }                                                                                        \
    } while (0)
    if (unlikely(L->frames == PY_FRAMES_OBJECTS)) {
        /* 3.9/3.10: one frame object per evaluation call */
        for (; f && (f & 7) == 0 && n < max && budget-- > 0; f = load_ptr(f, L->frame_back)) {
            uintptr_t code = load_ptr(f, L->frame_code);
            int32_t lasti = load_i32(f, L->frame_lasti);
            if (L->lines == PY_LINES_LNOTAB && lasti >= 0)
                lasti /= 2; /* 3.9 counts bytes */
            if (has_type(code, code_type))
                PUT(code, lasti < 0 ? 0 : (uint32_t)lasti, true, f);
        }
    } else {
        /* 3.11+: the interpreter's frames. A frame owned by the C stack (3.12+: the shim frame
         * an evaluation call pushes below its first frame, and, 3.14, any other frame owned by
         * the interpreter or the C stack: no Python function's) ends the group above it; so
         * does a 3.11 entry frame (the first frame of an evaluation call). */
        const bool shims = cstack >= 0, entries = entry_at >= 0;
        while (f && (f & 7) == 0 && budget-- > 0) {
            uintptr_t next = load_ptr(f, previous);
            if (shims && (signed char)*(const char *)(f + (uintptr_t)owner_at) >= cstack) {
                if (out && n)
                    out[n - 1].group_end = true;
                if (!last_entry_frame)
                    last_entry_frame = f; /* on the C stack, in that evaluation call's own frame */
                f = next;
                continue;
            }
            uintptr_t code = load_ptr(f, code_at) & ~tag;
            if (likely(code && (code & 7) == 0 && load_ptr(code, type_at) == code_type)) {
                /* the instruction's index in code units; negative: a frame still being set up */
                uintptr_t off = load_ptr(f, instr_at) - (code + adaptive);
                if (off < (uintptr_t)1 << 31) {
                    PUT(code, (uint32_t)(off >> 1), false, f);
                    if (n == max)
                        break;
                }
            }
            if (out && entries && n && *(const unsigned char *)(f + (uintptr_t)entry_at))
                out[n - 1].group_end = true;
            f = next;
        }
    }
#undef PUT
    if (out && n)
        out[n - 1].group_end = true;
    return n;
}

int pyframes_capture(struct py_raw_frame *out, int max)
{
    return walk(out, NULL, max);
}

int pyframes_capture_words(uintptr_t *words, int max)
{
    return walk(NULL, words, max);
}

bool pyframes_innermost(uintptr_t *code, uint32_t *lasti)
{
    uintptr_t w[2];
    if (walk(NULL, w, 1) != 1) /* the walk for one frame, max known to the compiler */
        return false;
    *code = w[1];
    *lasti = (uint32_t)w[0];
    return true;
}

int pyframes_merge(const uintptr_t *native, int n_native, const struct py_raw_frame *py_frames,
                   int n_py, uintptr_t *out, int max_words)
{
    int w = 0, p = 0;
    for (int i = 0; i < n_native; i++) {
        if (p < n_py && pyframes_is_eval_pc(native[i])) {
            do {
                if (w + 2 > max_words)
                    return w;
                out[w++] = PYFRAME_MARK | py_frames[p].lasti;
                out[w++] = py_frames[p].code;
            } while (!py_frames[p++].group_end && p < n_py);
            continue;
        }
        if (w + 1 > max_words)
            return w;
        out[w++] = native[i];
    }
    /* Python frames whose evaluation loop the native stack did not show: outermost last. */
    for (; p < n_py && w + 2 <= max_words; p++) {
        out[w++] = PYFRAME_MARK | py_frames[p].lasti;
        out[w++] = py_frames[p].code;
    }
    return w;
}

uint32_t pyframes_decode(const uintptr_t *words, uint32_t n, struct stack_frame *out, uint32_t max)
{
    uint32_t k = 0;
    for (uint32_t w = 0; w < n && k < max; w++, k++) {
        if (pyframe_word(words[w]) && w + 1 < n) {
            out[k] = (struct stack_frame){
                .python = true, .code = words[w + 1], .lasti = (uint32_t)(words[w] & 0xffffffffu)};
            w++;
        } else if (stack_mark_word(words[w])) {
            out[k] = (struct stack_frame){.mark = words[w]};
        } else {
            out[k] = (struct stack_frame){.pc = words[w]};
        }
    }
    return k;
}

/* kind-byte characters (1, 2 or 4 bytes each) as UTF-8 into dst (cap bytes, NUL-terminated). */
static void utf8_from(const uint8_t *data, int64_t len, unsigned kind, char *dst, size_t cap)
{
    size_t n = 0;
    for (int64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1   ? data[i]
                     : kind == 2 ? ((const uint16_t *)data)[i]
                                 : ((const uint32_t *)data)[i];
        uint8_t buf[4];
        size_t k;
        if (c < 0x80) {
            buf[0] = (uint8_t)c;
            k = 1;
        } else if (c < 0x800) {
            buf[0] = (uint8_t)(0xc0 | c >> 6);
            buf[1] = (uint8_t)(0x80 | (c & 0x3f));
            k = 2;
        } else if (c < 0x10000) {
            if (c >= 0xd800 && c < 0xe000)
                c = 0xfffd; /* lone surrogate */
            buf[0] = (uint8_t)(0xe0 | c >> 12);
            buf[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
            buf[2] = (uint8_t)(0x80 | (c & 0x3f));
            k = 3;
        } else {
            if (c > 0x10ffff)
                c = 0xfffd;
            buf[0] = (uint8_t)(0xf0 | c >> 18);
            buf[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
            buf[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
            buf[3] = (uint8_t)(0x80 | (c & 0x3f));
            k = 4;
        }
        if (n + k + 1 > cap)
            break;
        memcpy(dst + n, buf, k);
        n += k;
    }
    dst[n] = 0;
}

/* Copies a str object as UTF-8 (compact strings only; others read as "?"). */
static void copy_unicode(uintptr_t obj, char *dst, size_t cap)
{
    const struct py_layout *L = &py.layout;
    if (cap == 0)
        return;
    if (!has_type(obj, py.unicode_type)) {
        snprintf(dst, cap, "?");
        return;
    }
    uint32_t state = (uint32_t)load_i32(obj, L->unicode_state);
    unsigned kind = (state >> L->state_kind_shift) & 7;
    bool compact = (state >> L->state_compact_bit) & 1, ascii = (state >> L->state_ascii_bit) & 1;
    int64_t len = load_i64(obj, L->unicode_length);
    if (!compact || len < 0 || (kind != 1 && kind != 2 && kind != 4)) {
        snprintf(dst, cap, "?");
        return;
    }
    const uint8_t *data = (const uint8_t *)(obj + (uintptr_t)(ascii ? L->unicode_ascii_data
                                                                    : L->unicode_compact_data));
    utf8_from(data, len, kind, dst, cap);
}

/* ---- 3.9/3.10: qualified names from the function that owns the code ------------------------- */

/* 3.9 and 3.10 code objects have co_name only; the compiler put the qualified name into the
 * function object (func_qualname) and, as a constant, into the enclosing code (it is
 * MAKE_FUNCTION's argument there). Both are found here without Python calls. The frame's own
 * locals and the code objects' constants (tuples, immutable) belong to this thread's running
 * frames; class and module dictionaries are shared: every object is type-checked before it is
 * read, every count bounded, and one search looks at OWNER_VISITS_MAX objects at most. */
#define OWNER_VISITS_MAX 8192
#define TUPLE_MAX 65536
#define MRO_MAX 64
#define NESTED_DEPTH_MAX 3  /* function -> nested function -> ... */
#define WRAPPED_DEPTH_MAX 4 /* functools.wraps chains (__wrapped__) */
#define DICT_SIZE_MAX (1 << 20)
#define CO_NEWLOCALS 0x0002               /* Include/cpython/code.h: a function's own namespace */
#define TPFLAGS_TYPE_SUBCLASS (1ul << 31) /* Include/object.h Py_TPFLAGS_TYPE_SUBCLASS */

/* The search reads carefully (collectors/safe_read.h: a freed table is a false answer, not a
 * fault) when the calling thread does not hold the GIL (torch releases it around its ops, and
 * autograd's engine threads never hold it while a node runs): another thread may then resize a
 * class's or module's dict under it. With the GIL held, nothing shared changes meanwhile. */
static __thread bool careful;

/* n bytes at src: plainly, or carefully (false when they cannot be read). */
static bool q_copy(void *dst, uintptr_t src, size_t n)
{
    if (careful)
        return safe_read(dst, src, n);
    memcpy(dst, (const void *)src, n);
    return true;
}

static uintptr_t q_ptr(uintptr_t base, int32_t off)
{
    uintptr_t v;
    return q_copy(&v, base + (uintptr_t)off, sizeof v) ? v : 0;
}

static int32_t q_i32(uintptr_t base, int32_t off)
{
    int32_t v;
    return q_copy(&v, base + (uintptr_t)off, sizeof v) ? v : 0;
}

static int64_t q_i64(uintptr_t base, int32_t off)
{
    int64_t v;
    return q_copy(&v, base + (uintptr_t)off, sizeof v) ? v : 0;
}

static bool q_has_type(uintptr_t obj, uintptr_t type)
{
    return obj && (obj & 7) == 0 && type && q_ptr(obj, py.layout.object_type) == type;
}

struct owner_search {
    uintptr_t code; /* the code whose owner is looked for */
    int budget;     /* objects that may still be looked at */
};

static bool visit(struct owner_search *s)
{
    return s->budget-- > 0;
}

static bool is_type(uintptr_t obj)
{
    if (!obj || (obj & 7))
        return false;
    uintptr_t t = q_ptr(obj, py.layout.object_type);
    return t && !(t & 7) && (q_ptr(t, py.layout.qual.type_flags) & TPFLAGS_TYPE_SUBCLASS);
}

static int64_t tuple_len(uintptr_t t)
{
    if (!q_has_type(t, py.tuple_type))
        return 0;
    int64_t n = q_i64(t, py.layout.qual.tuple_size);
    return n > 0 && n <= TUPLE_MAX ? n : 0;
}

static uintptr_t tuple_item(uintptr_t t, int64_t i)
{
    return q_ptr(t, py.layout.qual.tuple_items + (int32_t)(8 * i));
}

/* A compact str's characters (kind 1, 2 or 4 bytes each); false for anything else. Read
 * carefully, they are copied (STR_COPY_BYTES at most: a longer str is no name here). */
#define STR_COPY_BYTES 256
struct str_view {
    const uint8_t *data;
    int64_t len;
    unsigned kind;
    uint8_t copy[STR_COPY_BYTES];
};

static bool str_view(uintptr_t obj, struct str_view *v)
{
    const struct py_layout *L = &py.layout;
    if (!q_has_type(obj, py.unicode_type))
        return false;
    uint32_t state = (uint32_t)q_i32(obj, L->unicode_state);
    v->kind = (state >> L->state_kind_shift) & 7;
    v->len = q_i64(obj, L->unicode_length);
    bool ascii = (state >> L->state_ascii_bit) & 1;
    uintptr_t data = obj + (uintptr_t)(ascii ? L->unicode_ascii_data : L->unicode_compact_data);
    v->data = (const uint8_t *)data;
    if (!((state >> L->state_compact_bit) & 1) || v->len < 0 || v->len >= (1 << 20) ||
        (v->kind != 1 && v->kind != 2 && v->kind != 4))
        return false;
    if (!careful)
        return true;
    size_t bytes = (size_t)v->len * v->kind;
    v->data = v->copy;
    return bytes <= sizeof v->copy && q_copy(v->copy, data, bytes);
}

static uint32_t str_char(const struct str_view *v, int64_t i)
{
    return v->kind == 1   ? v->data[i]
           : v->kind == 2 ? ((const uint16_t *)v->data)[i]
                          : ((const uint32_t *)v->data)[i];
}

/* Does s end with prefix_ascii + name (both strs compared by code point)? */
static bool ends_with(const struct str_view *s, const char *ascii, const struct str_view *name)
{
    int64_t a = (int64_t)strlen(ascii), at = s->len - name->len - a;
    if (at < 0)
        return false;
    for (int64_t i = 0; i < a; i++)
        if (str_char(s, at + i) != (unsigned char)ascii[i])
            return false;
    for (int64_t i = 0; i < name->len; i++)
        if (str_char(s, at + a + i) != str_char(name, i))
            return false;
    return true;
}

static bool str_is(uintptr_t obj, const char *ascii)
{
    struct str_view v, none = {.data = NULL, .len = 0, .kind = 1};
    return str_view(obj, &v) && v.len == (int64_t)strlen(ascii) && ends_with(&v, ascii, &none);
}

/* When `code` is one of parent's constants: its qualified name, the constant MAKE_FUNCTION
 * takes beside it ("outer.<locals>.inner" in a function, "Class.name" in a class body), or its
 * plain name at module level. 0 when it is not, or no such constant is there. */
static uintptr_t qualname_in_parent(uintptr_t parent, uintptr_t code, struct owner_search *s)
{
    const struct py_qualname_layout *Q = &py.layout.qual;
    uintptr_t consts = q_ptr(parent, Q->code_consts);
    int64_t n = tuple_len(consts);
    bool held = false;
    for (int64_t i = 0; i < n && !held && visit(s); i++)
        held = tuple_item(consts, i) == code;
    if (!held)
        return 0;
    uintptr_t name = q_ptr(code, py.layout.code_name);
    if (str_is(q_ptr(parent, py.layout.code_name), "<module>"))
        return name;
    struct str_view nv, cv;
    if (!str_view(name, &nv))
        return 0;
    const char *sep = (q_i32(parent, Q->code_flags) & CO_NEWLOCALS) ? ".<locals>." : ".";
    for (int64_t i = 0; i < n && visit(s); i++) {
        uintptr_t c = tuple_item(consts, i);
        if (str_view(c, &cv) && ends_with(&cv, sep, &nv))
            return c;
    }
    return 0;
}

/* code's qualified name when it is nested (depth levels at most) in root's constants. */
static uintptr_t qualname_nested(uintptr_t root, int depth, struct owner_search *s)
{
    uintptr_t q = qualname_in_parent(root, s->code, s);
    if (q || depth == 0)
        return q;
    uintptr_t consts = q_ptr(root, py.layout.qual.code_consts);
    int64_t n = tuple_len(consts);
    for (int64_t i = 0; i < n && !q && visit(s); i++) {
        uintptr_t c = tuple_item(consts, i);
        if (q_has_type(c, py.code_type))
            q = qualname_nested(c, depth - 1, s);
    }
    return q;
}

/* The value under an ASCII key of a combined dict (a function's __dict__), or 0. */
static uintptr_t dict_get(uintptr_t dict, const char *key, struct owner_search *s);

/* Calls each value of a combined dict with fn until it answers; its answer, or 0. */
static uintptr_t dict_each(uintptr_t dict,
                           uintptr_t (*fn)(uintptr_t key, uintptr_t value, const void *arg,
                                           struct owner_search *s),
                           const void *arg, struct owner_search *s)
{
    const struct py_qualname_layout *Q = &py.layout.qual;
    if (!q_has_type(dict, py.dict_type) || q_ptr(dict, Q->dict_values) != 0)
        return 0; /* a split table (instance dicts only) is never a class's or module's */
    uintptr_t keys = q_ptr(dict, Q->dict_keys);
    if (!keys || (keys & 7))
        return 0;
    int64_t size = q_i64(keys, Q->keys_size), used = q_i64(keys, Q->keys_nentries);
    if (size <= 0 || size > DICT_SIZE_MAX || (size & (size - 1)) || used < 0 || used > size)
        return 0;
    int64_t index_bytes = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
    uintptr_t entries = keys + (uintptr_t)Q->keys_indices + (uintptr_t)(size * index_bytes);
    for (int64_t i = 0; i < used && visit(s); i++) {
        uintptr_t e = entries + (uintptr_t)(i * Q->entry_bytes);
        uintptr_t key = q_ptr(e, Q->entry_key), value = q_ptr(e, Q->entry_value);
        if (!value)
            continue; /* a deleted entry */
        uintptr_t answer = fn(key, value, arg, s);
        if (answer)
            return answer;
    }
    return 0;
}

static uintptr_t value_if_key(uintptr_t key, uintptr_t value, const void *arg,
                              struct owner_search *s)
{
    (void)s;
    return str_is(key, arg) ? value : 0;
}

static uintptr_t dict_get(uintptr_t dict, const char *key, struct owner_search *s)
{
    return dict_each(dict, value_if_key, key, s);
}

/* Is q a qualified name of code: its co_name, or ending in "." and it? */
static bool names_code(uintptr_t q, uintptr_t code)
{
    struct str_view qv, nv;
    if (!str_view(q, &qv) || !str_view(q_ptr(code, py.layout.code_name), &nv))
        return false;
    return ends_with(&qv, ".", &nv) || (qv.len == nv.len && ends_with(&qv, "", &nv));
}

/* code's qualified name when fn (a function) runs it, wraps one that does (functools.wraps's
 * __wrapped__), or, with nested, holds it in its constants. */
static uintptr_t qualname_of_function(uintptr_t fn, bool nested, struct owner_search *s)
{
    const struct py_qualname_layout *Q = &py.layout.qual;
    for (int depth = 0; depth <= WRAPPED_DEPTH_MAX && q_has_type(fn, py.function_type) && visit(s);
         depth++) {
        uintptr_t code = q_ptr(fn, Q->func_code);
        if (code == s->code) {
            /* functools.wraps gives a wrapper the wrapped function's __qualname__: a name that
             * does not end in the code's own is not the code's (3.11's co_qualname) */
            uintptr_t q = q_ptr(fn, Q->func_qualname);
            if (names_code(q, code))
                return q;
        }
        if (nested && q_has_type(code, py.code_type)) {
            uintptr_t q = qualname_nested(code, NESTED_DEPTH_MAX, s);
            if (q)
                return q;
        }
        fn = dict_get(q_ptr(fn, Q->func_dict), "__wrapped__", s);
    }
    return 0;
}

/* A class attribute's functions: a function, a staticmethod's or classmethod's, a property's
 * getter, setter and deleter. Returns how many (at most 3). */
static int attribute_functions(uintptr_t value, uintptr_t out[3])
{
    const struct py_qualname_layout *Q = &py.layout.qual;
    if (q_has_type(value, py.function_type)) {
        out[0] = value;
        return 1;
    }
    if (q_has_type(value, py.staticmethod_type) || q_has_type(value, py.classmethod_type)) {
        out[0] = q_ptr(value, Q->wrapper_callable);
        return 1;
    }
    if (q_has_type(value, py.property_type)) {
        out[0] = q_ptr(value, Q->property_get);
        out[1] = q_ptr(value, Q->property_set);
        out[2] = q_ptr(value, Q->property_del);
        return 3;
    }
    return 0;
}

enum { LOOK_DIRECT = 0, LOOK_NESTED = 1 }; /* arg of qualname_of_attribute: how deep */

static uintptr_t qualname_of_attribute(uintptr_t key, uintptr_t value, const void *arg,
                                       struct owner_search *s)
{
    (void)key;
    uintptr_t fns[3];
    int n = attribute_functions(value, fns);
    for (int i = 0; i < n; i++) {
        uintptr_t q = qualname_of_function(fns[i], *(const int *)arg == LOOK_NESTED, s);
        if (q)
            return q;
    }
    return 0;
}

/* A method's: the class of its first argument (self), or the argument itself when it is a
 * class (cls), and their MROs. */
static uintptr_t qualname_from_first_argument(uintptr_t frame, struct owner_search *s)
{
    const struct py_qualname_layout *Q = &py.layout.qual;
    uintptr_t code = s->code;
    if (q_i32(code, Q->code_argcount) < 1)
        return 0;
    uintptr_t first = q_ptr(frame, Q->frame_localsplus);
    uintptr_t cell2arg = q_ptr(code, Q->code_cell2arg);
    if (!first && cell2arg && !(cell2arg & 7)) { /* self is a cell (a closure uses it) */
        int64_t ncells = tuple_len(q_ptr(code, Q->code_cellvars));
        int32_t nlocals = q_i32(code, Q->code_nlocals);
        for (int64_t j = 0; j < ncells && nlocals >= 0; j++)
            if (q_i64(cell2arg, (int32_t)(8 * j)) == 0) {
                uintptr_t cell = q_ptr(frame, Q->frame_localsplus + (int32_t)(8 * (nlocals + j)));
                first = q_has_type(cell, py.cell_type) ? q_ptr(cell, Q->cell_ref) : 0;
                break;
            }
    }
    if (!first || (first & 7))
        return 0;
    uintptr_t classes[2] = {is_type(first) ? first : 0, q_ptr(first, py.layout.object_type)};
    static const int direct = LOOK_DIRECT;
    for (int c = 0; c < 2; c++) {
        uintptr_t mro = classes[c] ? q_ptr(classes[c], Q->type_mro) : 0;
        int64_t n = tuple_len(mro);
        for (int64_t i = 0; i < n && i < MRO_MAX && visit(s); i++) {
            uintptr_t k = tuple_item(mro, i);
            uintptr_t q = is_type(k)
                              ? dict_each(q_ptr(k, Q->type_dict), qualname_of_attribute, &direct, s)
                              : 0;
            if (q)
                return q;
        }
    }
    return 0;
}

/* A class's attributes, looked into for a function that runs or holds the code. */
static uintptr_t qualname_in_class(uintptr_t key, uintptr_t value, const void *arg,
                                   struct owner_search *s)
{
    (void)key;
    (void)arg;
    static const int nested = LOOK_NESTED;
    return is_type(value) ? dict_each(q_ptr(value, py.layout.qual.type_dict), qualname_of_attribute,
                                      &nested, s)
                          : 0;
}

/* The module's functions (and what they hold), then its classes' attributes. */
static uintptr_t qualname_from_globals(uintptr_t frame, struct owner_search *s)
{
    uintptr_t globals = q_ptr(frame, py.layout.qual.frame_globals);
    static const int nested = LOOK_NESTED;
    uintptr_t q = dict_each(globals, qualname_of_attribute, &nested, s);
    return q ? q : dict_each(globals, qualname_in_class, NULL, s);
}

bool pyframes_derives_qualnames(void)
{
    return atomic_load_explicit(&py.state, memory_order_acquire) == PY_READY &&
           py.layout.qual.derive;
}

bool pyframes_qualname(const struct py_raw_frame *frames, int n, int i, char *func, size_t func_len)
{
    if (!pyframes_derives_qualnames() || i < 0 || i >= n ||
        !q_has_type(frames[i].code, py.code_type) || !frames[i].frame || (frames[i].frame & 7))
        return false;
    careful = !(py.gil_check && py.gil_check() == 1);
    struct owner_search s = {.code = frames[i].code, .budget = OWNER_VISITS_MAX};
    if (str_is(q_ptr(s.code, py.layout.code_name), "<module>"))
        return false;
    uintptr_t q = 0;
    for (int k = i + 1; k < n && !q; k++) /* the enclosing code, running further out */
        if (q_has_type(frames[k].code, py.code_type))
            q = qualname_in_parent(frames[k].code, s.code, &s);
    if (!q)
        q = qualname_from_first_argument(frames[i].frame, &s);
    if (!q)
        q = qualname_from_globals(frames[i].frame, &s);
    struct str_view v;
    if (!q || !str_view(q, &v) || func_len == 0)
        return false;
    utf8_from(v.data, v.len, v.kind, func, func_len);
    return true;
}

int pyframes_resolve(uintptr_t code, uint32_t lasti, char *file, size_t file_len, char *func,
                     size_t func_len, uint32_t *line)
{
    const struct py_layout *L = &py.layout;
    *line = 0;
    if (atomic_load_explicit(&py.state, memory_order_acquire) != PY_READY ||
        !has_type(code, py.code_type)) {
        snprintf(file, file_len, "?");
        snprintf(func, func_len, "?");
        return -1;
    }
    copy_unicode(load_ptr(code, L->code_filename), file, file_len);
    copy_unicode(load_ptr(code, L->code_qualname >= 0 ? L->code_qualname : L->code_name), func,
                 func_len);
    int first = load_i32(code, L->code_firstlineno);
    uintptr_t table = load_ptr(code, L->code_linetable);
    int l = -1;
    if (has_type(table, py.bytes_type)) {
        int64_t len = load_i64(table, L->bytes_size);
        if (len >= 0 && len < (1 << 26))
            l = pyframes_line_for(L->lines, (const uint8_t *)(table + (uintptr_t)L->bytes_data),
                                  (size_t)len, first, lasti);
    }
    *line = l > 0 ? (uint32_t)l : first > 0 ? (uint32_t)first : 0;
    return 0;
}

bool pyframes_file_is(uintptr_t code, const char *name)
{
    char file[64];
    if (atomic_load_explicit(&py.state, memory_order_acquire) != PY_READY ||
        !has_type(code, py.code_type))
        return false;
    uintptr_t obj = load_ptr(code, py.layout.code_filename);
    size_t want = strlen(name);
    if (want >= sizeof file || !has_type(obj, py.unicode_type) ||
        load_i64(obj, py.layout.unicode_length) != (int64_t)want)
        return false; /* most files differ in length: no copy */
    copy_unicode(obj, file, sizeof file);
    return strcmp(file, name) == 0;
}

/* ---- line tables ------------------------------------------------------------------------ */

/* 3.11+ location table varints: 6 bits per byte, bit 6 = more. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
    uint32_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        if (*p >= end || shift > 30)
            return false;
        b = *(*p)++;
        v |= (uint32_t)(b & 63) << shift;
        shift += 6;
    } while (b & 64);
    *out = v;
    return true;
}

static bool read_svarint(const uint8_t **p, const uint8_t *end, int *out)
{
    uint32_t u;
    if (!read_varint(p, end, &u))
        return false;
    *out = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
    return true;
}

/* PEP 657 location table (Objects/locations.md): entries of (code, length in code units). */
static int line_locations(const uint8_t *p, const uint8_t *end, int line, uint32_t target)
{
    uint32_t addr = 0;
    while (p < end) {
        uint8_t first = *p++;
        if (!(first & 0x80))
            return -1; /* not at an entry start: a table we do not understand */
        int code = (first >> 3) & 15, length = (first & 7) + 1, entry_line = line;
        int delta = 0;
        uint32_t skip;
        switch (code) {
        case 15: /* no location */ entry_line = -1; break;
        case 14: /* long form: line delta, end line delta, column, end column */
            if (!read_svarint(&p, end, &delta) || !read_varint(&p, end, &skip) ||
                !read_varint(&p, end, &skip) || !read_varint(&p, end, &skip))
                return -1;
            line += delta;
            entry_line = line;
            break;
        case 13: /* no column */
            if (!read_svarint(&p, end, &delta))
                return -1;
            line += delta;
            entry_line = line;
            break;
        case 10:
        case 11:
        case 12: /* one line: delta code - 10, start and end column bytes */
            line += code - 10;
            entry_line = line;
            p += 2;
            break;
        default: /* short form: same line, one column byte */ p += 1; break;
        }
        if (p > end)
            return -1;
        if (target >= addr && target < addr + (uint32_t)length)
            return entry_line;
        addr += (uint32_t)length;
    }
    return -1;
}

int pyframes_line_for(int format, const uint8_t *table, size_t len, int firstlineno, uint32_t lasti)
{
    const uint8_t *p = table, *end = table + len;
    switch (format) {
    case PY_LINES_LOCATIONS: return line_locations(p, end, firstlineno, lasti);
    case PY_LINES_LINETABLE: { /* 3.10, PEP 626: (bytecode bytes, signed line delta or -128) */
        uint32_t target = lasti * 2, addr = 0;
        int line = firstlineno;
        for (; p + 1 < end; p += 2) {
            int ldelta = (signed char)p[1];
            int entry_line = -1;
            if (ldelta != -128) {
                line += ldelta;
                entry_line = line;
            }
            uint32_t next = addr + p[0];
            if (target >= addr && target < next)
                return entry_line;
            addr = next;
        }
        return -1;
    }
    case PY_LINES_LNOTAB: { /* 3.9: (bytecode bytes increment, signed line increment) */
        uint32_t target = lasti * 2, addr = 0;
        int line = firstlineno;
        for (; p + 1 < end; p += 2) {
            addr += p[0];
            if (addr > target)
                break;
            line += (signed char)p[1];
        }
        return line;
    }
    default: return -1;
    }
}
