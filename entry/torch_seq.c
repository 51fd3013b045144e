/* entry/torch_seq.c: at::sequence_number::get_and_increment(), interposed. Every autograd Node
 * constructor takes its sequence number from it (torch/csrc/autograd/function.h), and torch's
 * libraries call it through their PLT (an exported symbol, no -Bsymbolic), so the preloaded
 * definition runs at each node made, on the thread that makes it. It hands the number torch's
 * own function returned to the agent (agent/record/autograd_nodes.h nodes_made), which keeps that
 * thread's Python stack for the node only in an attribution step: otherwise one relaxed load.
 * A program that never loads torch never calls it. */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "agent/record/autograd_nodes.h"
#include "common/compiler.h"

#define GET_AND_INCREMENT "_ZN2at15sequence_number17get_and_incrementEv"

typedef uint64_t (*seq_fn)(void);
static _Atomic(seq_fn) real_seq;
static SYNCSPY_TLS uint64_t own_seq; /* only if torch's definition could not be found */

static uint64_t own_get_and_increment(void)
{
    return own_seq++;
}

/* torch's own definition: looked up in the calling library's scope (itself and its
 * dependencies: libtorch_cpu defines it, libtorch_python and libtorch_cuda need it), where the
 * preloaded agent is not. torch's libraries are loaded RTLD_LOCAL under Python's import, so
 * RTLD_NEXT (the global scope after the agent) does not see them; it is the last resort. */
SYNCSPY_EXPORT uint64_t _ZN2at15sequence_number17get_and_incrementEv(void);

static seq_fn resolve(const void *caller)
{
    int saved = errno;
    seq_fn f = NULL;
    Dl_info info;
    if (dladdr(caller, &info) && info.dli_fname && info.dli_fname[0]) {
        void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = (seq_fn)dlsym(h, GET_AND_INCREMENT);
            dlclose(h); /* NOLOAD took a reference of a library that stays loaded */
        }
    }
    if (!f || f == _ZN2at15sequence_number17get_and_incrementEv)
        f = (seq_fn)dlsym(RTLD_NEXT, GET_AND_INCREMENT);
    if (!f || f == _ZN2at15sequence_number17get_and_incrementEv) {
        f = own_get_and_increment;
        nodes_hook_unusable(); /* torch's counter (peek) would not follow ours */
    }
    atomic_store_explicit(&real_seq, f, memory_order_release);
    errno = saved;
    return f;
}

SYNCSPY_EXPORT uint64_t _ZN2at15sequence_number17get_and_incrementEv(void)
{
    seq_fn f = atomic_load_explicit(&real_seq, memory_order_acquire);
    uint64_t seq = (f ? f : resolve(__builtin_return_address(0)))();
    nodes_made(seq);
    return seq;
}
