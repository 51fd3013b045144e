/* agent/background/process_dir.h: the process's output folder, <SYNCSPY_OUT>/pid<P> or
 * rank<R>-<host>-pid<P>, made 0700 by this process at its first CUDA call and refused when
 * another user could redirect it. The trace, summary.json, the report and the control files
 * (agent/background/control.h) are made through its descriptor. Off every recording path. */
#ifndef SYNCSPY_PROCESS_DIR_H
#define SYNCSPY_PROCESS_DIR_H

#include "agent/background/identity.h"

/* The folder, made on the first call (its name from id), then checked still to be ours: the path
 * (*fd its descriptor), or NULL with errno (*tried the name it failed on); process_dir_refused
 * says why when it was refused rather than failed. */
const char *process_dir_open(const struct identity *id, const char **tried, int *fd);
/* Why the folder was refused (the process then records nothing), or NULL. */
const char *process_dir_refused(void);
/* Says once why the folder could not be made (recording goes on) or was refused. */
void say_no_folder(const char *tried, int err);
/* The folder's descriptor (every file in it is made relative to it), or -1 before it was made or
 * when the program closed it. */
int agent_process_dir_fd(void);
/* Its path (for messages). */
const char *agent_process_dir_path(void);
/* A fork's child makes a folder of its own. */
void process_dir_atfork_child(void);

#endif
