/* agent/record/pyapi.c: the CPython C-API functions the agent calls, found with dlsym (see pyapi.h). */
#include "agent/record/pyapi.h"

#include <dlfcn.h>
#include <stdatomic.h>

struct pyapi pyapi;

/* A thread is looking (a lock only ever tried: cleared in a fork's child, agent/process/fork_locks.h). */
static _Atomic bool resolving;
static _Atomic bool resolved;

_Atomic bool *pyapi_resolving(void)
{
    return &resolving;
}

static void resolve(void)
{
#define SYM(field, name)                                \
    do {                                                \
        void *p_ = dlsym(RTLD_DEFAULT, name);           \
        if (!p_)                                        \
            return;                                     \
        __builtin_memcpy(&pyapi.field, &p_, sizeof p_); \
    } while (0)
    SYM(add_pending_call, "Py_AddPendingCall");
    SYM(is_initialized, "Py_IsInitialized");
    SYM(dict_new, "PyDict_New");
    SYM(dict_set, "PyDict_SetItemString");
    SYM(dict_get, "PyDict_GetItemString");
    SYM(builtins, "PyEval_GetBuiltins");
    SYM(compile, "Py_CompileStringExFlags");
    SYM(eval_code, "PyEval_EvalCode");
    SYM(err_clear, "PyErr_Clear");
    SYM(err_occurred, "PyErr_Occurred");
    SYM(decref, "Py_DecRef");
    SYM(incref, "Py_IncRef");
    SYM(cfunction_new, "PyCFunction_NewEx");
    SYM(instance_method_new, "PyInstanceMethod_New");
    SYM(call, "PyObject_Call");
    SYM(call_object, "PyObject_CallObject");
    SYM(tuple_new, "PyTuple_New");
    SYM(tuple_size, "PyTuple_Size");
    SYM(tuple_get, "PyTuple_GetItem");
    SYM(tuple_set, "PyTuple_SetItem");
    SYM(contains, "PySequence_Contains");
    SYM(long_from_u64, "PyLong_FromUnsignedLongLong");
    SYM(long_as_u64, "PyLong_AsUnsignedLongLong");
    SYM(unicode_utf8, "PyUnicode_AsUTF8");
    SYM(unicode_new, "PyUnicode_FromString");
    SYM(unicode_intern, "PyUnicode_InternFromString");
    SYM(modules, "PyImport_GetModuleDict");
    SYM(dict_lookup, "PyDict_GetItemWithError");
    SYM(getattr, "PyObject_GetAttr");
    SYM(is_true, "PyObject_IsTrue");
    SYM(long_as_long, "PyLong_AsLong");
    SYM(none, "_Py_NoneStruct");
#undef SYM
#define OPTIONAL(field, name)                           \
    do {                                                \
        void *p_ = dlsym(RTLD_DEFAULT, name);           \
        __builtin_memcpy(&pyapi.field, &p_, sizeof p_); \
    } while (0)
    OPTIONAL(weakref_new, "PyWeakref_NewRef");
    OPTIONAL(weakref_get_ref, "PyWeakref_GetRef");
    OPTIONAL(weakref_get_object, "PyWeakref_GetObject");
    OPTIONAL(add_audit_hook, "PySys_AddAuditHook");
    OPTIONAL(gil_ensure, "PyGILState_Ensure");
    OPTIONAL(gil_release, "PyGILState_Release");
    OPTIONAL(gil_check, "PyGILState_Check");
#undef OPTIONAL
    void *fin = dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
    if (!fin)
        fin = dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
    __builtin_memcpy(&pyapi.is_finalizing, &fin, sizeof fin);
    atomic_store_explicit(&resolved, true, memory_order_release);
}

bool pyapi_resolve(void)
{
    if (atomic_load_explicit(&resolved, memory_order_acquire))
        return true;
    if (atomic_exchange_explicit(&resolving, true, memory_order_acquire))
        return false; /* another thread is looking: never wait on a recording path */
    if (!atomic_load_explicit(&resolved, memory_order_relaxed))
        resolve(); /* until every function is found: libpython may be loaded late */
    atomic_store_explicit(&resolving, false, memory_order_release);
    return atomic_load_explicit(&resolved, memory_order_acquire);
}

PyObject *pyapi_none(void)
{
    pyapi.incref(pyapi.none);
    return pyapi.none;
}
