"""syncspy.pytest_plugin: sync budgets for tests (registered through the pytest11 entry point of
python/pyproject.toml, so installing syncspy is enough).

    @pytest.mark.sync_budget(0)                               # no host-device sync in this test
    @pytest.mark.sync_budget(2, threads="all", allow=["loss.py:40"])
    pytest --sync-budget 0 tests/                             # every test without a marker too

Or in the project's settings, where the command line wins over pytest's ini files, and those over
pyproject.toml's [tool.syncspy] (the table `syncspy run` and `syncspy check` read too):

    [tool.syncspy]                          # pyproject.toml
    sync_budget_default = 0                 # as --sync-budget 0
    sync_budget_threads = "this"            # as --sync-budget-threads
    allow = ["loss.py:40"]                  # lines whose syncs no budget counts

    [pytest]                                # pytest.ini (or [tool.pytest.ini_options])
    sync_budget_default = 0
    sync_budget_allow = loss.py:40

The region is the test function's call (its fixtures' set-up and teardown are left out, as
start-up is left out of a training step). A test that makes more syncs than its budget fails
with the lines that synced (syncspy.budget's message). With the agent not loaded
(LD_PRELOAD=.../libsyncspy.so) every test with a budget fails saying so, and the header of the
run says whether it is loaded: a budget never passes unchecked."""
import os

import pytest

from . import _agent
from .budget import NOT_LOADED, SyncBudgetExceeded, SyncspyError, budget

MARKER = "sync_budget"
TABLE = "[tool.syncspy]"


def _pyproject_table(config):
    """(path, [tool.syncspy] as a dict) of the pyproject.toml in pytest's rootdir, or (None, {})."""
    path = os.path.join(str(config.rootpath), "pyproject.toml")
    if not os.path.isfile(path):
        return None, {}
    with open(path, "rb") as f:
        raw = f.read()
    if b"tool.syncspy" not in raw:
        return path, {}
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            raise pytest.UsageError("syncspy: %s has a %s table; reading it needs Python 3.11's "
                                    "tomllib or the tomli package" % (path, TABLE))
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise pytest.UsageError("syncspy: %s: %s" % (path, e))
    table = doc.get("tool", {}).get("syncspy", {})
    if not isinstance(table, dict):
        raise pytest.UsageError("syncspy: %s: tool.syncspy is not a table" % path)
    return path, table


