/* cli/json_in.c: the strict JSON tokenizer the CLI's summary.json reader builds on (see
 * json_in.h). CLI only. It allocates only the string scratch, bounded by JSON_MAX_STRING, and
 * never reads past the buffer it is given: every access checks pos < len. */
#include "cli/json_in.h"
#include "output/fd_writer.h" /* utf8_seq_len: the writer's UTF-8 rule, read back the same */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_in_init(struct json_in *in, const char *buf, size_t len)
{
    memset(in, 0, sizeof *in);
    in->buf = buf;
    in->len = len;
}

void json_in_fini(struct json_in *in)
{
    free(in->scratch);
    in->scratch = NULL;
    in->scratch_cap = 0;
}

bool json_fail(struct json_in *in, size_t pos, const char *fmt, ...)
{
    if (in->failed)
        return false;
    in->failed = true;
    in->err_pos = pos;
    in->truncated = pos >= in->len;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in->err, sizeof in->err, fmt, ap);
    va_end(ap);
    return false;
}

/* "expected X" where the input ends becomes a truncation; elsewhere it names the byte found. */
static bool fail_expected(struct json_in *in, const char *what)
{
    const char *f = in->field;
    if (in->pos >= in->len)
        return json_fail(in, in->pos, "expected %s%s%s%s", what, f ? " for \"" : "", f ? f : "",
                         f ? "\"" : "");
    unsigned char c = (unsigned char)in->buf[in->pos];
    if (c >= 0x20 && c < 0x7f)
        return json_fail(in, in->pos, "expected %s%s%s%s, found '%c'", what, f ? " for \"" : "",
                         f ? f : "", f ? "\"" : "", c);
    return json_fail(in, in->pos, "expected %s%s%s%s, found byte 0x%02x", what, f ? " for \"" : "",
                     f ? f : "", f ? "\"" : "", c);
}

static void skip_ws(struct json_in *in)
{
    while (in->pos < in->len) {
        char c = in->buf[in->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        in->pos++;
    }
}

int json_peek(struct json_in *in)
{
    skip_ws(in);
    return in->pos < in->len ? (unsigned char)in->buf[in->pos] : -1;
}

bool json_expect(struct json_in *in, char c, const char *what)
{
    if (in->failed)
        return false;
    if (json_peek(in) != (unsigned char)c)
        return fail_expected(in, what);
    in->pos++;
    return true;
}

bool json_end(struct json_in *in)
{
    if (in->failed)
        return false;
    if (json_peek(in) != -1)
        return json_fail(in, in->pos, "unexpected data after the end of the JSON value");
    return true;
}

static bool scratch_put(struct json_in *in, size_t *n, const char *p, size_t k)
{
    if (*n + k > JSON_MAX_STRING)
        return json_fail(in, in->pos, "a string longer than %d bytes", JSON_MAX_STRING);
    if (*n + k + 1 > in->scratch_cap) {
        size_t cap = in->scratch_cap ? in->scratch_cap : 256;
        while (cap < *n + k + 1)
            cap *= 2;
        char *s = realloc(in->scratch, cap);
        if (!s) {
            in->nomem = true;
            return json_fail(in, in->pos, "out of memory");
        }
        in->scratch = s;
        in->scratch_cap = cap;
    }
    memcpy(in->scratch + *n, p, k);
    *n += k;
    return true;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits after "\u" at in->pos; -1 after a failure. */
static long read_hex4(struct json_in *in)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        if (in->pos >= in->len) {
            json_fail(in, in->pos, "the input ends inside a \\u escape");
            return -1;
        }
        int h = hexval((unsigned char)in->buf[in->pos]);
        if (h < 0) {
            json_fail(in, in->pos, "a \\u escape needs 4 hex digits");
            return -1;
        }
        v = v * 16 + h;
        in->pos++;
    }
    return v;
}

