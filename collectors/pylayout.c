/* collectors/pylayout.c: where CPython 3.9-3.12 keep the fields syncspy reads (constant tables),
 * and a parser of the _Py_DebugOffsets that 3.13 and 3.14 publish at the start of _PyRuntime.
 * Pure data: never follows a pointer it reads, never allocates, locks or prints; builds without
 * Python headers. Where every number comes from: docs/PYTHON_LAYOUTS.md. */

#include "collectors/pylayout.h"

#include <stddef.h>
#include <string.h>

/* Supported builds: 64-bit little-endian Linux (x86_64, aarch64; LP64: pointers, Py_ssize_t
 * and long are 8 bytes, int 4), the default configuration. NOT supported, because they move
 * these offsets:
 *   - Py_TRACE_REFS (3.9-3.12): PyObject_HEAD gains _ob_next/_ob_prev in front, so every
 *     object offset below grows by 16;
 *   - Py_DEBUG: implies Py_REF_DEBUG and is not ABI compatible with a release build; its
 *     layouts are not checked here;
 *   - Py_GIL_DISABLED (free-threaded 3.13+): a different PyObject header (ob_tid, ob_ref_local,
 *     ob_ref_shared: ob_type at 24) and per-thread bytecode. Refused via free_threaded != 0.
 * A reader should refuse a process whose libpython exports _Py_RefTotal (3.9-3.11 Py_REF_DEBUG),
 * _Py_GetGlobalRefTotal (3.12+ Py_REF_DEBUG) or whose sys.abiflags contains 'd' or 't'. */

#define NONE (-1)

/* ---- 3.9, 3.10: PyFrameObject chain ----------------------------------------------------------- */

/* What 3.9 and 3.10 share of the places a frame's function is found (struct py_qualname_layout).
 * Include/cpython/code.h: co_argcount 16, co_posonlyargcount 20, co_kwonlyargcount 24,
 * co_nlocals 28, co_stacksize 32, co_flags 36, co_firstlineno 40, co_code 48, co_consts 56,
 * co_names 64, co_varnames 72, co_freevars 80, co_cellvars 88, co_cell2arg 96;
 * Include/cpython/object.h (PyTypeObject): tp_flags 168, tp_dict 264, tp_mro 344;
 * Include/cpython/dictobject.h: ma_used 16, ma_version_tag 24, ma_keys 32, ma_values 40;
 * Objects/dict-common.h: dk_refcnt 0, dk_size 8, dk_lookup 16, dk_usable 24, dk_nentries 32,
 * dk_indices 40, PyDictKeyEntry {me_hash, me_key, me_value}; Include/cpython/tupleobject.h:
 * ob_size 16, ob_item 24; Include/cellobject.h: ob_ref 16; Objects/funcobject.c: classmethod and
 * staticmethod {PyObject_HEAD; callable 16; dict 24}; Objects/descrobject.c propertyobject:
 * prop_get 16, prop_set 24, prop_del 32. */
#define QUAL_3_9_3_10                                                                           \
    .derive = true, .frame_globals = 48, .code_argcount = 16, .code_nlocals = 28,               \
    .code_flags = 36, .code_consts = 56, .code_cellvars = 88, .code_cell2arg = 96,              \
    .type_flags = 168, .type_dict = 264, .type_mro = 344, .dict_keys = 32, .dict_values = 40,   \
    .keys_size = 8, .keys_nentries = 32, .keys_indices = 40, .entry_bytes = 24, .entry_key = 8, \
    .entry_value = 16, .tuple_size = 16, .tuple_items = 24, .cell_ref = 16,                     \
    .wrapper_callable = 16, .property_get = 16, .property_set = 24, .property_del = 32

/* Include/cpython/pystate.h (struct _ts), Include/cpython/frameobject.h (struct _frame),
 * Include/cpython/code.h (struct PyCodeObject), Include/cpython/unicodeobject.h. */
