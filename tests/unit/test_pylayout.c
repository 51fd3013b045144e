/* Unit tests: collectors/pylayout.c's tables against offsetof() of the real structures in the
 * local CPython's headers (compiled with Py_BUILD_CORE to reach the internal ones; which
 * version is whatever tests/pylayout.mk found), and the _Py_DebugOffsets parser on hand-built
 * buffers (and, for 3.13 and 3.14 headers, on a struct of the headers' own _Py_DebugOffsets type, and
 * with PYLAYOUT_TEST_LIVE_RUNTIME on the live _PyRuntime of the linked libpython). */

/* Python.h first (it sets feature macros); the test builds without it, minus the header checks */
#if defined(__has_include)
#if __has_include(<Python.h>)
#define HAVE_PYTHON_HEADERS 1
#endif
#endif

#ifdef HAVE_PYTHON_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION <= 10
#include <frameobject.h>
#else
#include <internal/pycore_frame.h>
#endif
#if PY_MINOR_VERSION >= 13
#include <internal/pycore_runtime.h>
#endif
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/pylayout.h"

#define V(major, minor) ((uint32_t)((major) << 8 | (minor)))

/* ---- version-independent checks ------------------------------------------------------------- */

static void test_builtin_versions(void **state)
{
    (void)state;
    for (uint32_t minor = 9; minor <= 12; minor++) {
        const struct py_layout *l = py_layout_builtin(V(3, minor));
        assert_non_null(l);
        assert_int_equal(l->version, V(3, minor));
    }
    assert_null(py_layout_builtin(V(3, 8)));
    assert_null(py_layout_builtin(V(3, 13))); /* from _Py_DebugOffsets instead */
    assert_null(py_layout_builtin(V(3, 14)));
    assert_null(py_layout_builtin(V(2, 7)));
    assert_null(py_layout_builtin(0));
    assert_null(py_layout_builtin(0x0309u << 8)); /* a PY_VERSION_HEX is not a version */
}

/* What each frame model needs is present, what it does not have is -1. */
static void test_builtin_models(void **state)
{
    (void)state;
    for (uint32_t minor = 9; minor <= 12; minor++) {
        const struct py_layout *l = py_layout_builtin(V(3, minor));
        assert_int_equal(l->tstate_current_frame, -1);
        assert_int_equal(l->object_type, 8);
        assert_int_equal(l->state_kind_shift, 2);
        assert_int_equal(l->state_compact_bit, 5);
        assert_int_equal(l->state_ascii_bit, 6);
        assert_true(l->code_filename > 0 && l->code_name > 0 && l->code_firstlineno > 0);
        assert_true(l->code_linetable > 0);
        if (minor <= 10) {
            assert_int_equal(l->frames, PY_FRAMES_OBJECTS);
            assert_int_equal(l->entry, PY_ENTRY_NONE);
            assert_int_equal(l->lines, minor == 9 ? PY_LINES_LNOTAB : PY_LINES_LINETABLE);
            assert_true(l->tstate_frame > 0 && l->frame_back > 0 && l->frame_code > 0);
            assert_true(l->frame_lasti > 0 && l->code_code > 0);
            assert_int_equal(l->tstate_cframe, -1);
            assert_int_equal(l->cframe_current_frame, -1);
            assert_int_equal(l->iframe_code, -1);
            assert_int_equal(l->iframe_previous, -1);
            assert_int_equal(l->iframe_instr, -1);
            assert_int_equal(l->iframe_owner, -1);
            assert_int_equal(l->iframe_is_entry, -1);
            assert_int_equal(l->owner_cstack, -1);
            assert_int_equal(l->code_qualname, -1);
            assert_int_equal(l->code_code_adaptive, -1);
            assert_int_equal(l->unicode_compact_data, l->unicode_ascii_data + 24);
        } else {
            assert_int_equal(l->frames, PY_FRAMES_INTERPRETER);
            assert_int_equal(l->lines, PY_LINES_LOCATIONS);
            assert_int_equal(l->instr_is_prev, 1);
            assert_int_equal(l->tstate_frame, -1);
            assert_true(l->tstate_cframe > 0 && l->cframe_current_frame >= 0);
            assert_int_equal(l->frame_back, -1);
            assert_int_equal(l->frame_code, -1);
            assert_int_equal(l->frame_lasti, -1);
            assert_int_equal(l->code_code, -1);
            assert_true(l->code_qualname > 0 && l->code_code_adaptive > 0);
            assert_true(l->iframe_previous >= 0 && l->iframe_instr >= 0 && l->iframe_owner > 0);
            if (minor == 11) {
                assert_int_equal(l->entry, PY_ENTRY_IS_ENTRY);
                assert_true(l->iframe_is_entry > 0);
                assert_int_equal(l->owner_cstack, -1);
            } else {
                assert_int_equal(l->entry, PY_ENTRY_CSTACK);
                assert_int_equal(l->iframe_is_entry, -1);
                assert_int_equal(l->owner_cstack, 3);
            }
            assert_int_equal(l->unicode_compact_data,
                             l->unicode_ascii_data + (minor == 11 ? 24 : 16));
        }
    }
}

