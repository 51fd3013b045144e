/* cli/main.c: the `syncspy` command: `run` starts a program with the agent (cli/run.c), `report`
 * renders the exit report again from trace.bin or summary.json files (one process, or a
 * SYNCSPY_OUT root merged), `export` turns them into folded stacks or Chrome trace events,
 * `check` holds a run to a sync budget, `diff` compares two runs; their options, help and usage
 * errors come from one table (cli/commands.c). A program of its own that
 * reads files only (never linked into the preloaded library): it may use stdio, but bad input
 * only ever gets a message and an exit status, never a crash. */
#include "cli/check.h"
#include "cli/chrome.h"
#include "cli/commands.h"
#include "cli/diff.h"
#include "cli/folded.h"
#include "cli/control.h"
#include "cli/html.h"
#include "output/config.h"
#include "cli/load.h"
#include "cli/pyproject.h"
#include "cli/ranks.h"
#include "cli/run.h"
#include "cli/top.h"
#include "output/io.h"
#include "cli/version.h"
#include "output/report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The usage lines of every command, on stderr, after "syncspy: MESSAGE"; the status to exit with. */
static int program_usage_error(const char *fmt, const char *arg)
{
    if (fmt) {
        fputs("syncspy: ", stderr);
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    cli_print_usage(NULL, stderr);
    fputs("Try 'syncspy --help' for more.\n", stderr);
    return 2;
}

/* ---- commands ----------------------------------------------------------------------------- */

/* A whole positive integer no larger than REPORT_TOP_MAX, or -1. */
static int parse_top(const char *s)
{
    if (!s || !*s)
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > REPORT_TOP_MAX)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v >= 1 && v <= REPORT_TOP_MAX ? (int)v : -1;
}

static int default_top(void)
{
    const char *env = getenv("SYNCSPY_TOP");
    if (!env)
        return REPORT_TOP_DEFAULT;
    int top = parse_top(env);
    if (top < 0) {
        fprintf(stderr,
                "syncspy: SYNCSPY_TOP='%.40s' is not a whole number from 1 to %d; "
                "using %d\n",
                env, REPORT_TOP_MAX, REPORT_TOP_DEFAULT);
        return REPORT_TOP_DEFAULT;
    }
    return top;
}

/* SYNCSPY_COLOR and NO_COLOR, read by the agent's own parser (a bad value: its warning);
 * --color WHEN (color_option) stands for SYNCSPY_COLOR. */
static const char *color_option;
static const char *color_getenv(const char *name)
{
    if (strcmp(name, "SYNCSPY_COLOR") == 0 && color_option)
        return color_option;
    return strcmp(name, "SYNCSPY_COLOR") == 0 || strcmp(name, "NO_COLOR") == 0 ? getenv(name)
                                                                               : NULL;
}

/* The colour mode, or -1 after a usage error for a bad --color. */
static int cli_color(const struct cli_command *c)
{
    static struct config cfg;
    config_parse(&cfg, color_getenv);
    if (color_option && cfg.first_bad && strcmp(cfg.first_bad, "SYNCSPY_COLOR") == 0) {
        char shown[64];
        config_escape(shown, sizeof shown, color_option);
        cli_usage_error(c, "--color '%s' %s", shown, cfg.first_why);
        return -1;
    }
    fputs(cfg.warnings, stderr);
    return (int)cfg.color;
}

/* The operands after the options (a->operands..argc) into paths[0..max): at least min of them
 * (else "no NAMES given", names saying what they are), at most max. Returns how many, or -1
 * after a usage error. */
static int operands(struct cli_args *a, int min, int max, const char **paths, const char *names)
{
    int n = a->argc - a->operands;
    if (n < min) {
        cli_usage_error(a->cmd, "missing %s", names);
        return -1;
    }
    if (n > max) {
        cli_usage_error(a->cmd, "takes %s; '%s' is one more", max == 1 ? "one DIR" : names,
                        cli_shown(a->argv[a->operands + max]));
        return -1;
    }
    for (int i = 0; i < n; i++)
        paths[i] = a->argv[a->operands + i];
    return n;
}

#define A_DIR "DIR (a process folder or the SYNCSPY_OUT root)"

