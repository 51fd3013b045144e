/* collectors/pyframes.c: Python frames without the GIL (see pyframes.h). Runs on the
 * application's thread inside a CUDA call: no malloc, no locks on the capture path (detection
 * uses a trylock), reads only the calling thread's own frames and the code objects they run,
 * every object's type checked against CPython's own type objects before it is read. */
#include "collectors/pyframes.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "collectors/pylayout.h"

enum { PY_UNKNOWN, PY_READY, PY_UNSUPPORTED };

static struct {
    _Atomic int state;
    _Atomic uint64_t next_try_ns;
    pthread_mutex_t lock;
    struct py_layout layout;
    void *(*this_tstate)(void);
    uintptr_t eval_lo, eval_hi;
    uintptr_t code_type, unicode_type, bytes_type;
    char status[128];
} py = {.lock = PTHREAD_MUTEX_INITIALIZER, .status = "no CPython in this process"};

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
                 "CPython %u.%u: interpreter symbols not found; native frames only", v >> 8, v & 0xff);
        return PY_UNSUPPORTED;
    }
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
    if (pthread_mutex_trylock(&py.lock) != 0)
        return false; /* another thread is looking: never wait on the sync path */
    st = atomic_load_explicit(&py.state, memory_order_relaxed);
    if (st == PY_UNKNOWN && now_ns >= atomic_load_explicit(&py.next_try_ns, memory_order_relaxed)) {
        atomic_store_explicit(&py.next_try_ns, now_ns + RETRY_NS, memory_order_relaxed);
        st = detect();
        atomic_store_explicit(&py.state, st, memory_order_release);
    }
    pthread_mutex_unlock(&py.lock);
    return st == PY_READY;
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
    return pc > py.eval_lo && pc <= py.eval_hi;
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

int pyframes_capture(struct py_raw_frame *out, int max)
{
    const struct py_layout *L = &py.layout;
    if (atomic_load_explicit(&py.state, memory_order_acquire) != PY_READY)
        return 0;
    uintptr_t f = current_frame();
    int n = 0;
    for (int walked = 0; f && (f & 7) == 0 && n < max && walked < 4 * PYFRAMES_MAX; walked++) {
        if (L->frames == PY_FRAMES_OBJECTS) {
            /* 3.9/3.10: one frame object per evaluation call */
            uintptr_t code = load_ptr(f, L->frame_code);
            int32_t lasti = load_i32(f, L->frame_lasti);
            if (L->lines == PY_LINES_LNOTAB && lasti >= 0)
                lasti /= 2; /* 3.9 counts bytes */
            if (has_type(code, py.code_type))
                out[n++] = (struct py_raw_frame){code, lasti < 0 ? 0 : (uint32_t)lasti, true};
            f = load_ptr(f, L->frame_back);
            continue;
        }
        uintptr_t next = load_ptr(f, L->iframe_previous);
        int owner = (signed char)*(const char *)(f + (uintptr_t)L->iframe_owner);
        bool entry = L->iframe_is_entry >= 0 && *(const unsigned char *)(f + (uintptr_t)L->iframe_is_entry);
        if (L->owner_cstack >= 0 && owner == L->owner_cstack) {
            /* 3.12+: the shim frame an evaluation call pushes below its first frame */
            if (n)
                out[n - 1].group_end = true;
            f = next;
            continue;
        }
        uintptr_t code = load_ptr(f, L->iframe_code);
        if (has_type(code, py.code_type)) {
            intptr_t idx = ((intptr_t)load_ptr(f, L->iframe_instr) -
                            (intptr_t)(code + (uintptr_t)L->code_code_adaptive)) / 2;
            if (idx >= 0 && idx < (1 << 30)) /* negative: a frame still being set up */
                out[n++] = (struct py_raw_frame){code, (uint32_t)idx, false};
        }
        if (entry && n)
            out[n - 1].group_end = true; /* 3.11: the first frame of an evaluation call */
        f = next;
    }
    if (n)
        out[n - 1].group_end = true;
    return n;
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
            out[k] = (struct stack_frame){.python = true, .code = words[w + 1],
                                          .lasti = (uint32_t)(words[w] & 0xffffffffu)};
            w++;
        } else if (stack_mark_word(words[w])) {
            out[k] = (struct stack_frame){.mark = words[w]};
        } else {
            out[k] = (struct stack_frame){.pc = words[w]};
        }
    }
    return k;
}

/* Copies a str object as UTF-8 (compact strings only; others read as "?"). */
static void copy_unicode(uintptr_t obj, char *dst, size_t cap)
{
    const struct py_layout *L = &py.layout;
    size_t n = 0;
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
    const uint8_t *data = (const uint8_t *)(obj + (uintptr_t)(ascii ? L->unicode_ascii_data : L->unicode_compact_data));
    for (int64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1 ? data[i] : kind == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
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

int pyframes_resolve(uintptr_t code, uint32_t lasti, char *file, size_t file_len, char *func,
                     size_t func_len, uint32_t *line)
{
    const struct py_layout *L = &py.layout;
    *line = 0;
    if (atomic_load_explicit(&py.state, memory_order_acquire) != PY_READY || !has_type(code, py.code_type)) {
        snprintf(file, file_len, "?");
        snprintf(func, func_len, "?");
        return -1;
    }
    copy_unicode(load_ptr(code, L->code_filename), file, file_len);
    copy_unicode(load_ptr(code, L->code_qualname >= 0 ? L->code_qualname : L->code_name), func, func_len);
    int first = load_i32(code, L->code_firstlineno);
    uintptr_t table = load_ptr(code, L->code_linetable);
    int l = -1;
    if (has_type(table, py.bytes_type)) {
        int64_t len = load_i64(table, L->bytes_size);
        if (len >= 0 && len < (1 << 26))
            l = pyframes_line_for(L->lines, (const uint8_t *)(table + (uintptr_t)L->bytes_data), (size_t)len, first, lasti);
    }
    *line = l > 0 ? (uint32_t)l : first > 0 ? (uint32_t)first : 0;
    return 0;
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
        case 15: /* no location */
            entry_line = -1;
            break;
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
        case 10: case 11: case 12: /* one line: delta code - 10, start and end column bytes */
            line += code - 10;
            entry_line = line;
            p += 2;
            break;
        default: /* short form: same line, one column byte */
            p += 1;
            break;
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
    case PY_LINES_LOCATIONS:
        return line_locations(p, end, firstlineno, lasti);
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
    default:
        return -1;
    }
}
