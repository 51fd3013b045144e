/* agent/modules.c: dlclose. A library unloaded after one of its functions called a sync would
 * leave addresses that no loaded object maps by exit time; so, before the program's dlclose
 * runs, the flusher's symbolizer takes note of every object still loaded (their files are read
 * from disk later, at the recorded load addresses). Runs on the program's thread, outside any
 * CUDA call; does nothing in a process that never used CUDA. */
#include <dlfcn.h>
#include <errno.h>

#include "common/compiler.h"
#include "agent/flusher.h"
#include "agent/internal.h"

typedef int (*dlclose_fn)(void *);

SYNCSPY_EXPORT int dlclose(void *handle)
{
    static dlclose_fn real;
    if (!real)
        real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (agent_cuda_seen() && atomic_load(&agent_state) == STATE_RUNNING)
        flusher_note_modules();
    return real(handle);
}
