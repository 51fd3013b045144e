/* agent/record/arena.h: the agent's own memory. Bump allocation from mmap'ed chunks, so recording
 * paths never call malloc (which may be the application's, may take locks, or may be
 * interposed itself). Memory is returned only at fork (child) or never; the cap bounds it. */
#ifndef SYNCSPY_ARENA_H
#define SYNCSPY_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct arena {
    char *chunk;            /* current chunk */
    size_t used;            /* bytes used in it */
    size_t chunk_bytes;     /* its size */
    size_t total_bytes;     /* mapped so far */
    size_t cap_bytes;       /* never map more than this */
    size_t min_chunk_bytes; /* chunks are at least this (0: 1 MiB; 1: each allocation its own) */
    void *chunks;           /* list of chunks (first word of each), for arena_release */
};

/* Zeroed, 16-byte aligned memory, or NULL when the cap is reached or mmap fails. Not
 * thread-safe: the caller holds the lock that owns the arena. */
void *arena_alloc(struct arena *a, size_t bytes);
/* Unmaps every chunk (the arena can be used again afterwards). */
void arena_release(struct arena *a);

#endif
