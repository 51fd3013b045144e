/* output/fd_writer.c: the one buffered writer of every file and stream syncspy writes (see
 * fd_writer.h): a fixed buffer, a write() loop through the I/O seam that retries EINTR and short
 * writes (and, with a deadline, waits for a slow reader only so long), a sticky error. Never allocates, no stdio FILE*: safe inside a target process. */
#include "output/fd_writer.h"
#include "output/io.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"

void fdw_init(struct fd_writer *w, int fd)
{
    fdw_init_buffer(w, fd, w->own, sizeof w->own, 0);
}

void fdw_init_buffer(struct fd_writer *w, int fd, char *buf, size_t cap, size_t align)
{
    w->fd = fd;
    w->err = 0;
    w->len = 0;
    w->buf = buf;
    w->cap = cap;
    w->align = align && align <= cap / 2 ? align : 0;
    w->deadline_ns = 0;
    w->shown = false;
}

void fdw_set_shown(struct fd_writer *w)
{
    w->shown = true;
}

void fdw_set_deadline(struct fd_writer *w, uint64_t deadline_ns)
{
    struct stat st;
    if (fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode))
        return; /* a file never waits for a reader */
    w->deadline_ns = deadline_ns ? deadline_ns : 1;
}

/* Room on a bounded fd before its deadline: 0, or -1 with errno ETIMEDOUT. */
static int wait_for_room(const struct fd_writer *w)
{
    for (;;) {
        uint64_t now = clock_mono_ns();
        if (now >= w->deadline_ns)
            return errno = ETIMEDOUT, -1;
        uint64_t left_ms = (w->deadline_ns - now + 999999) / 1000000;
        struct pollfd p = {.fd = w->fd, .events = POLLOUT};
        int n = poll(&p, 1, left_ms > 60000 ? 60000 : (int)left_ms);
        if (n > 0)
            return 0; /* writable, or an error the write will report (POLLERR, POLLHUP) */
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static void fdw_drain(struct fd_writer *w, const char *p, size_t n)
{
    while (n > 0 && w->err == 0) {
        size_t chunk = n;
        if (w->deadline_ns) {
            if (wait_for_room(w) != 0) {
                w->err = errno;
                break;
            }
            if (chunk > PIPE_BUF)
                chunk = PIPE_BUF; /* fits in the room poll() saw: never blocks */
        }
        ssize_t k = io_write(w->fd, p, chunk);
        if (k < 0) {
            if (errno == EINTR || (errno == EAGAIN && w->deadline_ns))
                continue;
            w->err = errno ? errno : EIO;
        } else if (k == 0) {
            w->err = EIO; /* a regular file or pipe never does this; do not spin */
        } else {
            p += k;
            n -= (size_t)k;
        }
    }
}

int fdw_flush(struct fd_writer *w)
{
    fdw_drain(w, w->buf, w->len);
    w->len = 0;
    if (w->err) {
        errno = w->err;
        return -1;
    }
    return 0;
}

/* Makes room: writes out the buffer, or with align its whole multiples of align (the rest,
 * less than align, moves to the front). */
static void fdw_make_room(struct fd_writer *w)
{
    size_t out = w->align ? w->len - w->len % w->align : w->len;
    fdw_drain(w, w->buf, out);
    memmove(w->buf, w->buf + out, w->len - out);
    w->len -= out;
}

char *fdw_reserve_slow(struct fd_writer *w, size_t n)
{
    if (w->err || n > w->cap)
        return NULL;
    fdw_make_room(w);
    if (n > w->cap - w->len) /* a request longer than cap - align: unaligned this once */
        fdw_flush(w);
    return w->err ? NULL : w->buf + w->len;
}

static void fdw_write_as_is(struct fd_writer *w, const void *data, size_t n);

/* n bytes at p: runs of plain text as they are (with keep_layout, newlines and tabs too: a shown
 * writer's own layout), every other character escaped. A UTF-8 sequence cut between two writes
 * is escaped byte by byte. */
static void write_escaped(struct fd_writer *w, const unsigned char *p, size_t n, bool keep_layout)
{
    while (n > 0 && !w->err) {
        size_t run = 0, k = 0;
        bool plain = true;
        while (run < n) {
            k = text_char(p + run, n - run, &plain);
            if (!plain && !(keep_layout && (p[run] == '\n' || p[run] == '\t')))
                break;
            run += k;
        }
        fdw_write_as_is(w, p, run);
        p += run;
        n -= run;
        if (n > 0) {
            char esc[8];
            fdw_write_as_is(w, esc, text_escape_char(p, k, esc));
            p += k;
            n -= k;
        }
    }
}

void fdw_write(struct fd_writer *w, const void *data, size_t n)
{
    if (w->shown)
        write_escaped(w, data, n, true);
    else
        fdw_write_as_is(w, data, n);
}

void fdw_raw(struct fd_writer *w, const char *s)
{
    fdw_write_as_is(w, s, strlen(s));
}

void fdw_text(struct fd_writer *w, const char *s)
{
    if (s)
        write_escaped(w, (const unsigned char *)s, strlen(s), false);
}

size_t text_char(const unsigned char *s, size_t avail, bool *plain)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *plain = c >= 0x20 && c != 0x7f;
        return 1;
    }
    size_t k = utf8_seq_len(s, avail);
    if (k == 0) {
        *plain = false;
        return 1;
    }
    *plain = !(k == 2 && c == 0xC2 && s[1] < 0xA0); /* U+0080..U+009F: C1 controls */
    return k;
}