/* ---- hand-built _Py_DebugOffsets (3.13, 3.14) ----------------------------------------------- */

/* Byte positions of the fields read, per version: written here independently of pylayout.c, and
 * checked against the real type in test_debug_offsets_match_headers when the headers are of
 * that version. 3.13: Include/internal/pycore_runtime.h; 3.14: pycore_debug_offsets.h. */
struct positions {
    uint32_t version_hex; /* a final release of the version */
    size_t version, free_threaded;
    size_t tstate_size, tstate_current_frame;
    size_t iframe_size, iframe_previous, iframe_executable, iframe_instr_ptr, iframe_localsplus,
        iframe_owner;
    size_t code_size, code_filename, code_name, code_qualname, code_linetable, code_firstlineno,
        code_adaptive;
    size_t object_size, object_type;
    size_t bytes_size, bytes_ob_size, bytes_ob_sval;
    size_t unicode_size, unicode_state, unicode_length, unicode_ascii_size;
    size_t struct_bytes;
};

static const struct positions AT_3_13 = {
    .version_hex = 0x030D00F0,
    .version = 8,
    .free_threaded = 16,
    .tstate_size = 152,
    .tstate_current_frame = 184,
    .iframe_size = 224,
    .iframe_previous = 232,
    .iframe_executable = 240,
    .iframe_instr_ptr = 248,
    .iframe_localsplus = 256,
    .iframe_owner = 264,
    .code_size = 272,
    .code_filename = 280,
    .code_name = 288,
    .code_qualname = 296,
    .code_linetable = 304,
    .code_firstlineno = 312,
    .code_adaptive = 344,
    .object_size = 352,
    .object_type = 360,
    .bytes_size = 512,
    .bytes_ob_size = 520,
    .bytes_ob_sval = 528,
    .unicode_size = 536,
    .unicode_state = 544,
    .unicode_length = 552,
    .unicode_ascii_size = 560,
    .struct_bytes = 584,
};

static const struct positions AT_3_14 = {
    .version_hex = 0x030E0AF0,
    .version = 8,
    .free_threaded = 16,
    .tstate_size = 176,
    .tstate_current_frame = 208,
    .iframe_size = 248,
    .iframe_previous = 256,
    .iframe_executable = 264,
    .iframe_instr_ptr = 272,
    .iframe_localsplus = 280,
    .iframe_owner = 288,
    .code_size = 312,
    .code_filename = 320,
    .code_name = 328,
    .code_qualname = 336,
    .code_linetable = 344,
    .code_firstlineno = 352,
    .code_adaptive = 384,
    .object_size = 400,
    .object_type = 408,
    .bytes_size = 592,
    .bytes_ob_size = 600,
    .bytes_ob_sval = 608,
    .unicode_size = 616,
    .unicode_state = 624,
    .unicode_length = 632,
    .unicode_ascii_size = 640,
    .struct_bytes = 760,
};

#define DEBUG_OFFSETS_MAX_BYTES 760

static void put_u64(unsigned char *buf, size_t at, uint64_t v)
{
    memcpy(buf + at, &v, sizeof v);
}

/* The values of an x86_64 release build: 3.13.0's, or 3.14.10's (Debian's, read from its live
 * _PyRuntime). What differs between the two: the thread state's and frame's sizes, where a
 * frame's owner and a code's first instruction are. */
