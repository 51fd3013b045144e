"""syncspy: the Python side of syncspy's public API.

    import syncspy
    syncspy.step()      # ends a training step (explicit marks win over automatic detection)
    syncspy.enabled()   # True when the agent is preloaded (LD_PRELOAD=.../libsyncspy.so)

Both look up the agent's exported C function `syncspy_step` in the process (ctypes.CDLL(None)),
once; without the agent, step() does nothing and enabled() is False."""
import ctypes

__all__ = ["step", "enabled"]

_UNRESOLVED = object()
_step_fn = _UNRESOLVED


def _lookup():
    global _step_fn
    if _step_fn is _UNRESOLVED:
        try:
            fn = ctypes.CDLL(None).syncspy_step
            fn.restype = None
            fn.argtypes = []
        except (AttributeError, OSError):
            fn = None
        _step_fn = fn
    return _step_fn


def step():
    """Marks the end of a training step (syncspy_step in agent/syncspy.h); a no-op without the agent."""
    fn = _lookup()
    if fn is not None:
        fn()


def enabled():
    """Whether the syncspy agent is loaded in this process."""
    return _lookup() is not None
