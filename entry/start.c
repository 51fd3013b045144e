/* entry/start.c: the entry layer's start. At load (or at the first interposed CUDA call, when
 * another library's constructor calls CUDA before ours ran) it resolves libc's real symbols and
 * hands the agent's lifecycle the hooks through which the agent, and only through which, asks
 * the entry layer for something: at the agent's start, SYNCSPY_CUPTI=eager's subscription; at
 * the process's first CUDA call, the SIGTERM/SIGINT handler and the CUPTI subscription
 * (heaptrack_init's callbacks, the same inversion). */
#include "entry/start.h"

#include <pthread.h>
#include <string.h>

#include "agent/process/fork_locks.h"
#include "agent/process/lifecycle.h"
#include "entry/cupti.h"
#include "entry/real.h"
#include "entry/signals.h"

static void at_start(const struct config *cfg)
{
    if (cfg->cupti == CUPTI_EAGER)
        cupti_start_eager(cfg); /* the user said every CUDA call bypasses the interposed runtime */
}

static void at_first_use(const struct config *cfg)
{
    signals_install();
    cupti_start(cfg); /* CUPTI, for the syncs the interposed runtime cannot see */
}

static const struct agent_entry_hooks hooks = {.at_start = at_start, .at_first_use = at_first_use};

/* The entry layer's locks a fork must leave usable (agent/process/fork_locks.h). Registered before the
 * agent's handlers, so their prepare runs after the agent's (which holds the thread's signals
 * from its start) and their child before the agent's: the CUPTI subscription's lock, only tried
 * (it is held across CUPTI's loading, whose constructors may register fork handlers: they wait
 * for glibc's atfork lock, which the forking thread holds), then the signal view's spin lock. */
static const struct fork_lock fork_locks[] = {
    {"CUPTI subscription", FORK_LOCK_TRY, cupti_state_lock, NULL, 0},
};
#define FORK_LOCKS (sizeof fork_locks / sizeof fork_locks[0])
static bool fork_taken[FORK_LOCKS];
static sigset_t fork_mask; /* the forking thread's signals, put back after */

static void fork_prepare(void)
{
    fork_locks_prepare(fork_locks, FORK_LOCKS, fork_taken);
    signals_atfork_prepare(&fork_mask);
}

static void fork_parent(void)
{
    signals_atfork_release(&fork_mask);
    fork_locks_parent(fork_locks, FORK_LOCKS, fork_taken);
}

static void fork_child(void)
{
    signals_atfork_release(&fork_mask);
    fork_locks_child(fork_locks, FORK_LOCKS, fork_taken);
    cupti_atfork_child(fork_taken[0]);
}

/* The agent's imports are bound at load (-z now), but a sanitizer's interceptors call their
 * hooks through lazily bound slots of their own: the first memcmp of an ASan build resolves
 * __sanitizer_weak_hook_memcmp in ld.so, whose resolver saves the vector registers (2.5 KiB
 * and more, by CPU). Made here, on the loading thread, that lookup never lands on the stack
 * of a program's thread at its first sync (tests/e2e/test_host_harm.OwnStacks). */
static void bind_before_use(void)
{
    static const char a[] = "syncspy", b[] = "syncspx";
    volatile size_t n = sizeof a;
    __asm__ volatile("" : : "r"(memcmp(a, b, n)));
}

static void start(void)
{
    bind_before_use();
    real_resolve_at_load();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    agent_set_entry_hooks(&hooks);
}

void entry_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, start);
}

/* Before the agent's own constructor (priority 102, after the fault-injection build's 101). */
__attribute__((constructor(102))) static void entry_ctor(void)
{
    entry_start();
}