static void fake(unsigned char *buf, const struct positions *at)
{
    bool v14 = at == &AT_3_14;
    memset(buf, 0xee, DEBUG_OFFSETS_MAX_BYTES); /* fields we do not read are garbage */
    memcpy(buf, "xdebugpy", 8);
    put_u64(buf, at->version, at->version_hex);
    put_u64(buf, at->free_threaded, 0);
    put_u64(buf, at->tstate_size, v14 ? 832 : 304);
    put_u64(buf, at->tstate_current_frame, 72);
    put_u64(buf, at->iframe_size, v14 ? 88 : 80);
    put_u64(buf, at->iframe_previous, 8);
    put_u64(buf, at->iframe_executable, 0);
    put_u64(buf, at->iframe_instr_ptr, 56);
    put_u64(buf, at->iframe_localsplus, v14 ? 80 : 72);
    put_u64(buf, at->iframe_owner, v14 ? 74 : 70);
    put_u64(buf, at->code_size, v14 ? 216 : 208);
    put_u64(buf, at->code_filename, 112);
    put_u64(buf, at->code_name, 120);
    put_u64(buf, at->code_qualname, 128);
    put_u64(buf, at->code_linetable, 136);
    put_u64(buf, at->code_firstlineno, 68);
    put_u64(buf, at->code_adaptive, v14 ? 208 : 200);
    put_u64(buf, at->object_size, 16);
    put_u64(buf, at->object_type, 8);
    put_u64(buf, at->bytes_size, 40);
    put_u64(buf, at->bytes_ob_size, 16);
    put_u64(buf, at->bytes_ob_sval, 32);
    put_u64(buf, at->unicode_size, 64);
    put_u64(buf, at->unicode_state, 32);
    put_u64(buf, at->unicode_length, 16);
    put_u64(buf, at->unicode_ascii_size, 40);
}

static void expect_fake_parsed(const struct positions *at, uint32_t version)
{
    bool v14 = at == &AT_3_14;
    _Alignas(8) unsigned char buf[DEBUG_OFFSETS_MAX_BYTES];
    fake(buf, at);
    struct py_layout l;
    memset(&l, 0x5a, sizeof l);
    assert_int_equal(py_layout_from_debug_offsets(buf, version, &l), 0);
    assert_int_equal(l.version, version);
    assert_int_equal(l.frames, PY_FRAMES_INTERPRETER);
    assert_int_equal(l.entry, PY_ENTRY_CSTACK);
    assert_int_equal(l.lines, PY_LINES_LOCATIONS);
    assert_int_equal(l.tstate_frame, -1);
    assert_int_equal(l.tstate_cframe, -1);
    assert_int_equal(l.cframe_current_frame, -1);
    assert_int_equal(l.tstate_current_frame, 72);
    assert_int_equal(l.frame_back, -1);
    assert_int_equal(l.frame_code, -1);
    assert_int_equal(l.frame_lasti, -1);
    assert_int_equal(l.iframe_code, 0);
    assert_int_equal(l.iframe_code_tag_bits, v14 ? 1 : 0); /* 3.14: a _PyStackRef */
    assert_int_equal(l.iframe_previous, 8);
    assert_int_equal(l.iframe_instr, 56);
    assert_int_equal(l.iframe_owner, v14 ? 74 : 70);
    assert_int_equal(l.iframe_is_entry, -1);
    assert_int_equal(l.owner_cstack, 3); /* 3.14: FRAME_OWNED_BY_INTERPRETER, 3.13: _CSTACK */
    assert_int_equal(l.instr_is_prev, 0);
    assert_int_equal(l.code_filename, 112);
    assert_int_equal(l.code_name, 120);
    assert_int_equal(l.code_qualname, 128);
    assert_int_equal(l.code_firstlineno, 68);
    assert_int_equal(l.code_linetable, 136);
    assert_int_equal(l.code_code_adaptive, v14 ? 208 : 200);
    assert_int_equal(l.code_code, -1);
    assert_int_equal(l.object_type, 8);
    assert_int_equal(l.bytes_size, 16);
    assert_int_equal(l.bytes_data, 32);
    assert_int_equal(l.unicode_length, 16);
    assert_int_equal(l.unicode_state, 32);
    assert_int_equal(l.unicode_ascii_data, 40);
    assert_int_equal(l.unicode_compact_data, 56);
    assert_int_equal(l.state_kind_shift, 2);
    assert_int_equal(l.state_compact_bit, 5);
    assert_int_equal(l.state_ascii_bit, 6);
    assert_false(l.qual.derive);
}