static const struct py_layout LAYOUT_3_9 = {
    .version = 0x0309,
    .frames = PY_FRAMES_OBJECTS,
    .entry = PY_ENTRY_NONE,
    .lines = PY_LINES_LNOTAB,

    .tstate_frame = 24, /* prev 0, next 8, interp 16, frame 24 */
    .tstate_cframe = NONE,
    .cframe_current_frame = NONE,
    .tstate_current_frame = NONE,

    .frame_back = 24, /* after PyObject_VAR_HEAD (refcnt 0, type 8, size 16) */
    .frame_code = 32,
    .frame_lasti = 104, /* ... f_trace 80, f_trace_lines 88, f_trace_opcodes 89, f_gen 96 */

    .iframe_code = NONE,
    .iframe_previous = NONE,
    .iframe_instr = NONE,
    .iframe_owner = NONE,
    .iframe_is_entry = NONE,
    .owner_cstack = NONE,
    .instr_is_prev = 0,

    .code_filename = 104, /* 7 ints 16..43, co_code 48 ... co_cell2arg 96 */
    .code_name = 112,
    .code_qualname = NONE,
    .code_firstlineno = 40,
    .code_linetable = 120, /* co_lnotab */
    .code_code_adaptive = NONE,
    .code_code = 48,

    .object_type = 8,
    .bytes_size = 16,
    .bytes_data = 32, /* ob_shash 24, ob_sval 32 */
    .unicode_length = 16,
    .unicode_state = 32,        /* length 16, hash 24, state 32, wstr 40 */
    .unicode_ascii_data = 48,   /* sizeof(PyASCIIObject) */
    .unicode_compact_data = 72, /* + utf8_length 48, utf8 56, wstr_length 64 */
    .state_kind_shift = 2,      /* interned:2, kind:3, compact:1, ascii:1, ready:1, :24 */
    .state_compact_bit = 5,
    .state_ascii_bit = 6,

    /* f_localsplus after f_blockstack[CO_MAXBLOCKS]; PyFunctionObject: func_code 16,
     * func_globals 24, func_defaults 32, func_kwdefaults 40, func_closure 48, func_doc 56,
     * func_name 64, func_dict 72, func_weakreflist 80, func_module 88, func_annotations 96,
     * func_qualname 104 (Include/funcobject.h) */
    .qual = {QUAL_3_9_3_10, .frame_localsplus = 360, .func_code = 16, .func_qualname = 104,
             .func_dict = 72},
};

static const struct py_layout LAYOUT_3_10 = {
    .version = 0x030A,
    .frames = PY_FRAMES_OBJECTS,
    .entry = PY_ENTRY_NONE,
    .lines = PY_LINES_LINETABLE,

    .tstate_frame = 24,
    .tstate_cframe = NONE, /* 3.10 has a CFrame too, but tstate->frame is the chain head */
    .cframe_current_frame = NONE,
    .tstate_current_frame = NONE,

    .frame_back = 24,
    .frame_code = 32,
    .frame_lasti = 96, /* f_trace 72, f_stackdepth 80, 2 chars 84/85, f_gen 88 */

    .iframe_code = NONE,
    .iframe_previous = NONE,
    .iframe_instr = NONE,
    .iframe_owner = NONE,
    .iframe_is_entry = NONE,
    .owner_cstack = NONE,
    .instr_is_prev = 0,

    .code_filename = 104, /* same PyCodeObject prefix as 3.9 */
    .code_name = 112,
    .code_qualname = NONE,
    .code_firstlineno = 40,
    .code_linetable = 120, /* co_linetable (PEP 626) */
    .code_code_adaptive = NONE,
    .code_code = 48,

    .object_type = 8,
    .bytes_size = 16,
    .bytes_data = 32,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 48,
    .unicode_compact_data = 72,
    .state_kind_shift = 2,
    .state_compact_bit = 5,
    .state_ascii_bit = 6,

    /* 3.10's COMMON_FIELDS head PyFunctionObject: func_globals 16, func_builtins 24,
     * func_name 32, func_qualname 40, func_code 48, func_defaults 56, func_kwdefaults 64,
     * func_closure 72, func_doc 80, func_dict 88 (Include/funcobject.h) */
    .qual = {QUAL_3_9_3_10, .frame_localsplus = 352, .func_code = 48, .func_qualname = 40,
             .func_dict = 88},
};

/* ---- 3.11, 3.12: _PyInterpreterFrame chain through tstate->cframe ---------------------------- */

