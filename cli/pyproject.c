/* cli/pyproject.c: [tool.syncspy] of the nearest pyproject.toml (see pyproject.h). The whole
 * file is scanned as TOML so that a multi-line array or string of another table never reads as
 * a table header; only [tool.syncspy]'s values are kept, and only the kinds syncspy's settings
 * have (a string, a number, a boolean, an array of strings): anything else there is named with
 * its line, never guessed at. */
#include "cli/pyproject.h"
#include "cli/load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PYPROJECT_MAX_BYTES (4u << 20) /* a pyproject.toml larger than this is not one */
#define PYPROJECT_MAX_VALUES 256
#define PYPROJECT_MAX_DEPTH 32 /* nested arrays and inline tables of other tables */
#define TABLE "tool.syncspy"

struct cur {
    const char *s, *end;
    int line;
    struct pyproject *p;
    const char *name;
};

static int fail(struct cur *c, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(c->p->err, sizeof c->p->err, "%s:%d: %s", c->name, c->line, why);
    return -1;
}

static bool at_end(const struct cur *c)
{
    return c->s >= c->end;
}

static bool isalnum_ascii(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static void skip_blank(struct cur *c)
{
    while (!at_end(c) && (*c->s == ' ' || *c->s == '\t'))
        c->s++;
}

/* Blanks, comments and newlines (inside arrays). */
static void skip_space(struct cur *c)
{
    for (;;) {
        skip_blank(c);
        if (at_end(c))
            return;
        if (*c->s == '#') {
            while (!at_end(c) && *c->s != '\n')
                c->s++;
        } else if (*c->s == '\n') {
            c->line++;
            c->s++;
        } else if (*c->s == '\r' && c->s + 1 < c->end && c->s[1] == '\n') {
            c->s++;
        } else {
            return;
        }
    }
}

/* After a value or a header: blanks, a comment, then the end of the line. */
static int end_of_line(struct cur *c)
{
    skip_blank(c);
    if (!at_end(c) && *c->s == '#')
        while (!at_end(c) && *c->s != '\n')
            c->s++;
    if (!at_end(c) && *c->s == '\r')
        c->s++;
    if (at_end(c))
        return 0;
    if (*c->s != '\n')
        return fail(c, "unexpected '%c' after the value", *c->s);
    c->s++;
    c->line++;
    return 0;
}

static bool starts(const struct cur *c, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(c->end - c->s) >= n && memcmp(c->s, w, n) == 0;
}

/* A string at c (basic, literal, either multi-line) into *out (malloc'ed) when out is given. */
static int parse_string(struct cur *c, char **out)
{
    char q = *c->s;
    bool multi = starts(c, q == '"' ? "\"\"\"" : "'''");
    c->s += multi ? 3 : 1;
    if (multi && !at_end(c) && *c->s == '\n') { /* a newline right after the opening is trimmed */
        c->s++;
        c->line++;
    }
    size_t cap = (size_t)(c->end - c->s) + 1, n = 0;
    char *buf = out ? malloc(cap) : NULL;
    if (out && !buf)
        return fail(c, "out of memory");
    for (;;) {
        if (at_end(c)) {
            free(buf);
            return fail(c, "a string that does not end");
        }
        char ch = *c->s;
        if (multi ? starts(c, q == '"' ? "\"\"\"" : "'''") : ch == q) {
            c->s += multi ? 3 : 1;
            break;
        }
        if (ch == '\n') {
            if (!multi) {
                free(buf);
                return fail(c, "a string that does not end on its line");
            }
            c->line++;
        }
        c->s++;
        if (ch == '\\' && q == '"') {
            if (at_end(c)) {
                free(buf);
                return fail(c, "a string that does not end");
            }
            char e = *c->s++;
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '"': ch = '"'; break;
            case '\\': ch = '\\'; break;
            default:
                if (out) { /* \uXXXX and the rest: not in any syncspy setting */
                    free(buf);
                    return fail(c, "the escape '\\%c' is not supported in [" TABLE "]", e);
                }
                continue;
            }
        }
        if (buf)
            buf[n++] = ch;
    }
    if (buf) {
        buf[n] = '\0';
        if (strlen(buf) != n) {
            free(buf);
            return fail(c, "a string with a NUL byte");
        }
        *out = buf;
    }
    return 0;
}