static size_t utf8_encode(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* After "\u": one code point, joining a surrogate pair; a lone surrogate becomes U+FFFD (the
 * reader's output must stay valid UTF-8). U+0000 is refused: names are C strings. */
static bool read_u_escape(struct json_in *in, size_t *n)
{
    size_t at = in->pos - 2;
    long cp = read_hex4(in);
    if (cp < 0)
        return false;
    if (cp >= 0xD800 && cp <= 0xDBFF && in->pos + 1 < in->len && in->buf[in->pos] == '\\' &&
        in->buf[in->pos + 1] == 'u') {
        size_t save = in->pos;
        in->pos += 2;
        long lo = read_hex4(in);
        if (lo < 0)
            return false;
        if (lo >= 0xDC00 && lo <= 0xDFFF)
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        else
            in->pos = save; /* not a pair: this one is lone, read the next escape on its own */
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        cp = 0xFFFD;
    if (cp == 0)
        return json_fail(in, at, "\\u0000 in a string");
    char u[4];
    return scratch_put(in, n, u, utf8_encode((unsigned long)cp, u));
}

static bool read_escape(struct json_in *in, size_t *n)
{
    if (in->pos >= in->len)
        return json_fail(in, in->pos, "the input ends inside a string escape");
    char c = in->buf[in->pos++];
    char out;
    switch (c) {
    case '"': out = '"'; break;
    case '\\': out = '\\'; break;
    case '/': out = '/'; break;
    case 'b': out = '\b'; break;
    case 'f': out = '\f'; break;
    case 'n': out = '\n'; break;
    case 'r': out = '\r'; break;
    case 't': out = '\t'; break;
    case 'u': return read_u_escape(in, n);
    default: return json_fail(in, in->pos - 1, "an unknown string escape");
    }
    return scratch_put(in, n, &out, 1);
}

bool json_string(struct json_in *in, const char **s, size_t *len)
{
    if (in->failed)
        return false;
    if (json_peek(in) != '"')
        return fail_expected(in, "a string");
    in->pos++;
    size_t n = 0;
    for (;;) {
        /* copy the run of plain bytes up to the next quote, backslash or special byte */
        size_t run = in->pos;
        while (run < in->len) {
            unsigned char c = (unsigned char)in->buf[run];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                break;
            run++;
        }
        if (run > in->pos && !scratch_put(in, &n, in->buf + in->pos, run - in->pos))
            return false;
        in->pos = run;
        if (in->pos >= in->len)
            return json_fail(in, in->pos, "the input ends inside a string");
        unsigned char c = (unsigned char)in->buf[in->pos];
        if (c == '"') {
            in->pos++;
            break;
        }
        if (c == '\\') {
            in->pos++;
            if (!read_escape(in, &n))
                return false;
        } else if (c < 0x20) {
            return json_fail(in, in->pos, "a control character (0x%02x) inside a string", c);
        } else {
            size_t k = utf8_seq_len((const unsigned char *)in->buf + in->pos, in->len - in->pos);
            if (k == 0)
                return json_fail(in, in->pos, "bytes that are not UTF-8 inside a string");
            if (!scratch_put(in, &n, in->buf + in->pos, k))
                return false;
            in->pos += k;
        }
    }
    if (!scratch_put(in, &n, "", 1)) /* the NUL */
        return false;
    *s = in->scratch;
    *len = n - 1;
    return true;
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* A number by the JSON grammar; *plain says it is a non-negative integer without fraction or
 * exponent (its digits start at the returned position). */
static bool scan_number(struct json_in *in, bool *plain)
{
    size_t p = in->pos;
    *plain = true;
    if (p < in->len && in->buf[p] == '-') {
        *plain = false;
        p++;
    }
    if (p >= in->len || !is_digit((unsigned char)in->buf[p])) {
        in->pos = p;
        return fail_expected(in, "a digit");
    }
    if (in->buf[p] == '0' && p + 1 < in->len && is_digit((unsigned char)in->buf[p + 1]))
        return json_fail(in, p, "a number with a leading zero");
    while (p < in->len && is_digit((unsigned char)in->buf[p]))
        p++;
    if (p < in->len && in->buf[p] == '.') {
        *plain = false;
        p++;
        if (p >= in->len || !is_digit((unsigned char)in->buf[p])) {
            in->pos = p;
            return fail_expected(in, "a digit after '.'");
        }
        while (p < in->len && is_digit((unsigned char)in->buf[p]))
            p++;
    }
    if (p < in->len && (in->buf[p] == 'e' || in->buf[p] == 'E')) {
        *plain = false;
        p++;
        if (p < in->len && (in->buf[p] == '+' || in->buf[p] == '-'))
            p++;
        if (p >= in->len || !is_digit((unsigned char)in->buf[p])) {
            in->pos = p;
            return fail_expected(in, "a digit in the exponent");
        }
        while (p < in->len && is_digit((unsigned char)in->buf[p]))
            p++;
    }
    in->pos = p;
    return true;
}

static const char *field_or(struct json_in *in)
{
    return in->field ? in->field : "a value";
}

bool json_u64_max(struct json_in *in, uint64_t max, uint64_t *v)
{
    if (in->failed)
        return false;
    int c = json_peek(in);
    if (c != '-' && !is_digit(c))
        return fail_expected(in, "a non-negative integer");
    size_t start = in->pos;
    bool plain;
    if (!scan_number(in, &plain))
        return false;
    if (!plain)
        return json_fail(in, start, "\"%s\" must be a non-negative integer", field_or(in));
    uint64_t x = 0;
    for (size_t p = start; p < in->pos; p++) {
        unsigned d = (unsigned)(in->buf[p] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return json_fail(in, start, "\"%s\" is larger than 2^64-1", field_or(in));
        x = x * 10 + d;
    }
    if (x > max)
        return json_fail(in, start, "\"%s\" is larger than %llu", field_or(in),
                         (unsigned long long)max);
    *v = x;
    return true;
}

bool json_u64(struct json_in *in, uint64_t *v)
{
    return json_u64_max(in, UINT64_MAX, v);
}

static bool literal(struct json_in *in, const char *word)
{
    size_t n = strlen(word), have = in->len - in->pos;
    if (have < n && memcmp(in->buf + in->pos, word, have) == 0) {
        in->pos = in->len; /* a cut-off literal: the input is truncated */
        return fail_expected(in, word);
    }
    if (have < n || memcmp(in->buf + in->pos, word, n) != 0)
        return json_fail(in, in->pos, "not a JSON value (expected %s)", word);
    in->pos += n;
    return true;
}

bool json_bool(struct json_in *in, bool *v)
{
    if (in->failed)
        return false;
    int c = json_peek(in);
    if (c == 't') {
        *v = true;
        return literal(in, "true");
    }
    if (c == 'f') {
        *v = false;
        return literal(in, "false");
    }
    return fail_expected(in, "true or false");
}

bool json_try_null(struct json_in *in)
{
    if (in->failed || json_peek(in) != 'n')
        return false;
    return literal(in, "null");
}

int json_object_next(struct json_in *in, bool *first, const char **key, size_t *keylen)
{
    if (in->failed)
        return -1;
    int c = json_peek(in);
    if (c == '}') {
        in->pos++;
        return 0;
    }
    if (!*first && !json_expect(in, ',', "',' or '}'"))
        return -1;
    *first = false;
    if (json_peek(in) != '"')
        return fail_expected(in, "a key string"), -1;
    if (!json_string(in, key, keylen) || !json_expect(in, ':', "':' after a key"))
        return -1;
    return 1;
}

int json_array_next(struct json_in *in, bool *first)
{
    if (in->failed)
        return -1;
    int c = json_peek(in);
    if (c == ']') {
        in->pos++;
        return 0;
    }
    if (!*first && !json_expect(in, ',', "',' or ']'"))
        return -1;
    *first = false;
    return 1;
}

bool json_skip(struct json_in *in)
{
    if (in->failed)
        return false;
    int c = json_peek(in);
    bool first = true, plain;
    const char *s;
    size_t n;
    int more;
    switch (c) {
    case '{':
    case '[':
        if (in->depth >= JSON_MAX_DEPTH)
            return json_fail(in, in->pos, "values nested deeper than %d levels", JSON_MAX_DEPTH);
        in->depth++;
        in->pos++;
        if (c == '{') {
            while ((more = json_object_next(in, &first, &s, &n)) == 1)
                if (!json_skip(in))
                    return false;
        } else {
            while ((more = json_array_next(in, &first)) == 1)
                if (!json_skip(in))
                    return false;
        }
        in->depth--;
        return more == 0;
    case '"': return json_string(in, &s, &n);
    case 't': return literal(in, "true");
    case 'f': return literal(in, "false");
    case 'n': return literal(in, "null");
    default:
        if (c == '-' || is_digit(c))
            return scan_number(in, &plain);
        return fail_expected(in, "a value");
    }
}
