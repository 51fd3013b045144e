/* output/config.c: the one validating parser for SYNCSPY_* (see config.h). Warnings are kept in
 * cfg->warnings, not printed: a process that never touches CUDA must print nothing, so the
 * agent prints them at the first CUDA call. */
#include "output/config.h"
#include "output/report.h" /* SYNCSPY_TOP: the report's range, the CLI's --top too */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* src appended at dst + *n (at most cap bytes in all, NUL not counted) with its control
 * characters (a newline, an escape sequence) shown as \n, \r, \t or \xNN, so that a line stays
 * one line and the terminal shows what was there. */
static void append_escaped(char *dst, size_t *n, size_t cap, const char *src)
{
    for (const unsigned char *p = (const unsigned char *)src; *p && *n < cap; p++) {
        if (*p >= 0x20 && *p != 0x7f) {
            dst[(*n)++] = (char)*p;
            continue;
        }
        char esc[5];
        int k = *p == '\n'   ? snprintf(esc, sizeof esc, "\\n")
                : *p == '\r' ? snprintf(esc, sizeof esc, "\\r")
                : *p == '\t' ? snprintf(esc, sizeof esc, "\\t")
                             : snprintf(esc, sizeof esc, "\\x%02x", *p);
        if (*n + (size_t)k > cap)
            break;
        memcpy(dst + *n, esc, (size_t)k);
        *n += (size_t)k;
    }
    dst[*n] = '\0';
}

void config_escape(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    if (cap > 0)
        append_escaped(dst, &n, cap - 1, src);
}

/* One line, escaped (append_escaped); the first bad variable and its reason kept apart too. */
void config_warn(struct config *cfg, const char *var, const char *value, const char *why,
                 const char *dflt)
{
    if (!cfg->first_bad) {
        size_t k = 0;
        cfg->first_bad = var;
        append_escaped(cfg->first_why, &k, sizeof cfg->first_why - 1, why);
    }
    char line[512];
    snprintf(line, sizeof line, "syncspy: %s='%.64s'%s %s; using %s", var, value,
             strlen(value) > 64 ? "..." : "", why, dflt);
    size_t n = strlen(cfg->warnings), cap = sizeof(cfg->warnings) - 2; /* room for the newline */
    if (n + 16 > cap)
        return; /* full: the lines before it say enough */
    append_escaped(cfg->warnings, &n, cap, line);
    cfg->warnings[n++] = '\n';
    cfg->warnings[n] = '\0';
}

bool config_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!*s || *s == ' ' || *s == '+')
        return false;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static void parse_int_var(struct config *cfg, config_getenv_fn get, const char *var, long lo,
                          long hi, long dflt, int *out)
{
    const char *v = get(var);
    long n = dflt;
    if (v && !config_parse_int(v, lo, hi, &n)) {
        char why[64], d[32];
        snprintf(why, sizeof why, "is not an integer in %ld..%ld", lo, hi);
        snprintf(d, sizeof d, "%ld", dflt);
        config_warn(cfg, var, v, why, d);
        n = dflt;
    }
    *out = (int)n;
}

/* A variable of two words, a and b (its warning names them in that order): 0 for a, 1 for b,
 * dflt (with a warning) for anything else. */
/* The index of var's value among words (NULL-terminated), or dflt (unset, or not one of them:
 * then the warning names them all, "is not a, b or c"). */
static int parse_choice(struct config *cfg, config_getenv_fn get, const char *var,
                        const char *const *words, int dflt)
{
    const char *v = get(var);
    if (!v)
        return dflt;
    int n = 0;
    for (; words[n]; n++)
        if (!strcmp(v, words[n]))
            return n;
    char why[96];
    size_t k = (size_t)snprintf(why, sizeof why, "is not ");
    for (int i = 0; i < n && k < sizeof why; i++)
        k += (size_t)snprintf(why + k, sizeof why - k, "%s%s", words[i],
                              i + 2 < n   ? ", "
                              : i + 1 < n ? " or "
                                          : "");
    config_warn(cfg, var, v, why, words[dflt]);
    return dflt;
}

static int parse_pair(struct config *cfg, config_getenv_fn get, const char *var, const char *a,
                      const char *b, int dflt)
{
    const char *const words[] = {a, b, NULL};
    return parse_choice(cfg, get, var, words, dflt);
}

static bool copy_path(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n == 0 || n >= cap)
        return false;
    memcpy(dst, src, n + 1);
    return true;
}

const char *const config_variables[] = {
    "SYNCSPY_OUT",      "SYNCSPY_SCHEDULE",    "SYNCSPY_STEP",      "SYNCSPY_REPORT",
    "SYNCSPY_TOP",      "SYNCSPY_MAX_DEPTH",   "SYNCSPY_BUFFER_MB", "SYNCSPY_LAUNCHES",
    "SYNCSPY_BACKWARD", "SYNCSPY_CUPTI",       "SYNCSPY_GPU",       "SYNCSPY_COLOR",
    "SYNCSPY_DEBUG",    "SYNCSPY_STACK_CACHE", "SYNCSPY_TRACE_MB",  NULL};