static int skip_value(struct cur *c, int depth);

/* An array or an inline table of another table's, skipped whole. */
static int skip_nested(struct cur *c, int depth, char close)
{
    if (depth > PYPROJECT_MAX_DEPTH)
        return fail(c, "values nested deeper than %d", PYPROJECT_MAX_DEPTH);
    c->s++;
    for (;;) {
        skip_space(c);
        if (at_end(c))
            return fail(c, "'%c' never closed", close == ']' ? '[' : '{');
        if (*c->s == close) {
            c->s++;
            return 0;
        }
        if (*c->s == ',') {
            c->s++;
            continue;
        }
        if (close == '}') { /* key = value */
            while (!at_end(c) && *c->s != '=' && *c->s != '\n' && *c->s != '}')
                c->s++;
            if (at_end(c) || *c->s != '=')
                return fail(c, "an inline table without '='");
            c->s++;
            skip_blank(c);
        }
        if (skip_value(c, depth + 1) != 0)
            return -1;
    }
}

/* Any value of another table: a string, an array, an inline table, or a bare word (a number,
 * a boolean, a date) up to a comma, a bracket, a comment or the line's end. */
static int skip_value(struct cur *c, int depth)
{
    if (at_end(c))
        return fail(c, "a key without a value");
    if (*c->s == '"' || *c->s == '\'')
        return parse_string(c, NULL);
    if (*c->s == '[')
        return skip_nested(c, depth, ']');
    if (*c->s == '{')
        return skip_nested(c, depth, '}');
    const char *from = c->s;
    while (!at_end(c) && !strchr(",]}#\n\r", *c->s))
        c->s++;
    while (c->s > from && (c->s[-1] == ' ' || c->s[-1] == '\t'))
        c->s--;
    return c->s > from ? 0 : fail(c, "a key without a value");
}

/* A value of [tool.syncspy] into v. */
static int parse_value(struct cur *c, struct pyproject_value *v)
{
    if (at_end(c) || *c->s == '\n' || *c->s == '#')
        return fail(c, "%s has no value", v->key);
    if (*c->s == '"' || *c->s == '\'') {
        v->type = PV_STRING;
        return parse_string(c, &v->s);
    }
    if (*c->s == '[') {
        v->type = PV_LIST;
        c->s++;
        for (;;) {
            skip_space(c);
            if (at_end(c))
                return fail(c, "%s: '[' never closed", v->key);
            if (*c->s == ']') {
                c->s++;
                return 0;
            }
            if (*c->s != '"' && *c->s != '\'')
                return fail(c, "%s wants an array of strings", v->key);
            char *s = NULL;
            if (parse_string(c, &s) != 0)
                return -1;
            char **grown = realloc(v->list, (v->nlist + 1) * sizeof *grown);
            if (!grown) {
                free(s);
                return fail(c, "out of memory");
            }
            v->list = grown;
            v->list[v->nlist++] = s;
            skip_space(c);
            if (!at_end(c) && *c->s == ',')
                c->s++;
            else if (at_end(c) || *c->s != ']')
                return fail(c, "%s: expected ',' or ']' in the array", v->key);
        }
    }
    if (*c->s == '{')
        return fail(c, "%s: an inline table is not a syncspy setting", v->key);
    const char *from = c->s;
    while (!at_end(c) && !strchr("#\n\r", *c->s))
        c->s++;
    const char *to = c->s;
    while (to > from && (to[-1] == ' ' || to[-1] == '\t'))
        to--;
    size_t n = (size_t)(to - from);
    if (!(v->s = strndup(from, n)))
        return fail(c, "out of memory");
    if (!strcmp(v->s, "true") || !strcmp(v->s, "false")) {
        v->type = PV_BOOL;
        v->b = v->s[0] == 't';
        return 0;
    }
    char *e = NULL;
    errno = 0;
    v->num = strtod(v->s, &e);
    if (n && e == v->s + n && errno == 0 && strspn(v->s, "+-0123456789.eE") == n) {
        v->type = PV_NUMBER;
        return 0;
    }
    return fail(c,
                "%s = %.40s: not a string, a number, a boolean or an array of strings "
                "(strings are quoted)",
                v->key, v->s);
}

