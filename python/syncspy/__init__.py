"""syncspy: the Python side of syncspy's public API.

    import syncspy
    syncspy.step()      # ends a training step (explicit marks win over automatic detection)
    syncspy.enabled()   # True when the agent is loaded (syncspy run, or LD_PRELOAD=.../libsyncspy.so)
    syncspy.counts()    # the syncs and blocked time counted so far (None without the agent)

They look up the agent's exported C functions (agent/syncspy.h) among the objects already loaded
in the process (ctypes.CDLL(None): dlopen(NULL), the default search scope, where a preloaded
library is), once; without the agent, step() does nothing, enabled() is False and counts() is
None. Nothing here loads the agent: it has to be there from the process's start to see every
CUDA call."""
import ctypes
from collections import namedtuple

__all__ = ["step", "enabled", "counts", "Counts", "SCOPE_THREAD", "SCOPE_PROCESS"]

SCOPE_THREAD = 0   # the calling thread's syncs (SYNCSPY_SCOPE_THREAD)
SCOPE_PROCESS = 1  # every thread's: a backward pass syncs in autograd's engine thread

Counts = namedtuple("Counts", "syncs blocked_ns step recording")
Counts.__doc__ = """Monotonic totals since the process started (a forked child's since the fork):
syncs (host-device synchronizations recorded), blocked_ns (host wall time inside them), step
(the current step; 0 is start-up, before the first step mark) and recording (whether the
schedule records the current step: a step it does not record adds nothing). Take two and
subtract the first from the second to measure a region."""


class _CountsStruct(ctypes.Structure):  # struct syncspy_counts
    _fields_ = [("syncs", ctypes.c_uint64), ("blocked_ns", ctypes.c_uint64),
                ("step", ctypes.c_uint64), ("recording", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32)]


_UNRESOLVED = object()
_step_fn = _UNRESOLVED
_counts_fn = _UNRESOLVED


def _symbol(name):
    try:
        return getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None


def _lookup():
    global _step_fn
    if _step_fn is _UNRESOLVED:
        fn = _symbol("syncspy_step")
        if fn is not None:
            fn.restype = None
            fn.argtypes = []
        _step_fn = fn
    return _step_fn


def _lookup_counts():
    global _counts_fn
    if _counts_fn is _UNRESOLVED:
        fn = _symbol("syncspy_counts")
        if fn is not None:
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_int, ctypes.POINTER(_CountsStruct), ctypes.c_size_t]
        _counts_fn = fn
    return _counts_fn


def step():
    """Marks the end of a training step (syncspy_step in agent/syncspy.h); a no-op without the agent."""
    fn = _lookup()
    if fn is not None:
        fn()


def enabled():
    """Whether the syncspy agent is loaded in this process."""
    return _lookup() is not None


def counts(scope=SCOPE_THREAD):
    """The agent's counts so far (syncspy_counts in agent/syncspy.h) as a Counts, for the calling
    thread (SCOPE_THREAD) or every thread of the process (SCOPE_PROCESS); None without the
    agent. Lock-free in the agent: cheap enough to call around every region of a loop."""
    fn = _lookup_counts()
    if fn is None:
        return None
    c = _CountsStruct()
    if fn(int(scope), ctypes.byref(c), ctypes.sizeof(c)) != 0:
        raise ValueError("scope must be syncspy.SCOPE_THREAD or syncspy.SCOPE_PROCESS, not %r" % (scope,))
    return Counts(c.syncs, c.blocked_ns, c.step, bool(c.recording))
