/* agent/pynames.c: (code, instruction) -> names (see pynames.h). First sight of a Python frame
 * takes the table lock (taken after the site table lock, never while holding it) and copies
 * the strings into the arena; nothing here calls malloc. */
#include "agent/arena.h"

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

#include "agent/pynames.h"
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

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pyname_rec *names;

static const char *arena_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(&names_arena, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void intern_one(uintptr_t code, uint32_t lasti)
{
    struct pyname_key key = {code, lasti};
    struct pyname_rec *r;
    HASH_FIND(hh, names, &key, sizeof key, r);
    if (r)
        return;
    char file[512], func[256];
    uint32_t line;
    pyframes_resolve(code, lasti, file, sizeof file, func, sizeof func, &line);
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
}

void pynames_intern_stack(const uintptr_t *words, uint32_t n)
{
    bool any = false;
    for (uint32_t i = 0; i + 1 < n && !any; i++)
        any = pyframe_word(words[i]);
    if (!any)
        return;
    pthread_mutex_lock(&names_lock);
    for (uint32_t i = 0; i + 1 < n; i++)
        if (pyframe_word(words[i])) {
            intern_one(words[i + 1], (uint32_t)(words[i] & 0xffffffffu));
            i++;
        }
    pthread_mutex_unlock(&names_lock);
}

const struct pyname *pynames_find(uintptr_t code, uint32_t lasti)
{
    struct pyname_key key = {code, lasti};
    struct pyname_rec *r;
    pthread_mutex_lock(&names_lock);
    HASH_FIND(hh, names, &key, sizeof key, r);
    pthread_mutex_unlock(&names_lock);
    return r ? &r->name : NULL;
}

void pynames_atfork_prepare(void) { pthread_mutex_lock(&names_lock); }
void pynames_atfork_parent(void) { pthread_mutex_unlock(&names_lock); }

void pynames_atfork_child(void)
{
    arena_release(&names_arena);
    names = NULL;
    pthread_mutex_init(&names_lock, NULL);
}
