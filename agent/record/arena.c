/* agent/record/arena.c: mmap-backed bump allocator (see arena.h). Callers serialize access; nothing
 * here takes a lock, calls malloc or prints. */
#include "agent/record/arena.h"

#include <string.h>
#include <sys/mman.h>

#define ARENA_MIN_CHUNK (1u << 20)
#define CHUNK_HEADER 16 /* first word: link to the previous chunk, then its size */

static void *map_chunk(struct arena *a, size_t bytes)
{
    if (a->total_bytes + bytes > a->cap_bytes)
        return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    ((void **)p)[0] = a->chunks;
    ((size_t *)p)[1] = bytes;
    a->chunks = p;
    a->total_bytes += bytes;
    return p;
}

void *arena_alloc(struct arena *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    if (!a->chunk || a->used + bytes > a->chunk_bytes) {
        size_t min = a->min_chunk_bytes ? a->min_chunk_bytes : ARENA_MIN_CHUNK;
        size_t want = bytes + CHUNK_HEADER > min ? bytes + CHUNK_HEADER : min;
        want = (want + 4095) & ~(size_t)4095;
        char *c = map_chunk(a, want);
        if (!c)
            return NULL;
        a->chunk = c;
        a->chunk_bytes = want;
        a->used = CHUNK_HEADER;
    }
    void *p = a->chunk + a->used;
    a->used += bytes;
    return p; /* fresh anonymous pages are zero */
}

void arena_release(struct arena *a)
{
    void *c = a->chunks;
    while (c) {
        void *prev = ((void **)c)[0];
        munmap(c, ((size_t *)c)[1]);
        c = prev;
    }
    size_t cap = a->cap_bytes, min = a->min_chunk_bytes;
    memset(a, 0, sizeof(*a));
    a->cap_bytes = cap;
    a->min_chunk_bytes = min;
}
