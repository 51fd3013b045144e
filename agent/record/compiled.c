/* agent/record/compiled.c: the table of generated-code ranges (compiled.h). Append-only, fixed size:
 * the writer fills a record and its strings, then publishes it with a release store of the
 * count; readers scan the published records (acquire). Nothing is ever freed or moved, so a
 * pointer handed out stays valid for the process's life (a fork's child keeps the table). */
#include "agent/record/compiled.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/gencode.h"

#define COMPILED_MAX 8192        /* ranges: a few per compiled graph node */
#define COMPILED_TEXT (1u << 20) /* bytes of their strings */

static struct compiled_line table[COMPILED_MAX];
static _Atomic uint32_t published;
static char text[COMPILED_TEXT];
static size_t text_used;

bool compiled_is_generated(const char *file)
{
    return gencode_file(file);
}

/* A copy of s in the text pool, NULL when it is full. */
static const char *keep(const char *s)
{
    size_t n = strlen(s) + 1;
    if (n > COMPILED_TEXT - text_used)
        return NULL;
    char *d = text + text_used;
    memcpy(d, s, n);
    text_used += n;
    return d;
}

/* The last record's key, when it is this one (ranges of a graph come together): shared. */
static const char *key_of(const char *key, uint32_t n)
{
    if (n > 0 && strcmp(table[n - 1].key, key) == 0)
        return table[n - 1].key;
    return keep(key);
}

bool compiled_add(const struct compiled_line *l)
{
    uint32_t n = atomic_load_explicit(&published, memory_order_relaxed);
    if (!l || !l->key || !l->path || !l->function || l->first == 0 || l->last < l->first)
        return false;
    struct compiled_line r = *l;
    char origin[512];
    const char *inductor = gencode_inductor_name(l->key);
    if (inductor) /* "<inductor>.c3fzq7ab": the output code's name, short */
        snprintf(origin, sizeof origin, "<inductor>.%.8s%s", inductor,
                 l->backward ? " backward" : "");
    else
        snprintf(origin, sizeof origin, "%s%s", l->key, l->backward ? " backward" : "");
    if (n == COMPILED_MAX || !(r.key = key_of(l->key, n)) || !(r.path = keep(l->path)) ||
        !(r.function = keep(l->function)) || !(r.origin = keep(origin)))
        return false; /* the strings kept so far stay unused */
    table[n] = r;
    atomic_store_explicit(&published, n + 1, memory_order_release);
    return true;
}

const struct compiled_line *compiled_find(const char *file, uint32_t line)
{
    if (!compiled_is_generated(file))
        return NULL;
    uint32_t n = atomic_load_explicit(&published, memory_order_acquire);
    for (uint32_t i = n; i-- > 0;) /* the newest first: a key is never reused, but be exact */
        if (line >= table[i].first && line <= table[i].last && strcmp(table[i].key, file) == 0)
            return &table[i];
    return NULL;
}
