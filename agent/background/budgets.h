/* agent/background/budgets.h: what the lifecycle asks of the sync budget calls (agent/background/
 * budgets.c; the calls themselves are declared in agent/syncspy.h). */
#ifndef SYNCSPY_BUDGETS_H
#define SYNCSPY_BUDGETS_H

/* A fork's child: no site description in progress (its requester was the parent's thread). */
void budgets_atfork_child(void);

#endif
