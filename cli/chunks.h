/* cli/chunks.h: the storage of the CLI's two readers (summary.json, trace.bin): bump
 * allocation from 16-byte-aligned chunks that are freed all at once, and arrays that double as
 * they fill. CLI only: it mallocs. It keeps no count of its own: a reader that bounds what it
 * allocates asks chunks_cost / array_doubled first and charges the bytes itself. */
#ifndef SYNCSPY_CHUNKS_H
#define SYNCSPY_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>

struct chunk;

struct chunks {
    struct chunk *head; /* the newest chunk; NULL when none */
};

/* What chunks_alloc(cs, n, chunk_bytes) would ask of malloc: 0 when n fits the newest chunk. */
size_t chunks_cost(const struct chunks *cs, size_t n, size_t chunk_bytes);

/* n bytes (rounded up to 16, 16-aligned) from the newest chunk, else from a new chunk of
 * max(n, chunk_bytes) bytes; NULL when out of memory. */
void *chunks_alloc(struct chunks *cs, size_t n, size_t chunk_bytes);

void chunks_free(struct chunks *cs);

/* The capacity an array of elem-byte elements grows to from cap (doubling, 16 to start); 0 when
 * that many bytes would not fit in a size_t. */
size_t array_doubled(size_t cap, size_t elem);

/* Reallocs *arr to ncap elements and sets *cap; false, both unchanged, when out of memory. */
bool array_realloc(void **arr, size_t *cap, size_t ncap, size_t elem);

#endif
