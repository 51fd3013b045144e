/* entry/cupti_load.c: finding and loading libcupti (see cupti_load.h). The search order is
 * pure (no state, no I/O: unit-tested in tests/unit/test_cupti.c); the loading reads
 * /proc/self/maps with a fixed buffer and dlopens, once, under entry/cupti.c's lock: no malloc,
 * no stdio streams. */
#include "entry/cupti_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "entry/real.h"

/* ---- where libcupti is looked for (pure) ---------------------------------------------------- */

static const char *const cupti_names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
#define NNAMES (sizeof cupti_names / sizeof cupti_names[0])

struct paths {
    char (*out)[PATH_MAX];
    size_t n, max;
};

static void add_path(struct paths *p, const char *dir, size_t dirlen, const char *tail)
{
    if (p->n >= p->max)
        return;
    char buf[PATH_MAX];
    int k = snprintf(buf, sizeof buf, "%.*s%s", (int)dirlen, dir, tail);
    if (k < 0 || (size_t)k >= sizeof buf)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->out[i], buf))
            return;
    memcpy(p->out[p->n++], buf, (size_t)k + 1);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Each candidate name in dir (dirlen bytes of it, ending with '/'). */
static void add_names(struct paths *p, const char *dir, size_t dirlen)
{
    for (size_t i = 0; i < NNAMES; i++)
        add_path(p, dir, dirlen, cupti_names[i]);
}

/* The site-packages (or dist-packages) folder a path lies in, with its trailing '/': its
 * length, 0 when none. */
static size_t packages_prefix(const char *path)
{
    static const char *const marks[] = {"/site-packages/", "/dist-packages/"};
    for (size_t i = 0; i < 2; i++) {
        const char *m = strstr(path, marks[i]);
        if (m)
            return (size_t)(m - path) + strlen(marks[i]);
    }
    return 0;
}

size_t cupti_search_paths(const struct cupti_search *in, char (*out)[PATH_MAX], size_t max)
{
    struct paths p = {out, 0, max};
    /* (1) already loaded */
    for (size_t i = 0; i < in->nloaded; i++)
        if (in->loaded[i][0] == '/' && !strncmp(base_name(in->loaded[i]), "libcupti.so", 11))
            add_path(&p, in->loaded[i], strlen(in->loaded[i]), "");
    /* (2) beside the runtime in use */
    for (size_t i = 0; i < in->nloaded; i++)
        if (in->loaded[i][0] == '/' && !strncmp(base_name(in->loaded[i]), "libcudart.so", 12))
            add_names(&p, in->loaded[i], (size_t)(base_name(in->loaded[i]) - in->loaded[i]));
    /* (3) the nvidia CUPTI wheel next to any loaded object's package folder */
    for (size_t i = 0; i < in->nloaded; i++) {
        size_t k = in->loaded[i][0] == '/' ? packages_prefix(in->loaded[i]) : 0;
        if (k == 0)
            continue;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%.*snvidia/cuda_cupti/lib/", (int)k, in->loaded[i]) <
            (int)sizeof dir)
            add_names(&p, dir, strlen(dir));
        if (snprintf(dir, sizeof dir, "%.*snvidia/cu13/lib/", (int)k, in->loaded[i]) <
            (int)sizeof dir)
            add_path(&p, dir, strlen(dir), "libcupti.so.13");
    }
    /* (4) the toolkit */
    const char *home = in->cuda_home ? in->cuda_home : "/usr/local/cuda";
    if (home[0] == '/') {
        size_t n = strlen(home);
        while (n > 1 && home[n - 1] == '/')
            n--;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%.*s/lib64/", (int)n, home) < (int)sizeof dir)
            add_names(&p, dir, strlen(dir));
        if (snprintf(dir, sizeof dir, "%.*s/extras/CUPTI/lib64/", (int)n, home) < (int)sizeof dir)
            add_names(&p, dir, strlen(dir));
    }
    /* (5) the loader's own search (LD_LIBRARY_PATH, its cache, the system folders) */
    add_path(&p, "", 0, "libcupti.so.13");
    add_path(&p, "", 0, "libcupti.so");
    return p.n;
}

/* ---- loading ------------------------------------------------------------------------------- */

#define LOADED_MAX 512
#define RELATIVE_MAX 32

struct loaded_list {
    const char *paths[LOADED_MAX]; /* absolute: the loader's own strings, or resolved ones */
    size_t n;
    uintptr_t relative_at[RELATIVE_MAX]; /* objects the loader names relatively: an address */
    size_t nrelative;
    char resolved[RELATIVE_MAX][PATH_MAX];
};

static int list_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct loaded_list *l = data;
    const char *name = info->dlpi_name;
    if (!name || !name[0] || l->n >= LOADED_MAX)
        return 0;
    if (name[0] == '/') {
        l->paths[l->n++] = name;
        return 0;
    }
    /* found through a relative LD_LIBRARY_PATH entry: the kernel knows where it really is */
    for (int i = 0; i < info->dlpi_phnum && l->nrelative < RELATIVE_MAX; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            l->relative_at[l->nrelative++] = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            break;
        }
    return 0;
}

