/* cli/chunks.c: chunked bump allocation and array doubling for the CLI's readers
 * (cli/chunks.h). CLI only: mallocs freely, keeps no global state, never prints. */
#include "cli/chunks.h"

#include <stdint.h>
#include <stdlib.h>

struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) char data[];
};

/* The data bytes of the chunk that n (already rounded) needs: 0 when the newest one has room. */
static size_t new_chunk_cap(const struct chunk *newest, size_t n, size_t chunk_bytes)
{
    if (newest && newest->cap - newest->used >= n)
        return 0;
    return n > chunk_bytes ? n : chunk_bytes;
}

size_t chunks_cost(const struct chunks *cs, size_t n, size_t chunk_bytes)
{
    size_t cap = new_chunk_cap(cs->head, (n + 15) & ~(size_t)15, chunk_bytes);
    return cap ? sizeof(struct chunk) + cap : 0;
}

void *chunks_alloc(struct chunks *cs, size_t n, size_t chunk_bytes)
{
    n = (n + 15) & ~(size_t)15;
    size_t cap = new_chunk_cap(cs->head, n, chunk_bytes);
    if (cap) {
        struct chunk *c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = cs->head;
        c->used = 0;
        c->cap = cap;
        cs->head = c;
    }
    void *p = cs->head->data + cs->head->used;
    cs->head->used += n;
    return p;
}

void chunks_free(struct chunks *cs)
{
    while (cs->head) {
        struct chunk *next = cs->head->next;
        free(cs->head);
        cs->head = next;
    }
}

size_t array_doubled(size_t cap, size_t elem)
{
    size_t ncap = cap ? cap * 2 : 16;
    return ncap > SIZE_MAX / elem ? 0 : ncap;
}

bool array_realloc(void **arr, size_t *cap, size_t ncap, size_t elem)
{
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}
