/* entry/signals.c: SIGTERM/SIGINT (see signals.h). The handler is async-signal-safe: atomics,
 * write() to a pipe, poll(), sigprocmask, the real sigaction and raise. The interposed
 * sigaction()/signal() run on the program's threads outside any CUDA call; for other signals,
 * and before the first CUDA call, they only forward. */
#include "entry/signals.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "agent/core.h"
#include "agent/lifecycle.h"
#include "common/compiler.h"
#include "entry/real.h"

#define REPORT_TIMEOUT_MS 3000

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static const int watched[] = {SIGTERM, SIGINT};
static struct sigaction user_act[2];  /* what the program asked for */
static _Atomic bool installed[2];
static pthread_mutex_t act_lock = PTHREAD_MUTEX_INITIALIZER; /* program-side updates only */

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

static void call_user(int i, int sig, siginfo_t *info, void *uc)
{
    struct sigaction act = user_act[i];
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &act.sa_mask, &old); /* the program's own mask for its handler */
    if (act.sa_flags & SA_RESETHAND)
        user_act[i].sa_handler = SIG_DFL;
    if (act.sa_flags & SA_SIGINFO)
        act.sa_sigaction(sig, info, uc);
    else
        act.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_signal(int sig, siginfo_t *info, void *uc)
{
    int saved = errno;
    int i = slot(sig);
    if (i < 0)
        return;
    void (*h)(int) = user_act[i].sa_handler;
    if (h == SIG_IGN) {
        errno = saved;
        return;
    }
    if (h != SIG_DFL) {
        agent_flush_soon(); /* the program decides what happens next; its records go to disk soon */
        call_user(i, sig, info, uc);
        errno = saved;
        return;
    }
    /* The default action ends the process: the report first, then the signal again. When this
     * thread is inside agent code it may hold a lock the report needs: the signal is delivered
     * again as soon as it leaves. */
    if (agent_defer_signal(sig)) {
        errno = saved;
        return;
    }
    agent_finish_from_signal(REPORT_TIMEOUT_MS);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    atomic_store(&installed[i], false);
    real_sigaction()(sig, &dfl, NULL);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    raise(sig);
    errno = saved;
}

void signals_install(void)
{
    sigaction_fn real = real_sigaction();
    if (!real)
        return;
    pthread_mutex_lock(&act_lock);
    for (int i = 0; i < 2; i++) {
        /* A forked child inherits ours (and the program's, kept in user_act): once is enough. */
        if (atomic_load(&installed[i]))
            continue;
        struct sigaction ours, prev;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = on_signal;
        ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigfillset(&ours.sa_mask); /* nothing interrupts the chain; the program's mask is applied for its handler */
        if (real(watched[i], NULL, &prev) != 0 || prev.sa_handler == SIG_IGN)
            continue; /* ignored (nohup, a parent's choice): leave it exactly so */
        user_act[i] = prev;
        if (real(watched[i], &ours, NULL) == 0)
            atomic_store(&installed[i], true);
    }
    pthread_mutex_unlock(&act_lock);
}

/* ---- the program's view -------------------------------------------------------------------- */

SYNCSPY_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
    int i = slot(sig);
    sigaction_fn real = real_sigaction();
    if (i < 0 || !atomic_load(&installed[i])) {
        if (!real) {
            errno = ENOSYS;
            return -1;
        }
        return real(sig, act, oldact);
    }
    pthread_mutex_lock(&act_lock);
    if (oldact)
        *oldact = user_act[i];
    if (act) {
        if (act->sa_handler == SIG_IGN) {
            /* ignoring it: step aside entirely, as the kernel must ignore it too */
            atomic_store(&installed[i], false);
            user_act[i] = *act;
            int rc = real(sig, act, NULL);
            pthread_mutex_unlock(&act_lock);
            return rc;
        }
        user_act[i] = *act;
    }
    pthread_mutex_unlock(&act_lock);
    return 0;
}

SYNCSPY_EXPORT void (*signal(int sig, void (*handler)(int)))(int)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART; /* glibc's signal() has BSD semantics */
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}