size_t text_escape_char(const unsigned char *s, size_t len, char *esc)
{
    static const char hex[] = "0123456789abcdef";
    unsigned c = s[0];
    if (c == '\n' || c == '\r' || c == '\t') {
        esc[0] = '\\';
        esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        esc[2] = '\0';
        return 2;
    }
    if (len == 2 && c == 0xC2) { /* a C1 control, named by its code point */
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[s[1] >> 4];
        esc[5] = hex[s[1] & 15];
        esc[6] = '\0';
        return 6;
    }
    esc[0] = '\\';
    esc[1] = 'x';
    esc[2] = hex[c >> 4];
    esc[3] = hex[c & 15];
    esc[4] = '\0';
    return 4;
}

size_t text_escape(char *dst, size_t cap, const char *src)
{
    const unsigned char *p = (const unsigned char *)(src ? src : "");
    size_t left = strlen((const char *)p), n = 0;
    while (left > 0) {
        bool plain;
        size_t k = text_char(p, left, &plain);
        char esc[8];
        const char *out = plain ? (const char *)p : esc;
        size_t m = plain ? k : text_escape_char(p, k, esc);
        if (n + m >= cap)
            break;
        memcpy(dst + n, out, m);
        n += m;
        p += k;
        left -= k;
    }
    if (cap > 0)
        dst[n] = '\0';
    return n;
}

static void fdw_write_as_is(struct fd_writer *w, const void *data, size_t n)
{
    const char *p = data;
    if (w->err)
        return;
    if (n > w->cap - w->len) {
        if (w->align) { /* through the buffer, to keep the writes whole pages */
            while (n > w->cap - w->len && !w->err) {
                size_t k = w->cap - w->len;
                memcpy(w->buf + w->len, p, k);
                w->len += k;
                p += k;
                n -= k;
                fdw_make_room(w);
            }
            if (w->err)
                return;
        } else {
            fdw_flush(w);
            if (n >= w->cap) { /* larger than the buffer: straight through */
                fdw_drain(w, p, n);
                return;
            }
        }
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

void fdw_puts(struct fd_writer *w, const char *s)
{
    if (s)
        fdw_write(w, s, strlen(s));
}

void fdw_putc(struct fd_writer *w, char c)
{
    unsigned char u = (unsigned char)c;
    if (w->shown && ((u < 0x20 && c != '\n' && c != '\t') || u >= 0x7f)) {
        /* alone, a byte above ASCII cannot be judged: escaped */
        char esc[8];
        fdw_write_as_is(w, esc, text_escape_char(&u, 1, esc));
        return;
    }
    if (w->len == w->cap)
        fdw_make_room(w);
    if (!w->err)
        w->buf[w->len++] = c;
}

void fdw_spaces(struct fd_writer *w, int n)
{
    static const char blanks[] = "                                ";
    while (n > 0) {
        int k = n < (int)sizeof blanks - 1 ? n : (int)sizeof blanks - 1;
        fdw_write(w, blanks, (size_t)k);
        n -= k;
    }
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

char *fdw_fmt_u64(char *p, uint64_t v)
{
    char tmp[20];
    char *end = tmp + sizeof tmp, *q = end;
    while (v >= 100) { /* two digits a division */
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        q -= 2;
        memcpy(q, digit_pairs + 2 * r, 2);
    }
    if (v >= 10) {
        q -= 2;
        memcpy(q, digit_pairs + 2 * v, 2);
    } else {
        *--q = (char)('0' + v);
    }
    memcpy(p, q, (size_t)(end - q));
    return p + (end - q);
}

void fdw_u64(struct fd_writer *w, uint64_t v)
{
    char *p = fdw_reserve(w, 20);
    if (p)
        fdw_commit(w, fdw_fmt_u64(p, v));
}

void fdw_printf(struct fd_writer *w, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    fdw_write(w, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    if (avail == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

void fdw_json_string(struct fd_writer *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t left = strlen((const char *)p);
    fdw_putc(w, '"');
    while (left > 0) {
        unsigned c = *p;
        size_t k;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            /* a run of plain ASCII goes out in one copy */
            k = 1;
            while (k < left && p[k] >= 0x20 && p[k] < 0x7f && p[k] != '"' && p[k] != '\\')
                k++;
            fdw_write(w, p, k);
        } else if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            fdw_write(w, esc, 2);
            k = 1;
        } else if (c < 0x20) {
            k = 1;
            switch (c) {
            case '\n': fdw_write(w, "\\n", 2); break;
            case '\t': fdw_write(w, "\\t", 2); break;
            case '\r': fdw_write(w, "\\r", 2); break;
            case '\b': fdw_write(w, "\\b", 2); break;
            case '\f': fdw_write(w, "\\f", 2); break;
            default: {
                char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                fdw_write(w, esc, 6);
            }
            }
        } else if (c == 0x7f || (left > 1 && c == 0xC2 && p[1] >= 0x80 && p[1] < 0xA0)) {
            /* DEL and the C1 controls: valid JSON as they are, but a terminal acts on them */
            unsigned u = c == 0x7f ? c : p[1];
            char esc[6] = {'\\', 'u', '0', '0', hex[u >> 4], hex[u & 15]};
            fdw_write(w, esc, 6);
            k = c == 0x7f ? 1 : 2;
        } else if ((k = utf8_seq_len(p, left)) > 0) {
            fdw_write(w, p, k);
        } else {
            fdw_write(w, "\\ufffd", 6);
            k = 1;
        }
        p += k;
        left -= k;
    }
    fdw_putc(w, '"');
}
