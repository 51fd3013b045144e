/* cli/run.c: `syncspy run` (see run.h). Its options are the agent's variables, checked by the
 * agent's own parser (output/config.c config_parse, linked into the CLI: a pure function); the
 * agent is the libsyncspy.so beside this program (build/, or the wheel's syncspy/_native/); with
 * --sim[=N], the libraries of the simulated CUDA N device beside it (sim/, sim12/) are preloaded
 * right after it. While CMD runs the parent only waits: a signal sent to it (kill PID, a job
 * scheduler's SIGTERM, any signal but SIGCHLD) is passed on to CMD, one the terminal sent the
 * whole foreground process group (Ctrl-C, a window resize) is not (CMD has its own); CMD
 * stopping stops it too. CLI only: never inside the target process. */
#include "cli/run.h"
#include "cli/pyproject.h"
#include "cli/commands.h"
#include "output/io.h"
#include "cli/top.h"

#include "output/config.h"
#include "cli/load.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define AGENT_FILE "libsyncspy.so"
#define VAR_PREFIX "SYNCSPY_"
#define VARS_MAX 64
#define FOLDERS_NAMED 8 /* process folders named in the closing line; the others counted */

/* ---- --sim: the simulated devices ---------------------------------------------------------- */

#define SIM_LIBRARIES 6

/* The simulated devices shipped beside this program (sim/README.md), one per CUDA major version
 * a program can be built for (a CUDA 12 program needs libcudart.so.12 with CUDA 12's symbol
 * versions: the CUDA 13 device cannot stand in for it). --sim=VERSION picks a row; plain --sim
 * the first. Each row: its folder beside this program (build/ of a source build, or the wheel's
 * _native/), the make target that builds it, and its libraries by their sonames, in the order
 * they are preloaded. Preloaded, each is the first object of its soname: every later lookup of
 * that soname (a DT_NEEDED, torch's dlopen("libcuda.so.1")) gets it, whatever DT_RPATH points
 * at (torch's wheels name their nvidia/ folders there, ahead of LD_LIBRARY_PATH), and every
 * symbol binds to it before a copy loaded by path (torch's _preload_cuda_deps) could be reached. */
struct sim_device {
    const char *version;  /* --sim=VERSION: CUDA's major version */
    const char *programs; /* which programs need it, as the help and the hints say it */
    const char *folder;
    const char *make_target;
    const char *libraries[SIM_LIBRARIES];
};

static const struct sim_device sim_devices[] = {
    {"13",
     "PyPI's torch 2.12 and later",
     "sim",
     "sim",
     {"libcudart.so.13", "libcuda.so.1", "libcupti.so.13", "libcublas.so.13", "libcublasLt.so.13",
      "libcudnn.so.9"}},
    {"12",
     "PyPI's torch 2.10 and earlier",
     "sim12",
     "sim12",
     {"libcudart.so.12", "libcuda.so.1", "libcupti.so.12", "libcublas.so.12", "libcublasLt.so.12",
      "libcudnn.so.9"}},
};
#define SIM_DEVICES (sizeof sim_devices / sizeof sim_devices[0])

/* The row of --sim=version, or NULL. */
static const struct sim_device *sim_device_of(const char *version)
{
    for (size_t i = 0; i < SIM_DEVICES; i++)
        if (strcmp(sim_devices[i].version, version) == 0)
            return &sim_devices[i];
    return NULL;
}

/* ---- options: the agent's variables ------------------------------------------------------- */

static const char *option_values[VARS_MAX]; /* by the index of config_variables */
static struct pyproject settings_file;      /* [tool.syncspy]: option_values may point into it */
static const struct pyproject_value *option_from[VARS_MAX]; /* a value taken from it */
static bool live_top;                                       /* --live: syncspy top beside CMD */
static const struct sim_device *on_sim; /* --sim[=N]: that simulated device, else NULL */
static bool sim_version_given;          /* --sim=N or --sim N, not plain --sim */
static int child_output = -1;           /* with it: CMD's stdout and stderr (run.log) */
static bool with_environment;           /* run_getenv: the environment under the options */

static size_t variable_count(void)
{
    size_t n = 0;
    while (config_variables[n] && n < VARS_MAX)
        n++;
    return n;
}

