/* output/fd_writer.h: the one buffered writer syncspy has, for summary.json, the report, trace.bin
 * and the CLI's exports: a fixed buffer (its own, or one the caller gives) and a write() loop
 * through the I/O seam (output/io.h) that retries EINTR; no stdio FILE*, no malloc, so it is
 * safe inside a target process at exit. The first failed write is sticky: later output is
 * dropped and fdw_flush reports it. */
#ifndef SYNCSPY_FD_WRITER_H
#define SYNCSPY_FD_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FDW_BUF_BYTES 8192

struct fd_writer {
    int fd;
    int err;              /* errno of the first failed write; sticky: later output is dropped */
    size_t len;           /* bytes waiting in buf */
    size_t cap;           /* the size of buf */
    size_t align;         /* 0, or: until fdw_flush, write only whole multiples of it (pages) */
    char *buf;            /* own, or the caller's (fdw_init_buffer); so never copy a writer */
    uint64_t deadline_ns; /* 0, or (fdw_set_deadline) when writes to a pipe or socket give up */
    bool shown; /* text for a terminal (fdw_set_shown): control characters escaped on the way */
    char own[FDW_BUF_BYTES];
};

void fdw_init(struct fd_writer *w, int fd);
/* A writer with the caller's buffer (cap bytes, kept until the writer is done with) that writes
 * whole multiples of align bytes (0: any length) until the final fdw_flush: with align the page
 * size and a file written from offset 0, every write() fills whole pages of the page cache
 * (a partial page of a new file is zeroed first: more kernel time than the copy). */
void fdw_init_buffer(struct fd_writer *w, int fd, char *buf, size_t cap, size_t align);
/* Writes to fd, when it is a pipe, fifo, socket or terminal, wait for room at most until
 * deadline_ns (CLOCK_MONOTONIC) and then fail with ETIMEDOUT; each write is at most PIPE_BUF
 * bytes after poll() said there was room, so it never blocks (a non-blocking fd's EAGAIN waits
 * the same way). Regular files are written as usual. */
void fdw_set_deadline(struct fd_writer *w, uint64_t deadline_ns);
/* Text that may reach a terminal (the report, check, diff, folded stacks): from now on every
 * byte written, except through fdw_raw, goes through the escaping of text_char below, newlines
 * and tabs of the tool's own layout kept. Names from a file can then never move the cursor, set
 * the title or write the clipboard, whichever call site prints them. */
void fdw_set_shown(struct fd_writer *w);
void fdw_write(struct fd_writer *w, const void *data, size_t n);
/* Bytes as they are, also on a shown writer: the tool's own escape sequences (SGR colour). */
void fdw_raw(struct fd_writer *w, const char *s);
/* A string from a file or the process (a function, file, module, thread or operator name, a
 * source line), escaped as text_escape does: newlines and tabs too, so it stays on its line. */
void fdw_text(struct fd_writer *w, const char *s);
void fdw_puts(struct fd_writer *w, const char *s); /* NULL writes nothing */
void fdw_putc(struct fd_writer *w, char c);
void fdw_spaces(struct fd_writer *w, int n); /* n <= 0 writes nothing */
void fdw_u64(struct fd_writer *w, uint64_t v);
/* v in decimal at p (at most 20 bytes); returns the end. */
char *fdw_fmt_u64(char *p, uint64_t v);
/* Formats into a 1 KiB stack buffer (longer output is cut): numbers and short strings only;
 * write long strings with fdw_puts. */
void fdw_printf(struct fd_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a quoted JSON string (NULL as ""): quotes, backslashes and control characters escaped;
 * bytes that are not well-formed UTF-8 become \ufffd, so the output is always valid UTF-8. */
void fdw_json_string(struct fd_writer *w, const char *s);
/* Writes out the buffer. 0, or -1 with errno set to the first write error. */
int fdw_flush(struct fd_writer *w);

/* Room for n bytes at the end of the buffer (flushing it first when it has less), for callers
 * that format in place: write at most n bytes at the pointer, then fdw_commit what was written.
 * NULL after an error or when n is more than the buffer holds. */
char *fdw_reserve_slow(struct fd_writer *w, size_t n);

static inline char *fdw_reserve(struct fd_writer *w, size_t n)
{
    if (w->err || n > w->cap - w->len)
        return fdw_reserve_slow(w, n);
    return w->buf + w->len;
}

static inline void fdw_commit(struct fd_writer *w, const char *end)
{
    w->len = (size_t)(end - w->buf);
}

/* The one rule for what a terminal may receive of a file's text. At s (avail > 0 bytes): the
 * length of one character, and *plain whether it may be shown as it is. Not plain: C0 controls
 * (ESC, BEL, CR, newline and tab included), DEL, the C1 controls U+0080..U+009F written as UTF-8,
 * and every byte that does not begin a well-formed UTF-8 sequence (a lone 0x9b is CSI to a
 * terminal in 8-bit mode). Other UTF-8 (non-ASCII identifiers) is plain. */
size_t text_char(const unsigned char *s, size_t avail, bool *plain);
/* The escape of one character that is not plain, NUL-terminated into esc (at least 8 bytes):
 * \n, \r, \t, \e, \xNN for other C0 bytes, DEL and bytes that are not UTF-8, \u0080..\u009f for
 * the C1 controls. Returns its length. */
size_t text_escape_char(const unsigned char *s, size_t len, char *esc);
/* src into dst (cap > 0 bytes with the NUL) with every character that is not plain escaped
 * (text_escape_char); cut at a whole character or escape. Returns the length written. */
size_t text_escape(char *dst, size_t cap, const char *src);

/* Length of the well-formed UTF-8 sequence at s (at most avail bytes; Unicode 15, table 3-7:
 * no overlongs, no surrogates, nothing above U+10FFFF), or 0 when it is not one. */
size_t utf8_seq_len(const unsigned char *s, size_t avail);

#endif