/* Include/cpython/pystate.h (_PyCFrame, struct _ts), Include/internal/pycore_frame.h
 * (_PyInterpreterFrame), Include/cpython/code.h (_PyCode_DEF). */
static const struct py_layout LAYOUT_3_11 = {
    .version = 0x030B,
    .frames = PY_FRAMES_INTERPRETER,
    .entry = PY_ENTRY_IS_ENTRY,
    .lines = PY_LINES_LOCATIONS,

    .tstate_frame = NONE,
    .tstate_cframe = 56,       /* 3 pointers, 7 ints 24..51, pad, cframe 56 */
    .cframe_current_frame = 8, /* uint8_t use_tracing 0, current_frame 8, previous 16 */
    .tstate_current_frame = NONE,

    .frame_back = NONE,
    .frame_code = NONE,
    .frame_lasti = NONE,

    .iframe_code = 32,     /* f_func 0, f_globals 8, f_builtins 16, f_locals 24, f_code 32 */
    .iframe_previous = 48, /* frame_obj 40, previous 48 */
    .iframe_instr = 56,    /* prev_instr */
    .iframe_owner = 69,    /* stacktop 64, is_entry 68, owner 69 */
    .iframe_is_entry = 68,
    .owner_cstack = NONE,
    .instr_is_prev = 1,

    .code_filename = 112, /* VAR_HEAD 24, 3 ptrs 24..47, co_flags 48, 2 shorts 52/54, */
    .code_name = 120,     /* 10 ints 56..95, localsplusnames 96, localspluskinds 104 */
    .code_qualname = 128,
    .code_firstlineno = 72,
    .code_linetable = 136,
    .code_code_adaptive = 184, /* weakreflist 144, _co_code 152, _co_linearray 160, */
    .code_code = NONE,         /* _co_firsttraceable 168, co_extra 176 */

    .object_type = 8,
    .bytes_size = 16,
    .bytes_data = 32,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 48,
    .unicode_compact_data = 72,
    .state_kind_shift = 2,
    .state_compact_bit = 5,
    .state_ascii_bit = 6,
};

static const struct py_layout LAYOUT_3_12 = {
    .version = 0x030C,
    .frames = PY_FRAMES_INTERPRETER,
    .entry = PY_ENTRY_CSTACK,
    .lines = PY_LINES_LOCATIONS,

    .tstate_frame = NONE,
    .tstate_cframe = 56,       /* 3 pointers, _status bitfield word 24, 6 ints 28..51, cframe 56 */
    .cframe_current_frame = 0, /* current_frame 0, previous 8 */
    .tstate_current_frame = NONE,

    .frame_back = NONE,
    .frame_code = NONE,
    .frame_lasti = NONE,

    .iframe_code = 0,     /* f_code 0, previous 8, f_funcobj 16, f_globals 24, */
    .iframe_previous = 8, /* f_builtins 32, f_locals 40, frame_obj 48, prev_instr 56 */
    .iframe_instr = 56,
    .iframe_owner = 70, /* stacktop 64, uint16_t return_offset 68, owner 70 */
    .iframe_is_entry = NONE,
    .owner_cstack = 3, /* enum _frameowner: THREAD, GENERATOR, FRAME_OBJECT, CSTACK */
    .instr_is_prev = 1,

    .code_filename = 112, /* VAR_HEAD 24, 3 ptrs 24..47, 11 ints/uint32 48..91 */
    .code_name = 120,     /* co_version 92, localsplusnames 96, localspluskinds 104 */
    .code_qualname = 128,
    .code_firstlineno = 68,
    .code_linetable = 136,
    .code_code_adaptive = 192, /* weakreflist 144, _co_cached 152, instrumentation_version 160, */
    .code_code = NONE,         /* _co_monitoring 168, _co_firsttraceable 176, co_extra 184 */

    .object_type = 8,
    .bytes_size = 16,
    .bytes_data = 32,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 40,   /* wstr is gone: 36 bytes padded to 40 */
    .unicode_compact_data = 56, /* + utf8_length 40, utf8 48 */
    .state_kind_shift = 2,      /* interned:2, kind:3, compact:1, ascii:1, statically_allocated:1 */
    .state_compact_bit = 5,
    .state_ascii_bit = 6,
};