/* The variable of an option's name ("max-depth" for SYNCSPY_MAX_DEPTH), or -1. */
static int option_index(const char *name, size_t len)
{
    for (size_t i = 0; i < variable_count(); i++) {
        const char *v = config_variables[i] + strlen(VAR_PREFIX);
        if (strlen(v) != len)
            continue;
        size_t k = 0;
        for (; k < len; k++) {
            char c = v[k] == '_' ? '-' : (char)(v[k] - 'A' + 'a');
            if (v[k] >= '0' && v[k] <= '9')
                c = v[k];
            if (name[k] != c)
                break;
        }
        if (k == len)
            return (int)i;
    }
    return -1;
}

/* The variable of a [tool.syncspy] key ("trace_mb" or "trace-mb"), or -1. */
static int setting_index(const char *key)
{
    char name[64];
    size_t n = strlen(key);
    if (n >= sizeof name)
        return -1;
    for (size_t i = 0; i <= n; i++)
        name[i] = key[i] == '_' ? '-' : key[i];
    return option_index(name, n);
}

bool cli_run_knows_setting(const char *key)
{
    return setting_index(key) >= 0;
}

static int run_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* [tool.syncspy]'s values for the variables that neither an option nor the environment set
 * (options win, then the environment, then the file). Returns -1, or the status to exit with. */
static int settings_from_pyproject(void)
{
    struct pyproject *p = &settings_file;
    int found = pyproject_load(p, NULL);
    if (found < 0)
        return run_error("%s", cli_shown(p->err));
    if (found == 0)
        return -1;
    if (pyproject_unknown_key(p, cli_run_knows_setting))
        return 125;
    for (size_t i = 0; i < p->n; i++) {
        const struct pyproject_value *v = &p->v[i];
        int k = setting_index(v->key);
        if (k < 0 || option_values[k] || getenv(config_variables[k]))
            continue;
        if (v->type == PV_LIST)
            return run_error("%s:%d: %s wants a string, a number or a boolean, not an array",
                             cli_shown(p->path), v->line, cli_shown(v->key));
        /* a boolean as the agent's variables spell one (SYNCSPY_GPU=1) */
        option_values[k] = v->type == PV_BOOL ? (v->b ? "1" : "0") : v->s;
        option_from[k] = v;
    }
    return -1;
}

/* config_parse's view: the options, and (with_environment) the environment where no option
 * says otherwise. */
static const char *run_getenv(const char *name)
{
    for (size_t i = 0; i < variable_count(); i++)
        if (strcmp(name, config_variables[i]) == 0 && option_values[i])
            return option_values[i];
    return with_environment ? getenv(name) : NULL;
}

static void option_name(const char *var, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *p = var + strlen(VAR_PREFIX); *p && n + 1 < cap; p++)
        buf[n++] = *p == '_' ? '-' : (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : *p;
    buf[n] = '\0';
}

static int run_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("syncspy run: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return RUN_FAILED;
}

