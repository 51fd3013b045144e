/* entry/signals.h: SIGTERM and SIGINT. Where the program's disposition is the default action,
 * the agent's handler stands in for it: the exit report and summary.json first (on the flusher
 * thread, at most 3 s), then the default action. A handler or SIG_IGN of the program's goes to
 * the kernel exactly as given, and the program's sigaction()/signal() calls are answered as if
 * the default were still there where the agent stands in (docs/RELIABILITY.md, "Signals"). */
#ifndef SYNCSPY_SIGNALS_H
#define SYNCSPY_SIGNALS_H

/* At the first CUDA call: the agent stands in for each default disposition of the two. */
void signals_install(void);

#endif
