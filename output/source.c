/* output/source.c: one line of a source file (source.h). Runs where the report is rendered, never
 * on a recording path: open(2)/read(2) into a stack buffer, at most SOURCE_READ_MAX bytes, no
 * stdio, no allocation; a fifo or device is never opened for reading (O_NONBLOCK, then fstat). */
#include "output/source.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Appends [s, s+n) of the wanted line to buf (len: what it holds), the indentation skipped. */
static void take(char *buf, size_t buflen, size_t *len, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (*len == 0 && blank(s[i]))
            continue;
        if (*len + 1 < buflen)
            buf[(*len)++] = s[i];
    }
}

bool source_line(const char *path, uint32_t line, char *buf, size_t buflen)
{
    if (!buf || buflen < 2)
        return false;
    buf[0] = '\0';
    if (!path || !*path || line == 0)
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return false;
    }
    char chunk[4096];
    uint32_t at = 1; /* the line the next byte belongs to */
    size_t len = 0, total = 0;
    bool done = false;
    while (!done && total < SOURCE_READ_MAX) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        total += (size_t)n;
        const char *p = chunk, *end = chunk + n;
        while (p < end && !done) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *stop = nl ? nl : end;
            if (at == line)
                take(buf, buflen, &len, p, (size_t)(stop - p));
            if (nl) {
                done = at == line;
                at++;
            }
            p = nl ? nl + 1 : end;
        }
    }
    close(fd);
    if (at < line || (at == line && !done && len == 0))
        return false;
    while (len > 0 && blank(buf[len - 1]))
        len--;
    /* a UTF-8 character cut at the end: drop its lead and continuation bytes */
    if (len + 1 >= buflen) {
        size_t k = len;
        while (k > 0 && ((unsigned char)buf[k - 1] & 0xC0) == 0x80)
            k--;
        if (k > 0 && ((unsigned char)buf[k - 1] & 0x80))
            len = k - 1;
    }
    buf[len] = '\0';
    return len > 0;
}