const struct py_layout *py_layout_builtin(uint32_t version)
{
    switch (version) {
    case 0x0309: return &LAYOUT_3_9;
    case 0x030A: return &LAYOUT_3_10;
    case 0x030B: return &LAYOUT_3_11;
    case 0x030C: return &LAYOUT_3_12;
    default: return NULL; /* 3.13+: py_layout_from_debug_offsets */
    }
}

/* ---- 3.13, 3.14: _Py_DebugOffsets ------------------------------------------------------------ */

/* Byte positions of the fields we use inside _Py_DebugOffsets (every field after the 8-byte
 * cookie is a uint64_t), plus what the struct does not say. The struct "is only guaranteed to
 * be stable between patch versions for a given minor version" (Include/internal/pycore_runtime.h,
 * 3.13), so there is one of these per minor version. */
struct debug_offsets_format {
    uint32_t version; /* major << 8 | minor */
    uint32_t version_at, free_threaded_at;
    uint32_t tstate_size_at, tstate_current_frame_at;
    uint32_t iframe_size_at, iframe_previous_at, iframe_executable_at, iframe_instr_ptr_at,
        iframe_owner_at;
    uint32_t code_size_at, code_filename_at, code_name_at, code_qualname_at, code_linetable_at,
        code_firstlineno_at, code_adaptive_at;
    uint32_t object_size_at, object_type_at;
    uint32_t bytes_size_at, bytes_ob_size_at, bytes_ob_sval_at;
    uint32_t unicode_size_at, unicode_state_at, unicode_length_at, unicode_ascii_size_at;
    /* not in the struct: from the same version's headers */
    int32_t executable_tag_bits;
    int32_t owner_cstack;
    int32_t compact_extra; /* sizeof(PyCompactUnicodeObject) - sizeof(PyASCIIObject) */
    int32_t kind_shift, compact_bit, ascii_bit;
};

/* 3.13 (Include/internal/pycore_runtime.h, struct _Py_DebugOffsets): cookie 0, version 8,
 * free_threaded 16, runtime_state 24 (3), interpreter_state 48 (13), thread_state 152 (9),
 * interpreter_frame 224 (6), code_object 272 (10), pyobject 352 (2), type_object 368 (4),
 * tuple_object 400 (3), list_object 424 (3), dict_object 448 (3), float_object 472 (2),
 * long_object 488 (3), bytes_object 512 (3), unicode_object 536 (4), gc 568 (2): 584 bytes.
 * The first 3.13 alphas had another layout (off_t fields, no sizes): only rc and final
 * releases are accepted. */
static const struct debug_offsets_format DEBUG_OFFSETS_3_13 = {
    .version = 0x030D,
    .version_at = 8,
    .free_threaded_at = 16,
    .tstate_size_at = 152,
    .tstate_current_frame_at = 184, /* size, prev, next, interp, current_frame */
    .iframe_size_at = 224,
    .iframe_previous_at = 232,
    .iframe_executable_at = 240,
    .iframe_instr_ptr_at = 248,
    .iframe_owner_at = 264, /* localsplus 256, owner 264 */
    .code_size_at = 272,
    .code_filename_at = 280,
    .code_name_at = 288,
    .code_qualname_at = 296,
    .code_linetable_at = 304,
    .code_firstlineno_at = 312,
    .code_adaptive_at = 344, /* argcount 320, localsplusnames 328, kinds 336 */
    .object_size_at = 352,
    .object_type_at = 360,
    .bytes_size_at = 512,
    .bytes_ob_size_at = 520,
    .bytes_ob_sval_at = 528,
    .unicode_size_at = 536,
    .unicode_state_at = 544,
    .unicode_length_at = 552,
    .unicode_ascii_size_at = 560,
    .executable_tag_bits = 0, /* PyObject *f_executable */
    .owner_cstack = 3,        /* Include/internal/pycore_frame.h enum _frameowner */
    .compact_extra = 16,      /* Py_ssize_t utf8_length, char *utf8 */
    .kind_shift = 2,          /* same state bitfield as 3.12 */
    .compact_bit = 5,
    .ascii_bit = 6,
};