static void test_debug_offsets_fake(void **state)
{
    (void)state;
    expect_fake_parsed(&AT_3_13, V(3, 13));
    expect_fake_parsed(&AT_3_14, V(3, 14));
}

/* Refused: *out untouched. */
static void expect_refused(const unsigned char *buf, uint32_t version)
{
    struct py_layout l, before;
    memset(&l, 0x5a, sizeof l);
    before = l;
    assert_int_equal(py_layout_from_debug_offsets(buf, version, &l), -1);
    assert_memory_equal(&l, &before, sizeof l);
}

/* What either version's parser refuses, on a buffer of that version. */
static void expect_refusals(const struct positions *at, uint32_t version)
{
    _Alignas(8) unsigned char buf[DEBUG_OFFSETS_MAX_BYTES];
    uint32_t other = version == V(3, 13) ? V(3, 14) : V(3, 13);

    fake(buf, at);
    memcpy(buf, "xdebugpz", 8); /* wrong cookie */
    expect_refused(buf, version);
    memset(buf, 0, 8);
    expect_refused(buf, version);

    fake(buf, at); /* the caller believes another version */
    expect_refused(buf, V(3, 12));
    expect_refused(buf, other);
    expect_refused(buf, V(3, 15));
    expect_refused(buf, at->version_hex); /* a PY_VERSION_HEX is not a version */

    fake(buf, at); /* the struct says another version */
    put_u64(buf, at->version, 0x030C01F0);
    expect_refused(buf, version);
    put_u64(buf, at->version, (uint64_t)other << 16 | 0xF0); /* its layout is not this one's */
    expect_refused(buf, version);
    expect_refused(buf, other);
    put_u64(buf, at->version, (uint64_t)version << 16 | 0xA5); /* x.0a5: alphas move fields */
    expect_refused(buf, version);
    put_u64(buf, at->version, (uint64_t)version << 16 | 0xB1);
    expect_refused(buf, version);
    put_u64(buf, at->version, 1ull << 32 | (uint64_t)version << 16 | 0xF0);
    expect_refused(buf, version);

    fake(buf, at); /* free-threaded build */
    put_u64(buf, at->free_threaded, 1);
    expect_refused(buf, version);

    fake(buf, at); /* an offset past its struct */
    put_u64(buf, at->iframe_instr_ptr, 88);
    expect_refused(buf, version);
    fake(buf, at); /* a misaligned pointer field */
    put_u64(buf, at->code_filename, 113);
    expect_refused(buf, version);
    fake(buf, at); /* a field straddling the end of the code object */
    put_u64(buf, at->code_firstlineno, at == &AT_3_14 ? 214 : 206);
    expect_refused(buf, version);
    fake(buf, at); /* an absurd size */
    put_u64(buf, at->tstate_size, 1ull << 40);
    expect_refused(buf, version);
    fake(buf, at); /* unicode head bigger than the object */
    put_u64(buf, at->unicode_ascii_size, 72);
    expect_refused(buf, version);
    fake(buf, at); /* state outside the head */
    put_u64(buf, at->unicode_state, 40);
    expect_refused(buf, version);

    fake(buf, at);
    struct py_layout l;
    assert_int_equal(py_layout_from_debug_offsets(NULL, version, &l), -1);
    assert_int_equal(py_layout_from_debug_offsets(buf, version, NULL), -1);

    put_u64(buf, at->version, (uint64_t)version << 16 | 0x05C1); /* x.5rc1 */
    assert_int_equal(py_layout_from_debug_offsets(buf, version, &l), 0);
    put_u64(buf, at->version, (uint64_t)version << 16 | 0x0BF0); /* x.11 */
    assert_int_equal(py_layout_from_debug_offsets(buf, version, &l), 0);
}

static void test_debug_offsets_refused(void **state)
{
    (void)state;
    expect_refusals(&AT_3_13, V(3, 13));
    expect_refusals(&AT_3_14, V(3, 14));
}

