/* entry/dlclose.c: dlclose. A library unloaded after one of its functions called a sync would
 * leave addresses that no loaded object maps by exit time; so, before the program's dlclose
 * runs, the flusher's symbolizer takes note of every object still loaded (their files are read
 * from disk later, at the recorded load addresses). After it, the real CUDA functions whose
 * library went with it are forgotten (entry/real.h), never called at a stale address, and the
 * threads' cached native stacks are dropped (an object loaded later could repeat its addresses).
 * Runs on the program's thread, outside any CUDA call; notes nothing in a process that never
 * used CUDA, nor for the agent's own dlclose calls. */
#include <errno.h>

#include "agent/process/lifecycle.h"
#include "common/compiler.h"
#include "entry/real.h"

typedef int (*dlclose_fn)(void *);

SYNCSPY_EXPORT int dlclose(void *handle)
{
    dlclose_fn real = (dlclose_fn)real_get(REAL_dlclose);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    agent_before_dlclose();
    int rc = real(handle);
    real_forget_unloaded();
    agent_after_dlclose();
    return rc;
}