def _settings(config):
    """The run's default budget, its threads and the allow list, each with where it came from:
    the command line, then pytest's ini, then pyproject.toml's [tool.syncspy]."""
    path, table = _pyproject_table(config)
    where = "%s %s" % (path, TABLE)
    s = {"default": None, "threads": "this", "allow": [], "from": {}}
    n = config.getoption("--sync-budget")
    if n is not None:
        s["default"], s["from"]["default"] = n, "--sync-budget"
    elif config.getini("sync_budget_default") not in (None, ""):
        text = str(config.getini("sync_budget_default")).strip()
        if not text.isdigit():
            raise pytest.UsageError("syncspy: sync_budget_default in %s wants a whole number >= 0, "
                                    "not %r" % (config.inipath, text))
        s["default"], s["from"]["default"] = int(text), str(config.inipath)
    elif "sync_budget_default" in table:
        v = table["sync_budget_default"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise pytest.UsageError("syncspy: sync_budget_default in %s wants a whole number >= 0, "
                                    "not %r" % (where, v))
        s["default"], s["from"]["default"] = v, where
    threads = config.getoption("--sync-budget-threads")
    if threads is not None:
        s["threads"], s["from"]["threads"] = threads, "--sync-budget-threads"
    elif config.getini("sync_budget_threads"):
        s["threads"], s["from"]["threads"] = config.getini("sync_budget_threads").strip(), str(config.inipath)
    elif "sync_budget_threads" in table:
        s["threads"], s["from"]["threads"] = table["sync_budget_threads"], where
    if s["threads"] not in ("this", "all"):
        raise pytest.UsageError("syncspy: sync_budget_threads (%s) is 'this' or 'all', not %r"
                                % (s["from"]["threads"], s["threads"]))
    allow = config.getini("sync_budget_allow")
    if allow:
        s["allow"], s["from"]["allow"] = list(allow), str(config.inipath)
    elif "allow" in table:
        v = table["allow"]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise pytest.UsageError("syncspy: allow in %s wants an array of \"FILE:LINE\" strings"
                                    % where)
        s["allow"], s["from"]["allow"] = v, where
    try:
        budget(0, allow=s["allow"])  # the entries checked once, here, with the file named
    except ValueError as e:
        raise pytest.UsageError("%s (%s)" % (e, s["from"].get("allow")))
    return s


def pytest_addoption(parser):
    group = parser.getgroup("syncspy", "host-device sync budgets (syncspy)")
    group.addoption("--sync-budget", type=int, default=None, metavar="N",
                    help="fail every test (without its own sync_budget marker) whose call makes "
                         "more than N host-device syncs; needs the syncspy agent preloaded")
    group.addoption("--sync-budget-threads", choices=("this", "all"), default=None,
                    help="whose syncs --sync-budget counts: the test's thread and autograd's "
                         "engine threads (this, the default), or every thread (all)")
    parser.addini("sync_budget_default", "the sync budget of every test without its own "
                  "sync_budget marker (as --sync-budget)", default=None)
    parser.addini("sync_budget_threads", "whose syncs the default budget counts: this or all",
                  default=None)
    parser.addini("sync_budget_allow", "FILE:LINE whose syncs no budget counts", type="linelist",
                  default=[])


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sync_budget(max_syncs, *, threads='this', allow=()): fail the test when its "
        "call makes more than max_syncs host-device syncs (syncspy agent; allow: 'FILE:LINE' "
        "whose syncs do not count)")
    n = config.getoption("--sync-budget")
    if n is not None and n < 0:
        raise pytest.UsageError("--sync-budget wants a whole number >= 0, not %d" % n)
    config._syncspy = _settings(config)


def pytest_report_header(config):
    s = getattr(config, "_syncspy", None)
    said = []
    if s and s["default"] is not None:
        said.append("default budget %d (%s)" % (s["default"], s["from"]["default"]))
    if s and s["allow"]:
        said.append("allow %s (%s)" % (", ".join(s["allow"]), s["from"]["allow"]))
    tail = "; " + "; ".join(said) if said else ""
    if _agent.loaded():
        return "syncspy: agent loaded, sync budgets are checked" + tail
    return ("syncspy: agent not loaded (LD_PRELOAD=.../libsyncspy.so): tests with a sync budget "
            "fail" + tail)


def _budget_for(item):
    mark = item.get_closest_marker(MARKER)
    if mark is not None:
        if len(mark.args) > 1:
            pytest.fail("%s: sync_budget takes one max_syncs, then threads= and allow=" % item.nodeid,
                        pytrace=False)
        max_syncs = mark.args[0] if mark.args else mark.kwargs.get("max_syncs", 0)
        kwargs = {k: v for k, v in mark.kwargs.items() if k != "max_syncs"}
        settings = item.config._syncspy
        if settings["allow"]:  # the project's allow list, and the marker's own
            own = kwargs.get("allow", ())
            kwargs["allow"] = list(settings["allow"]) + ([own] if isinstance(own, str) else list(own))
        unknown = set(kwargs) - {"threads", "allow"}
        if unknown:
            pytest.fail("%s: sync_budget has no option %s" % (item.nodeid, ", ".join(sorted(unknown))),
                        pytrace=False)
        try:
            return budget(max_syncs, name="test " + item.name, **kwargs)
        except ValueError as e:
            pytest.fail("%s: %s" % (item.nodeid, e), pytrace=False)
    s = item.config._syncspy
    if s["default"] is None:
        return None
    return budget(s["default"], threads=s["threads"], allow=s["allow"], name="test " + item.name)


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
