"""syncspy.pytest_plugin: sync budgets for tests (registered through the pytest11 entry point of
python/pyproject.toml, so installing syncspy is enough).

    @pytest.mark.sync_budget(0)                               # no host-device sync in this test
    @pytest.mark.sync_budget(2, threads="all", allow=["loss.py:40"])
    pytest --sync-budget 0 tests/                             # every test without a marker too

The region is the test function's call (its fixtures' set-up and teardown are left out, as
start-up is left out of a training step). A test that makes more syncs than its budget fails
with the lines that synced (syncspy.budget's message). With the agent not loaded
(LD_PRELOAD=.../libsyncspy.so) every test with a budget fails saying so, and the header of the
run says whether it is loaded: a budget never passes unchecked."""
import pytest

from . import _agent
from .budget import NOT_LOADED, SyncBudgetExceeded, SyncspyError, budget

MARKER = "sync_budget"


def pytest_addoption(parser):
    group = parser.getgroup("syncspy", "host-device sync budgets (syncspy)")
    group.addoption("--sync-budget", type=int, default=None, metavar="N",
                    help="fail every test (without its own sync_budget marker) whose call makes "
                         "more than N host-device syncs; needs the syncspy agent preloaded")
    group.addoption("--sync-budget-threads", choices=("this", "all"), default="this",
                    help="whose syncs --sync-budget counts: the test's thread and autograd's "
                         "engine threads (this, the default), or every thread (all)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sync_budget(max_syncs, *, threads='this', allow=()): fail the test when its "
        "call makes more than max_syncs host-device syncs (syncspy agent; allow: 'FILE:LINE' "
        "whose syncs do not count)")
    n = config.getoption("--sync-budget")
    if n is not None and n < 0:
        raise pytest.UsageError("--sync-budget wants a whole number >= 0, not %d" % n)


def pytest_report_header(config):
    if _agent.loaded():
        return "syncspy: agent loaded, sync budgets are checked"
    return "syncspy: agent not loaded (LD_PRELOAD=.../libsyncspy.so): tests with a sync budget fail"


def _budget_for(item):
    mark = item.get_closest_marker(MARKER)
    if mark is not None:
        if len(mark.args) > 1:
            pytest.fail("%s: sync_budget takes one max_syncs, then threads= and allow=" % item.nodeid,
                        pytrace=False)
        max_syncs = mark.args[0] if mark.args else mark.kwargs.get("max_syncs", 0)
        kwargs = {k: v for k, v in mark.kwargs.items() if k != "max_syncs"}
        unknown = set(kwargs) - {"threads", "allow"}
        if unknown:
            pytest.fail("%s: sync_budget has no option %s" % (item.nodeid, ", ".join(sorted(unknown))),
                        pytrace=False)
        try:
            return budget(max_syncs, name="test " + item.name, **kwargs)
        except ValueError as e:
            pytest.fail("%s: %s" % (item.nodeid, e), pytrace=False)
    n = item.config.getoption("--sync-budget")
    if n is None:
        return None
    return budget(n, threads=item.config.getoption("--sync-budget-threads"), name="test " + item.name)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    b = _budget_for(item)
    if b is None:
        return (yield)
    if not _agent.loaded():
        pytest.fail("syncspy: %s has a sync budget, but %s" % (item.nodeid, NOT_LOADED), pytrace=False)
    problem = None
    try:
        b.__enter__()
    except SyncspyError as e:
        problem = str(e)
    if problem:
        pytest.fail(problem, pytrace=False)
    try:
        result = yield
    except BaseException as e:
        b.__exit__(type(e), e, e.__traceback__)  # the test's own failure is the one shown
        raise
    try:
        b.__exit__(None, None, None)
    except (SyncBudgetExceeded, SyncspyError) as e:
        problem = str(e)
    if problem:
        pytest.fail(problem, pytrace=False)
    return result
