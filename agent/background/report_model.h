/* agent/background/report_model.h: at exit, the site table as the report model (output/model.h): each site
 * that counted a sync, with its frames named (agent/background/stack_names.h) and its GPU idle time
 * (SYNCSPY_GPU=1), heaviest first. Runs once, in the FINISHING state: it may allocate. */
#ifndef SYNCSPY_EXIT_MODEL_H
#define SYNCSPY_EXIT_MODEL_H

#include "output/model.h"

struct symbolizer;

/* Fills proc->sites and proc->nsites (storage freed by report_model_free). */
void report_model_sites(struct rep_process *proc, struct symbolizer *sym);
/* The threads that synced, the one that marked the steps (marker_tid) flagged. */
void report_model_threads(struct rep_process *proc, uint32_t marker_tid);

void report_model_free(struct rep_process *proc);

#endif
