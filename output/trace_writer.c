/* output/trace_writer.c: trace records to a file (see trace_writer.h). Runs on the flusher
 * thread or at exit; writes through the one buffered writer (output/fd_writer.h) with a 64 KiB
 * buffer of its own. */
#include "output/trace_writer.h"
#include "output/fd_writer.h"

#include <stdlib.h>
#include <string.h>
#define HASH_NONFATAL_OOM 1 /* never exit() inside the host process: a failed add is skipped */
#include <uthash.h>

#define TW_BUF_BYTES (64 * 1024)

struct tw_string {
    UT_hash_handle hh;
    uint32_t id;
    char s[];
};

struct trace_writer {
    struct fd_writer out;
    uint32_t next_string;
    struct tw_string *strings;
    char buf[TW_BUF_BYTES];
};

int tw_flush(struct trace_writer *w)
{
    return fdw_flush(&w->out);
}

struct trace_writer *tw_open(int fd, const struct trace_file_header *header)
{
    struct trace_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    fdw_init_buffer(&w->out, fd, w->buf, sizeof w->buf, 0);
    w->next_string = 1;
    fdw_write(&w->out, header, sizeof *header);
    tw_flush(w);
    return w;
}

void tw_close(struct trace_writer *w)
{
    if (!w)
        return;
    tw_flush(w);
    tw_discard(w);
}

void tw_discard(struct trace_writer *w)
{
    if (!w)
        return;
    struct tw_string *s, *tmp;
    HASH_ITER(hh, w->strings, s, tmp) {
        HASH_DEL(w->strings, s);
        free(s);
    }
    free(w);
}

void tw_record(struct trace_writer *w, enum trace_record_type type, void *rec, size_t rec_len,
               const void *extra, size_t extra_len)
{
    static const char zeros[8];
    size_t total = rec_len + extra_len, padded = (total + 7) & ~(size_t)7;
    struct trace_record_header *h = rec;
    h->type = type;
    h->bytes = (uint32_t)padded;
    fdw_write(&w->out, rec, rec_len);
    if (extra_len)
        fdw_write(&w->out, extra, extra_len);
    if (padded != total)
        fdw_write(&w->out, zeros, padded - total);
}

uint32_t tw_string(struct trace_writer *w, const char *s)
{
    if (!s || !*s)
        return 0;
    size_t n = strlen(s);
    if (n > TRACE_MAX_STRING_BYTES)
        n = TRACE_MAX_STRING_BYTES; /* cut (the key is the cut string too) */
    struct tw_string *e;
    HASH_FIND(hh, w->strings, s, n, e);
    if (e)
        return e->id;
    e = malloc(sizeof *e + n + 1);
    if (!e)
        return 0;
    memcpy(e->s, s, n);
    e->s[n] = 0;
    e->id = w->next_string++;
    HASH_ADD_KEYPTR(hh, w->strings, e->s, n, e);
    struct trace_string rec = {.id = e->id, .length = (uint32_t)n};
    tw_record(w, TREC_STRING, &rec, sizeof rec, e->s, n);
    return e->id;
}

int tw_error(const struct trace_writer *w)
{
    return w->out.err;
}