/* --top N of report and html: N, or -1 after a usage error. */
static int top_option(const struct cli_args *a)
{
    int top = parse_top(a->value);
    if (top < 0)
        cli_usage_error(a->cmd, "--top wants a whole number from 1 to %d, not '%s'", REPORT_TOP_MAX,
                        cli_shown(a->value ? a->value : ""));
    return top;
}

static int cmd_report(int argc, char **argv)
{
    const struct cli_command *c = cli_command("report");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    const char *dir = NULL;
    int top = -1, key;
    color_option = NULL;
    while ((key = cli_next_option(&a)) > 0) {
        if (key == CLI_KEY_TOP && (top = top_option(&a)) < 0)
            return c->usage_status;
        if (key == CLI_KEY_COLOR)
            color_option = a.value;
    }
    if (key == 0)
        return a.status;
    if (operands(&a, 1, 1, &dir, A_DIR) < 0)
        return c->usage_status;
    int color = cli_color(c);
    if (color < 0)
        return c->usage_status;
    struct cli_set set;
    size_t problems = cli_load(dir, 0, &set);
    int rc = set.n == 0 ? 2 : problems ? 1 : 0; /* nothing could be read: bad input */
    if (set.n > 0) {
        struct report_opts opts = {
            .top = top > 0 ? top : default_top(),
            .color = report_color_wanted((enum report_color)color, STDOUT_FILENO)};
        if (report_render_text(set.procs, set.n, &opts, STDOUT_FILENO) != 0 ||
            cli_ranks_render(set.procs, set.n, STDOUT_FILENO) != 0) {
            fprintf(stderr, "syncspy: writing the report: %s\n", strerror(errno));
            rc = 1;
        }
        if (problems)
            fprintf(stderr,
                    "syncspy: warning: %zu problem%s reading %s (named above); the "
                    "report covers the %zu process%s that could be read\n",
                    problems, problems == 1 ? "" : "s", cli_shown(dir), set.n,
                    set.n == 1 ? "" : "es");
    }
    cli_set_free(&set);
    return rc;
}

/* Writes to an fd the caller owns (stdout, or an existing file that is not a regular file). */
static int write_to_fd(const char *what, int fd, int (*fn)(const struct cli_set *, int),
                       const struct cli_set *set)
{
    if (fn(set, fd) != 0) {
        fprintf(stderr, "syncspy: writing to %s: %s\n", what, strerror(errno));
        return 1;
    }
    return 0;
}

/* Writes OUT through OUT.tmp and a rename, so a reader never sees half a file. An OUT that
 * exists and is not a regular file (a pipe, /dev/null, a terminal) is written in place: a
 * rename would replace the device or the pipe with a file. */
static int write_output(const char *out, int (*fn)(const struct cli_set *, int),
                        const struct cli_set *set)
{
    if (strcmp(out, "-") == 0)
        return write_to_fd("stdout", STDOUT_FILENO, fn, set);
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        int fd = open(out, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "syncspy: cannot open %s: %s\n", out, strerror(errno));
            return 1;
        }
        int rc = write_to_fd(out, fd, fn, set);
        close(fd);
        return rc;
    }
    size_t n = strlen(out);
    char *tmp = malloc(n + 5);
    if (!tmp) {
        fprintf(stderr, "syncspy: out of memory\n");
        return 1;
    }
    memcpy(tmp, out, n);
    memcpy(tmp + n, ".tmp", 5);
    /* private as the agent's files (OUTPUT_FILE_MODE: the page and the exports hold the source
     * lines and paths); made new, never through a link planted as OUT.tmp */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, OUTPUT_FILE_MODE);
    int rc = 0;
    if (fd < 0) {
        fprintf(stderr, "syncspy: cannot create %s: %s\n", tmp, strerror(errno));
        rc = 1;
    } else {
        int failed = fn(set, fd);
        int saved = errno;
        if (close(fd) != 0 && !failed) {
            failed = -1;
            saved = errno;
        }
        if (!failed && rename(tmp, out) != 0) {
            failed = -1;
            saved = errno;
        }
        if (failed) {
            fprintf(stderr, "syncspy: cannot write %s: %s\n", out, strerror(saved));
            unlink(tmp);
            rc = 1;
        }
    }
    free(tmp);
    return rc;
}