/* 3.14 (Include/internal/pycore_debug_offsets.h, struct _Py_DebugOffsets): cookie 0, version 8,
 * free_threaded 16, runtime_state 24 (3), interpreter_state 48 (16), thread_state 176 (9),
 * interpreter_frame 248 (8), code_object 312 (11), pyobject 400 (2), type_object 416 (4),
 * tuple_object 448 (3), list_object 472 (3), set_object 496 (4), dict_object 528 (3),
 * float_object 552 (2), long_object 568 (3), bytes_object 592 (3), unicode_object 616 (4),
 * gc 648 (2), gen_object 664 (4), llist_node 696 (2), debugger_support 712 (6): 760 bytes. */
static const struct debug_offsets_format DEBUG_OFFSETS_3_14 = {
    .version = 0x030E,
    .version_at = 8,
    .free_threaded_at = 16,
    .tstate_size_at = 176,
    .tstate_current_frame_at = 208, /* size, prev, next, interp, current_frame */
    .iframe_size_at = 248,
    .iframe_previous_at = 256,
    .iframe_executable_at = 264,
    .iframe_instr_ptr_at = 272,
    .iframe_owner_at = 288, /* localsplus 280, owner 288, stackpointer 296 */
    .code_size_at = 312,
    .code_filename_at = 320,
    .code_name_at = 328,
    .code_qualname_at = 336,
    .code_linetable_at = 344,
    .code_firstlineno_at = 352,
    .code_adaptive_at = 384, /* argcount 360, localsplusnames 368, kinds 376 */
    .object_size_at = 400,
    .object_type_at = 408,
    .bytes_size_at = 592,
    .bytes_ob_size_at = 600,
    .bytes_ob_sval_at = 608,
    .unicode_size_at = 616,
    .unicode_state_at = 624,
    .unicode_length_at = 632,
    .unicode_ascii_size_at = 640,
    /* Include/internal/pycore_interpframe_structs.h: _PyStackRef f_executable; with the GIL a
     * reference's bit 0 is Py_TAG_REFCNT (pycore_stackref.h PyStackRef_AsPyObjectBorrow clears it) */
    .executable_tag_bits = 1,
    /* enum _frameowner: THREAD 0, GENERATOR 1, FRAME_OBJECT 2, INTERPRETER 3, CSTACK 4; the
     * frame each _PyEval_EvalFrameDefault call pushes is FRAME_OWNED_BY_INTERPRETER
     * (Python/ceval.c: entry.frame.owner), and _PyFrame_IsIncomplete treats every owner from 3
     * on as no Python function's */
    .owner_cstack = 3,
    .compact_extra = 16, /* Include/cpython/unicodeobject.h, as 3.13 */
    .kind_shift = 2,
    .compact_bit = 5,
    .ascii_bit = 6,
};

#define DEBUG_COOKIE "xdebugpy"
#define PY_RELEASE_CANDIDATE 0xC
#define PY_RELEASE_FINAL 0xF
#define MAX_STRUCT_BYTES 65536u /* thread state, frame, code, object: all far smaller */

static uint64_t read_u64(const unsigned char *base, uint32_t at)
{
    uint64_t v;
    memcpy(&v, base + at, sizeof v);
    return v;
}

/* One offset read from the struct, checked against its struct's size: a field of width bytes at
 * off must lie inside size, and pointer-sized fields must be aligned. Returns the offset, or -1
 * (and sets *bad) when the value cannot be right. */
static int32_t checked_offset(const unsigned char *base, uint32_t at, uint64_t size, uint32_t width,
                              int *bad)
{
    uint64_t off = read_u64(base, at);
    if (size > MAX_STRUCT_BYTES || off > size || size - off < width ||
        (width == 8 && off % 8 != 0)) {
        *bad = 1;
        return NONE;
    }
    return (int32_t)off;
}

/* One format per minor version; 3.15+ refused until its format is added and checked. */
static const struct debug_offsets_format *debug_offsets_format(uint32_t version)
{
    return version == DEBUG_OFFSETS_3_13.version   ? &DEBUG_OFFSETS_3_13
           : version == DEBUG_OFFSETS_3_14.version ? &DEBUG_OFFSETS_3_14
                                                   : NULL;
}