/* ---- against the local headers ------------------------------------------------------------- */

#ifdef HAVE_PYTHON_HEADERS

#define LOCAL_VERSION V(PY_MAJOR_VERSION, PY_MINOR_VERSION)

/* The state word of a PyASCIIObject whose bitfields are set by the compiler: where the bits are. */
static uint32_t state_word(const PyASCIIObject *o)
{
    uint32_t w;
    memcpy(&w, (const char *)o + offsetof(PyASCIIObject, state), sizeof w);
    return w;
}

/* Offsets shared by every version: objects, strings, bytes, code names. */
static void expect_objects_match(const struct py_layout *l)
{
    assert_int_equal(l->object_type, offsetof(PyObject, ob_type));
    assert_int_equal(l->bytes_size, offsetof(PyBytesObject, ob_base.ob_size));
    assert_int_equal(l->bytes_data, offsetof(PyBytesObject, ob_sval));
    assert_int_equal(l->unicode_length, offsetof(PyASCIIObject, length));
    assert_int_equal(l->unicode_state, offsetof(PyASCIIObject, state));
    assert_int_equal(sizeof(((PyASCIIObject *)0)->state), 4);
    assert_int_equal(l->unicode_ascii_data, sizeof(PyASCIIObject));
    assert_int_equal(l->unicode_compact_data, sizeof(PyCompactUnicodeObject));

    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    o.state.kind = 7;
    assert_int_equal(state_word(&o), 7u << l->state_kind_shift);
    memset(&o, 0, sizeof o);
    o.state.compact = 1;
    assert_int_equal(state_word(&o), 1u << l->state_compact_bit);
    memset(&o, 0, sizeof o);
    o.state.ascii = 1;
    assert_int_equal(state_word(&o), 1u << l->state_ascii_bit);

    assert_int_equal(l->code_filename, offsetof(PyCodeObject, co_filename));
    assert_int_equal(l->code_name, offsetof(PyCodeObject, co_name));
    assert_int_equal(l->code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
#if PY_MINOR_VERSION == 9
    assert_int_equal(l->code_linetable, offsetof(PyCodeObject, co_lnotab));
#else
    assert_int_equal(l->code_linetable, offsetof(PyCodeObject, co_linetable));
#endif
#if PY_MINOR_VERSION >= 11
    assert_int_equal(l->code_qualname, offsetof(PyCodeObject, co_qualname));
    assert_int_equal(l->code_code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
#endif
}

__attribute__((unused)) static void test_builtin_matches_headers(void **state)
{
    (void)state;
#if PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION >= 9 && PY_MINOR_VERSION <= 12
    print_message("checking the %s table against %s's headers\n", PY_VERSION, PY_VERSION);
    const struct py_layout *l = py_layout_builtin(LOCAL_VERSION);
    assert_non_null(l);
    expect_objects_match(l);
#if PY_MINOR_VERSION <= 10
    assert_int_equal(l->tstate_frame, offsetof(PyThreadState, frame));
    assert_int_equal(l->frame_back, offsetof(PyFrameObject, f_back));
    assert_int_equal(l->frame_code, offsetof(PyFrameObject, f_code));
    assert_int_equal(l->frame_lasti, offsetof(PyFrameObject, f_lasti));
    assert_int_equal(l->code_code, offsetof(PyCodeObject, co_code));
    /* where a frame's function is found (no co_qualname); the private structs behind them
     * (PyDictKeysObject, classmethod, property) are exercised live by test_pyframes */
    const struct py_qualname_layout *q = &l->qual;
    assert_true(q->derive);
    assert_int_equal(q->frame_globals, offsetof(PyFrameObject, f_globals));
    assert_int_equal(q->frame_localsplus, offsetof(PyFrameObject, f_localsplus));
    assert_int_equal(q->code_argcount, offsetof(PyCodeObject, co_argcount));
    assert_int_equal(q->code_nlocals, offsetof(PyCodeObject, co_nlocals));
    assert_int_equal(q->code_flags, offsetof(PyCodeObject, co_flags));
    assert_int_equal(q->code_consts, offsetof(PyCodeObject, co_consts));
    assert_int_equal(q->code_cellvars, offsetof(PyCodeObject, co_cellvars));
    assert_int_equal(q->code_cell2arg, offsetof(PyCodeObject, co_cell2arg));
    assert_int_equal(sizeof(*((PyCodeObject *)0)->co_cell2arg), 8);
    assert_int_equal(q->func_code, offsetof(PyFunctionObject, func_code));
    assert_int_equal(q->func_qualname, offsetof(PyFunctionObject, func_qualname));
    assert_int_equal(q->func_dict, offsetof(PyFunctionObject, func_dict));
    assert_int_equal(q->type_flags, offsetof(PyTypeObject, tp_flags));
    assert_int_equal(sizeof(((PyTypeObject *)0)->tp_flags), 8);
    assert_int_equal(q->type_dict, offsetof(PyTypeObject, tp_dict));
    assert_int_equal(q->type_mro, offsetof(PyTypeObject, tp_mro));
    assert_int_equal(q->dict_keys, offsetof(PyDictObject, ma_keys));
    assert_int_equal(q->dict_values, offsetof(PyDictObject, ma_values));
    assert_int_equal(q->tuple_size, offsetof(PyTupleObject, ob_base.ob_size));
    assert_int_equal(q->tuple_items, offsetof(PyTupleObject, ob_item));
    assert_int_equal(q->cell_ref, offsetof(PyCellObject, ob_ref));
    assert_int_equal(CO_NEWLOCALS, 0x0002);
    assert_int_equal(Py_TPFLAGS_TYPE_SUBCLASS, 1ul << 31);
#else
    assert_false(l->qual.derive);
    assert_int_equal(l->tstate_cframe, offsetof(PyThreadState, cframe));
    assert_int_equal(l->cframe_current_frame, offsetof(_PyCFrame, current_frame));
    assert_int_equal(l->iframe_code, offsetof(_PyInterpreterFrame, f_code));
    assert_int_equal(l->iframe_previous, offsetof(_PyInterpreterFrame, previous));
    assert_int_equal(l->iframe_instr, offsetof(_PyInterpreterFrame, prev_instr));
    assert_int_equal(l->iframe_owner, offsetof(_PyInterpreterFrame, owner));
    assert_int_equal(sizeof(((_PyInterpreterFrame *)0)->owner), 1);
#if PY_MINOR_VERSION == 11
    assert_int_equal(l->iframe_is_entry, offsetof(_PyInterpreterFrame, is_entry));
    assert_int_equal(sizeof(((_PyInterpreterFrame *)0)->is_entry), 1);
#else
    assert_int_equal(l->owner_cstack, FRAME_OWNED_BY_CSTACK);
#endif
#endif
#else
    print_message("local headers are %s: no built-in table to check\n", PY_VERSION);
    skip();
#endif
}

#if PY_MAJOR_VERSION == 3 && (PY_MINOR_VERSION == 13 || PY_MINOR_VERSION == 14) && \
    !defined(Py_GIL_DISABLED)
#define CHECK_DEBUG_OFFSETS 1
#if PY_MINOR_VERSION == 13
#define LOCAL_AT AT_3_13
#define ENTRY_FRAME_OWNER FRAME_OWNED_BY_CSTACK
#define EXECUTABLE_TAG_BITS 0
#else
#define LOCAL_AT AT_3_14
/* Python/ceval.c 3.14: entry.frame.owner = FRAME_OWNED_BY_INTERPRETER; CSTACK is above it */
#define ENTRY_FRAME_OWNER FRAME_OWNED_BY_INTERPRETER
#define EXECUTABLE_TAG_BITS Py_TAG_REFCNT
#include <internal/pycore_stackref.h>
#endif

static void expect_local_matches(const struct py_layout *l)
{
    expect_objects_match(l);
    assert_int_equal(l->tstate_current_frame, offsetof(PyThreadState, current_frame));
    assert_int_equal(l->iframe_code, offsetof(_PyInterpreterFrame, f_executable));
    assert_int_equal(l->iframe_code_tag_bits, EXECUTABLE_TAG_BITS);
    assert_int_equal(sizeof(((_PyInterpreterFrame *)0)->f_executable), 8);
    assert_int_equal(l->iframe_previous, offsetof(_PyInterpreterFrame, previous));
    assert_int_equal(l->iframe_instr, offsetof(_PyInterpreterFrame, instr_ptr));
    assert_int_equal(l->iframe_owner, offsetof(_PyInterpreterFrame, owner));
    assert_int_equal(sizeof(((_PyInterpreterFrame *)0)->owner), 1);
    assert_int_equal(l->owner_cstack, ENTRY_FRAME_OWNER);
    assert_true(FRAME_OWNED_BY_CSTACK >= ENTRY_FRAME_OWNER); /* frames from it on are skipped */
    assert_false(l->qual.derive);
}
#endif

/* Fill a struct of the headers' own _Py_DebugOffsets type by field name, then parse it: checks
 * pylayout.c's byte positions inside the struct as well as what it derives. */
__attribute__((unused)) static void test_debug_offsets_match_headers(void **state)
{
    (void)state;
#ifdef CHECK_DEBUG_OFFSETS
    print_message("checking the _Py_DebugOffsets parser against %s's headers\n", PY_VERSION);
    _Py_DebugOffsets d;
    memset(&d, 0, sizeof d);
    const struct positions *p = &LOCAL_AT;
    assert_int_equal(sizeof d, p->struct_bytes);
    const struct {
        size_t real, ours;
    } at[] = {
        {offsetof(_Py_DebugOffsets, version), p->version},
        {offsetof(_Py_DebugOffsets, free_threaded), p->free_threaded},
        {offsetof(_Py_DebugOffsets, thread_state.size), p->tstate_size},
        {offsetof(_Py_DebugOffsets, thread_state.current_frame), p->tstate_current_frame},
        {offsetof(_Py_DebugOffsets, interpreter_frame.size), p->iframe_size},
        {offsetof(_Py_DebugOffsets, interpreter_frame.previous), p->iframe_previous},
        {offsetof(_Py_DebugOffsets, interpreter_frame.executable), p->iframe_executable},
        {offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr), p->iframe_instr_ptr},
        {offsetof(_Py_DebugOffsets, interpreter_frame.localsplus), p->iframe_localsplus},
        {offsetof(_Py_DebugOffsets, interpreter_frame.owner), p->iframe_owner},
        {offsetof(_Py_DebugOffsets, code_object.size), p->code_size},
        {offsetof(_Py_DebugOffsets, code_object.filename), p->code_filename},
        {offsetof(_Py_DebugOffsets, code_object.name), p->code_name},
        {offsetof(_Py_DebugOffsets, code_object.qualname), p->code_qualname},
        {offsetof(_Py_DebugOffsets, code_object.linetable), p->code_linetable},
        {offsetof(_Py_DebugOffsets, code_object.firstlineno), p->code_firstlineno},
        {offsetof(_Py_DebugOffsets, code_object.co_code_adaptive), p->code_adaptive},
        {offsetof(_Py_DebugOffsets, pyobject.size), p->object_size},
        {offsetof(_Py_DebugOffsets, pyobject.ob_type), p->object_type},
        {offsetof(_Py_DebugOffsets, bytes_object.size), p->bytes_size},
        {offsetof(_Py_DebugOffsets, bytes_object.ob_size), p->bytes_ob_size},
        {offsetof(_Py_DebugOffsets, bytes_object.ob_sval), p->bytes_ob_sval},
        {offsetof(_Py_DebugOffsets, unicode_object.size), p->unicode_size},
        {offsetof(_Py_DebugOffsets, unicode_object.state), p->unicode_state},
        {offsetof(_Py_DebugOffsets, unicode_object.length), p->unicode_length},
        {offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size), p->unicode_ascii_size},
    };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        assert_int_equal(at[i].real, at[i].ours);
    memcpy(d.cookie, _Py_Debug_Cookie, sizeof d.cookie);
    d.version = PY_VERSION_HEX;
    d.free_threaded = 0;
    d.thread_state.size = sizeof(PyThreadState);
    d.thread_state.current_frame = offsetof(PyThreadState, current_frame);
    d.interpreter_frame.size = sizeof(_PyInterpreterFrame);
    d.interpreter_frame.previous = offsetof(_PyInterpreterFrame, previous);
    d.interpreter_frame.executable = offsetof(_PyInterpreterFrame, f_executable);
    d.interpreter_frame.instr_ptr = offsetof(_PyInterpreterFrame, instr_ptr);
    d.interpreter_frame.localsplus = offsetof(_PyInterpreterFrame, localsplus);
    d.interpreter_frame.owner = offsetof(_PyInterpreterFrame, owner);
    d.code_object.size = sizeof(PyCodeObject);
    d.code_object.filename = offsetof(PyCodeObject, co_filename);
    d.code_object.name = offsetof(PyCodeObject, co_name);
    d.code_object.qualname = offsetof(PyCodeObject, co_qualname);
    d.code_object.linetable = offsetof(PyCodeObject, co_linetable);
    d.code_object.firstlineno = offsetof(PyCodeObject, co_firstlineno);
    d.code_object.co_code_adaptive = offsetof(PyCodeObject, co_code_adaptive);
    d.pyobject.size = sizeof(PyObject);
    d.pyobject.ob_type = offsetof(PyObject, ob_type);
    d.bytes_object.size = sizeof(PyBytesObject);
    d.bytes_object.ob_size = offsetof(PyBytesObject, ob_base.ob_size);
    d.bytes_object.ob_sval = offsetof(PyBytesObject, ob_sval);
    d.unicode_object.size = sizeof(PyUnicodeObject);
    d.unicode_object.state = offsetof(PyUnicodeObject, _base._base.state);
    d.unicode_object.length = offsetof(PyUnicodeObject, _base._base.length);
    d.unicode_object.asciiobject_size = sizeof(PyASCIIObject);

    struct py_layout l;
    assert_int_equal(py_layout_from_debug_offsets(&d, LOCAL_VERSION, &l), 0);
    expect_local_matches(&l);

    /* and the hand-built buffer above is this very build */
    _Alignas(8) unsigned char buf[DEBUG_OFFSETS_MAX_BYTES];
    fake(buf, p);
    put_u64(buf, p->version, PY_VERSION_HEX);
    struct py_layout fake;
    assert_int_equal(py_layout_from_debug_offsets(buf, LOCAL_VERSION, &fake), 0);
    assert_memory_equal(&fake, &l, sizeof l);
#else
    print_message("local headers are %s: no _Py_DebugOffsets to check\n", PY_VERSION);
    skip();
#endif
}

