/* cli/json_in.h: a strict, bounded JSON tokenizer for the CLI's summary.json reader: it never
 * reads past its buffer, never recurses deeper than JSON_MAX_DEPTH, and allocates only its
 * string scratch (at most JSON_MAX_STRING bytes). CLI only. */
#ifndef SYNCSPY_JSON_IN_H
#define SYNCSPY_JSON_IN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64             /* nesting of values the reader skips */
#define JSON_MAX_STRING (1024 * 1024) /* decoded bytes of one string */

struct json_in {
    const char *buf;
    size_t len;
    size_t pos;
    int depth;
    char *scratch; /* the last string read (NUL-terminated), owned here */
    size_t scratch_cap;
    const char *field; /* the field being read, named in error messages (may be NULL) */
    bool failed;
    bool truncated; /* the error is the end of the input */
    bool nomem;
    size_t err_pos;
    char err[200];
};

void json_in_init(struct json_in *in, const char *buf, size_t len);
void json_in_fini(struct json_in *in);
/* Records the first error (at byte pos) and returns false. */
bool json_fail(struct json_in *in, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The next byte after whitespace, or -1 at the end of the input. */
int json_peek(struct json_in *in);
/* Consumes c after whitespace, or fails naming what was expected. */
bool json_expect(struct json_in *in, char c, const char *what);
/* Objects and arrays: call with *first = true after the opening bracket. Returns 1 when a member
 * follows (for objects: its key is in *key and the ':' is consumed), 0 at the closing bracket,
 * -1 on error. */
int json_object_next(struct json_in *in, bool *first, const char **key, size_t *keylen);
int json_array_next(struct json_in *in, bool *first);
/* Typed values; each fails with a message naming in->field when the value has another type. */
bool json_string(struct json_in *in, const char **s, size_t *n); /* into scratch */
bool json_u64(struct json_in *in, uint64_t *v);
bool json_u64_max(struct json_in *in, uint64_t max, uint64_t *v);
bool json_bool(struct json_in *in, bool *v);
bool json_try_null(struct json_in *in); /* consumes null when it is next */
bool json_skip(struct json_in *in);     /* any value, depth-limited */
/* Whitespace then the end of the input, or an error. */
bool json_end(struct json_in *in);

#endif
