/* agent/record/python_names.c: (code, instruction) -> names (see python_names.h). First sight of a Python frame
 * takes the table lock (taken after the site table lock, never while holding it) and copies
 * the strings into the arena; nothing here calls malloc. */
#include "agent/record/arena.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static struct arena names_arena = {.cap_bytes = 8u << 20};
static bool names_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) arena_alloc(&names_arena, (sz))
#define uthash_free(ptr, sz) ((void)(ptr), (void)(sz))
#define uthash_nonfatal_oom(obj) (names_oom = true)
#include <uthash.h>

#include "agent/record/compiled.h"
#include "agent/record/python_names.h"
#include "agent/record/upcalls.h"

#include "common/gencode.h"
#include "collectors/pyframes.h"

struct pyname_key {
    uintptr_t code;
    uint64_t lasti;
};

struct pyname_rec {
    UT_hash_handle hh;
    struct pyname_key key;
    struct pyname name;
};

/* 3.9/3.10: a code object's derived qualified name (NULL: none found), so that every line of a
 * function is named alike whichever stack saw it first. */
struct qualname_rec {
    UT_hash_handle hh;
    uintptr_t code;
    const char *qualname;
};

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pyname_rec *names;
static struct qualname_rec *qualnames;

static const char *arena_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(&names_arena, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The qualified name of code (3.9/3.10), derived once from one of its running frames; NULL when
 * none was found or none of py runs it. */
static const char *qualname_of(uintptr_t code, const struct py_raw_frame *py, int n_py)
{
    struct qualname_rec *q;
    HASH_FIND(hh, qualnames, &code, sizeof code, q);
    if (q)
        return q->qualname;
    int i = 0;
    while (i < n_py && py[i].code != code)
        i++;
    if (i == n_py)
        return NULL; /* not running now: nothing to derive it from (and nothing kept) */
    char func[256];
    bool found = pyframes_qualname(py, n_py, i, func, sizeof func);
    q = arena_alloc(&names_arena, sizeof *q);
    if (!q)
        return NULL;
    q->code = code;
    q->qualname = found ? arena_strdup(func) : NULL;
    HASH_ADD(hh, qualnames, code, sizeof code, q);
    return q->qualname;
}

/* Dynamo's resume functions (the rest of a function after a graph break, run as a function of
 * its own with the original file and line numbers) by the function they resume:
 * "torch_dynamo_resume_in_loss_fn_at_11" is loss_fn. In place. */
static void resume_function_name(char *func)
{
    static const char prefix[] = "torch_dynamo_resume_in_";
    char *p = strstr(func, prefix); /* after a qualified name's "<locals>." too */
    if (!p)
        return;
    char *name = p + sizeof prefix - 1, *at = strstr(name, "_at_");
    for (char *next; at && (next = strstr(at + 1, "_at_"));)
        at = next; /* the last "_at_": a function's own name may hold one */
    if (!at || at == name)
        return;
    memmove(p, name, (size_t)(at - name));
    p[at - name] = '\0';
}

/* *ask: a file of generated code to ask the user's lines of (once the lock is let go). */
static void intern_one(uintptr_t code, uint32_t lasti, const struct py_raw_frame *py, int n_py,
                       const char **ask)
{
    struct pyname_key key = {code, lasti};
    struct pyname_rec *r;
    HASH_FIND(hh, names, &key, sizeof key, r);
    if (r)
        return;
    char file[512], func[256];
    uint32_t line;
    pyframes_resolve(code, lasti, file, sizeof file, func, sizeof func, &line);
    const char *qualname = pyframes_derives_qualnames() ? qualname_of(code, py, n_py) : NULL;
    if (qualname) {
        size_t len = strnlen(qualname, sizeof func - 1);
        memcpy(func, qualname, len);
        func[len] = 0;
    }
    resume_function_name(func);
    r = arena_alloc(&names_arena, sizeof *r);
    if (!r)
        return;
    r->key = key;
    r->name.file = arena_strdup(file);
    r->name.function = arena_strdup(func);
    r->name.line = line;
    if (!r->name.file || !r->name.function)
        return;
    names_oom = false;
    HASH_ADD(hh, names, key, sizeof key, r);
    /* torch.compile's generated code not named yet: asked for now, so that the answer is there
     * when the flusher writes the frame (agent/record/compiled.h) */
    if (compiled_is_generated(r->name.file) && !compiled_find(r->name.file, line) && !*ask)
        *ask = r->name.file;
}

void python_names_intern_stack(const uintptr_t *words, uint32_t n, const struct py_raw_frame *py,
                               int n_py)
{
    bool any = false;
    for (uint32_t i = 0; i + 1 < n && !any; i++)
        any = pyframe_word(words[i]);
    if (!any)
        return;
    const char *ask = NULL; /* one request looks at every generated module */
    pthread_mutex_lock(&names_lock);
    for (uint32_t i = 0; i + 1 < n; i++)
        if (pyframe_word(words[i])) {
            intern_one(words[i + 1], (uint32_t)(words[i] & 0xffffffffu), py, n_py, &ask);
            i++;
        }
    pthread_mutex_unlock(&names_lock);
    /* outside the lock: the request may start the agent's Python thread (agent/step/pyhook.c) */
    if (ask)
        up_request_graphs(ask);
}

bool python_names_compile_work(const struct py_raw_frame *py, int n_py)
{
    bool own = false;
    pthread_mutex_lock(&names_lock);
    for (int i = 0; i < n_py && !own; i++) {
        struct pyname_key key = {py[i].code, py[i].lasti};
        struct pyname_rec *r;
        HASH_FIND(hh, names, &key, sizeof key, r);
        own = r && gencode_compile_work_file(r->name.file);
    }
    pthread_mutex_unlock(&names_lock);
    return own;
}

const struct pyname *python_names_find(uintptr_t code, uint32_t lasti)
{
    struct pyname_key key = {code, lasti};
    struct pyname_rec *r;
    pthread_mutex_lock(&names_lock);
    HASH_FIND(hh, names, &key, sizeof key, r);
    pthread_mutex_unlock(&names_lock);
    return r ? &r->name : NULL;
}

pthread_mutex_t *python_names_lock(void)
{
    return &names_lock;
}

/* The child's one thread (the lock it held across fork() released): the names are the parent's
 * memory, unmapped; the child interns its own. */
void python_names_atfork_child(void)
{
    arena_release(&names_arena);
    names = NULL;
    qualnames = NULL;
    names_oom = false;
}
