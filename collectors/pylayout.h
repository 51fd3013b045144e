/* collectors/pylayout.h: where CPython keeps the things syncspy reads without the GIL (the
 * thread's frame chain, code objects, their names and line tables), per CPython version.
 * Pure data and lookups: no reads of the live interpreter here (collectors/pyframes.c does
 * those). An offset of -1 means "this version has no such field". */
#ifndef SYNCSPY_PYLAYOUT_H
#define SYNCSPY_PYLAYOUT_H

#include <stdbool.h>
#include <stdint.h>

enum py_frame_model {
    PY_FRAMES_OBJECTS,     /* 3.9, 3.10: PyFrameObject chain (f_back), f_lasti */
    PY_FRAMES_INTERPRETER, /* 3.11+: _PyInterpreterFrame chain (previous) */
};

enum py_entry_marker {
    PY_ENTRY_NONE,     /* 3.9/3.10: one PyFrameObject per _PyEval_EvalFrameDefault call */
    PY_ENTRY_IS_ENTRY, /* 3.11: bool is_entry on the first frame of each C-level eval call */
    PY_ENTRY_CSTACK,   /* 3.12+: a shim frame with owner == FRAME_OWNED_BY_CSTACK marks it */
};

enum py_line_table {
    PY_LINES_LNOTAB,    /* 3.9: co_lnotab (byte increments) */
    PY_LINES_LINETABLE, /* 3.10: co_linetable (PEP 626 start/end deltas) */
    PY_LINES_LOCATIONS, /* 3.11+: co_linetable location table (PEP 657) */
};

struct py_layout {
    uint32_t version; /* major << 8 | minor, e.g. 0x030B for 3.11 */
    enum py_frame_model frames;
    enum py_entry_marker entry;
    enum py_line_table lines;

    /* PyThreadState */
    int32_t tstate_frame;         /* 3.9/3.10: PyFrameObject *frame */
    int32_t tstate_cframe;        /* 3.11/3.12: _PyCFrame *cframe */
    int32_t cframe_current_frame; /* 3.11/3.12: offset of current_frame in _PyCFrame */
    int32_t tstate_current_frame; /* 3.13+: _PyInterpreterFrame *current_frame */

    /* PyFrameObject (3.9/3.10) */
    int32_t frame_back;
    int32_t frame_code;
    int32_t frame_lasti; /* int f_lasti: 3.9 in bytes, 3.10 in code units */

    /* _PyInterpreterFrame (3.11+) */
    int32_t iframe_code;          /* f_code (3.11/3.12), f_executable (3.13+) */
    int32_t iframe_code_tag_bits; /* 3.14+: f_executable is a _PyStackRef whose low bits tag
                                    * the reference (Py_TAG_REFCNT): cleared; 0 before */
    int32_t iframe_previous;
    int32_t iframe_instr;    /* prev_instr (3.11/3.12) or instr_ptr (3.13+) */
    int32_t iframe_owner;    /* char owner */
    int32_t iframe_is_entry; /* 3.11: bool is_entry */
    int32_t owner_cstack;    /* 3.12+: the owner of the frame each C-level evaluation
                                    * call pushes (FRAME_OWNED_BY_CSTACK; 3.14:
                                    * FRAME_OWNED_BY_INTERPRETER), else -1; this value and those
                                    * above it are never a Python function's frame */
    int32_t instr_is_prev;   /* 1 when iframe_instr points at the previous code unit */

    /* PyCodeObject */
    int32_t code_filename; /* PyObject * (str) */
    int32_t code_name;
    int32_t code_qualname;      /* 3.11+; -1 before */
    int32_t code_firstlineno;   /* int */
    int32_t code_linetable;     /* PyObject * (bytes): co_lnotab (3.9) or co_linetable */
    int32_t code_code_adaptive; /* 3.11+: offset of co_code_adaptive (first code unit) */
    int32_t code_code;          /* 3.9/3.10: PyObject *co_code (bytes), unused after */

    /* Objects */
    int32_t object_type;          /* offsetof(PyObject, ob_type) */
    int32_t bytes_size;           /* offsetof(PyVarObject, ob_size) for bytes */
    int32_t bytes_data;           /* offsetof(PyBytesObject, ob_sval) */
    int32_t unicode_length;       /* offsetof(PyASCIIObject, length) */
    int32_t unicode_state;        /* offsetof(PyASCIIObject, state) (a 32-bit bitfield word) */
    int32_t unicode_ascii_data;   /* sizeof(PyASCIIObject): where compact ASCII data starts */
    int32_t unicode_compact_data; /* sizeof(PyCompactUnicodeObject): compact non-ASCII data */
    /* bit positions inside the state word */
    int32_t state_kind_shift; /* kind: 3 bits (1, 2 or 4 bytes per character) */
    int32_t state_compact_bit;
    int32_t state_ascii_bit;

    /* 3.9/3.10 (no co_qualname): where the function that runs a frame's code is found, for its
     * __qualname__ (collectors/pyframes.c). Meaningful only when qual.derive is set. */
    struct py_qualname_layout {
        bool derive;
        int32_t frame_globals;    /* PyFrameObject: PyObject *f_globals (a dict) */
        int32_t frame_localsplus; /* PyObject *f_localsplus[]: arguments first */
        int32_t code_argcount, code_nlocals, code_flags; /* int */
        int32_t code_consts;                             /* PyObject * (tuple) */
        int32_t code_cellvars;                           /* PyObject * (tuple) */
        int32_t code_cell2arg; /* Py_ssize_t *: cell i holds argument cell2arg[i], or -1 */
        int32_t func_code, func_qualname, func_dict; /* PyFunctionObject */
        int32_t type_flags;                          /* unsigned long tp_flags */
        int32_t type_dict, type_mro;
        int32_t dict_keys, dict_values; /* PyDictObject: ma_keys, ma_values (NULL: combined) */
        /* PyDictKeysObject (Objects/dict-common.h, not installed): dk_size, dk_nentries, the
         * index array dk_indices (1, 2, 4 or 8 bytes an index by dk_size), then the entries */
        int32_t keys_size, keys_nentries, keys_indices;
        int32_t entry_bytes, entry_key, entry_value; /* PyDictKeyEntry: hash, key, value */
        int32_t tuple_size, tuple_items;
        int32_t cell_ref;         /* PyCellObject.ob_ref */
        int32_t wrapper_callable; /* staticmethod/classmethod (Objects/funcobject.c) */
        int32_t property_get, property_set, property_del; /* Objects/descrobject.c */
    } qual;
};

/* The built-in layout of a CPython version (major << 8 | minor), or NULL when unknown.
 * 3.13+ are better read from the interpreter's own _Py_DebugOffsets: see
 * py_layout_from_debug_offsets. */
const struct py_layout *py_layout_builtin(uint32_t version);

/* 3.13, 3.14: fills *out from the _Py_DebugOffsets at the start of _PyRuntime (cookie "xdebugpy").
 * Returns 0, or -1 when the cookie or the version does not match what this code knows. The
 * memory at runtime must be readable (it is: _PyRuntime is a data symbol of libpython). */
int py_layout_from_debug_offsets(const void *runtime, uint32_t version, struct py_layout *out);

#endif