/* The absolute path of the file mapped at addr, from /proc/self/maps (read with a fixed buffer:
 * no stdio, no malloc). False when none. */
static bool mapped_path(uintptr_t addr, char *out, size_t len)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    static char buf[PATH_MAX + 256];
    size_t have = 0;
    bool found = false;
    for (;;) {
        ssize_t k = read(fd, buf + have, sizeof buf - 1 - have);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        have += (size_t)k;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            unsigned long lo, hi;
            int at = 0;
            if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) == 2 && at > 0 &&
                addr >= lo && addr < hi && line[at] == '/') {
                found = snprintf(out, len, "%s", line + at) < (int)len;
                break;
            }
            line = nl + 1;
        }
        if (found)
            break;
        have = strlen(line); /* the unfinished line moves to the front */
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            have = 0; /* longer than any path: drop it */
    }
    close(fd);
    return found;
}

static void resolve_relative(struct loaded_list *l)
{
    for (size_t i = 0; i < l->nrelative && l->n < LOADED_MAX; i++)
        if (mapped_path(l->relative_at[i], l->resolved[i], sizeof l->resolved[i]))
            l->paths[l->n++] = l->resolved[i];
}

/* libc's dlclose, not entry/dlclose.c's (which notes the loaded objects first: not needed for
 * the handles here, which only ever drop a reference taken a moment before). */
static void close_handle(void *h)
{
    int (*f)(void *) = (int (*)(void *))real_get(REAL_dlclose);
    if (f)
        f(h);
}

static bool load_one(const char *path, char *why, size_t whylen)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, whylen, "cannot load libcupti: %s", e ? e : path);
        return false;
    }
    if (!real_bind_cupti(h)) {
        snprintf(why, whylen, "%s is not a CUPTI library (no cuptiSubscribe)", path);
        close_handle(h);
        return false;
    }
    return true;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static char coming[PATH_MAX];

/* Where the loader will find `file` (a name without '/': the first absolute LD_LIBRARY_PATH
 * folder holding it, as the loader looks there first for a caller without DT_RPATH): only a
 * hint of where its CUPTI is, never what the program loads. */
void cupti_load_expect(const char *file)
{
    coming[0] = 0;
    if (strchr(file, '/')) {
        if (file[0] == '/')
            snprintf(coming, sizeof coming, "%s", file);
        return;
    }
    const char *p = getenv("LD_LIBRARY_PATH");
    while (p && *p) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char buf[PATH_MAX];
        int k = snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, file);
        if (p[0] == '/' && k > 0 && (size_t)k < sizeof buf && is_file(buf)) {
            memcpy(coming, buf, (size_t)k + 1);
            return;
        }
        p = end ? end + 1 : NULL;
    }
}

/* SYNCSPY_CUPTI=auto: the candidates of cupti_search_paths, first loadable one wins (its path
 * in path). */
static bool load_auto(char *path, size_t pathlen, char *why, size_t whylen)
{
    static struct loaded_list loaded; /* once, under state_lock: off the recording path's stack */
    static char candidates[CUPTI_CANDIDATES_MAX][PATH_MAX];
    loaded.n = loaded.nrelative = 0;
    if (coming[0]) /* a libcudart being loaded (entry/dlopen.c): as if loaded already */
        loaded.paths[loaded.n++] = coming;
    dl_iterate_phdr(list_loaded, &loaded);
    resolve_relative(&loaded);
    const char *home = getenv("CUDA_HOME");
    struct cupti_search in = {loaded.paths, loaded.n, home && *home ? home : NULL};
    size_t n = cupti_search_paths(&in, candidates, CUPTI_CANDIDATES_MAX);
    snprintf(why, whylen,
             "no libcupti found (beside libcudart, in a CUPTI wheel, under CUDA_HOME "
             "or on the loader's path)");
    for (size_t i = 0; i < n; i++) {
        bool bare = candidates[i][0] != '/';
        if (!bare && !is_file(candidates[i]))
            continue;
        char err[PATH_MAX + 128];
        if (load_one(candidates[i], err, sizeof err)) {
            snprintf(path, pathlen, "%s", candidates[i]);
            return true;
        }
        if (!bare) /* an existing file that does not load is worth naming */
            snprintf(why, whylen, "%s", err);
        dbg(2, "CUPTI: %s", err);
    }
    return false;
}

bool cupti_load(const struct config *cfg, char *path, size_t pathlen, char *why, size_t whylen)
{
    if (cfg->cupti != CUPTI_PATH)
        return load_auto(path, pathlen, why, whylen);
    if (!load_one(cfg->cupti_path, why, whylen))
        return false;
    snprintf(path, pathlen, "%s", cfg->cupti_path);
    return true;
}
