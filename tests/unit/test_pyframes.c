/* Unit tests: the Python frame reader on the interpreter this test embeds. Python code calls a
 * probe (a C function) that reads the frames the way the agent does inside a CUDA call: with
 * the GIL released, without allocating; the Python side compares them with what
 * sys._getframe() says. Also: the merge with the native stack, and the line tables of every
 * instruction of real code objects. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

#include "collectors/native_stack.h"
#include "collectors/pyframes.h"
#include "collectors/pylayout.h"

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct capture {
    struct py_raw_frame py[PYFRAMES_MAX];
    int n_py;
    uintptr_t native[NATIVE_STACK_MAX];
    int n_native;
    uintptr_t words[NATIVE_STACK_MAX + 2 * PYFRAMES_MAX];
    int n_words;
    char file[PYFRAMES_MAX][256], func[PYFRAMES_MAX][128];
    uint32_t line[PYFRAMES_MAX];
    bool innermost_differs;
};

static void do_capture(struct capture *c)
{
    int truncated;
    static __thread void
        *raw[NATIVE_STACK_RAW_MAX]; /* test_threads captures from several threads */
    c->n_native = native_stack_capture(c->native, NATIVE_STACK_MAX, &truncated, raw);
    c->n_py = pyframes_ready(now_ns()) ? pyframes_capture(c->py, PYFRAMES_MAX) : -1;
    /* a node's origin (pyframes_innermost) is the capture's first frame, on every CPython */
    uintptr_t code = 0;
    uint32_t lasti = 0;
    bool inner = pyframes_innermost(&code, &lasti);
    c->innermost_differs =
        c->n_py > 0 ? !inner || code != c->py[0].code || lasti != c->py[0].lasti : inner;
    if (c->n_py > 0)
        c->n_words = pyframes_merge(c->native, c->n_native, c->py, c->n_py, c->words,
                                    (int)(sizeof c->words / sizeof c->words[0]));
    for (int i = 0; i < c->n_py; i++) {
        pyframes_resolve(c->py[i].code, c->py[i].lasti, c->file[i], sizeof c->file[i], c->func[i],
                         sizeof c->func[i], &c->line[i]);
        /* 3.9/3.10: the qualified name from the frame's owner (false elsewhere: co_qualname) */
        pyframes_qualname(c->py, c->n_py, i, c->func[i], sizeof c->func[i]);
    }
}

/* probe.capture(release_gil) -> ([(qualname, file, line)...], groups, eval_frames_left, py_words) */
static PyObject *probe_capture(PyObject *self, PyObject *args)
{
    (void)self;
    int release = 1;
    if (!PyArg_ParseTuple(args, "|p", &release))
        return NULL;
    static __thread struct capture c;
    memset(&c, 0, sizeof c);
    if (release) {
        Py_BEGIN_ALLOW_THREADS do_capture(&c);
        Py_END_ALLOW_THREADS
    } else {
        do_capture(&c);
    }
    if (c.n_py < 0)
        return PyUnicode_FromString(pyframes_status());
    if (c.innermost_differs) {
        PyErr_SetString(PyExc_AssertionError,
                        "pyframes_innermost is not the capture's first frame");
        return NULL;
    }
    PyObject *frames = PyList_New(0);
    int groups = 0;
    for (int i = 0; i < c.n_py; i++) {
        PyObject *t = Py_BuildValue("(ssI)", c.func[i], c.file[i], c.line[i]);
        PyList_Append(frames, t);
        Py_DECREF(t);
        groups += c.py[i].group_end;
    }
    int eval_left = 0, py_words = 0;
    for (int i = 0; i < c.n_words; i++) {
        if (pyframe_word(c.words[i])) {
            py_words++;
            i++;
        } else if (pyframes_is_eval_pc(c.words[i])) {
            eval_left++;
        }
    }
    int eval_native = 0;
    for (int i = 0; i < c.n_native; i++)
        eval_native += pyframes_is_eval_pc(c.native[i]);
    return Py_BuildValue("(Niiii)", frames, groups, eval_native, eval_left, py_words);
}