/* A key at c (bare, or quoted; dotted ones are accepted outside [tool.syncspy] only) into
 * buf; *dotted set when it has parts. */
static int parse_key(struct cur *c, char *buf, size_t n, bool *dotted)
{
    size_t k = 0;
    *dotted = false;
    for (;;) {
        skip_blank(c);
        if (at_end(c))
            return fail(c, "a key without '='");
        if (*c->s == '"' || *c->s == '\'') {
            char *s = NULL;
            if (parse_string(c, &s) != 0)
                return -1;
            k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "%s", s);
            free(s);
        } else {
            const char *from = c->s;
            while (!at_end(c) && (isalnum_ascii(*c->s) || *c->s == '_' || *c->s == '-'))
                c->s++;
            if (c->s == from)
                return fail(c, "unexpected '%c' where a key begins", *c->s);
            k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "%.*s", (int)(c->s - from), from);
        }
        skip_blank(c);
        if (!at_end(c) && *c->s == '.') {
            c->s++;
            *dotted = true;
            k += (size_t)snprintf(buf + k, k < n ? n - k : 0, ".");
            continue;
        }
        if (at_end(c) || *c->s != '=')
            return fail(c, "a key without '='");
        c->s++;
        skip_blank(c);
        if (k >= n)
            return fail(c, "a key longer than %zu bytes", n - 1);
        return 0;
    }
}

/* A [table] or [[array of tables]] header: *ours when it is [tool.syncspy]. */
static int parse_header(struct cur *c, bool *ours)
{
    bool array = starts(c, "[[");
    c->s += array ? 2 : 1;
    char name[256];
    size_t k = 0;
    while (!at_end(c) && *c->s != ']' && *c->s != '\n') {
        if (*c->s == '"' || *c->s == '\'') {
            char *s = NULL;
            if (parse_string(c, &s) != 0)
                return -1;
            k += (size_t)snprintf(name + k, k < sizeof name ? sizeof name - k : 0, "%s", s);
            free(s);
            continue;
        }
        if (*c->s != ' ' && *c->s != '\t' && k + 1 < sizeof name)
            name[k++] = *c->s;
        c->s++;
    }
    if (at_end(c) || *c->s != ']' || (array && !starts(c, "]]")))
        return fail(c, "a table header without its closing bracket");
    c->s += array ? 2 : 1;
    name[k < sizeof name ? k : sizeof name - 1] = '\0';
    *ours = !array && !strcmp(name, TABLE);
    if (!array && !strncmp(name, TABLE ".", strlen(TABLE) + 1))
        return fail(c, "[%s]: syncspy's settings are the keys of [" TABLE "] itself", name);
    return end_of_line(c);
}

int pyproject_parse(struct pyproject *p, const char *text, size_t len, const char *name)
{
    struct cur c = {.s = text, .end = text + len, .line = 1, .p = p, .name = name};
    bool ours = false, seen = false;
    if (memchr(text, '\0', len))
        return fail(&c, "a NUL byte: not a text file");
    for (;;) {
        skip_space(&c);
        if (at_end(&c))
            return 0;
        if (*c.s == '[') {
            bool was = ours;
            if (parse_header(&c, &ours) != 0)
                return -1;
            if (ours && seen && !was)
                return fail(&c, "[" TABLE "] defined twice");
            seen |= ours;
            continue;
        }
        char key[128];
        bool dotted;
        int line = c.line;
        if (parse_key(&c, key, sizeof key, &dotted) != 0)
            return -1;
        if (!ours) {
            if (skip_value(&c, 0) != 0 || end_of_line(&c) != 0)
                return -1;
            continue;
        }
        if (dotted)
            return fail(&c, "%s: dotted keys are not syncspy settings", key);
        if (pyproject_get(p, key))
            return fail(&c, "%s is set twice", key);
        if (p->n == PYPROJECT_MAX_VALUES)
            return fail(&c, "more than %d settings", PYPROJECT_MAX_VALUES);
        struct pyproject_value *grown = realloc(p->v, (p->n + 1) * sizeof *grown);
        if (!grown)
            return fail(&c, "out of memory");
        p->v = grown;
        struct pyproject_value *v = &p->v[p->n++];
        *v = (struct pyproject_value){.key = strdup(key), .line = line};
        if (!v->key)
            return fail(&c, "out of memory");
        if (parse_value(&c, v) != 0 || end_of_line(&c) != 0)
            return -1;
    }
}

