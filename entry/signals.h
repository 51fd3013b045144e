/* entry/signals.h: SIGTERM and SIGINT. Where the program's disposition is the default action,
 * the agent's handler stands in for it: the exit report and summary.json first (on the flusher
 * thread, at most 3 s), then the default action. A handler or SIG_IGN of the program's goes to
 * the kernel exactly as given, and the program's sigaction()/signal() calls are answered as if
 * the default were still there where the agent stands in (docs/RELIABILITY.md, "Signals"). */
#ifndef SYNCSPY_SIGNALS_H
#define SYNCSPY_SIGNALS_H

#include <signal.h>

/* At the first CUDA call: the agent stands in for each default disposition of the two. */
void signals_install(void);
/* Around fork(): the program's view is taken whole into the child (entry/start.c). prepare
 * holds every signal of the calling thread and keeps its mask in *old; release (parent and
 * child) puts it back. */
void signals_atfork_prepare(sigset_t *old);
void signals_atfork_release(const sigset_t *old);

#endif
