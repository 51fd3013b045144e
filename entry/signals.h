/* entry/signals.h: SIGTERM and SIGINT. When the program lets one of them kill the process (the
 * default action), the agent first writes the exit report and summary.json (on the flusher
 * thread, at most 3 s), then the default action proceeds. When the program has a handler, the
 * trace is flushed soon and the program's handler runs as if the agent were not there. The
 * program's own sigaction()/signal() calls for these signals are kept and answered as if ours
 * were not installed. */
#ifndef SYNCSPY_SIGNALS_H
#define SYNCSPY_SIGNALS_H

/* At the first CUDA call: puts the agent's handler in front of the program's. */
void signals_install(void);

#endif