/* export --folded's writer for write_output, with its option */
static bool folded_startup;
static int write_folded(const struct cli_set *set, int fd)
{
    return cli_export_folded(set, folded_startup, fd);
}

static int cmd_export(int argc, char **argv)
{
    const struct cli_command *c = cli_command("export");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    const char *dir = NULL, *out = NULL, *format = NULL;
    int key;
    folded_startup = false;
    while ((key = cli_next_option(&a)) > 0) {
        if (key == CLI_KEY_FOLDED || key == CLI_KEY_CHROME) {
            if (format)
                return cli_usage_error(c, "takes one of --folded and --chrome");
            format = key == CLI_KEY_FOLDED ? "folded" : "chrome";
            out = a.value;
            if (!*out)
                return cli_usage_error(c, "--%s needs an output file (OUT, or - for stdout)",
                                       format);
        } else if (key == CLI_KEY_INCLUDE_STARTUP) {
            folded_startup = true;
        }
    }
    if (key == 0)
        return a.status;
    if (!format)
        return cli_usage_error(c, "needs --folded OUT or --chrome OUT");
    if (folded_startup && format[0] != 'f')
        return cli_usage_error(
            c, "--include-startup goes with --folded (the Chrome trace has every step)");
    if (operands(&a, 1, 1, &dir, A_DIR) < 0)
        return c->usage_status;
    struct cli_set set;
    size_t problems = cli_load(dir, format[0] == 'c' ? CLI_LOAD_EVENTS : 0, &set);
    int rc = set.n == 0 ? 2 : problems ? 1 : 0; /* nothing could be read: bad input */
    if (set.n > 0) {
        int wrc = write_output(out, format[0] == 'f' ? write_folded : cli_export_chrome, &set);
        rc = rc || wrc;
    }
    cli_set_free(&set);
    return rc;
}

/* A whole decimal number >= 0 (digits, at most one point; "1e3", "inf", "-0" refused), or -1. */
static double parse_amount(const char *s, double max)
{
    if (!s || !*s)
        return -1;
    bool dot = false, digit = false;
    for (const char *p = s; *p; p++) {
        if (*p == '.' && !dot)
            dot = true;
        else if (*p >= '0' && *p <= '9')
            digit = true;
        else
            return -1;
    }
    double v = strtod(s, NULL);
    return digit && isfinite(v) && v <= max ? v : -1;
}

/* Loads a DIR for check or diff: any file that cannot be read is bad input (exit 2). */
static bool load_all(const char *cmd, const char *dir, struct cli_set *set)
{
    size_t problems = cli_load(dir, 0, set);
    if (problems || set->n == 0) {
        fprintf(stderr, "syncspy %s: cannot read %s whole (%zu problem%s, named above)\n", cmd,
                cli_shown(dir), problems ? problems : 1, problems == 1 || !problems ? "" : "s");
        cli_set_free(set);
        return false;
    }
    for (size_t i = 0; i < set->n; i++) {
        const struct rep_process *p = &set->procs[i];
        char note[512];
        if (!p->trace_unfinished || !report_lost_note(p, note, sizeof note))
            continue;
        /* a lower bound: check cannot say a run is within its budget from it */
        fprintf(stderr, "syncspy %s: pid %d in %s: %s%s\n", cmd, p->pid, cli_shown(dir), note,
                strcmp(cmd, "check") == 0 ? "; no budget is judged from a lower bound" : "");
        if (strcmp(cmd, "check") == 0) {
            cli_set_free(set);
            return false;
        }
    }
    for (size_t i = 0; i < set->n; i++)
        if (!set->procs[i].active_steps) {
            fprintf(stderr,
                    "syncspy %s: pid %d in %s recorded no step (did SYNCSPY_SCHEDULE record "
                    "none?): nothing to count\n",
                    cmd, set->procs[i].pid, cli_shown(dir));
            cli_set_free(set);
            return false;
        }
    return true;
}

