/* cli/pyproject.h: the settings Python users keep in pyproject.toml, the [tool.syncspy] table of
 * the nearest one (the current folder, then each folder above it: pytest's rootdir search), read
 * by `syncspy run` and `syncspy check` (the pytest plugin reads the same table with tomllib:
 * python/syncspy/pytest_plugin.py). The table's values are strings, numbers, booleans and
 * arrays of strings, which is all syncspy's settings need: a TOML subset parser that says which
 * line it cannot read instead of guessing. Command-line options win over the file. */
#ifndef SYNCSPY_CLI_PYPROJECT_H
#define SYNCSPY_CLI_PYPROJECT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

enum pyproject_type { PV_STRING, PV_NUMBER, PV_BOOL, PV_LIST };

struct pyproject_value {
    char *key;
    enum pyproject_type type;
    char *s;     /* PV_STRING; for PV_NUMBER and PV_BOOL, the value as written */
    double num;  /* PV_NUMBER */
    bool b;      /* PV_BOOL */
    char **list; /* PV_LIST: nlist strings */
    size_t nlist;
    int line; /* where it is, for messages */
};

struct pyproject {
    char path[PATH_MAX]; /* the file read ("" when none was found) */
    struct pyproject_value *v;
    size_t n;
    char err[PATH_MAX + 200]; /* why the file could not be read (pyproject_load returned -1) */
};

/* Finds and reads the nearest pyproject.toml from dir (NULL: the current folder) upwards.
 * Returns 1 with its [tool.syncspy] values (none when it has no such table), 0 when no file was
 * found, -1 when one was found and cannot be read (err says where and why). */
int pyproject_load(struct pyproject *p, const char *dir);

/* Parses text (a pyproject.toml's) into p; name is used in messages. Returns 0 or -1 (err). */
int pyproject_parse(struct pyproject *p, const char *text, size_t len, const char *name);

const struct pyproject_value *pyproject_get(const struct pyproject *p, const char *key);

/* Says on stderr which key of p no command takes (check's, the pytest plugin's, and those also
 * accepts: syncspy run's agent variables) and returns 1; 0 when every key is known. */
int pyproject_unknown_key(const struct pyproject *p, bool (*also)(const char *key));

/* A value's kind in words ("a string", "a number", ...), for messages. */
const char *pyproject_type_name(enum pyproject_type t);

void pyproject_free(struct pyproject *p);

#endif
