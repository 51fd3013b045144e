"""syncspy: the Python side of syncspy's public API.

    import syncspy
    syncspy.step()      # ends a training step (explicit marks win over automatic detection)
    syncspy.start(steps=100)  # records the next 100 steps (as `syncspy start` from outside)
    syncspy.stop()      # ends what start() began, at the next step boundary
    syncspy.enabled()   # True when the agent is loaded (syncspy run, or LD_PRELOAD=.../libsyncspy.so)
    syncspy.counts()    # the syncs and blocked time counted so far (None without the agent)
    with syncspy.budget(max_syncs=0, threads="this", allow=["train.py:88"]):
        ...             # raises SyncBudgetExceeded naming the lines when the region syncs more

They look up the agent's exported C functions (agent/syncspy.h) in the process (ctypes.CDLL(None)),
once; without the agent, step() does nothing, enabled() is False, counts() is None and budget()
raises AgentNotLoaded. Nothing here loads the agent: it has to be there from the process's start
to see every CUDA call. The pytest plugin (syncspy.pytest_plugin, entry point pytest11) adds
@pytest.mark.sync_budget(N) and --sync-budget N."""
import ctypes as _ctypes
from typing import NamedTuple as _NamedTuple, Optional as _Optional

from . import _agent
from .budget import (AgentNotLoaded, Budget, NotRecorded, Site, SyncBudgetExceeded,
                     SyncspyError, budget)

__version__ = "0.1.0"  # the same as the agent's and the program's (cli/version.h; a test checks)

__all__ = ["__version__", "step", "start", "stop", "enabled", "counts", "Counts", "SCOPE_THREAD", "SCOPE_PROCESS",
           "budget", "Budget", "Site", "SyncspyError", "AgentNotLoaded", "NotRecorded",
           "SyncBudgetExceeded"]

SCOPE_THREAD = 0   # the calling thread's syncs (SYNCSPY_SCOPE_THREAD)
SCOPE_PROCESS = 1  # every thread's: a backward pass syncs in autograd's engine thread

class Counts(_NamedTuple):
    """Monotonic totals since the process started (a forked child's since the fork): syncs
    (host-device synchronizations recorded, torch.compile's own left out), blocked_ns (host wall
    time inside them), step (the current step; 0 is start-up, before the first step mark) and
    recording (whether the schedule records the current step: a step it does not record adds
    nothing). Take two and subtract the first from the second to measure a region."""
    syncs: int
    blocked_ns: int
    step: int
    recording: bool


def step() -> None:
    """Marks the end of a training step (syncspy_step in agent/syncspy.h); a no-op without the agent."""
    fn = _agent.functions().get("syncspy_step")
    if fn is not None:
        fn()


def start(steps: "_Optional[int]" = None) -> bool:
    """Records steps from the next step boundary on (syncspy_start in agent/syncspy.h): steps of
    them, or (None) until stop(); besides those SYNCSPY_SCHEDULE records (SYNCSPY_SCHEDULE=off:
    none but these). summary.json and the report name their cause "syncspy.start()". Returns
    True when the agent took the request, False without the agent (nothing is recorded then)."""
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise TypeError("steps must be a whole number or None, not %r" % (steps,))
        if not 1 <= steps <= 10**9:
            raise ValueError("steps must be from 1 to 1000000000 (None: until stop()), not %d" % steps)
    fn = _agent.functions().get("syncspy_start")
    return fn is not None and fn(steps or 0) == 0


def stop() -> bool:
    """Ends, at the next step boundary, the recording start() (or `syncspy start`) began; the
    schedule's own steps are still recorded. True when the agent took it, False without it."""
    fn = _agent.functions().get("syncspy_stop")
    return fn is not None and fn() == 0


def enabled() -> bool:
    """Whether the syncspy agent is loaded in this process."""
    return _agent.loaded()


def counts(scope: int = SCOPE_THREAD) -> "_Optional[Counts]":
    """The agent's counts so far (syncspy_counts in agent/syncspy.h) as a Counts, for the calling
    thread (SCOPE_THREAD) or every thread of the process (SCOPE_PROCESS); None without the
    agent. Lock-free in the agent: cheap enough to call around every region of a loop."""
    fn = _agent.functions().get("syncspy_counts")
    if fn is None:
        return None
    c = _agent.CountsStruct()
    if fn(int(scope), _ctypes.byref(c), _ctypes.sizeof(c)) != 0:
        raise ValueError("scope must be syncspy.SCOPE_THREAD or syncspy.SCOPE_PROCESS, not %r" % (scope,))
    return Counts(c.syncs, c.blocked_ns, c.step, bool(c.recording))