static bool all_digits(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

/* --sim's value: VERSION of --sim=VERSION, or of --sim VERSION when the next word is a number;
 * NULL for a plain --sim. Sets on_sim to that device (plain --sim: the first), or refuses a
 * version no row has in one line that lists the rows. Returns -1, or the status to exit with. */
static int parse_sim(struct cli_args *a)
{
    const char *version = a->value;
    if (!version && optind < a->argc && all_digits(a->argv[optind]))
        version = a->argv[optind++];
    on_sim = version ? sim_device_of(version) : &sim_devices[0];
    sim_version_given = version != NULL;
    if (on_sim)
        return -1;
    char shown[64], rows[512];
    config_escape(shown, sizeof shown, version);
    size_t n = 0;
    for (size_t k = 0; k < SIM_DEVICES && n < sizeof rows; k++)
        n += (size_t)snprintf(rows + n, sizeof rows - n, "%s--sim=%s (%s%s)", k ? " or " : "",
                              sim_devices[k].version, k ? "" : "plain --sim; ",
                              sim_devices[k].programs);
    return run_error("--sim '%s' is not the CUDA version of a simulated device: %s", shown, rows);
}

/* Reads the options before CMD (argv[0] is "run"; the table's run rows, cli/commands.c); *cmd
 * is CMD's index. Returns -1, or the status to exit with. */
static int parse_options(int argc, char **argv, int *cmd)
{
    const struct cli_command *c = cli_command("run");
    struct cli_args a = {.cmd = c, .argc = argc, .argv = argv};
    int key, rc;
    while ((key = cli_next_option(&a)) > 0) {
        if (key == CLI_KEY_LIVE) {
            live_top = true;
        } else if (key == CLI_KEY_SIM) {
            if ((rc = parse_sim(&a)) >= 0)
                return rc;
        } else if (key == CLI_KEY_VARIABLE) {
            int k = option_index(a.opt->name, strlen(a.opt->name));
            if (k < 0) /* a row of the table with no variable of the agent: a bug of the table */
                return run_error("--%s names no variable of the agent", a.opt->name);
            option_values[k] = a.value;
        }
    }
    if (key == 0)
        return a.status;
    if (optind >= argc)
        return cli_usage_error(c, "no command to run");
    *cmd = optind;
    if ((rc = settings_from_pyproject()) >= 0)
        return rc;
    /* the agent's parser on the options alone: a bad one is refused before CMD starts */
    static struct config cfg;
    with_environment = false;
    config_parse(&cfg, run_getenv);
    if (cfg.first_bad) {
        char name[64];
        option_name(cfg.first_bad, name, sizeof name);
        char shown[256];
        config_escape(shown, sizeof shown, run_getenv(cfg.first_bad));
        int k = option_index(name, strlen(name));
        if (k >= 0 && option_from[k])
            return run_error("%s:%d: %s = '%s' %s", cli_shown(settings_file.path),
                             option_from[k]->line, name, shown, cfg.first_why);
        return run_error("--%s '%s' %s", name, shown, cfg.first_why);
    }
    return -1;
}

/* ---- the environment of CMD ---------------------------------------------------------------- */

/* path made absolute against the current folder ("./x" as "x"); malloc'ed, NULL when it cannot be. */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", path);
    return out;
}

/* The agent beside this program. */
/* The path of NAME in this program's folder (malloc'ed), or NULL. */
static char *beside_us(const char *name)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    slash[1] = '\0';
    size_t len = strlen(exe) + strlen(name) + 1;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s%s", exe, name);
    return p;
}

static char *library_beside_us(void)
{
    return beside_us(AGENT_FILE);
}

static const char *base_name(const char *p, size_t len, size_t *blen)
{
    size_t s = len;
    while (s > 0 && p[s - 1] != '/')
        s--;
    *blen = len - s;
    return p + s;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

static bool is_sanitizer(const char *b, size_t blen)
{
    return starts(b, blen, "libasan.so") || starts(b, blen, "libtsan.so") ||
           starts(b, blen, "libclang_rt.asan") || starts(b, blen, "libclang_rt.tsan");
}

static bool in_list(const char *p, size_t len, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], p, len) == 0)
            return true;
    return false;
}

/* Appends the entries of list (separated by spaces or colons, as ld.so reads them) that are
 * sanitizer runtimes (sanitizers true) or the others but copies of the agent and the n paths of
 * ours (false). */
static size_t append_entries(char *out, size_t n, const char *list, bool sanitizers,
                             const char *const *ours, size_t nours)
{
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ':')
            p++;
        size_t len = strcspn(p, " :");
        if (len == 0)
            break;
        size_t blen;
        const char *b = base_name(p, len, &blen);
        bool keep = sanitizers ? is_sanitizer(b, blen)
                               : !is_sanitizer(b, blen) && !starts(b, blen, "libsyncspy") &&
                                     !in_list(p, len, ours, nours);
        if (keep) {
            if (n)
                out[n++] = ' ';
            memcpy(out + n, p, len);
            n += len;
        }
        p += len;
    }
    return n;
}

/* LD_PRELOAD with ours (the agent, then with --sim the simulator's libraries) first, but after
 * any sanitizer runtime (ASan refuses to run unless its runtime comes first); another copy of
 * the agent is dropped (two would both start), and so is one of ours already there; the rest
 * keeps its order. */
static char *preload_value(const char *const *ours, size_t nours)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old)
        old = "";
    size_t cap = strlen(old) + 2;
    for (size_t i = 0; i < nours; i++)
        cap += strlen(ours[i]) + 1;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t n = append_entries(out, 0, old, true, ours, nours);
    for (size_t i = 0; i < nours; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? " " : "", ours[i]);
    n = append_entries(out, n, old, false, ours, nours);
    out[n] = '\0';
    return out;
}

