/* agent/background/process_dir.c: the process's output folder (see process_dir.h). Made once,
 * at the process's first CUDA call (off the recording path, the caller's guard raised): it may do
 * I/O; every file in it is made relative to its descriptor, never through a link. */
#include "agent/background/process_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/record/state.h"
#include "common/log.h"
#include "output/io.h"

/* mkdir -p with mode 0700 for the folders it creates (traces hold paths and symbol names). */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return errno = ENAMETOOLONG, -1;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, OUTPUT_DIR_MODE) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, OUTPUT_DIR_MODE) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

#define PROCESS_DIR_TRIES 1000

/* This process's folder, once made (its name is kept: the exit writes where the trace is), and
 * its descriptor, through which every file is made (openat): a link put in place of the folder
 * after it was checked is never followed. Its inode is kept to notice a descriptor the program
 * closed (and maybe reused for something else) before the exit writes through it. */
static char proc_dir[PATH_MAX];
static bool proc_dir_made;
static int proc_dir_fd = -1;
static dev_t proc_dir_dev;
static ino_t proc_dir_ino;
/* Why the output folder was refused ("" when it was not): the process then records nothing. */
static char out_refused[PATH_MAX + 160];

/* The SYNCSPY_OUT folder, open as fd, is written into only when no other user can take the
 * process folders made in it: it belongs to this user or root, and a folder that others can
 * write to (other users; a group that is not the caller's own) has the sticky bit (/tmp: only an
 * entry's owner may rename or remove it). Otherwise out_refused says why. */
static bool root_is_safe(int fd, const char *root)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return false;
    uid_t me = geteuid();
    bool others_write =
        (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != getegid());
    if (st.st_uid != me && st.st_uid != 0)
        snprintf(out_refused, sizeof out_refused, "SYNCSPY_OUT %s belongs to another user (uid %u)",
                 root, (unsigned)st.st_uid);
    else if (others_write && !(st.st_mode & S_ISVTX))
        snprintf(out_refused, sizeof out_refused,
                 "other users can write to SYNCSPY_OUT %s (mode "
                 "%04o, no sticky bit) and could put a link in place of its process folder",
                 root, (unsigned)(st.st_mode & 07777));
    else
        return true;
    return false;
}

/* The folder name just made in root (rootfd), opened without following a link: it must be a
 * directory of this user's that no one else may enter or write (0700 less the umask), else a link
 * or another's folder was put in its place after the mkdir. -1 with out_refused saying why. */
static int open_process_dir(int rootfd, const char *name, const char *path)
{
    int fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 077) == 0) {
        proc_dir_dev = st.st_dev;
        proc_dir_ino = st.st_ino;
        return fd;
    }
    snprintf(out_refused, sizeof out_refused,
             "the process folder %s is not the private folder "
             "just made (%s): something was put in its place",
             path, fd < 0 ? strerror(errno) : "another owner or mode");
    if (fd >= 0)
        close(fd);
    return -1;
}

/* <SYNCSPY_OUT>/pid<P> or rank<R>-<host>-pid<P> (rank<R>-pid<P> when the host has no name), made 0700 by this process. A folder of that name that
 * exists already is never written into: it is an earlier image of this process (before an
 * exec), a process with the same pid in another pid namespace (a container) sharing
 * SYNCSPY_OUT, an earlier run's, or a link planted there; the name then gets ".2", ".3", ...
 * (mkdir either makes a folder or fails: two processes never get the same one). The folder is
 * made and opened relative to SYNCSPY_OUT's descriptor (root_is_safe, open_process_dir).
 * Returns the folder (*fd its descriptor), or NULL with errno (and *tried the name it failed
 * on); out_refused set when the folder is refused rather than failed. */
const char *process_dir_open(const struct identity *id, const char **tried, int *fd)
{
    *tried = proc_dir;
    if (proc_dir_made) {
        struct stat st; /* still ours: the program may have closed the descriptor */
        if (fstat(proc_dir_fd, &st) != 0 || st.st_dev != proc_dir_dev || st.st_ino != proc_dir_ino)
            return errno = EBADF, NULL;
        *fd = proc_dir_fd;
        return proc_dir;
    }
    char base[PATH_MAX - 16]; /* room for the ".N" suffix */
    char host[IDENTITY_HOST_MAX + 2] = "";
    identity_host_for_path(id->host, host + 1, sizeof host - 1);
    if (host[1])
        host[0] = '-';
    int n = id->rank >= 0
                ? snprintf(base, sizeof base, "%s/rank%d%s-pid%d", agent_cfg.out_dir, id->rank,
                           host, (int)getpid())
                : snprintf(base, sizeof base, "%s/pid%d", agent_cfg.out_dir, (int)getpid());
    /* config_parse keeps SYNCSPY_OUT 64 bytes short of PATH_MAX */
    if (n < 0 || (size_t)n >= sizeof base)
        return errno = ENAMETOOLONG, NULL;
    memcpy(proc_dir, base, (size_t)n + 1);
    if (make_dirs(agent_cfg.out_dir) != 0)
        return NULL;
    int rootfd = open(agent_cfg.out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return NULL;
    if (!root_is_safe(rootfd, agent_cfg.out_dir)) {
        close(rootfd);
        return errno = EPERM, NULL;
    }
    const char *name = proc_dir + strlen(agent_cfg.out_dir) + 1;
    for (int i = 1; i <= PROCESS_DIR_TRIES; i++) {
        if (i > 1)
            snprintf(proc_dir, sizeof proc_dir, "%s.%d", base, i);
        if (mkdirat(rootfd, name, OUTPUT_DIR_MODE) != 0) {
            if (errno == EEXIST)
                continue;
            break;
        }
        proc_dir_fd = open_process_dir(rootfd, name, proc_dir);
        if (proc_dir_fd < 0)
            break;
        close(rootfd);
        proc_dir_made = true;
        *fd = proc_dir_fd;
        return proc_dir;
    }
    int err = out_refused[0] ? EPERM : errno;
    close(rootfd);
    return errno = err, NULL;
}

int agent_process_dir_fd(void)
{
    struct stat st; /* still ours: the program may have closed the descriptor */
    if (!proc_dir_made || fstat(proc_dir_fd, &st) != 0 || st.st_dev != proc_dir_dev ||
        st.st_ino != proc_dir_ino)
        return -1;
    return proc_dir_fd;
}

const char *agent_process_dir_path(void)
{
    return proc_dir_made ? proc_dir : "the process folder";
}

/* The folder could not be made (said once, recording goes on: the report at exit has every
 * count) or was refused (said once: then nothing is recorded, see start_trace). */
void say_no_folder(const char *tried, int err)
{
    static _Atomic bool said_refused;
    if (!out_refused[0])
        agent_output_error(tried, err);
    else if (!atomic_exchange(&said_refused, true))
        agent_log("%s; nothing is recorded in this process (pid %d)", out_refused, (int)getpid());
}

const char *process_dir_refused(void)
{
    return out_refused[0] ? out_refused : NULL;
}

void process_dir_atfork_child(void)
{
    proc_dir_made = false;
    if (proc_dir_fd >= 0)
        close(proc_dir_fd);
    proc_dir_fd = -1;
    out_refused[0] = '\0';
}
