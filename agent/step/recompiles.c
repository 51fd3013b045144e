/* agent/step/recompiles.c: torch.compile's recompilations, by function (see recompiles.h). Written by
 * the GIL holder at the end of a compilation, read at exit: one mutex, never on a CUDA call's
 * path. */
#include "agent/step/recompiles.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct recompile_row {
    char function[128], file[512], reason[256];
    uint32_t line;
    uint64_t count, in_steps;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct recompile_row rows[RECOMPILES_MAX + 1]; /* the last: every other function */
static size_t nrows;

static void copy(char *dst, size_t room, const char *src)
{
    snprintf(dst, room, "%s", src ? src : "");
}

void recompiles_add(const char *function, const char *file, uint32_t line, const char *reason,
                    uint64_t step)
{
    pthread_mutex_lock(&lock);
    struct recompile_row *r = NULL;
    for (size_t i = 0; i < nrows && !r; i++)
        if (rows[i].line == line &&
            !strncmp(rows[i].function, function ? function : "", sizeof rows[i].function - 1) &&
            !strncmp(rows[i].file, file ? file : "", sizeof rows[i].file - 1))
            r = &rows[i];
    if (!r && nrows < RECOMPILES_MAX) {
        r = &rows[nrows++];
        copy(r->function, sizeof r->function, function);
        copy(r->file, sizeof r->file, file);
        r->line = line;
    } else if (!r) {
        r = &rows[RECOMPILES_MAX];
        copy(r->function, sizeof r->function, "(other functions)");
    }
    r->count++;
    r->in_steps += step > 0;
    copy(r->reason, sizeof r->reason, reason);
    pthread_mutex_unlock(&lock);
}

static int by_count(const void *a, const void *b)
{
    const struct rep_recompile *x = a, *y = b;
    return (x->count < y->count) - (x->count > y->count);
}

void recompiles_model(struct rep_process *proc)
{
    pthread_mutex_lock(&lock);
    size_t n = nrows + (rows[RECOMPILES_MAX].count > 0);
    struct rep_recompile *out = n ? calloc(n, sizeof *out) : NULL;
    struct recompile_row *copies = n ? calloc(n, sizeof *copies) : NULL;
    if (out && copies) {
        for (size_t i = 0, k = 0; i <= RECOMPILES_MAX && k < n; i++) {
            if (!rows[i].count)
                continue;
            copies[k] = rows[i];
            out[k] = (struct rep_recompile){.function = copies[k].function,
                                            .file = copies[k].file,
                                            .line = copies[k].line,
                                            .count = copies[k].count,
                                            .in_steps = copies[k].in_steps,
                                            .reason = copies[k].reason};
            k++;
        }
        qsort(out, n, sizeof *out, by_count);
        proc->recompiles = out;
        proc->nrecompiles = n;
        proc->owned_recompiles = copies;
    } else {
        free(out);
        free(copies);
    }
    pthread_mutex_unlock(&lock);
}

pthread_mutex_t *recompiles_lock(void)
{
    return &lock;
}

void recompiles_atfork_child(void)
{
    memset(rows, 0, sizeof rows);
    nrows = 0;
}