/* ---- --sim: the device's libraries for CMD ------------------------------------------------- */

/* paths[] gets on_sim's libraries beside this program (malloc'ed), *folder their folder. Returns
 * -1, or the status to exit with when one is missing (said in one line). */
static int find_sim(char *paths[SIM_LIBRARIES], char **folder)
{
    *folder = beside_us(on_sim->folder);
    if (!*folder)
        return run_error("cannot tell where this program is: %s", strerror(errno));
    for (size_t i = 0; i < SIM_LIBRARIES; i++) {
        const char *name = on_sim->libraries[i];
        size_t len = strlen(*folder) + strlen(name) + 2;
        paths[i] = malloc(len);
        if (paths[i])
            snprintf(paths[i], len, "%s/%s", *folder, name);
        if (!paths[i] || access(paths[i], R_OK) != 0) {
            const char *why = strerror(paths[i] ? errno : ENOMEM);
            int rc =
                run_error("--sim%s%s: no simulated device beside this program (%s: %s): a "
                          "source build makes it with `make %s`, the wheel of `make wheel` "
                          "carries it",
                          sim_version_given ? "=" : "", sim_version_given ? on_sim->version : "",
                          paths[i] ? paths[i] : name, why, on_sim->make_target);
            for (size_t k = 0; k <= i; k++)
                free(paths[k]);
            free(*folder);
            return rc;
        }
    }
    return -1;
}

/* LD_LIBRARY_PATH with the simulator's folder first: a library asked for by a name that is not
 * a preloaded soname (the link name libcudart.so of a source build) is found there too. */