/* SYNCSPY_SCHEDULE (torch.profiler's wait/warmup/active/repeat); every step by default. */
static void parse_schedule_var(struct config *cfg, config_getenv_fn get)
{
    cfg->schedule.every_step = true;
    const char *v;
    if ((v = get("SYNCSPY_SCHEDULE"))) {
        char err[160];
        struct schedule s;
        if (schedule_parse(v, &s, err, sizeof err) == 0) {
            cfg->schedule = s;
        } else {
            char why[200];
            snprintf(why, sizeof why, "is not a schedule (%s)", err);
            config_warn(cfg, "SYNCSPY_SCHEDULE", v, why, "every step");
        }
    }
}

/* SYNCSPY_REPORT: stderr (the default), stdout, off or a file path. */
static void parse_report_var(struct config *cfg, config_getenv_fn get)
{
    cfg->report = REPORT_STDERR;
    const char *v;
    if ((v = get("SYNCSPY_REPORT"))) {
        if (!strcmp(v, "stderr"))
            cfg->report = REPORT_STDERR;
        else if (!strcmp(v, "stdout"))
            cfg->report = REPORT_STDOUT;
        else if (!strcmp(v, "off"))
            cfg->report = REPORT_OFF;
        else if (copy_path(cfg->report_path, sizeof cfg->report_path, v))
            cfg->report = REPORT_FILE;
        else
            config_warn(cfg, "SYNCSPY_REPORT", v,
                        *v ? "is too long a path" : "is empty (stderr, stdout, off or a file path)",
                        "stderr");
    }
}

/* SYNCSPY_CUPTI: auto (the default), off, eager or an absolute path to a libcupti. */
static void parse_cupti_var(struct config *cfg, config_getenv_fn get)
{
    cfg->cupti = CUPTI_AUTO;
    const char *v;
    if ((v = get("SYNCSPY_CUPTI"))) {
        if (!strcmp(v, "off"))
            cfg->cupti = CUPTI_OFF;
        else if (!strcmp(v, "auto"))
            cfg->cupti = CUPTI_AUTO;
        else if (!strcmp(v, "eager"))
            cfg->cupti = CUPTI_EAGER;
        else if (v[0] == '/' && copy_path(cfg->cupti_path, sizeof cfg->cupti_path, v))
            cfg->cupti = CUPTI_PATH;
        else
            config_warn(cfg, "SYNCSPY_CUPTI", v, "is not auto, off, eager or an absolute path",
                        "auto");
    }
}

void config_parse(struct config *cfg, config_getenv_fn get)
{
    memset(cfg, 0, sizeof(*cfg));
    const char *v;

    strcpy(cfg->out_dir, "./syncspy-out");
    if ((v = get("SYNCSPY_OUT")) && !copy_path(cfg->out_dir, sizeof cfg->out_dir - 64, v))
        config_warn(cfg, "SYNCSPY_OUT", v, *v ? "is too long" : "is empty", "./syncspy-out");

    parse_schedule_var(cfg, get);

    cfg->step_mode =
        parse_pair(cfg, get, "SYNCSPY_STEP", "auto", "manual", 0) ? STEP_MANUAL : STEP_AUTO;

    parse_report_var(cfg, get);

    parse_int_var(cfg, get, "SYNCSPY_TOP", 1, REPORT_TOP_MAX, REPORT_TOP_DEFAULT, &cfg->top);
    parse_int_var(cfg, get, "SYNCSPY_MAX_DEPTH", 4, 256, 64, &cfg->max_depth);
    parse_int_var(cfg, get, "SYNCSPY_BUFFER_MB", 1, 1024, 8, &cfg->buffer_mb);
    parse_int_var(cfg, get, "SYNCSPY_TRACE_MB", 0, CONFIG_TRACE_MB_MAX, CONFIG_TRACE_MB_DEFAULT,
                  &cfg->trace_mb);

    cfg->trace_launches = parse_pair(cfg, get, "SYNCSPY_LAUNCHES", "count", "trace", 0);

    static const char *const backward_words[] = {"auto", "all", "sampled", "off", NULL};
    static const enum backward_mode backward_modes[] = {BACKWARD_AUTO, BACKWARD_ALL,
                                                        BACKWARD_SAMPLED, BACKWARD_OFF};
    cfg->backward = backward_modes[parse_choice(cfg, get, "SYNCSPY_BACKWARD", backward_words, 0)];

    parse_cupti_var(cfg, get);

    int gpu;
    parse_int_var(cfg, get, "SYNCSPY_GPU", 0, 1, 0, &gpu);
    cfg->gpu = gpu != 0;

    /* NO_COLOR (no-color.org): any non-empty value turns colour off unless asked for by name. */
    static const char *const color_words[] = {"auto", "always", "never", NULL};
    static const enum report_color color_modes[] = {REPORT_COLOR_AUTO, REPORT_COLOR_ALWAYS,
                                                    REPORT_COLOR_NEVER};
    cfg->color = color_modes[parse_choice(cfg, get, "SYNCSPY_COLOR", color_words, 0)];
    if (cfg->color == REPORT_COLOR_AUTO && (v = get("NO_COLOR")) && *v)
        cfg->color = REPORT_COLOR_NEVER;

    int dbg;
    parse_int_var(cfg, get, "SYNCSPY_DEBUG", 0, 2, 0, &dbg);
    cfg->debug = (unsigned)dbg;
    cfg->stack_cache = !parse_pair(cfg, get, "SYNCSPY_STACK_CACHE", "on", "off", 0);
}
