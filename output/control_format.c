/* output/control_format.c: the control request and its acknowledgment (see control_format.h).
 * Pure functions over caller's buffers: no allocation, no I/O, no locale. Runs on the agent's
 * flusher thread (parsing a request anyone could have written: every byte is checked) and in the
 * CLI. */
#include "output/control_format.h"

#include <stdio.h>
#include <string.h>

#include "output/model.h"

#define REQUEST_MAGIC "syncspy-control 1"
#define ACK_MAGIC "syncspy-control-ack 1"

/* One line of text: [p, end) without its newline; *next after it. False at the end. */
static bool next_line(const char **p, const char *end, const char **line, size_t *len)
{
    if (*p >= end)
        return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    *line = *p;
    *len = (size_t)((nl ? nl : end) - *p);
    *p = nl ? nl + 1 : end;
    return true;
}

static bool id_ok(const char *v, size_t n)
{
    if (n > CONTROL_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    }
    return true;
}

/* A whole number of at most 19 digits (no sign, no space, no leading +): *out. */
static bool number(const char *v, size_t n, uint64_t *out)
{
    if (n == 0 || n > 19)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *out = x;
    return true;
}

/* A shown excerpt of untrusted text: printable ASCII only, at most 40 bytes. */
static void shown(char *buf, size_t cap, const char *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap && i < 40; i++)
        buf[k++] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
    buf[k] = 0;
}

enum { K_ID, K_COMMAND, K_STEPS, K_N };
static const char *const request_keys[K_N] = {"id", "command", "steps"};

int control_request_parse(const char *text, size_t n, struct control_request *out, char *err,
                          size_t errlen)
{
    const char *p = text, *end = text + n, *line;
    size_t len;
    char ex[48];
    struct control_request r = {0};
    unsigned seen = 0;
    uint64_t steps = 0;
    if (memchr(text, 0, n)) {
        snprintf(err, errlen, "it holds a NUL byte: not a syncspy control file");
        return -1;
    }
    if (!next_line(&p, end, &line, &len) || len != strlen(REQUEST_MAGIC) ||
        memcmp(line, REQUEST_MAGIC, len) != 0) {
        snprintf(err, errlen, "it does not start with the line \"%s\": not a syncspy control file",
                 REQUEST_MAGIC);
        return -1;
    }
    while (next_line(&p, end, &line, &len)) {
        const char *eq = memchr(line, '=', len);
        if (!eq) {
            shown(ex, sizeof ex, line, len);
            snprintf(err, errlen, "the line '%s' is not key=value", ex);
            return -1;
        }
        size_t klen = (size_t)(eq - line), vlen = len - klen - 1, k;
        const char *v = eq + 1;
        for (k = 0; k < K_N; k++)
            if (strlen(request_keys[k]) == klen && !memcmp(request_keys[k], line, klen))
                break;
        if (k == K_N) {
            shown(ex, sizeof ex, line, klen);
            snprintf(err, errlen, "unknown key '%s' (known: id, command, steps)", ex);
            return -1;
        }
        if (seen & 1u << k) {
            snprintf(err, errlen, "'%s' given twice", request_keys[k]);
            return -1;
        }
        seen |= 1u << k;
        shown(ex, sizeof ex, v, vlen);
        if (k == K_ID) {
            if (!id_ok(v, vlen)) {
                snprintf(err, errlen, "id '%s' is not 1 to %d of [A-Za-z0-9._:-]", ex,
                         CONTROL_ID_MAX);
                return -1;
            }
            memcpy(r.id, v, vlen);
            r.id[vlen] = 0;
        } else if (k == K_COMMAND) {
            if (vlen == 5 && !memcmp(v, "start", 5))
                r.command = CONTROL_START;
            else if (vlen == 4 && !memcmp(v, "stop", 4))
                r.command = CONTROL_STOP;
            else {
                snprintf(err, errlen, "command '%s' is neither start nor stop", ex);
                return -1;
            }
        } else if (!number(v, vlen, &steps) || steps < 1 || steps > CONTROL_STEPS_MAX) {
            snprintf(err, errlen, "steps '%s' is not a whole number from 1 to %llu", ex,
                     CONTROL_STEPS_MAX);
            return -1;
        }
    }
    if (!(seen & 1u << K_COMMAND)) {
        snprintf(err, errlen, "it has no command=start or command=stop line");
        return -1;
    }
    if ((seen & 1u << K_STEPS) && r.command != CONTROL_START) {
        snprintf(err, errlen, "steps= goes with command=start only");
        return -1;
    }
    r.steps = steps;
    *out = r;
    return 0;
}

/* snprintf into buf at *k, tracking overflow. */
#define PUT(...)                                                        \
    do {                                                                \
        int m_ = snprintf(buf + k, k < cap ? cap - k : 0, __VA_ARGS__); \
        if (m_ < 0)                                                     \
            return -1;                                                  \
        k += (size_t)m_;                                                \
    } while (0)