/* check's budget from [tool.syncspy] where no option gave it; 0, or the status to exit with */
static int check_from_pyproject(const struct pyproject *p, struct check_opts *o, bool allow_given,
                                struct cli_allow *allow, size_t room, bool *used, bool file_num[2])
{
    static const char *const nums[2] = {"max_syncs_per_step", "max_blocked_share"};
    for (int i = 0; i < 2; i++) {
        const struct pyproject_value *v = pyproject_get(p, nums[i]);
        bool *has = i ? &o->has_max_share : &o->has_max_syncs;
        double *to = i ? &o->max_share : &o->max_syncs;
        if (!v || *has)
            continue;
        if (v->type != PV_NUMBER || v->num < 0 || (i && v->num > 100)) {
            fprintf(stderr, "syncspy check: %s:%d: %s wants a number %s, not %s\n",
                    cli_shown(p->path), v->line, nums[i],
                    i ? "from 0 to 100 (a percentage)" : ">= 0", pyproject_type_name(v->type));
            return 2;
        }
        *to = v->num;
        *has = *used = file_num[i] = true;
    }
    const struct pyproject_value *v = pyproject_get(p, "include_startup");
    if (v && !o->include_startup) {
        if (v->type != PV_BOOL) {
            fprintf(stderr, "syncspy check: %s:%d: include_startup wants true or false\n",
                    cli_shown(p->path), v->line);
            return 2;
        }
        o->include_startup = v->b;
        *used = true;
    }
    v = pyproject_get(p, "allow");
    if (v && !allow_given) {
        if (v->type != PV_LIST) {
            fprintf(stderr, "syncspy check: %s:%d: allow wants an array of \"FILE:LINE\" strings\n",
                    cli_shown(p->path), v->line);
            return 2;
        }
        for (size_t k = 0; k < v->nlist; k++) {
            if (o->nallow == room || cli_allow_parse(v->list[k], &allow[o->nallow]) != 0) {
                fprintf(stderr,
                        "syncspy check: %s:%d: allow wants FILE:LINE (e.g. train.py:88), "
                        "not '%s'\n",
                        cli_shown(p->path), v->line, cli_shown(v->list[k]));
                return 2;
            }
            o->nallow++;
        }
        *used = true;
    }
    return 0;
}

/* One option of check's into o (--allow: into allow[o->nallow], *allow_given set). Returns -1,
 * or the usage error's exit status. */
static int check_option(const struct cli_command *c, int key, const char *v, struct check_opts *o,
                        struct cli_allow *allow, bool *allow_given)
{
    int rc = -1;
    if (key == CLI_KEY_MAX_SYNCS) {
        if ((o->max_syncs = parse_amount(v, 1e12)) < 0)
            rc = cli_usage_error(c,
                                 "--max-syncs-per-step wants a number >= 0 (syncs per "
                                 "training step), not '%s'",
                                 cli_shown(v));
        o->has_max_syncs = true;
    } else if (key == CLI_KEY_MAX_SHARE) {
        char num[64];
        size_t n = strlen(v);
        snprintf(num, sizeof num, "%.*s", (int)(n && v[n - 1] == '%' ? n - 1 : n), v);
        if (n >= sizeof num || (o->max_share = parse_amount(num, 100)) < 0)
            rc = cli_usage_error(c,
                                 "--max-blocked-share wants a percentage from 0 to 100 (e.g. "
                                 "5 or 2.5%%), not '%s'",
                                 cli_shown(v));
        o->has_max_share = true;
    } else if (key == CLI_KEY_ALLOW) {
        *allow_given = true;
        if (cli_allow_parse(v, &allow[o->nallow]) != 0)
            rc = cli_usage_error(c, "--allow wants FILE:LINE (e.g. train.py:88), not '%s'",
                                 cli_shown(v));
        o->nallow++;
    } else if (key == CLI_KEY_INCLUDE_STARTUP) {
        o->include_startup = true;
    } else if (key == CLI_KEY_JSON) {
        o->json = true;
    }
    return rc;
}

/* The budget as it was given, each part an option or pyproject.toml's key (file_num), and the
 * file it came from (NULL: none). */