/* The live _PyRuntime of the libpython this test is linked with (tests/pylayout.mk links it
 * for 3.13+ in `make pylayout-versions`). */
__attribute__((unused)) static void test_debug_offsets_live_runtime(void **state)
{
    (void)state;
#if defined(CHECK_DEBUG_OFFSETS) && defined(PYLAYOUT_TEST_LIVE_RUNTIME)
    print_message("checking the live _PyRuntime of %s\n", Py_GetVersion());
    struct py_layout l;
    assert_int_equal(py_layout_from_debug_offsets(&_PyRuntime, LOCAL_VERSION, &l), 0);
    expect_local_matches(&l);
#else
    skip();
#endif
}

#else /* !HAVE_PYTHON_HEADERS */

__attribute__((unused)) static void test_builtin_matches_headers(void **state)
{
    (void)state;
    print_message("no Python.h: the offsetof checks are skipped\n");
    skip();
}

__attribute__((unused)) static void test_debug_offsets_match_headers(void **state)
{
    (void)state;
    skip();
}

__attribute__((unused)) static void test_debug_offsets_live_runtime(void **state)
{
    (void)state;
    skip();
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_versions),
        cmocka_unit_test(test_builtin_models),
        cmocka_unit_test(test_debug_offsets_fake),
        cmocka_unit_test(test_debug_offsets_refused),
    /* Only the checks the local headers can make are run: a skipped check would read as
         * a pass. The build requires python3-dev, so the headers are there. */
#if !defined(HAVE_PYTHON_HEADERS)
#error "test_pylayout needs Python headers (python3-dev)"
#endif
#if PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION >= 9 && PY_MINOR_VERSION <= 12
        cmocka_unit_test(test_builtin_matches_headers),
#endif
#ifdef CHECK_DEBUG_OFFSETS
        cmocka_unit_test(test_debug_offsets_match_headers),
#ifdef PYLAYOUT_TEST_LIVE_RUNTIME
        cmocka_unit_test(test_debug_offsets_live_runtime),
#endif
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