static int put_sim_first_on_library_path(const char *folder)
{
    const char *old = getenv("LD_LIBRARY_PATH");
    size_t len = strlen(folder) + (old && *old ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(len);
    if (!v)
        return run_error("out of memory");
    snprintf(v, len, "%s%s%s", folder, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_LIBRARY_PATH", v, 1);
    free(v);
    return -1;
}

/* CMD's LD_PRELOAD (*preload, malloc'ed; NULL when out of memory): the agent, and with --sim the
 * simulator's libraries, whose folder then goes first on LD_LIBRARY_PATH too. Returns -1, or the
 * status to exit with (no simulator beside this program). */
static int preload_for_cmd(const char *agent, char **preload)
{
    char *sim[SIM_LIBRARIES] = {0}, *folder = NULL;
    int rc = on_sim ? find_sim(sim, &folder) : -1;
    if (rc >= 0)
        return rc;
    const char *ours[1 + SIM_LIBRARIES] = {agent};
    for (size_t i = 0; on_sim && i < SIM_LIBRARIES; i++)
        ours[1 + i] = sim[i];
    *preload = preload_value(ours, on_sim ? 1 + SIM_LIBRARIES : 1);
    for (size_t i = 0; i < SIM_LIBRARIES; i++)
        free(sim[i]);
    if (on_sim && *preload)
        rc = put_sim_first_on_library_path(folder);
    free(folder);
    if (rc >= 0) {
        free(*preload);
        *preload = NULL;
    }
    return rc;
}

/* ---- the process folders ------------------------------------------------------------------- */

/* The process folders under a root, in a merged report's order (none when it does not exist). */
struct names {
    struct cli_folder *v;
    size_t n;
};

static void scan_folders(const char *root, struct names *out)
{
    bool more;
    long n = cli_process_folders(root, SIZE_MAX, &out->v, &more);
    out->n = n > 0 ? (size_t)n : 0;
}

static bool has_name(const struct names *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return true;
    return false;
}

static void free_names(struct names *s)
{
    cli_folders_free(s->v, s->n);
}

/* A path as a shell word: as it is when it holds nothing a shell would read, else in quotes. */
static void shell_word(const char *s)
{
    if (*s &&
        strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,@%") ==
            strlen(s)) {
        fputs(s, stderr);
        return;
    }
    fputc('\'', stderr);
    for (; *s; s++)
        fputs(*s == '\'' ? "'\\''" : (char[2]){*s, 0}, stderr);
    fputc('\'', stderr);
}

/* Whether a process folder could be made under root now, as the agent makes it (mkdir -p):
 * a folder made and removed at once in root, or in the nearest folder above it that exists.
 * 0, or the errno that says why not. */
static int root_unwritable(const char *root)
{
    char path[PATH_MAX];
    struct stat sb;
    snprintf(path, sizeof path, "%s", root);
    while (stat(path, &sb) != 0) { /* up to the nearest part that exists */
        char *slash = strrchr(path, '/');
        if (errno != ENOENT || !slash)
            return errno;
        *(slash == path ? slash + 1 : slash) = '\0';
        if (slash == path)
            break;
    }
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ENOTDIR;
    size_t n = strlen(path);
    snprintf(path + n, sizeof path - n, "%s.syncspy-probe-XXXXXX", path[n - 1] == '/' ? "" : "/");
    if (!mkdtemp(path))
        return errno;
    rmdir(path);
    return 0;
}

/* Whether the simulated device of a row is beside this program (its runtime, the first library). */
static bool sim_beside_us(const struct sim_device *d)
{
    size_t len = strlen(d->folder) + strlen(d->libraries[0]) + 2;
    char *name = malloc(len), *path = NULL;
    if (name) {
        snprintf(name, len, "%s/%s", d->folder, d->libraries[0]);
        path = beside_us(name);
    }
    bool there = path && access(path, R_OK) == 0;
    free(name);
    free(path);
    return there;
}

/* The way to try without a GPU, into buf: the simulated devices beside this program, the first
 * of them as the option to use, the others with the programs they are for ("; to try ...: syncspy
 * run --sim -- ... (--sim=12 for CUDA 12 programs: PyPI's torch 2.10 and earlier)"); nothing
 * when there is none. */
static void say_sim_hint(char *buf, size_t n)
{
    static const char try_it[] = "; to try syncspy without a GPU, run it on the simulated device: ";
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < SIM_DEVICES && len < n; i++) {
        const struct sim_device *d = &sim_devices[i];
        if (!sim_beside_us(d))
            continue;
        int k;
        if (len == 0 && i == 0) /* the default: plain --sim */
            k = snprintf(buf, n, "%ssyncspy run --sim -- ...", try_it);
        else if (len == 0)
            k = snprintf(buf, n, "%ssyncspy run --sim=%s -- ... (CUDA %s programs: %s)", try_it,
                         d->version, d->version, d->programs);
        else
            k = snprintf(buf + len, n - len, " (--sim=%s for CUDA %s programs: %s)", d->version,
                         d->version, d->programs);
        len += k > 0 ? (size_t)k : 0;
    }
}

/* Why a run may have made no CUDA call at all: this machine's CUDA driver, asked as CMD would
 * have asked it (the same environment, so the same libcuda.so.1 is found). Into buf, or false
 * when a driver with a device is there (then the program simply used none). Only after CMD ended
 * with nothing recorded, and never with --sim. The simulated devices beside this program, when
 * there are some, are named as the way to try without a GPU (--sim, --sim=12). */
static bool no_driver_reason(char *buf, size_t n)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int rc = 0, count = 0;
    if (cuda) {
        int (*init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
        int (*devices)(int *) = (int (*)(int *))dlsym(cuda, "cuDeviceGetCount");
        if (!init || !devices)
            rc = -1;
        else if ((rc = init(0)) == 0 && (rc = devices(&count)) == 0 && count > 0)
            return false; /* the driver is fine; not closed: it may have started threads */
    }
    int len;
    if (!cuda)
        len = snprintf(buf, n,
                       "this machine has no CUDA driver (libcuda.so.1 cannot be loaded), so "
                       "torch and other CUDA programs run without the GPU and make no CUDA call");
    else if (rc)
        len = snprintf(buf, n,
                       "the CUDA driver found no usable GPU (cuInit/cuDeviceGetCount returned "
                       "%d), so CUDA programs run without it",
                       rc);
    else
        len = snprintf(buf, n, "the CUDA driver sees no GPU, so CUDA programs run without it");
    if (len > 0 && (size_t)len < n)
        say_sim_hint(buf + len, n - (size_t)len);
    return true;
}

/* With --sim and nothing recorded: a program built for another CUDA version finds no device on
 * this one (torch 2.6 under plain --sim: its libcudart.so.12 and the CUDA 13 driver, "Error 36:
 * API call is not supported in the installed CUDA driver", no device), so the other devices
 * beside this program are named, each with the programs it is for. */
static void say_other_sims(void)
{
    for (size_t i = 0; i < SIM_DEVICES; i++) {
        const struct sim_device *d = &sim_devices[i];
        if (d == on_sim || !sim_beside_us(d))
            continue;
        fprintf(stderr,
                "syncspy run: this was the CUDA %s simulated device; a CUDA %s program "
                "(%s) finds no device on it: --sim%s%s runs it on the CUDA %s one\n",
                on_sim->version, d->version, d->programs, i ? "=" : "", i ? d->version : "",
                d->version);
    }
}

/* The closing lines: which process folders this run left, and the command that reads them. */
static void say_where(const char *root, const struct names *before)
{
    struct names after;
    scan_folders(root, &after);
    struct {
        const char **v;
        size_t n;
    } made = {calloc(after.n ? after.n : 1, sizeof *made.v), 0};
    for (size_t i = 0; made.v && i < after.n; i++)
        if (!has_name(before, after.v[i].name))
            made.v[made.n++] = after.v[i].name;
    int unwritable = made.n == 0 ? root_unwritable(root) : 0;
    if (unwritable) { /* the agent said so as it found it; this is why nothing is there */
        fputs("syncspy run: nothing recorded: the output folder ", stderr);
        shell_word(root);
        fprintf(stderr, " cannot be written (%s): give --out a folder that can\n",
                strerror(unwritable));
    } else if (made.n == 0) {
        fputs("syncspy run: nothing recorded: no process made a CUDA call the agent saw (output "
              "folder ",
              stderr);
        shell_word(root);
        fputs(")\n", stderr);
        char why[1024 + PATH_MAX];
        if (!on_sim && no_driver_reason(why, sizeof why)) /* with --sim a driver answered */
            fprintf(stderr, "syncspy run: %s\n", why);
        if (on_sim)
            say_other_sims();
    } else if (made.n == 1) {
        size_t len = strlen(root) + strlen(made.v[0]) + 2;
        char *dir = malloc(len);
        if (dir) {
            snprintf(dir, len, "%s/%s", root, made.v[0]);
            fputs("syncspy run: files in ", stderr);
            shell_word(dir);
            fputs("/ (summary.json, trace.bin); the report again: syncspy report ", stderr);
            shell_word(dir);
            fputc('\n', stderr);
            free(dir);
        }
    } else {
        fprintf(stderr, "syncspy run: %zu processes recorded under ", made.n);
        shell_word(root);
        fputs("/:", stderr);
        for (size_t i = 0; i < made.n && i < FOLDERS_NAMED; i++)
            fprintf(stderr, "%s %s", i ? "," : "", made.v[i]);
        if (made.n > FOLDERS_NAMED)
            fprintf(stderr, ", +%zu more", made.n - FOLDERS_NAMED);
        fputs("; merged: syncspy report ", stderr);
        shell_word(root);
        fputc('\n', stderr);
        if (after.n > made.n)
            fprintf(stderr,
                    "syncspy run: (that folder also holds %zu process folder%s of earlier "
                    "runs, which the merged report includes: a fresh --out keeps runs apart)\n",
                    after.n - made.n, after.n - made.n == 1 ? "" : "s");
    }
    free(made.v);
    free_names(&after);
}

/* ---- running CMD ----------------------------------------------------------------------------- */

/* Every signal a shell lets CMD see is passed on, so syncspy run is as if CMD ran in its place
 * (as `env CMD` is: one process): all but SIGKILL and SIGSTOP (no handler can take them),
 * SIGCHLD (about syncspy run's own child; CMD's are about its own) and glibc's internal 32 and
 * 33. A fault of this program's own (SIGSEGV with a fault's si_code) is not passed on: it ends
 * this program, which it is about. */
static volatile pid_t child_pid;

static bool forwarded_signal(int sig)
{
    return sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && (sig < 32 || sig >= SIGRTMIN);
}

static bool fault_signal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
           sig == SIGSYS;
}

