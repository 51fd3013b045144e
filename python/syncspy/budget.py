"""syncspy.budget: a sync budget for a region of code.

    with syncspy.budget(max_syncs=0):                # this thread (and autograd's), none allowed
        loss = criterion(model(x), y)
        loss.backward()
    with syncspy.budget(2, threads="all", allow=["train.py:88"]):
        ...

At the end of the region, when it made more host-device syncs than max_syncs, it raises
SyncBudgetExceeded (an AssertionError) naming each line that synced (file:line, API, how many,
the time the host waited, the hint). threads="this" (the default) counts the syncs of the
calling thread and of autograd's engine threads (pt_autograd_*, where the backward passes it
calls run); a deliberate sync in any other thread does not count. threads="all" counts every
thread's. allow= lists "FILE:LINE" whose syncs do not count (FILE a path or its tail, e.g.
"train.py:88" or "pkg/loss.py:12"; the line is the site's innermost user frame, as the report
groups it, or for a backward-pass sync the forward line that created the node).

The counts are the agent's (LD_PRELOAD=libsyncspy.so): without it budget() raises
AgentNotLoaded instead of passing; a region that ran in steps SYNCSPY_SCHEDULE does not record
raises NotRecorded. The region costs the agent nothing until it syncs; naming the lines (only
when the budget is exceeded, or when .sites is read) waits for the agent's own thread."""
import os
import threading
from typing import Iterable, Optional, Union

from . import _agent

__all__ = ["budget", "Budget", "Site", "SyncspyError", "AgentNotLoaded", "NotRecorded",
           "SyncBudgetExceeded"]

AUTOGRAD_THREAD_PREFIX = "pt_autograd_"  # torch's engine threads (one per device)


class SyncspyError(RuntimeError):
    """The budget cannot be checked."""


class AgentNotLoaded(SyncspyError):
    """The syncspy agent is not loaded in this process (or is too old for budgets)."""


class NotRecorded(SyncspyError):
    """Part of the region ran where the agent did not count: in a step SYNCSPY_SCHEDULE does not
    record, or in a child forked inside the region."""


class SyncBudgetExceeded(AssertionError):
    """The region made more syncs than its budget: .syncs, .max_syncs, .sites (the counted ones)."""

    def __init__(self, message, syncs, max_syncs, sites):
        super().__init__(message)
        self.syncs = syncs
        self.max_syncs = max_syncs
        self.sites = sites


NOT_LOADED = ("the syncspy agent is not loaded in this process, so no sync can be counted: run "
              "it with LD_PRELOAD=/path/to/libsyncspy.so (or `syncspy run -- ...`)")


class Site:
    """The syncs a region made at one site (one API and stack): where (the site's line as the
    report groups it), how many, how long the host waited, and in which threads."""

    def __init__(self, site, syncs, blocked_ns, threads, info):
        self.site = site
        self.syncs = syncs
        self.blocked_ns = blocked_ns
        self.threads = sorted(threads)
        info = info or {}
        self.named = bool(info)
        self.api = info.get("api", "")
        self.kind = info.get("kind", "")  # "line", "backward", "node" (agent/syncspy.h)
        self.file = info.get("file", "")
        self.line = info.get("line", 0)
        self.function = info.get("function", "")
        self.module = info.get("module", "")
        self.node = info.get("node", "")
        self.hint = info.get("hint", "")
        self.allowed = False

    def where(self):
        """"FILE:LINE" (for a native frame without a line: its function and module; "" when the
        stack has no user frame)."""
        if not self.named:
            return "site #%d (not itemized)" % self.site if self.site == 0 else \
                   "site #%d (its frames could not be named)" % self.site
        if self.file:
            return "%s:%d" % (self.file, self.line) if self.line else self.file
        if self.function:
            return "%s (%s)" % (self.function, os.path.basename(self.module) or "?")
        return ""

    def _at(self):
        where = self.where()
        if self.named and self.file and self.function:
            return "%s  %s" % (self.function, where)
        return where

    def describe(self):
        """One line: how many syncs, which API, where, how long the host waited, which threads."""
        text = "%d x %s " % (self.syncs, self.api or "sync")
        at = self._at()
        if self.kind == "backward":
            text += "in the backward of %s, created at %s" % (self.node, at)
        elif self.kind == "node":
            text += "in the backward of %s (autograd's thread; its forward line was not recorded)" % self.node
            if at:
                text += ", at " + at
        elif not self.named:
            text += at
        else:
            text += "at " + (at or "(no user frame)")
        text += ", %.3f ms" % (self.blocked_ns / 1e6)
        others = [t for t in self.threads if t]
        if others:
            text += " [%s]" % ", ".join(others)
        return text

    def matches(self, entry):
        return _allow_matches(entry, self)

    def __repr__(self):
        return "<syncspy.Site %s>" % self.describe()