int control_request_format(const struct control_request *r, char *buf, size_t cap)
{
    size_t k = 0;
    PUT("%s\n", REQUEST_MAGIC);
    if (r->id[0])
        PUT("id=%s\n", r->id);
    PUT("command=%s\n", r->command == CONTROL_STOP ? "stop" : "start");
    if (r->command == CONTROL_START && r->steps)
        PUT("steps=%llu\n", (unsigned long long)r->steps);
    return k < cap ? (int)k : -1;
}

static const char *result_name(unsigned r)
{
    return r == CONTROL_PENDING ? "pending" : r == CONTROL_APPLIED ? "applied" : "refused";
}

/* A value written into the acknowledgment: one line, printable. */
static void one_line(char *dst, size_t cap, const char *src)
{
    size_t k = 0;
    for (; src && *src && k + 1 < cap; src++)
        dst[k++] = *src == '\n' || *src == '\r' ? ' ' : *src;
    dst[k] = 0;
}

int control_ack_format(const struct control_ack *a, char *buf, size_t cap)
{
    size_t k = 0;
    char sched[sizeof a->schedule], reason[sizeof a->reason];
    one_line(sched, sizeof sched, a->schedule);
    one_line(reason, sizeof reason, a->reason);
    PUT("%s\nid=%s\nresult=%s\npid=%d\n", ACK_MAGIC, a->id, result_name(a->result), a->pid);
    if (a->command)
        PUT("command=%s\ncause=%s\n", a->command == CONTROL_STOP ? "stop" : "start",
            rep_cause_name(a->cause));
    PUT("step=%llu\nfirst=%llu\n", (unsigned long long)a->step, (unsigned long long)a->first);
    if (a->last == CONTROL_UNTIL_STOP)
        PUT("last=until-stop\n");
    else
        PUT("last=%llu\n", (unsigned long long)a->last);
    PUT("schedule=%s\n", sched);
    if (reason[0])
        PUT("reason=%s\n", reason);
    return k < cap ? (int)k : -1;
}

static bool key_is(const char *line, size_t klen, const char *key)
{
    return strlen(key) == klen && !memcmp(line, key, klen);
}

static void copy_value(char *dst, size_t cap, const char *v, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = 0;
}

int control_ack_parse(const char *text, size_t n, struct control_ack *out, char *err, size_t errlen)
{
    const char *p = text, *end = text + n, *line;
    size_t len;
    struct control_ack a = {0};
    if (!next_line(&p, end, &line, &len) || len != strlen(ACK_MAGIC) ||
        memcmp(line, ACK_MAGIC, len)) {
        snprintf(err, errlen, "it does not start with the line \"%s\"", ACK_MAGIC);
        return -1;
    }
    while (next_line(&p, end, &line, &len)) {
        const char *eq = memchr(line, '=', len);
        if (!eq)
            continue;
        size_t klen = (size_t)(eq - line), vlen = len - klen - 1;
        const char *v = eq + 1;
        uint64_t x = 0;
        bool num = number(v, vlen, &x);
        if (key_is(line, klen, "id"))
            copy_value(a.id, sizeof a.id, v, vlen);
        else if (key_is(line, klen, "result"))
            a.result = vlen == 7 && !memcmp(v, "pending", 7)   ? CONTROL_PENDING
                       : vlen == 7 && !memcmp(v, "applied", 7) ? CONTROL_APPLIED
                       : vlen == 7 && !memcmp(v, "refused", 7) ? CONTROL_REFUSED
                                                               : 0;
        else if (key_is(line, klen, "command"))
            a.command = vlen == 4 && !memcmp(v, "stop", 4) ? CONTROL_STOP : CONTROL_START;
        else if (key_is(line, klen, "cause"))
            a.cause = vlen == 15 && !memcmp(v, "syncspy.start()", 15) ? REP_CAUSE_PY_START
                                                                      : REP_CAUSE_START;
        else if (key_is(line, klen, "pid") && num)
            a.pid = x < 0x7fffffff ? (int)x : 0;
        else if (key_is(line, klen, "step") && num)
            a.step = x;
        else if (key_is(line, klen, "first") && num)
            a.first = x;
        else if (key_is(line, klen, "last"))
            a.last = num ? x : CONTROL_UNTIL_STOP;
        else if (key_is(line, klen, "schedule"))
            copy_value(a.schedule, sizeof a.schedule, v, vlen);
        else if (key_is(line, klen, "reason"))
            copy_value(a.reason, sizeof a.reason, v, vlen);
    }
    if (!a.result) {
        snprintf(err, errlen, "it has no result= line");
        return -1;
    }
    *out = a;
    return 0;
}