/* A signal for syncspy run is CMD's: passed on, unless the terminal sent it to the whole
 * foreground process group, CMD's included (Ctrl-C, Ctrl-\, Ctrl-Z, a window resize, a
 * hang-up: SI_KERNEL), when CMD got its own (the agent and Python both take a second Ctrl-C as
 * "now"). A stop CMD takes is mirrored in the main loop (stop_like). */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    pid_t c = child_pid;
    if (fault_signal(sig) && si && si->si_code > 0) { /* our own fault: its default action */
        signal(sig, SIG_DFL);
        errno = saved;
        return;
    }
    if (c > 0 && !(si && si->si_code == SI_KERNEL && getpgid(c) == getpgrp()))
        kill(c, sig);
    errno = saved;
}

static void forwarded_set(sigset_t *set)
{
    sigemptyset(set);
    for (int sig = 1; sig < NSIG; sig++)
        if (forwarded_signal(sig))
            sigaddset(set, sig);
}

static void forward_all(void)
{
    struct sigaction sa = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (forwarded_signal(sig))
            sigaction(sig, &sa, NULL);
}

/* CMD stopped (Ctrl-Z, SIGTSTP passed on, SIGSTOP): syncspy run stops the same way, so the shell
 * sees the job stopped and can continue it (fg: SIGCONT to the group; to syncspy run alone, it
 * is passed on). A process group with no parent outside it ignores the stop, as CMD's would. */
