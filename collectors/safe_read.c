/* collectors/safe_read.c: see safe_read.h. process_vm_readv on the process itself (EFAULT for an
 * unmapped address); where a seccomp filter refuses it (Docker's default profile without
 * CAP_SYS_PTRACE: EPERM), a pipe of the agent's own, whose write() copies from the address or
 * fails with EFAULT, one thread at a time (its two descriptors are opened on first need,
 * close-on-exec; a forked child opens its own).
 * No malloc, no stdio. */
#include "collectors/safe_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/uio.h>
#include <unistd.h>

static _Atomic bool use_pipe;
static _Atomic bool pipe_busy; /* a thread reads through the pipe (a lock only ever tried) */
static int pipe_fds[2] = {-1, -1};

_Atomic bool *safe_read_pipe_busy(void)
{
    return &pipe_busy;
}

/* The pipe is the parent's too: written and read by both, each could read the other's bytes. The
 * child (its one thread) makes its own at its first need. */
void safe_read_atfork_child(void)
{
    for (int i = 0; i < 2; i++) {
        if (pipe_fds[i] >= 0)
            close(pipe_fds[i]);
        pipe_fds[i] = -1;
    }
}

static bool read_through_pipe(void *dst, uintptr_t src, size_t n)
{
    bool ok = false;
    if (atomic_exchange_explicit(&pipe_busy, true, memory_order_acquire))
        return false; /* another thread reads: this one goes without (never waits: fork, signals) */
    if (pipe_fds[0] < 0 && pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
        pipe_fds[0] = pipe_fds[1] = -1;
    if (pipe_fds[0] >= 0 && n <= 4096) { /* at most PIPE_BUF: written whole, or not at all */
        ssize_t w = write(pipe_fds[1], (const void *)src, n);
        if (w > 0) {
            ssize_t r = read(pipe_fds[0], dst, (size_t)w);
            ok = w == (ssize_t)n && r == w;
        }
    }
    atomic_store_explicit(&pipe_busy, false, memory_order_release);
    return ok;
}

bool safe_read(void *dst, uintptr_t src, size_t n)
{
    if (n == 0)
        return true;
    if (!src || src + n < src)
        return false;
    int saved = errno;
    bool ok;
    if (!atomic_load_explicit(&use_pipe, memory_order_relaxed)) {
        struct iovec local = {dst, n}, remote = {(void *)src, n};
        ssize_t k = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        ok = k == (ssize_t)n;
        if (k < 0 && (errno == EPERM || errno == ENOSYS)) {
            atomic_store_explicit(&use_pipe, true, memory_order_relaxed);
            ok = read_through_pipe(dst, src, n);
        }
    } else {
        ok = read_through_pipe(dst, src, n);
    }
    errno = saved;
    return ok;
}
