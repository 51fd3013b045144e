/* agent/pyhook.c: the optimizer-step hook (see pyhook.h). pyhook_poll runs on the application's
 * thread inside a CUDA call: atomics and Py_AddPendingCall only (which CPython documents as
 * callable from any thread without the GIL). The pending callback runs with the GIL on the
 * main thread; it never raises into the program (errors are cleared) and leaves no names in
 * the program's namespaces (its code runs in a dictionary of its own). */
#include "agent/pyhook.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent/lifecycle.h"
#include "common/log.h"

enum { HOOK_IDLE, HOOK_QUEUED, HOOK_REGISTERED, HOOK_OFF };

static _Atomic int hook_state = HOOK_IDLE;
static _Atomic uint64_t next_try_ns;

#define HOOK_RETRY_NS 50000000ull
#define PY_FILE_INPUT 257 /* Py_file_input */
#define PY_METH_VARARGS 1

typedef void PyObject;
struct py_method_def { /* PyMethodDef, part of the stable ABI */
    const char *name;
    PyObject *(*meth)(PyObject *, PyObject *);
    int flags;
    const char *doc;
};

static struct {
    int (*add_pending_call)(int (*)(void *), void *);
    int (*is_initialized)(void);
    int (*is_finalizing)(void); /* Py_IsFinalizing (3.13+) or _Py_IsFinalizing; may be NULL */
    PyObject *(*dict_new)(void);
    int (*dict_set)(PyObject *, const char *, PyObject *);
    PyObject *(*dict_get)(PyObject *, const char *);
    PyObject *(*builtins)(void);
    PyObject *(*run)(const char *, int, PyObject *, PyObject *, void *);
    void (*err_clear)(void);
    void (*decref)(PyObject *);
    void (*incref)(PyObject *);
    PyObject *(*cfunction_new)(struct py_method_def *, PyObject *, PyObject *);
    PyObject *none;
} api;

static bool resolve_api(void)
{
#define SYM(field, name)                                                        \
    do {                                                                        \
        void *p_ = dlsym(RTLD_DEFAULT, name);                                   \
        if (!p_)                                                                \
            return false;                                                       \
        __builtin_memcpy(&api.field, &p_, sizeof p_);                           \
    } while (0)
    SYM(add_pending_call, "Py_AddPendingCall");
    SYM(is_initialized, "Py_IsInitialized");
    SYM(dict_new, "PyDict_New");
    SYM(dict_set, "PyDict_SetItemString");
    SYM(dict_get, "PyDict_GetItemString");
    SYM(builtins, "PyEval_GetBuiltins");
    SYM(run, "PyRun_StringFlags");
    SYM(err_clear, "PyErr_Clear");
    SYM(decref, "Py_DecRef");
    SYM(incref, "Py_IncRef");
    SYM(cfunction_new, "PyCFunction_NewEx");
    SYM(none, "_Py_NoneStruct");
#undef SYM
    void *fin = dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
    if (!fin)
        fin = dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
    __builtin_memcpy(&api.is_finalizing, &fin, sizeof fin);
    return true;
}

/* The hook torch calls after every optimizer step: hook(optimizer, args, kwargs). */
static PyObject *step_hook(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    agent_step(false);
    api.incref(api.none);
    return api.none;
}

static struct py_method_def step_def = {"_syncspy_step", step_hook, PY_METH_VARARGS,
                                        "syncspy: ends a training step"};

static const char register_code[] =
    "import sys\n"
    "_m = sys.modules.get('torch.optim.optimizer')\n"
    "_reg = getattr(_m, 'register_optimizer_step_post_hook', None)\n"
    "if _reg is not None and not sys.is_finalizing():\n"
    "    _handle = _reg(lambda *a, **k: _syncspy_step())\n"
    "    ok = True\n";

/* Runs with the GIL on the main thread, between two bytecodes. Always returns 0: an error here
 * must not become an exception in the program. */
static int register_hook(void *arg)
{
    (void)arg;
    int next = HOOK_IDLE;
    if (atomic_load(&agent_state) == STATE_RUNNING) {
        PyObject *g = api.dict_new();
        PyObject *fn = g ? api.cfunction_new(&step_def, NULL, NULL) : NULL;
        if (fn && api.dict_set(g, "__builtins__", api.builtins()) == 0 &&
            api.dict_set(g, "_syncspy_step", fn) == 0) {
            PyObject *r = api.run(register_code, PY_FILE_INPUT, g, g, NULL);
            if (r) {
                api.decref(r);
                if (api.dict_get(g, "ok")) {
                    next = HOOK_REGISTERED;
                    dbg(1, "optimizer step hook registered: each optimizer.step() ends a step");
                }
            }
        }
        api.err_clear();
        if (fn)
            api.decref(fn);
        if (g)
            api.decref(g);
    }
    atomic_store(&hook_state, next);
    return 0;
}

void pyhook_poll(uint64_t now_ns)
{
    if (agent_cfg.step_mode != STEP_AUTO ||
        atomic_load_explicit(&hook_state, memory_order_relaxed) != HOOK_IDLE ||
        now_ns < atomic_load_explicit(&next_try_ns, memory_order_relaxed))
        return;
    int idle = HOOK_IDLE;
    if (!atomic_compare_exchange_strong(&hook_state, &idle, HOOK_QUEUED))
        return;
    atomic_store_explicit(&next_try_ns, now_ns + HOOK_RETRY_NS, memory_order_relaxed);
    if (!api.add_pending_call && !resolve_api()) {
        atomic_store(&hook_state, HOOK_OFF);
        return;
    }
    /* Never once the interpreter is going away: Py_AddPendingCall would touch freed state. */
    if (!api.is_initialized() || (api.is_finalizing && api.is_finalizing()) ||
        api.add_pending_call(register_hook, NULL) != 0)
        atomic_store(&hook_state, HOOK_IDLE);
}

void pyhook_atfork_child(void)
{
    /* the registered hook lives on in the child's interpreter; a queued call may never run */
    if (atomic_load(&hook_state) == HOOK_QUEUED)
        atomic_store(&hook_state, HOOK_IDLE);
}