static void stop_like(int sig)
{
    if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
        sig = SIGSTOP;
    struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
    sigemptyset(&dfl.sa_mask);
    if (sig != SIGSTOP)
        sigaction(sig, &dfl, &old);
    raise(sig);
    if (sig != SIGSTOP)
        sigaction(sig, &old, NULL);
}

/* Starts CMD with the signal mask this program was given. fork and exec, not posix_spawn:
 * glibc's posix_spawn leaves its own internal signals (32, 33) ignored in CMD. An exec that
 * fails says why through a close-on-exec pipe. Returns -1, or the status to exit with when CMD
 * could not be started. */
static int spawn(char **cmd, const sigset_t *mask, pid_t *pid)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "syncspy run: %s\n", strerror(errno));
        return RUN_FAILED;
    }
    *pid = fork();
    if (*pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        fprintf(stderr, "syncspy run: cannot start %s: %s\n", cmd[0], strerror(err));
        return RUN_FAILED;
    }
    if (*pid == 0) {
        close(fds[0]);
        sigprocmask(SIG_SETMASK, mask, NULL);
        if (child_output >= 0) { /* the terminal is the view's: CMD writes to run.log */
            int null_in = open("/dev/null", O_RDONLY);
            if (null_in >= 0)
                dup2(null_in, STDIN_FILENO);
            dup2(child_output, STDOUT_FILENO);
            dup2(child_output, STDERR_FILENO);
        }
        execvp(cmd[0], cmd);
        int err = errno;
        ssize_t w = write(fds[1], &err, sizeof err);
        (void)w;
        _exit(RUN_NOT_FOUND);
    }
    close(fds[1]);
    int err = 0;
    ssize_t n;
    while ((n = read(fds[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(fds[0]);
    if (n != (ssize_t)sizeof err)
        return -1; /* exec'ed: the pipe closed without a word */
    while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
        ;
    fprintf(stderr, "syncspy run: %s: %s\n", cmd[0],
            err == ENOENT ? "command not found" : strerror(err));
    return err == ENOENT ? RUN_NOT_FOUND : RUN_CANNOT_EXECUTE;
}

/* Ends as CMD ended: its status, or its signal raised here (no core file of this program's:
 * CMD's own, if any, is the one that counts). */
static int end_like(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (!WIFSIGNALED(status))
        return RUN_FAILED;
    int sig = WTERMSIG(status);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
    return 128 + sig; /* a signal whose default action does not end a process */
}

/* --live: the view needs the terminal; CMD's output goes to ROOT/run.log (ROOT made if need
 * be). Returns -1 (child_output open, *log its path), or the status to exit with. */
static int open_run_log(const char *root, char **log)
{
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
        return run_error("--live shows the live view on a terminal; stdin and stdout are not one");
    if (mkdir(root, OUTPUT_DIR_MODE) != 0 && errno != EEXIST) /* as the agent makes it */
        return run_error("cannot make %s: %s", root, strerror(errno));
    size_t n = strlen(root) + sizeof "/run.log";
    if (!(*log = malloc(n)))
        return run_error("out of memory");
    snprintf(*log, n, "%s/run.log", root);
    unlink(*log); /* made new: private (OUTPUT_FILE_MODE, CMD's output), never through a link */
    child_output =
        open(*log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, OUTPUT_FILE_MODE);
    if (child_output < 0) {
        int rc = run_error("cannot create %s: %s", *log, strerror(errno));
        free(*log);
        return rc;
    }
    return -1;
}

/* The environment the program runs in: what the agent will make of the options and the
 * environment together, the options as SYNCSPY_* variables (and the file each came from),
 * SYNCSPY_OUT made absolute, the agent preloaded. *root_out: the output root (the caller frees
 * it). Returns -1, or the exit status of an error it said. */
static int prepare_environment(char **root_out)
{
    int rc;
    static struct config eff;
    with_environment = true;
    config_parse(&eff, run_getenv);
    char *root = absolute(eff.out_dir);
    char *agent = library_beside_us();
    if (!root || !agent) {
        free(root);
        free(agent);
        return run_error("cannot tell %s: %s",
                         root ? "where this program is" : "the current folder", strerror(errno));
    }
    if (access(agent, R_OK) != 0) {
        rc = run_error("no agent at %s (%s): it belongs beside the syncspy program", agent,
                       strerror(errno));
        free(root);
        free(agent);
        return rc;
    }
    char *preload = NULL;
    if ((rc = preload_for_cmd(agent, &preload)) >= 0) {
        free(root);
        free(agent);
        return rc;
    }
    char *report = eff.report == REPORT_FILE ? absolute(eff.report_path) : NULL;
    char from[4096] = "";
    size_t used = 0;
    for (size_t i = 0; i < variable_count(); i++) {
        if (option_values[i])
            setenv(config_variables[i], option_values[i], 1);
        if (option_from[i] && used < sizeof from) /* recorded in summary.json */
            used += (size_t)snprintf(from + used, sizeof from - used, "%s%s=%s:%d", used ? ";" : "",
                                     config_variables[i], settings_file.path, option_from[i]->line);
    }
    if (used)
        setenv("SYNCSPY_SETTINGS_FROM", from, 1);
    /* absolute, so the closing lines and a program that changes folder agree */
    setenv("SYNCSPY_OUT", root, 1);
    if (report)
        setenv("SYNCSPY_REPORT", report, 1);
    if (preload)
        setenv("LD_PRELOAD", preload, 1);
    free(report);
    free(preload);
    free(agent);
    if (!getenv("LD_PRELOAD")) {
        free(root);
        return run_error("out of memory");
    }
    *root_out = root;
    return -1;
}

/* Waits for the child pid (cmd) beside the live view, or alone, stopping as it stops; with the
 * live view, then says where its output went (log). Returns its wait status. */
static int wait_child(pid_t pid, const char *root, const char *cmd, char *log)
{
    int status = 0;
    bool reaped = live_top && cli_top_beside(root, pid, &status);
    if (live_top && !reaped)
        fprintf(stderr, "syncspy run: the view is closed; %s runs on (its output: %s)\n", cmd, log);
    while (!reaped) {
        if (waitpid(pid, &status, WUNTRACED) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (!WIFSTOPPED(status))
            break;
        stop_like(WSTOPSIG(status));
    }
    child_pid = 0;
    if (live_top) {
        close(child_output);
        fprintf(stderr, "syncspy run: %s's output and report: %s\n", cmd, log);
        free(log);
    }
    return status;
}

int cli_run(int argc, char **argv)
{
    int cmd = 0, rc = parse_options(argc, argv, &cmd);
    if (rc >= 0)
        return rc;
    char *root = NULL;
    if ((rc = prepare_environment(&root)) >= 0)
        return rc;
    char *log = NULL;
    if (live_top && (rc = open_run_log(root, &log)) >= 0) {
        free(root);
        return rc;
    }
    struct names before;
    scan_folders(root, &before);
    sigset_t fwd, old;
    forwarded_set(&fwd);
    sigprocmask(SIG_BLOCK, &fwd, &old);
    pid_t pid;
    if ((rc = spawn(argv + cmd, &old, &pid)) >= 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        free_names(&before);
        free(root);
        return rc;
    }
    child_pid = pid;
    forward_all();
    sigprocmask(SIG_SETMASK, &old, NULL);

    int status = wait_child(pid, root, argv[cmd], log);
    sigprocmask(SIG_BLOCK, &fwd, NULL); /* from here on, ours to take as they come: at the end */
    signal(SIGPIPE, SIG_IGN);           /* a closed stderr costs the lines, not the status */
    say_where(root, &before);
    free_names(&before);
    free(root);
    rc = end_like(status);
    return rc;
}
