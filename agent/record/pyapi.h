/* agent/record/pyapi.h: the few CPython C-API functions the agent calls, looked up at run time in the
 * process (dlsym: the agent never links libpython; a process without CPython has none of them).
 * Only with the GIL held: from a safe point (a Py_AddPendingCall callback, a hook the interpreter
 * calls) or on the agent's Python thread once PyGILState_Ensure took it (agent/step/pyhook.c);
 * never on a recording path, but for the calls CPython lets any thread make without the GIL
 * (Py_AddPendingCall, Py_IsInitialized, Py_IsFinalizing, PyGILState_Check). agent/step/pyhook.c
 * and agent/record/autograd.c's bridge use them. */
#ifndef SYNCSPY_PYAPI_H
#define SYNCSPY_PYAPI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct py_object PyObject;

#define PY_FILE_INPUT 257 /* Py_file_input */
#define PY_METH_VARARGS 1
#define PY_METH_KEYWORDS 2
#define PY_METH_NOARGS 4
#define PY_METH_O 8
#define PY_METH_FASTCALL 0x80 /* METH_FASTCALL (stable ABI since 3.10) */

struct py_method_def { /* PyMethodDef, part of the stable ABI */
    const char *name;
    PyObject *(*meth)(PyObject *, PyObject *);
    int flags;
    const char *doc;
};

struct pyapi {
    int (*add_pending_call)(int (*)(void *), void *);
    int (*is_initialized)(void);
    int (*is_finalizing)(void); /* Py_IsFinalizing (3.13+) or _Py_IsFinalizing; may be NULL */
    PyObject *(*dict_new)(void);
    int (*dict_set)(PyObject *, const char *, PyObject *);
    PyObject *(*dict_get)(PyObject *, const char *);
    PyObject *(*builtins)(void);
    PyObject *(*compile)(const char *, const char *, int, void *,
                         int);                                  /* Py_CompileStringExFlags */
    PyObject *(*eval_code)(PyObject *, PyObject *, PyObject *); /* PyEval_EvalCode */
    void (*err_clear)(void);
    PyObject *(*err_occurred)(void);
    void (*decref)(PyObject *);
    void (*incref)(PyObject *);
    PyObject *(*cfunction_new)(struct py_method_def *, PyObject *, PyObject *);
    PyObject *(*instance_method_new)(PyObject *);          /* PyInstanceMethod_New */
    PyObject *(*call)(PyObject *, PyObject *, PyObject *); /* PyObject_Call */
    PyObject *(*call_object)(PyObject *, PyObject *);      /* PyObject_CallObject */
    PyObject *(*tuple_new)(ptrdiff_t);
    ptrdiff_t (*tuple_size)(PyObject *);
    PyObject *(*tuple_get)(PyObject *, ptrdiff_t);       /* borrowed */
    int (*tuple_set)(PyObject *, ptrdiff_t, PyObject *); /* steals */
    int (*contains)(PyObject *, PyObject *);             /* PySequence_Contains */
    PyObject *(*long_from_u64)(unsigned long long);
    unsigned long long (*long_as_u64)(PyObject *);
    const char *(*unicode_utf8)(PyObject *);          /* PyUnicode_AsUTF8 */
    PyObject *(*unicode_new)(const char *);           /* PyUnicode_FromString */
    PyObject *(*unicode_intern)(const char *);        /* PyUnicode_InternFromString */
    PyObject *(*modules)(void);                       /* PyImport_GetModuleDict, borrowed */
    PyObject *(*dict_lookup)(PyObject *, PyObject *); /* PyDict_GetItemWithError: borrowed */
    PyObject *(*getattr)(PyObject *, PyObject *);     /* PyObject_GetAttr */
    int (*is_true)(PyObject *);                       /* PyObject_IsTrue */
    long (*long_as_long)(PyObject *);                 /* PyLong_AsLong */
    PyObject *none;
    /* optional (NULL when this CPython lacks them) */
    PyObject *(*weakref_new)(PyObject *, PyObject *); /* PyWeakref_NewRef */
    int (*weakref_get_ref)(PyObject *, PyObject **);  /* PyWeakref_GetRef, 3.13+ */
    PyObject *(*weakref_get_object)(PyObject *); /* PyWeakref_GetObject (borrowed; gone in 3.15) */
    int (*add_audit_hook)(int (*)(const char *, PyObject *, void *),
                          void *); /* PySys_AddAuditHook */
    int (*gil_ensure)(void);       /* PyGILState_Ensure (its PyGILState_STATE) */
    void (*gil_release)(int);      /* PyGILState_Release */
    int (*gil_check)(
        void); /* PyGILState_Check: 1 when this thread holds the GIL (or it cannot tell) */
};

extern struct pyapi pyapi;

/* Looks every function up (until all are found); false while this process has no CPython (or an
 * unusable one). */
bool pyapi_resolve(void);
/* The flag of a thread looking them up (a lock only ever tried), for the fork handlers
 * (agent/process/fork_locks.h: cleared in the child). */
_Atomic bool *pyapi_resolving(void);

/* Py_None, new reference. */
PyObject *pyapi_none(void);

#endif
