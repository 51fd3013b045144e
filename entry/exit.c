/* entry/exit.c: _exit and _Exit. A process that ends through them (Python's os._exit, which
 * multiprocessing's forked workers always end with; a C program's signal handler; a test
 * harness skipping atexit) runs no atexit handler, so without this what the agent recorded
 * since the last flush, the summary and the report would be lost without a word. Here the
 * agent writes them (on its flusher thread, bounded in time) and the call goes on to libc's.
 * exit() reaches libc's _exit inside libc, not through here: its atexit handler did the work.
 * Nothing is done in a vfork child, which shares its parent's memory (agent/process/lifecycle.c). */
#include <unistd.h>
#include <sys/syscall.h>

#include "agent/process/lifecycle.h"
#include "common/compiler.h"
#include "entry/real.h"

/* The outputs may take a while (the symbol tables of a big process); the exit must not hang. */
#define QUICK_EXIT_TIMEOUT_MS 5000

typedef void (*exit_fn)(int);

static __attribute__((noreturn)) void quick_exit_path(int id, int status)
{
    agent_finish_at_quick_exit(QUICK_EXIT_TIMEOUT_MS);
    exit_fn real = (exit_fn)real_cached(id);
    if (real)
        real(status);
    for (;;) /* libc's was not found at load: the same system call */
        syscall(SYS_exit_group, status);
}

SYNCSPY_EXPORT __attribute__((noreturn)) void _exit(int status)
{
    quick_exit_path(REAL__exit, status);
}

SYNCSPY_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
    quick_exit_path(REAL__Exit, status);
}
