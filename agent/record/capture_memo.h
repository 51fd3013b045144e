/* agent/record/capture_memo.h: a thread's last few captures and the site each one led to, so a
 * sync whose native and Python stacks are those of a recent one skips the merge of the two and
 * the site lookup (agent/record/core.c capture_into). The key is the whole capture: the API, every
 * native return address, every Python frame's code and instruction, and the evaluation-loop
 * ranges known when it was made (a range learnt later changes the merge). A hit is exact, never a
 * guess; a stack too deep for an entry is simply never memoized. Per thread, in its
 * capture_scratch: no lock, no allocation. */
#ifndef SYNCSPY_CAPTURE_MEMO_H
#define SYNCSPY_CAPTURE_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "collectors/pyframes.h"

struct site;

#define CAPTURE_MEMO_SETS 8 /* of two entries: sixteen captures, two a set */
#define CAPTURE_MEMO_WAYS 2
#define CAPTURE_MEMO_NATIVE 96 /* deeper native stacks are not memoized */
#define CAPTURE_MEMO_PY 64     /* nor more Python frames */

struct capture_memo {
    struct capture_memo_set {
        struct capture_memo_entry {
            struct site *site; /* NULL: empty */
            uint32_t api, generation;
            uint16_t depth, n_py;
            uintptr_t native[CAPTURE_MEMO_NATIVE];
            uintptr_t py[2 * CAPTURE_MEMO_PY]; /* code, then lasti with group_end in bit 32 */
        } way[CAPTURE_MEMO_WAYS];
        uint32_t victim; /* the way the next put into a full set replaces */
    } set[CAPTURE_MEMO_SETS];
};

/* The set a capture belongs to: from its API, sizes and innermost frames (cheap; equal
 * captures always share it). */
static inline uint32_t capture_memo_set_of(uint32_t api, const uintptr_t *native, int depth,
                                           const struct py_raw_frame *py, int n_py)
{
    uint64_t h = (uint64_t)api * 0x9e3779b97f4a7c15u ^ (uint64_t)depth << 8 ^ (uint64_t)n_py;
    if (depth > 0)
        h ^= native[0] * 0xff51afd7ed558ccdu;
    if (n_py > 0)
        h ^= (py[0].code + py[0].lasti) * 0xc4ceb9fe1a85ec53u;
    return (uint32_t)((h ^ h >> 29 ^ h >> 41) % CAPTURE_MEMO_SETS);
}

/* The site of a capture equal to one memoized under the same generation, or NULL. */
struct site *capture_memo_find(const struct capture_memo *m, uint32_t api, uint32_t generation,
                               const uintptr_t *native, int depth, const struct py_raw_frame *py,
                               int n_py);
/* Remembers that this capture led to site (newest replaces the oldest; too deep: ignored). */
void capture_memo_put(struct capture_memo *m, uint32_t api, uint32_t generation,
                      const uintptr_t *native, int depth, const struct py_raw_frame *py, int n_py,
                      struct site *site);

#endif
