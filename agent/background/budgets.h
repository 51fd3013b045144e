/* agent/background/budgets.h: what the lifecycle asks of the sync budget calls (agent/background/
 * budgets.c; the calls themselves are declared in agent/syncspy.h). */
#ifndef SYNCSPY_BUDGETS_H
#define SYNCSPY_BUDGETS_H

#include <pthread.h>

/* The describe requests' lock, for the fork handlers (agent/process/fork_locks.h): held while a
 * request waits for the flusher, so a fork only tries it. */
pthread_mutex_t *budgets_request_lock(void);

#endif
