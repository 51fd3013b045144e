/* agent/record/capture_memo.c: see capture_memo.h. */
#include "agent/record/capture_memo.h"

#include <string.h>

/* lasti, group_end and the zero bytes after them: one word (no padding: pyframes.h) */
static inline uint64_t py_word(const struct py_raw_frame *f)
{
    uint64_t w;
    memcpy(&w, &f->lasti, sizeof w);
    return w;
}

static bool entry_holds(const struct capture_memo_entry *e, uint32_t api, uint32_t generation,
                        const uintptr_t *native, int depth, const struct py_raw_frame *py, int n_py)
{
    if (e->api != api || e->generation != generation || e->depth != depth || e->n_py != n_py)
        return false;
    /* the innermost frames first: two sites of one loop differ there most often */
    for (int i = 0; i < n_py; i++)
        if (e->py[2 * i] != py[i].code || e->py[2 * i + 1] != py_word(&py[i]))
            return false;
    return memcmp(e->native, native, (size_t)depth * sizeof *native) == 0;
}

struct site *capture_memo_find(const struct capture_memo *m, uint32_t api, uint32_t generation,
                               const uintptr_t *native, int depth, const struct py_raw_frame *py,
                               int n_py)
{
    if (depth > CAPTURE_MEMO_NATIVE || n_py > CAPTURE_MEMO_PY || depth < 0 || n_py < 0)
        return NULL;
    const struct capture_memo_set *set = &m->set[capture_memo_set_of(api, native, depth, py, n_py)];
    for (int w = 0; w < CAPTURE_MEMO_WAYS; w++) {
        const struct capture_memo_entry *e = &set->way[w];
        if (e->site && entry_holds(e, api, generation, native, depth, py, n_py))
            return e->site;
    }
    return NULL;
}

void capture_memo_put(struct capture_memo *m, uint32_t api, uint32_t generation,
                      const uintptr_t *native, int depth, const struct py_raw_frame *py, int n_py,
                      struct site *site)
{
    if (!site || depth > CAPTURE_MEMO_NATIVE || n_py > CAPTURE_MEMO_PY || depth < 0 || n_py < 0)
        return;
    struct capture_memo_set *set = &m->set[capture_memo_set_of(api, native, depth, py, n_py)];
    int w = 0;
    while (w < CAPTURE_MEMO_WAYS && set->way[w].site)
        w++;
    if (w == CAPTURE_MEMO_WAYS) {
        w = (int)(set->victim % CAPTURE_MEMO_WAYS);
        set->victim = (uint32_t)(w + 1);
    }
    struct capture_memo_entry *e = &set->way[w];
    e->api = api;
    e->generation = generation;
    e->depth = (uint16_t)depth;
    e->n_py = (uint16_t)n_py;
    memcpy(e->native, native, (size_t)depth * sizeof *native);
    for (int i = 0; i < n_py; i++) {
        e->py[2 * i] = py[i].code;
        e->py[2 * i + 1] = py_word(&py[i]);
    }
    e->site = site;
}