static void budget_text(const struct check_opts *o, const bool file_num[2], const char *from,
                        char *budget, size_t n)
{
    if (o->has_max_syncs)
        snprintf(budget, n, file_num[0] ? "max_syncs_per_step = %g" : "--max-syncs-per-step %g",
                 o->max_syncs);
    if (o->has_max_share)
        snprintf(budget + strlen(budget), n - strlen(budget),
                 file_num[1] ? "%smax_blocked_share = %g%%" : "%s--max-blocked-share %g%%",
                 *budget ? ", " : "", o->max_share);
    if (from)
        snprintf(budget + strlen(budget), n - strlen(budget), "; [tool.syncspy] of %s",
                 cli_shown(from));
}

static int cmd_check(int argc, char **argv)
{
    const struct cli_command *c = cli_command("check");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    const char *dir = NULL;
    struct check_opts o = {0};
    struct pyproject pp;
    int found = pyproject_load(&pp, NULL);
    if (found < 0 || (found > 0 && pyproject_unknown_key(&pp, cli_run_knows_setting))) {
        if (found < 0)
            fprintf(stderr, "syncspy check: %s\n", cli_shown(pp.err));
        pyproject_free(&pp);
        return 2;
    }
    const struct pyproject_value *listed = pyproject_get(&pp, "allow");
    size_t room = (size_t)argc + 1 + (listed && listed->type == PV_LIST ? listed->nlist : 0);
    struct cli_allow *allow = calloc(room, sizeof *allow);
    char budget[PATH_MAX + 256] = "";
    int rc = -1, key = -1;
    bool allow_given = false, from_file = false, file_num[2] = {false, false};
    if (!allow) {
        fprintf(stderr, "syncspy: out of memory\n");
        pyproject_free(&pp);
        return 2;
    }
    while (rc < 0 && (key = cli_next_option(&a)) > 0)
        rc = check_option(c, key, a.value, &o, allow, &allow_given);
    if (rc < 0 && key == 0)
        rc = a.status;
    if (rc < 0 && found > 0) {
        int r = check_from_pyproject(&pp, &o, allow_given, allow, room, &from_file, file_num);
        if (r)
            rc = r;
    }
    if (rc < 0 && !o.has_max_syncs && !o.has_max_share)
        rc = cli_usage_error(c, "no budget given: --max-syncs-per-step N (and/or "
                                "--max-blocked-share P), or max_syncs_per_step in pyproject.toml's "
                                "[tool.syncspy]");
    if (rc < 0 && operands(&a, 1, 1, &dir, A_DIR) < 0)
        rc = c->usage_status;
    struct cli_set set;
    if (rc < 0 && !load_all("check", dir, &set))
        rc = 2;
    if (rc < 0) {
        budget_text(&o, file_num, from_file ? pp.path : NULL, budget, sizeof budget);
        o.settings_from = from_file ? pp.path : NULL;
        o.allow = allow;
        o.budget_text = budget;
        rc = cli_check(&set, &o, STDOUT_FILENO);
        cli_set_free(&set);
    }
    free(allow);
    pyproject_free(&pp);
    return rc;
}

static int cmd_diff(int argc, char **argv)
{
    const struct cli_command *c = cli_command("diff");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    const char *paths[2] = {NULL, NULL};
    struct diff_opts o = {0};
    int key;
    while ((key = cli_next_option(&a)) > 0)
        if (key == CLI_KEY_JSON)
            o.json = true;
    if (key == 0)
        return a.status;
    if (operands(&a, 2, 2, paths, "BASE and NEW (two process folders or SYNCSPY_OUT roots)") < 0)
        return c->usage_status;
    struct cli_set base, neu;
    if (!load_all("diff", paths[0], &base))
        return 2;
    if (!load_all("diff", paths[1], &neu)) {
        cli_set_free(&base);
        return 2;
    }
    o.base_path = paths[0];
    o.new_path = paths[1];
    int rc = cli_diff(&base, &neu, &o, STDOUT_FILENO);
    cli_set_free(&base);
    cli_set_free(&neu);
    return rc;
}

/* The page's writer for write_output (one argument: the set; the rest through these). */
static const struct cli_set *html_new;
static const struct html_opts *html_options;

static int write_html(const struct cli_set *set, int fd)
{
    return cli_html(set, html_new, html_options, fd);
}

