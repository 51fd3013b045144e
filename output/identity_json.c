/* output/identity_json.c: a process's place in its job (agent/background/identity.h) as JSON members, the
 * one writer of them: summary.json's (inside the target process at exit: no malloc, the
 * caller's fd_writer) and `syncspy check --json`'s. */
#include "output/identity_json.h"

/* A number, or null when not known (below lo). */
static void put_int_or_null(struct fd_writer *w, const char *key, int v, int lo)
{
    fdw_puts(w, key);
    if (v >= lo)
        fdw_u64(w, (uint64_t)v);
    else
        fdw_puts(w, "null");
}

static void put_string_or_null(struct fd_writer *w, const char *key, const char *v)
{
    fdw_puts(w, key);
    if (v && *v)
        fdw_json_string(w, v);
    else
        fdw_puts(w, "null");
}

void identity_write_json(struct fd_writer *w, const struct rep_process *p)
{
    put_int_or_null(w, ", \"local_rank\": ", p->local_rank, 0);
    put_int_or_null(w, ", \"world_size\": ", p->world_size, 1);
    put_int_or_null(w, ", \"node\": ", p->node, 0);
    put_string_or_null(w, ",\n \"host\": ", p->host);
    put_string_or_null(w, ", \"job_id\": ", p->job_id);
    put_string_or_null(w, ", \"launcher\": ", p->launcher);
}
