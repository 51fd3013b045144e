/* entry/signals.c: SIGTERM/SIGINT (see signals.h). The kernel's disposition is the only truth:
 * the agent's handler is installed only where the program's disposition is the default action
 * (SIG_DFL), and the program's own handlers go to the kernel exactly as the program gives them
 * (flags, mask, restart semantics), so they run as without the agent. sigaction() and the
 * signal() family are interposed only to answer the program as if the default were still
 * there, and to stand in again when it sets the default back. The handler is
 * async-signal-safe: atomics, write() to a pipe, poll(), the real sigaction, sigprocmask, raise.
 * The interposed calls hold every signal on the calling thread while they look and change
 * (sigaction is async-signal-safe: a handler may call it). */
#include "entry/signals.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>

#include "agent/record/core.h"
#include "agent/process/lifecycle.h"
#include "common/compiler.h"
#include "entry/real.h"

#define REPORT_TIMEOUT_MS 3000

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);
typedef handler_fn (*signal_fn)(int, handler_fn);

static const int watched[] = {SIGTERM, SIGINT};
/* While the agent's handler stands in for the default action: the action the program has as far
 * as it knows (SIG_DFL with the flags and mask it found or set), answered back to it and put
 * back before the signal takes its course. */
static struct sigaction program_view[2];
static _Atomic bool armed; /* from the first CUDA call: the agent may stand in */
static atomic_flag view_lock = ATOMIC_FLAG_INIT;

static int slot(int sig)
{
    for (int i = 0; i < 2; i++)
        if (watched[i] == sig)
            return i;
    return -1;
}

static sigaction_fn real_sigaction(void)
{
    return (sigaction_fn)real_get(REAL_sigaction);
}

static void on_signal(int sig, siginfo_t *info, void *uc);

static bool is_ours(const struct sigaction *a)
{
    return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_signal;
}

/* SA_NODEFER and the two signals left out of the mask: a second SIGTERM or Ctrl-C while the
 * report is written ends the process at once. Everything else waits: without the agent the
 * process would be gone already, so no handler of the program runs meanwhile on this thread. */
static void our_action(struct sigaction *a)
{
    memset(a, 0, sizeof *a);
    a->sa_sigaction = on_signal;
    a->sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
    sigfillset(&a->sa_mask);
    for (int i = 0; i < 2; i++)
        sigdelset(&a->sa_mask, watched[i]);
}

/* Looking at and changing the disposition together: every signal held on this thread (so no
 * handler that calls sigaction can interrupt it here), a spin lock between threads (held for a
 * few syscalls; taken around fork(): signals_atfork_prepare). */
static void view_begin(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
    while (atomic_flag_test_and_set_explicit(&view_lock, memory_order_acquire))
        ;
}