def _parse_allow(entry):
    """"FILE:LINE" -> (FILE, LINE); ValueError otherwise."""
    text = str(entry)
    file, sep, line = text.rpartition(":")
    if not sep or not file or not line.isdigit() or int(line) <= 0:
        raise ValueError("syncspy: allow entries are FILE:LINE (e.g. 'train.py:88'), not %r" % text)
    return file, int(line)


def _allow_matches(entry, site):
    file, line = entry
    if not site.named or site.line != line or not site.file:
        return False
    path = site.file
    return path == file or path.endswith("/" + file.lstrip("/")) or \
        (os.path.isabs(file) and os.path.realpath(path) == os.path.realpath(file))


class Budget:
    """A context manager (see the module's doc; made by syncspy.budget()). After the region:
    .syncs (counted), .allowed_syncs, .blocked_ns, .sites (every site that synced, named on first
    use)."""

    def __init__(self, max_syncs: int = 0, *, threads: str = "this",
                 allow: "Union[str, Iterable[str]]" = (), name: "Optional[str]" = None) -> None:
        if not isinstance(max_syncs, int) or isinstance(max_syncs, bool) or max_syncs < 0:
            raise ValueError("syncspy.budget: max_syncs is a whole number >= 0, not %r" % (max_syncs,))
        if threads not in ("this", "all"):
            raise ValueError("syncspy.budget: threads is 'this' or 'all', not %r" % (threads,))
        if isinstance(allow, str):
            allow = [allow]
        self.max_syncs = max_syncs
        self.threads = threads
        self.allow = [_parse_allow(a) for a in allow]
        self.name = name or "this region"
        self.syncs = self.allowed_syncs = self.blocked_ns = 0
        self._counts = None
        self._sites = None
        self._open = False

    # ---- the region --------------------------------------------------------------------------

    def __enter__(self):
        fns = _agent.functions()
        if "syncspy_step" not in fns:
            raise AgentNotLoaded("syncspy.budget: " + NOT_LOADED)
        if "syncspy_tally_begin" not in fns:
            raise AgentNotLoaded("syncspy.budget: the loaded syncspy agent has no sync budgets "
                                 "(an older libsyncspy.so)")
        if fns["syncspy_tally_begin"]() < _agent.TALLY_VERSION:
            raise SyncspyError("syncspy.budget: the agent does not count now (the process is "
                               "exiting, or the agent is off)")
        self._open = True
        self._pid = os.getpid()
        self._tid = threading.get_native_id()
        self._recording = bool(fns["syncspy_recording"]())
        self._unrecorded = fns["syncspy_unrecorded_steps"]()
        self._start = _agent.tallies(_agent.ALL_THREADS)
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._open:
            return False
        fns = _agent.functions()
        if os.getpid() != self._pid:  # a forked child: its agent counts nothing of the parent's region
            self._open = False
            if exc_type is not None:
                return False
            raise NotRecorded("syncspy.budget: %s began in process %d before a fork; the syncs of this "
                              "child (pid %d) in it were not counted" % (self.name, self._pid, os.getpid()))
        try:
            end = _agent.tallies(_agent.ALL_THREADS)
            unrecorded = fns["syncspy_unrecorded_steps"]()
        finally:
            fns["syncspy_tally_end"]()
            self._open = False
        self._counts = self._difference(self._start, end)
        self.syncs = sum(c[0] for c in self._counts.values())
        self.blocked_ns = sum(c[1] for c in self._counts.values())
        if exc_type is not None:
            return False  # the region's own error comes first
        if not self._recording or unrecorded != self._unrecorded:
            raise NotRecorded("syncspy.budget: %s ran in steps that SYNCSPY_SCHEDULE does not record, "
                              "so its syncs there were not counted: unset SYNCSPY_SCHEDULE (or make "
                              "it record these steps) to check a budget" % self.name)
        # .syncs and .allowed_syncs do not depend on the budget: the allowed lines are taken
        # out whenever there are any (naming the sites waits for the agent's thread: only then)
        if self.allow and self.syncs:
            self.allowed_syncs = sum(s.syncs for s in self.sites if s.allowed)
            self.syncs -= self.allowed_syncs
        if self.syncs > self.max_syncs:
            raise SyncBudgetExceeded(self.message(), self.syncs, self.max_syncs,
                                     [s for s in self.sites if not s.allowed])
        return False

    def _difference(self, start, end):
        """{site: [syncs, blocked_ns, thread names]} of the counted threads, end minus start."""
        before = {(t[0], t[2]): (t[3], t[4]) for t in start}
        counts = {}
        for thread, tid, site, syncs, blocked_ns, name in end:
            if self.threads == "this" and tid != self._tid and not name.startswith(AUTOGRAD_THREAD_PREFIX):
                continue
            s0, b0 = before.get((thread, site), (0, 0))
            if syncs <= s0:
                continue
            c = counts.setdefault(site, [0, 0, set()])
            c[0] += syncs - s0
            c[1] += max(blocked_ns - b0, 0)
            c[2].add("" if tid == self._tid else "%s tid %d" % (name or "thread", tid))
        return counts

    # ---- what it found -----------------------------------------------------------------------

    @property
    def sites(self):
        """The sites that synced in the region (those of the counted threads), heaviest first;
        each names its line (the first use waits for the agent's thread to name them)."""
        if self._counts is None:
            return []
        if self._sites is None:
            by_line = {}
            for site, (syncs, ns, threads) in self._counts.items():
                info = _agent.describe(site) if site else None
                # the sites of one line and API are one (a loop unrolled, two paths to one call)
                key = tuple(sorted(info.items())) if info else ("site", site)
                s = by_line.get(key)
                if s is None:
                    by_line[key] = Site(site, syncs, ns, threads, info)
                else:
                    s.syncs += syncs
                    s.blocked_ns += ns
                    s.threads = sorted(set(s.threads) | set(threads))
            out = list(by_line.values())
            for s in out:
                s.allowed = any(_allow_matches(a, s) for a in self.allow)
            out.sort(key=lambda s: (-s.syncs, -s.blocked_ns, s.where()))
            self._sites = out
        return self._sites

    def message(self):
        counted = [s for s in self.sites if not s.allowed]
        scope = "this thread and autograd's" if self.threads == "this" else "all threads"
        lines = ["syncspy: %s made %d host-device sync%s (%s), more than its budget of %d:" % (
            self.name, self.syncs, "" if self.syncs == 1 else "s", scope, self.max_syncs)]
        for s in counted:
            lines.append("  " + s.describe())
            if s.hint:
                lines.append("      hint: " + s.hint)
        if self.allowed_syncs:
            lines.append("  (%d allowed sync%s not counted: %s)" % (
                self.allowed_syncs, "" if self.allowed_syncs == 1 else "s",
                ", ".join(sorted({s.where() for s in self.sites if s.allowed}))))
        return "\n".join(lines)


def budget(max_syncs: int = 0, *, threads: str = "this", allow: Union[str, Iterable[str]] = (),
           name: Optional[str] = None) -> Budget:
    """A sync budget for a region (see the module's doc): `with syncspy.budget(0): ...` raises
    SyncBudgetExceeded at the region's end when it made more than max_syncs host-device syncs."""
    return Budget(max_syncs, threads=threads, allow=allow, name=name)
