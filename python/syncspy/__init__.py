"""syncspy: the Python side of syncspy's public API.

    import syncspy
    syncspy.step()      # ends a training step (explicit marks win over automatic detection)
    syncspy.enabled()   # True when the agent is preloaded (LD_PRELOAD=.../libsyncspy.so)
    with syncspy.budget(max_syncs=0, threads="this", allow=["train.py:88"]):
        ...             # raises SyncBudgetExceeded naming the lines when the region syncs more

They look up the agent's exported C functions (agent/syncspy.h) in the process (ctypes.CDLL(None)),
once; without the agent, step() does nothing, enabled() is False and budget() raises
AgentNotLoaded. The pytest plugin (syncspy.pytest_plugin, entry point pytest11) adds
@pytest.mark.sync_budget(N) and --sync-budget N."""
from . import _agent
from .budget import (AgentNotLoaded, NotRecorded, Site, SyncBudgetExceeded, SyncspyError,  # noqa: F401
                     budget)

__all__ = ["step", "enabled", "budget", "Site", "SyncspyError", "AgentNotLoaded", "NotRecorded",
           "SyncBudgetExceeded"]


def step():
    """Marks the end of a training step (syncspy_step in agent/syncspy.h); a no-op without the agent."""
    fn = _agent.functions().get("syncspy_step")
    if fn is not None:
        fn()


def enabled():
    """Whether the syncspy agent is loaded in this process."""
    return _agent.loaded()
