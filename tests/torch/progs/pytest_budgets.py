"""tests/torch/progs/pytest_budgets.py: tests for pytest to run on real torch with syncspy's
plugin (tests/torch/test_torch_budget.py checks what pytest says of each). Not collected by the
unittest runner (no test_ prefix). The "# sync: NAME" comments mark the lines that sync.

Each test name says what its call does; EXPECT (below) what the plugin makes of it with the agent
preloaded. The syncs torch's own torch.cuda.set_sync_debug_mode("error") lets through are made
with that mode on: the test body completes (torch raises nothing), the budget fails it."""
import re
import threading

import pytest
import syncspy
import torch

DEV = torch.device("cuda")


def marked(name):
    """The line of this file marked "# sync: name"."""
    with open(__file__) as f:
        return next(n for n, text in enumerate(f, 1) if re.search(r"# sync: %s\s*$" % name, text))

# test name -> its outcome under the agent (the marker's budget, or the run's --sync-budget)
EXPECT = {
    "test_nonzero": "failed",
    "test_clean_step": "passed",
    "test_pageable_non_blocking_copy": "failed",
    "test_synchronize": "failed",
    "test_empty_cache": "failed",
    "test_torch_mode_catches_nonzero": "passed",
    "test_other_threads_deliberate_sync": "passed",
    "test_other_threads_deliberate_sync_all": "failed",
    "test_backward_in_autograds_thread": "failed",
    "test_allowed_item": "passed",
    "test_one_item_within_one": "passed",
    "test_region_in_code": "passed",
    "test_unmarked_nonzero": "passed",  # failed with --sync-budget 0
}


def data():
    x = torch.randn(64, device=DEV)
    torch.cuda.synchronize()  # set-up of the data: not the test's call (fixtures are not)
    return x


@pytest.fixture
def x():
    return data()


@pytest.fixture
def strict_torch():
    """torch's own sync check, raising, for the test's call."""
    torch.cuda.set_sync_debug_mode("error")
    yield
    torch.cuda.set_sync_debug_mode(0)


@pytest.mark.sync_budget(0)
def test_nonzero(x):
    torch.nonzero(x > 0)  # sync: nonzero


@pytest.mark.sync_budget(0)
def test_clean_step(x):
    w = torch.ones(64, device=DEV, requires_grad=True)
    loss = torch.where(x > 0, x * w, torch.zeros_like(x)).sum()
    loss.backward()
    pinned = torch.ones(64).pin_memory()
    pinned.to(DEV, non_blocking=True)  # pinned memory: no sync


@pytest.mark.sync_budget(0)
def test_pageable_non_blocking_copy(x, strict_torch):
    host = torch.ones(1 << 16)  # pageable
    host.to(DEV, non_blocking=True)  # sync: pageable


@pytest.mark.sync_budget(0)
def test_synchronize(x, strict_torch):
    torch.cuda.synchronize()  # sync: synchronize


@pytest.mark.sync_budget(0)
def test_empty_cache(x, strict_torch):
    big = torch.empty(64 << 20, dtype=torch.uint8, device=DEV)
    del big
    torch.cuda.empty_cache()  # sync: empty_cache


def test_torch_mode_catches_nonzero(x, strict_torch):
    """The control: torch's mode does raise for a sync it knows."""
    with pytest.raises(RuntimeError, match="synchroniz"):
        torch.nonzero(x > 0)


def _deliberate(started, release):
    started.set()
    release.wait()
    torch.cuda.synchronize()  # sync: deliberate


def other_thread_sync():
    started, release = threading.Event(), threading.Event()
    t = threading.Thread(target=_deliberate, args=(started, release))
    t.start()
    started.wait()
    return t, release


@pytest.mark.sync_budget(0)
def test_other_threads_deliberate_sync(x):
    t, release = other_thread_sync()
    release.set()
    (x * 2).sum()
    t.join()  # its sync was made during the test's call


@pytest.mark.sync_budget(0, threads="all")
def test_other_threads_deliberate_sync_all(x):
    t, release = other_thread_sync()
    release.set()
    (x * 2).sum()
    t.join()


@pytest.mark.sync_budget(1)
def test_backward_in_autograds_thread(x):
    p = torch.ones(8, 8, device=DEV, requires_grad=True)
    mask = torch.ones(8, 8, device=DEV) > 0
    loss = p[mask].sum()  # sync: masked
    loss.backward()  # its IndexBackward0 syncs in autograd's engine thread


@pytest.mark.sync_budget(0, allow=["progs/pytest_budgets.py:%d" % marked("allowed")])
def test_allowed_item(x):
    x.sum().item()  # sync: allowed


@pytest.mark.sync_budget(1)
def test_one_item_within_one(x):
    x.sum().item()


def test_region_in_code(x):
    with syncspy.budget(0, threads="this") as b:
        (x * 3).sum()
    assert b.syncs == 0
    with pytest.raises(syncspy.SyncBudgetExceeded) as e:
        with syncspy.budget(1):
            for _ in range(3):
                x.max().item()  # sync: region
    assert e.value.syncs == 3
    (site,) = e.value.sites
    assert (site.api, site.syncs, site.line) == ("cudaStreamSynchronize", 3, marked("region"))
    assert "pytest_budgets.py:%d" % marked("region") in str(e.value)


def test_unmarked_nonzero(x):
    torch.nonzero(x > 0)  # sync: unmarked