int py_layout_from_debug_offsets(const void *runtime, uint32_t version, struct py_layout *out)
{
    const unsigned char *base = runtime;
    const struct debug_offsets_format *f = debug_offsets_format(version);
    if (!base || !out || !f || memcmp(base, DEBUG_COOKIE, 8) != 0) {
        return -1;
    }
    uint64_t hex = read_u64(base, f->version_at); /* PY_VERSION_HEX */
    uint32_t major_minor = (uint32_t)((hex >> 24) & 0xff) << 8 | (uint32_t)((hex >> 16) & 0xff);
    uint32_t level = (uint32_t)((hex >> 4) & 0xf);
    if (hex >> 32 != 0 || major_minor != version ||
        (level != PY_RELEASE_CANDIDATE && level != PY_RELEASE_FINAL) ||
        read_u64(base, f->free_threaded_at) != 0) {
        return -1;
    }

    struct py_layout l = {
        .version = version,
        .frames = PY_FRAMES_INTERPRETER,
        .entry = PY_ENTRY_CSTACK,
        .lines = PY_LINES_LOCATIONS,
        .tstate_frame = NONE,
        .tstate_cframe = NONE,
        .cframe_current_frame = NONE,
        .frame_back = NONE,
        .frame_code = NONE,
        .frame_lasti = NONE,
        .iframe_is_entry = NONE,
        .iframe_code_tag_bits = f->executable_tag_bits,
        .owner_cstack = f->owner_cstack,
        .instr_is_prev = 0,
        .code_code = NONE,
        .state_kind_shift = f->kind_shift,
        .state_compact_bit = f->compact_bit,
        .state_ascii_bit = f->ascii_bit,
    };
    int bad = 0;
    uint64_t size = read_u64(base, f->tstate_size_at);
    l.tstate_current_frame = checked_offset(base, f->tstate_current_frame_at, size, 8, &bad);

    size = read_u64(base, f->iframe_size_at);
    l.iframe_previous = checked_offset(base, f->iframe_previous_at, size, 8, &bad);
    l.iframe_code = checked_offset(base, f->iframe_executable_at, size, 8, &bad);
    l.iframe_instr = checked_offset(base, f->iframe_instr_ptr_at, size, 8, &bad);
    l.iframe_owner = checked_offset(base, f->iframe_owner_at, size, 1, &bad);

    size = read_u64(base, f->code_size_at);
    l.code_filename = checked_offset(base, f->code_filename_at, size, 8, &bad);
    l.code_name = checked_offset(base, f->code_name_at, size, 8, &bad);
    l.code_qualname = checked_offset(base, f->code_qualname_at, size, 8, &bad);
    l.code_linetable = checked_offset(base, f->code_linetable_at, size, 8, &bad);
    l.code_firstlineno = checked_offset(base, f->code_firstlineno_at, size, 4, &bad);
    l.code_code_adaptive = checked_offset(base, f->code_adaptive_at, size, 1, &bad);

    size = read_u64(base, f->object_size_at);
    l.object_type = checked_offset(base, f->object_type_at, size, 8, &bad);

    size = read_u64(base, f->bytes_size_at);
    l.bytes_size = checked_offset(base, f->bytes_ob_size_at, size, 8, &bad);
    l.bytes_data = checked_offset(base, f->bytes_ob_sval_at, size, 1, &bad);

    /* unicode_object.size is sizeof(PyUnicodeObject); state and length live in its
     * PyASCIIObject head, which is asciiobject_size bytes */
    size = read_u64(base, f->unicode_size_at);
    uint64_t ascii_size = read_u64(base, f->unicode_ascii_size_at);
    if (ascii_size > size || ascii_size % 8 != 0) {
        return -1;
    }
    l.unicode_state = checked_offset(base, f->unicode_state_at, ascii_size, 4, &bad);
    l.unicode_length = checked_offset(base, f->unicode_length_at, ascii_size, 8, &bad);
    l.unicode_ascii_data = (int32_t)ascii_size;
    l.unicode_compact_data = (int32_t)ascii_size + f->compact_extra;
    if (bad || (uint64_t)l.unicode_compact_data > size) {
        return -1;
    }
    *out = l;
    return 0;
}