const struct pyproject_value *pyproject_get(const struct pyproject *p, const char *key)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].key, key))
            return &p->v[i];
    return NULL;
}

const char *pyproject_type_name(enum pyproject_type t)
{
    return t == PV_STRING   ? "a string"
           : t == PV_NUMBER ? "a number"
           : t == PV_BOOL   ? "a boolean"
                            : "an array";
}

/* The file at path read whole (at most PYPROJECT_MAX_BYTES): 0, or -1 with err. */
static int read_file(struct pyproject *p, const char *path, char **text, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > PYPROJECT_MAX_BYTES) {
        snprintf(p->err, sizeof p->err, "%s: %s", path,
                 fd < 0                 ? strerror(errno)
                 : !S_ISREG(st.st_mode) ? "not a regular file"
                                        : "larger than 4 MiB");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = 0;
    while (buf && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) {
        snprintf(p->err, sizeof p->err, "%s: out of memory", path);
        return -1;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

int pyproject_load(struct pyproject *p, const char *dir)
{
    memset(p, 0, sizeof *p);
    char at[PATH_MAX];
    if (dir ? !realpath(dir, at) : !getcwd(at, sizeof at))
        return 0; /* no folder to start from: no settings file */
    for (;;) {
        char *path = p->path;
        if (snprintf(path, sizeof p->path, "%s/pyproject.toml", strcmp(at, "/") ? at : "") >=
            (int)sizeof p->path)
            return 0; /* a folder too deep to name: none read */
        if (access(path, F_OK) == 0) {
            char *text = NULL;
            size_t len = 0;
            if (read_file(p, path, &text, &len) != 0)
                return -1;
            int rc = pyproject_parse(p, text, len, path);
            free(text);
            return rc == 0 ? 1 : -1;
        }
        char *slash = strrchr(at, '/');
        if (!slash || !strcmp(at, "/"))
            return 0;
        if (slash == at)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
}

/* [tool.syncspy]'s keys: each command takes its own and leaves the others' (a misspelt key is
 * refused, never ignored). The agent's variables are syncspy run's (cli/run.c). */
static const char *const pyproject_keys[] = {
    /* syncspy check */
    "max_syncs_per_step", "max_blocked_share", "include_startup", "allow",
    /* the pytest plugin (python/syncspy/pytest_plugin.py) */
    "sync_budget_default", "sync_budget_threads", NULL};

int pyproject_unknown_key(const struct pyproject *p, bool (*also)(const char *key))
{
    for (size_t i = 0; i < p->n; i++) {
        bool known = also && also(p->v[i].key);
        for (size_t k = 0; !known && pyproject_keys[k]; k++)
            known = !strcmp(p->v[i].key, pyproject_keys[k]);
        if (!known) {
            fprintf(stderr, "syncspy: %s:%d: [tool.syncspy] has no setting '%s'\n",
                    cli_shown(p->path), p->v[i].line, cli_shown(p->v[i].key));
            return 1;
        }
    }
    return 0;
}

void pyproject_free(struct pyproject *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].key);
        free(p->v[i].s);
        for (size_t k = 0; k < p->v[i].nlist; k++)
            free(p->v[i].list[k]);
        free(p->v[i].list);
    }
    free(p->v);
    p->v = NULL;
    p->n = 0;
}
