/* entry/start.h: the entry layer's start (entry/start.c). */
#ifndef SYNCSPY_ENTRY_START_H
#define SYNCSPY_ENTRY_START_H

/* Once: resolves libc's real symbols and gives the agent's lifecycle the entry layer's hooks.
 * Run at load, and by the first interposed CUDA call if that comes first. */
void entry_start(void);

#endif