static void view_end(const sigset_t *old)
{
    atomic_flag_clear_explicit(&view_lock, memory_order_release);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* With the view lock: the kernel has SIG_DFL (as the program set it: *set): ours stands in. */
static void stand_in(int i, const struct sigaction *set)
{
    struct sigaction ours;
    our_action(&ours);
    program_view[i] = *set;
    real_sigaction()(watched[i], &ours, NULL);
}

/* The stack pointer of the code the signal interrupted (the handler may run on an alternate
 * stack): where agent_defer_signal looks for agent work. */
static const void *interrupted_sp(void *uc_)
{
    const ucontext_t *uc = uc_;
#if defined(__x86_64__)
    if (uc)
        return (const void *)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    if (uc)
        return (const void *)uc->uc_mcontext.sp;
#else
    (void)uc;
#endif
    return __builtin_frame_address(0); /* right unless the handler runs on an alternate stack */
}

/* The default action, now: the program's view back in the kernel, the signal raised again. */
static void take_default_action(int i, int sig)
{
    struct sigaction dfl = program_view[i];
    dfl.sa_handler = SIG_DFL;
    real_sigaction()(sig, &dfl, NULL);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    raise(sig);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
}

/* The program's disposition is the default action, which ends the process: the report first
 * (on the flusher thread, at most REPORT_TIMEOUT_MS), then the default action. When the
 * interrupted code is agent work (it may hold the loader's lock the report needs) the signal is
 * raised again as soon as that work ends (microseconds). When the process is exiting already,
 * or a signal asked for the report before, it ends now. */
static void on_signal(int sig, siginfo_t *info, void *uc)
{
    (void)info;
    int saved = errno;
    int i = slot(sig);
    if (i < 0)
        return;
    if (atomic_load(&agent_state) == STATE_RUNNING && agent_defer_signal(sig, interrupted_sp(uc))) {
        errno = saved;
        return;
    }
    agent_finish_from_signal(REPORT_TIMEOUT_MS);
    take_default_action(i, sig);
    errno = saved; /* not reached: the default action ends the process */
}

/* Around fork() (entry/start.c): the view lock is held for a few system calls, with every
 * signal held, and under it nothing waits for anything else: the forking thread waits for it (its
 * own signals held meanwhile, so no handler of its own can ask for it), and the child gets the
 * program's view whole, the lock taken by its one thread, which frees it. */
void signals_atfork_prepare(sigset_t *old)
{
    view_begin(old);
}

void signals_atfork_release(const sigset_t *old)
{
    view_end(old);
}

void signals_install(void)
{
    sigaction_fn real = real_sigaction();
    if (!real || atomic_load(&armed))
        return; /* a forked child inherits the parent's dispositions and this state */
    for (int i = 0; i < 2; i++) {
        sigset_t old;
        struct sigaction cur;
        view_begin(&old);
        /* only the default: a handler of the program's, or SIG_IGN (nohup), stays exactly so */
        if (real(watched[i], NULL, &cur) == 0 && cur.sa_handler == SIG_DFL)
            stand_in(i, &cur);
        view_end(&old);
    }
    atomic_store(&armed, true);
}

/* ---- the program's view -------------------------------------------------------------------- */

SYNCSPY_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
    sigaction_fn real = real_sigaction();
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int i = slot(sig);
    if (i < 0 || !atomic_load_explicit(&armed, memory_order_relaxed))
        return real(sig, act, oldact);
    struct sigaction want, cur;
    if (act)
        want = *act; /* act and oldact may be the same struct */
    sigset_t old;
    view_begin(&old);
    int rc = real(sig, NULL, &cur);
    if (rc == 0 && is_ours(&cur)) {
        struct sigaction view = program_view[i];
        if (act && want.sa_handler == SIG_DFL)
            program_view[i] = want; /* still the default: ours keeps standing in */
        else if (act)
            rc = real(sig, &want, NULL); /* the program's own action, exactly as given */
        if (rc == 0 && oldact)
            *oldact = view;
    } else if (rc == 0) {
        /* Ours does not stand in (the program has its own action, or set one some way the
         * agent does not see): the kernel's answer is the program's. */
        if (act && want.sa_handler == SIG_DFL) {
            if (oldact)
                *oldact = cur;
            stand_in(i, &want);
        } else {
            rc = real(sig, act ? &want : NULL, oldact);
        }
    }
    int err = errno;
    view_end(&old);
    errno = err;
    return rc;
}

/* signal(), bsd_signal(), sysv_signal(), __sysv_signal() (what signal() is under -std=c99) and
 * sigset(): libc's own, so their flags are exactly libc's (siginterrupt's choice included); only
 * the answer is the program's view, and a default set back gets ours to stand in again. */
static handler_fn signal_family(int real_id, int sig, handler_fn handler)
{
    signal_fn real = (signal_fn)real_get(real_id);
    if (!real) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    int i = slot(sig);
    if (i < 0 || !atomic_load_explicit(&armed, memory_order_relaxed) || !real_sigaction())
        return real(sig, handler);
    sigset_t old;
    view_begin(&old);
    struct sigaction before, now;
    bool was_ours = real_sigaction()(sig, NULL, &before) == 0 && is_ours(&before);
    handler_fn prev = real(sig, handler);
    int err = errno;
    if (prev != SIG_ERR) {
        if (was_ours)
            prev = program_view[i].sa_handler; /* the program never saw ours */
        if (real_sigaction()(sig, NULL, &now) == 0 && now.sa_handler == SIG_DFL)
            stand_in(i, &now);
    }
    view_end(&old);
    errno = err;
    return prev;
}

SYNCSPY_EXPORT handler_fn signal(int sig, handler_fn handler)
{
    return signal_family(REAL_signal, sig, handler);
}

SYNCSPY_EXPORT handler_fn bsd_signal(int sig, handler_fn handler)
{
    return signal_family(REAL_bsd_signal, sig, handler);
}

SYNCSPY_EXPORT handler_fn sysv_signal(int sig, handler_fn handler)
{
    return signal_family(REAL_sysv_signal, sig, handler);
}

SYNCSPY_EXPORT handler_fn __sysv_signal(int sig, handler_fn handler)
{
    return signal_family(REAL___sysv_signal, sig, handler);
}

SYNCSPY_EXPORT handler_fn sigset(int sig, handler_fn handler)
{
    return signal_family(REAL_sigset, sig, handler);
}
