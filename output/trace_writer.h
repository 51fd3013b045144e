/* output/trace_writer.h: encodes trace records (output/trace_format.h) into a file through a
 * buffered write() loop. Used only by the agent's flusher thread (and at exit): it may allocate
 * (string interning), never runs on an application thread's CUDA call. Errors are sticky: the
 * first failed write stops all later output and is reported once by the caller. */
#ifndef SYNCSPY_TRACE_WRITER_H
#define SYNCSPY_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "output/trace_format.h"

struct trace_writer;

/* Writes the file header at once. NULL on allocation failure (fd untouched). */
struct trace_writer *tw_open(int fd, const struct trace_file_header *header);
/* Flushes, and frees the writer (the fd is the caller's). */
void tw_close(struct trace_writer *w);
/* Frees the writer without writing what it buffered (a forked child drops the parent's). */
void tw_discard(struct trace_writer *w);

/* The id of s, writing a STRING record the first time s is seen (NULL or "" -> 0). */
uint32_t tw_string(struct trace_writer *w, const char *s);
/* Appends one record of the given type (the struct after its record header: its header is
 * filled here). extra/extra_len: bytes that follow the struct (frame ids of a stack, string
 * bytes), padded to 8. */
void tw_record(struct trace_writer *w, enum trace_record_type type, void *rec, size_t rec_len,
               const void *extra, size_t extra_len);
/* Writes out what is buffered. 0, or -1 with errno of the first failed write. */
int tw_flush(struct trace_writer *w);
/* errno of the first failed write, 0 if none. */
int tw_error(const struct trace_writer *w);

#endif