/* probe.line_for(linetable_bytes, firstlineno, lasti) */
static PyObject *probe_line_for(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer b;
    int first;
    unsigned int lasti;
    if (!PyArg_ParseTuple(args, "y*iI", &b, &first, &lasti))
        return NULL;
    int fmt = PY_MINOR_VERSION >= 11   ? PY_LINES_LOCATIONS
              : PY_MINOR_VERSION == 10 ? PY_LINES_LINETABLE
                                       : PY_LINES_LNOTAB;
    int line = pyframes_line_for(fmt, b.buf, (size_t)b.len, first, lasti);
    PyBuffer_Release(&b);
    return PyLong_FromLong(line);
}

static PyMethodDef probe_methods[] = {
    {"capture", probe_capture, METH_VARARGS, NULL},
    {"line_for", probe_line_for, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef probe_module = {PyModuleDef_HEAD_INIT, "probe", NULL, -1, probe_methods};

static PyObject *probe_init(void)
{
    return PyModule_Create(&probe_module);
}

/* expected(): the stack as sys._getframe() shows it, names qualified: co_qualname (3.11+), else
 * (3.9/3.10) the __qualname__ of a function object that runs the code, found by the garbage
 * collector (a path independent of the reader's), or the compiler's rule applied to the code
 * that holds it in its constants (a live function's, found the same way), or co_name. */
static const char prelude[] =
    "import gc, sys, threading, types, probe\n"
    "def qualname(code):\n"
    "    if hasattr(code, 'co_qualname'):\n"
    "        return code.co_qualname\n"
    "    for r in gc.get_referrers(code):  # functools.wraps renames wrappers: not theirs\n"
    "        if isinstance(r, types.FunctionType) and r.__code__ is code and \\\n"
    "                r.__qualname__.rpartition('.')[2] == code.co_name:\n"
    "            return r.__qualname__\n"
    "    for f in gc.get_objects():  # the code that makes it, in a live function: the compiler's rule\n"
    "        todo = [f.__code__] if isinstance(f, types.FunctionType) else []\n"
    "        while todo:\n"
    "            p = todo.pop()\n"
    "            if any(c is code for c in p.co_consts):\n"
    "                return qualname(p) + ('.<locals>.' if p.co_flags & 2 else '.') + code.co_name\n"
    "            todo += [c for c in p.co_consts if isinstance(c, types.CodeType)]\n"
    "    return code.co_name\n"
    "def expected(depth=1):\n"
    "    f = sys._getframe(depth)\n"
    "    out = []\n"
    "    while f is not None:\n"
    "        out.append((qualname(f.f_code), f.f_code.co_filename, f.f_lineno))\n"
    "        f = f.f_back\n"
    "    return out\n"
    "def check(got, exp):\n"
    "    assert not isinstance(got, str), got\n"
    "    frames, groups, eval_native, eval_left, py_words = got\n"
    "    assert frames == exp, f'\\ngot {frames}\\nexp {exp}'\n"
    "    assert py_words == len(frames), (py_words, len(frames))\n"
    "    # every evaluation-loop frame of the native stack was replaced by its Python frames\n"
    "    assert eval_left == 0, eval_left\n"
    "    assert groups == eval_native, (groups, eval_native)\n";

static int run_python(const char *code)
{
    PyObject *main = PyImport_AddModule("__main__");
    PyObject *g = PyModule_GetDict(main);
    PyObject *r = PyRun_String(code, Py_file_input, g, g);
    if (!r) {
        PyErr_Print();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

static int setup(void **state)
{
    (void)state;
#ifdef PYFRAMES_TEST_HOME
    setenv("PYTHONHOME", PYFRAMES_TEST_HOME, 1); /* a CPython laid out away from its prefix */
#endif
    PyImport_AppendInittab("probe", probe_init);
    Py_Initialize();
    native_stack_init();
    return run_python(prelude);
}

static int teardown(void **state)
{
    (void)state;
    return Py_FinalizeEx() < 0 ? -1 : 0;
}

static void test_layout_known(void **state)
{
    (void)state;
    assert_true(pyframes_ready(now_ns()));
    assert_false(pyframes_unsupported());
    char want[32];
    snprintf(want, sizeof want, "CPython %d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    assert_string_equal(pyframes_status(), want);
}

static void test_nested_functions_and_methods_gil_released(void **state)
{
    (void)state;
    assert_int_equal(run_python("class MaskedLoss:\n"
                                "    def ignore_background(self):\n"
                                "        got, exp = probe.capture(True), expected()\n"
                                "        check(got, exp)\n"
                                "        return len(got[0])\n"
                                "    def forward(self):\n"
                                "        return self.ignore_background()\n"
                                "def outer():\n"
                                "    def inner():\n"
                                "        return MaskedLoss().forward()\n"
                                "    return inner()\n"
                                "assert outer() >= 5\n"),
                     0);
}

static void test_gil_held(void **state)
{
    (void)state;
    assert_int_equal(run_python("def held():\n"
                                "    got, exp = probe.capture(False), expected()\n"
                                "    check(got, exp)\n"
                                "held()\n"),
                     0);
}

static void test_generators_lambdas_comprehensions(void **state)
{
    (void)state;
    assert_int_equal(run_python("def gen():\n"
                                "    got, exp = probe.capture(), expected()\n"
                                "    check(got, exp)\n"
                                "    yield 1\n"
                                "list(gen())\n"
                                "f = lambda: check(*(lambda: (probe.capture(), expected()))())\n"
                                "f()\n"
                                "[check(probe.capture(), expected()) for _ in range(2)]\n"),
                     0);
}

static void test_called_from_c_callbacks(void **state)
{
    (void)state;
    /* sorted() calls the key function from C: two evaluation loops on the native stack */
    assert_int_equal(run_python("def key(x):\n"
                                "    got, exp = probe.capture(), expected()\n"
                                "    check(got, exp)\n"
                                "    return x\n"
                                "def sort_it():\n"
                                "    return sorted([3, 1, 2], key=key)\n"
                                "assert sort_it() == [1, 2, 3]\n"),
                     0);
}

static void test_threads(void **state)
{
    (void)state;
    assert_int_equal(run_python("errors = []\n"
                                "def work():\n"
                                "    try:\n"
                                "        got, exp = probe.capture(), expected()\n"
                                "        check(got, exp)\n"
                                "        assert got[0][-1][0].endswith('_bootstrap'), got[0][-1]\n"
                                "    except BaseException as e:\n"
                                "        errors.append(e)\n"
                                "ts = [threading.Thread(target=work) for _ in range(4)]\n"
                                "[t.start() for t in ts]\n"
                                "[t.join() for t in ts]\n"
                                "assert not errors, errors\n"),
                     0);
}

static void test_non_ascii_names(void **state)
{
    (void)state;
    assert_int_equal(run_python("def größe_π():\n"
                                "    got, exp = probe.capture(), expected()\n"
                                "    check(got, exp)\n"
                                "    assert got[0][0][0] == 'größe_π'\n"
                                "größe_π()\n"),
                     0);
}

static void test_deep_recursion_is_cut_not_crashed(void **state)
{
    (void)state;
    assert_int_equal(run_python("def deep(n):\n"
                                "    if n:\n"
                                "        return deep(n - 1)\n"
                                "    return probe.capture()\n"
                                "frames = deep(300)[0]\n"
                                "assert len(frames) == 128, len(frames)\n"
                                "assert all(f[0] == 'deep' for f in frames)\n"),
                     0);
}

/* The qualified names of functions that are not plain methods called on self (on 3.9/3.10 the
 * reader derives them; 3.11+ reads co_qualname): each innermost name is written out, and the
 * whole stack compared with expected(). */
static void test_qualified_names(void **state)
{
    (void)state;
    assert_int_equal(
        run_python(
            "import functools\n"
            "def innermost(want):\n"
            "    got, exp = probe.capture(), expected()\n"
            "    check(got, exp)\n"
            "    assert got[0][1][0] == want, (got[0][1][0], want)\n"
            "    # the GIL released above (3.9/3.10: the owner search reads carefully), held here\n"
            "    held = probe.capture(False)\n"
            "    assert held[0][1][0] == want, (held[0][1][0], want)\n"
            "def wraps(fn):\n"
            "    @functools.wraps(fn)\n"
            "    def wrapper(*a, **k):\n"
            "        return fn(*a, **k)\n"
            "    return wrapper\n"
            "class Base:\n"
            "    def inherited(self):\n"
            "        innermost('Base.inherited')\n"
            "class Scaler(Base):\n"
            "    @staticmethod\n"
            "    def static(x):\n"
            "        innermost('Scaler.static')\n"
            "    @classmethod\n"
            "    def make(cls):\n"
            "        innermost('Scaler.make')\n"
            "    @property\n"
            "    def scale(self):\n"
            "        innermost('Scaler.scale')\n"
            "        return 1\n"
            "    @wraps\n"
            "    def decorated(self):\n"
            "        innermost('Scaler.decorated')\n"
            "    def __private(self):\n"
            "        innermost('Scaler.__private')\n"
            "    def call_private(self):\n"
            "        self.__private()\n"
            "    def self_in_a_closure(self):\n"
            "        f = lambda: self\n"
            "        innermost('Scaler.self_in_a_closure')\n"
            "        return f\n"
            "    def hook(self):\n"
            "        def pack(t):\n"
            "            innermost('Scaler.hook.<locals>.pack')\n"
            "        return pack\n"
            "    class Inner:\n"
            "        def method(self):\n"
            "            innermost('Scaler.Inner.method')\n"
            "def factory():\n"
            "    class Local:\n"
            "        def method(self):\n"
            "            innermost('factory.<locals>.Local.method')\n"
            "    return Local\n"
            "s = Scaler()\n"
            "s.inherited()\n"
            "Scaler.static(1)\n"
            "Scaler.make()\n"
            "s.scale\n"
            "s.decorated()\n"
            "s.call_private()\n"
            "s.self_in_a_closure()\n"
            "pack = s.hook()\n"
            "sorted([1], key=pack)  # called from C, after hook() returned\n"
            "Scaler.Inner().method()\n"
            "factory()().method()\n"
            "def outer():\n"
            "    g = lambda: innermost('outer.<locals>.<lambda>')\n"
            "    g()\n"
            "    # 3.12 inlines comprehensions (PEP 709): no frame of their own\n"
            "    inlined = sys.version_info >= (3, 12)\n"
            "    return [innermost('outer' if inlined else 'outer.<locals>.<listcomp>') for _ in range(1)]\n"
            "outer()\n"),
        0);
}

/* Every instruction of a few functions: our line table reader against co_lines(). */
static void test_line_tables(void **state)
{
    (void)state;
    assert_int_equal(
        run_python(
            "import dis, json, os.path, textwrap\n"
            "def ranges(co):\n"
            "    if hasattr(co, 'co_lines'):\n"
            "        return list(co.co_lines())\n"
            "    starts = list(dis.findlinestarts(co))  # 3.9\n"
            "    ends = [o for o, _ in starts[1:]] + [len(co.co_code)]\n"
            "    return [(o, e, l) for (o, l), e in zip(starts, ends)]\n"
            "def lines_of(co):\n"
            "    want = {}\n"
            "    for start, end, line in ranges(co):\n"
            "        for off in range(start, end, 2):\n"
            "            want[off // 2] = -1 if line is None else line\n"
            "    for unit, line in want.items():\n"
            "        table = co.co_linetable if hasattr(co, 'co_linetable') else co.co_lnotab\n"
            "        got = probe.line_for(table, co.co_firstlineno, unit)\n"
            "        assert got == line, (co.co_name, unit, got, line)\n"
            "    for c in co.co_consts:\n"
            "        if hasattr(c, 'co_lines'):\n"
            "            lines_of(c)\n"
            "for mod in (json, os.path, textwrap, dis):\n"
            "    src = open(mod.__file__).read()\n"
            "    lines_of(compile(src, mod.__file__, 'exec'))\n"),
        0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_known),
        cmocka_unit_test(test_nested_functions_and_methods_gil_released),
        cmocka_unit_test(test_gil_held),
        cmocka_unit_test(test_generators_lambdas_comprehensions),
        cmocka_unit_test(test_called_from_c_callbacks),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_non_ascii_names),
        cmocka_unit_test(test_qualified_names),
        cmocka_unit_test(test_deep_recursion_is_cut_not_crashed),
        cmocka_unit_test(test_line_tables),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