static int cmd_html(int argc, char **argv)
{
    const struct cli_command *c = cli_command("html");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    const char *paths[2] = {NULL, NULL}, *out = "syncspy.html";
    int top = -1, n, key;
    while ((key = cli_next_option(&a)) > 0) {
        if (key == 'o') {
            if (!*a.value)
                return cli_usage_error(c, "-o needs a FILE (or - for stdout)");
            out = a.value;
        } else if (key == CLI_KEY_TOP && (top = top_option(&a)) < 0) {
            return c->usage_status;
        }
    }
    if (key == 0)
        return a.status;
    if ((n = operands(&a, 1, 2, paths,
                      "DIR (a process folder or the SYNCSPY_OUT root), or BASE NEW")) < 0)
        return c->usage_status;
    struct cli_set base, neu;
    size_t problems = cli_load(paths[0], CLI_LOAD_EVENTS, &base);
    if (problems || base.n == 0) {
        fprintf(stderr, "syncspy html: cannot read %s whole (%zu problem%s, named above)\n",
                cli_shown(paths[0]), problems ? problems : 1,
                problems == 1 || !problems ? "" : "s");
        cli_set_free(&base);
        return 2;
    }
    if (n == 2) {
        problems = cli_load(paths[1], CLI_LOAD_EVENTS, &neu);
        if (problems || neu.n == 0) {
            fprintf(stderr, "syncspy html: cannot read %s whole (%zu problem%s, named above)\n",
                    cli_shown(paths[1]), problems ? problems : 1,
                    problems == 1 || !problems ? "" : "s");
            cli_set_free(&base);
            cli_set_free(&neu);
            return 2;
        }
    }
    struct html_opts o = {.path = paths[0],
                          .new_path = n == 2 ? paths[1] : NULL,
                          .top = top > 0 ? top : default_top()};
    html_new = n == 2 ? &neu : NULL;
    html_options = &o;
    int rc = write_output(out, write_html, &base);
    if (rc == 0 && strcmp(out, "-") != 0)
        fprintf(stderr, "syncspy html: wrote %s\n", out);
    cli_set_free(&base);
    if (n == 2)
        cli_set_free(&neu);
    return rc;
}

/* syncspy help [--man] [CMD] */
static int cmd_help(int argc, char **argv)
{
    const struct cli_command *c = cli_command("help");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    const char *name = NULL;
    bool man = false;
    int key;
    while ((key = cli_next_option(&a)) > 0)
        man |= key == CLI_KEY_MAN;
    if (key == 0)
        return a.status;
    if (operands(&a, 0, 1, &name, "CMD") < 0)
        return c->usage_status;
    if (man && name)
        return cli_usage_error(c, "--man prints the whole manual: no CMD with it");
    if (name && !cli_command(name))
        return cli_usage_error(c, "no command '%s'", cli_shown(name));
    if (man)
        cli_print_man(stdout);
    else
        cli_print_help(name ? cli_command(name) : NULL, stdout);
    return 0;
}

/* syncspy completion bash|zsh */
static int cmd_completion(int argc, char **argv)
{
    const struct cli_command *c = cli_command("completion");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    const char *shell = NULL;
    int key;
    while ((key = cli_next_option(&a)) > 0)
        ;
    if (key == 0)
        return a.status;
    if (operands(&a, 1, 1, &shell, "shell (bash or zsh)") < 0)
        return c->usage_status;
    if (!cli_print_completion(shell, stdout))
        return cli_usage_error(c, "no script for the shell '%s' (bash or zsh)", cli_shown(shell));
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0]: the command's name */
} command_fns[] = {
    {"run", cli_run},       {"report", cmd_report},
    {"export", cmd_export}, {"check", cmd_check},
    {"diff", cmd_diff},     {"html", cmd_html},
    {"top", cli_top},       {"start", cli_start},
    {"stop", cli_stop},     {"completion", cmd_completion},
    {"help", cmd_help},
};

int main(int argc, char **argv)
{
    if (argc < 2)
        return program_usage_error(NULL, NULL);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        cli_print_help(NULL, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        puts("syncspy " SYNCSPY_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof command_fns / sizeof command_fns[0]; i++)
        if (strcmp(cmd, command_fns[i].name) == 0)
            return command_fns[i].fn(argc - 1, argv + 1);
    return program_usage_error(cmd[0] == '-' ? "unknown option '%s'" : "unknown command '%s'",
                               cli_shown(cmd));
}
