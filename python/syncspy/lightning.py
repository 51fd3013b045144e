"""syncspy.lightning: a Lightning profiler that ends syncspy's steps at Lightning's batch
boundaries and counts, per action, the host-device syncs and the time the host spent blocked
in them.

    from syncspy.lightning import SyncSpyProfiler
    trainer = Trainer(accelerator="gpu", profiler=SyncSpyProfiler())

    syncspy run -- python train.py        # the agent must be loaded from the process's start

Each action Lightning profiles (run_training_batch, [Strategy]...training_step, ...backward,
[LightningModule]...optimizer_step, [_TrainingEpochLoop].train_dataloader_next, the hooks) gets
a row in the summary Lightning prints (or writes to dirpath/filename) at the end of fit: its
calls, mean and standard deviation of its duration, its total time and share of the run, and
from the agent's counters (syncspy.counts, every thread's: a backward pass syncs in autograd's
engine thread) the syncs per call (mean and sd), the blocked time per call (mean and sd) and the
blocked share of the action's time. Actions nest as Lightning nests them: optimizer_step holds
the closure's training_step and backward.

The start of the first run_training_batch and the end of each one end a syncspy step
(syncspy.step()): start-up (step 0) is everything before Lightning's first training batch, then
each batch is a step (with the data loading before the next one), and syncspy's own exit report
counts per batch too. Explicit marks win over the agent's automatic optimizer-step detection;
marking before the first batch's optimizer step is what keeps that first automatic mark out. Without the agent (no `syncspy run`, no LD_PRELOAD) nothing is counted: the table has the
durations only and says why, and training runs as it would without a profiler.

The profiler subclasses lightning.pytorch's Profiler, or pytorch_lightning's when only that one
is imported (or installed)."""
import math
import os
import sys
import time
from collections import defaultdict

import syncspy

__all__ = ["SyncSpyProfiler"]


def _profiler_base():
    """Lightning's Profiler class: the one of the package the program uses."""
    if "pytorch_lightning" in sys.modules and "lightning.pytorch" not in sys.modules:
        from pytorch_lightning.profilers import Profiler
        return Profiler
    try:
        from lightning.pytorch.profilers import Profiler
    except ImportError:
        try:
            from pytorch_lightning.profilers import Profiler
        except ImportError:
            raise ImportError("syncspy.lightning needs Lightning (pip install lightning)") from None
    return Profiler


def _mean_sd(values):
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    mean = math.fsum(values) / n
    if n == 1:
        return mean, 0.0
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


class _ActionStats:
    __slots__ = ("durations", "syncs", "blocked_ns", "recorded_s", "unrecorded")

    def __init__(self):
        self.durations = []   # seconds, every call
        self.syncs = []       # per call, the calls made while the agent recorded
        self.blocked_ns = []
        self.recorded_s = 0.0  # the time of those calls
        self.unrecorded = 0   # calls made in a step the schedule does not record


class SyncSpyProfiler(_profiler_base()):
    """A Lightning Profiler (start/stop/summary; setup with stage, local_rank and log_dir).

    dirpath, filename: as Lightning's other profilers: with a filename the summary goes to
        dirpath/<stage>-<filename>[-<rank>].txt (dirpath defaulting to the trainer's log_dir),
        else to the log (rank zero).
    step_action: the action whose end (and first start) ends a syncspy step (default
        "run_training_batch"); None leaves the steps to the agent (its optimizer-step hook, or
        syncspy.step()).
    scope: syncspy.SCOPE_PROCESS (default: every thread's syncs, those of autograd's engine
        thread and the DataLoader's pin-memory thread included) or syncspy.SCOPE_THREAD (only
        those of the thread that runs the action)."""

    def __init__(self, dirpath=None, filename=None, step_action="run_training_batch",
                 scope=syncspy.SCOPE_PROCESS):
        super().__init__(dirpath=dirpath, filename=filename)
        if scope not in (syncspy.SCOPE_PROCESS, syncspy.SCOPE_THREAD):
            raise ValueError("scope must be syncspy.SCOPE_PROCESS or syncspy.SCOPE_THREAD")
        self.step_action = step_action
        self.scope = scope
        self._open = defaultdict(list)  # action -> stack of (t0, counts at start)
        self._stats = defaultdict(_ActionStats)
        self._t0 = time.perf_counter()
        self._marked = False
        self.agent = syncspy.enabled()

    # ---- Lightning's Profiler API ----------------------------------------------------------

    def start(self, action_name):
        if action_name == self.step_action and not self._marked:
            self._marked = True
            syncspy.step()  # start-up ends where training starts
        self._open[action_name].append((time.perf_counter(), syncspy.counts(self.scope)))

    def stop(self, action_name):
        t1 = time.perf_counter()
        c1 = syncspy.counts(self.scope)
        opened = self._open.get(action_name)
        if not opened:
            return  # a stop without its start: nothing to measure (never an error in training)
        t0, c0 = opened.pop()
        st = self._stats[action_name]
        st.durations.append(t1 - t0)
        if c0 is not None and c1 is not None:
            if c0.recording and c1.recording:
                st.syncs.append(c1.syncs - c0.syncs)
                st.blocked_ns.append(c1.blocked_ns - c0.blocked_ns)
                st.recorded_s += t1 - t0
            else:
                st.unrecorded += 1
        if action_name == self.step_action:
            syncspy.step()

    def stats(self):
        """{action: dict} of what the summary shows: calls, mean_s, sd_s, total_s, share (of the
        profiler's lifetime), and with the agent recorded_calls, syncs_per_call, syncs_sd,
        blocked_ms_per_call, blocked_ms_sd and blocked_share (of the recorded calls' time);
        those are None without the agent."""
        wall = time.perf_counter() - self._t0
        out = {}
        for action, st in self._stats.items():
            mean, sd = _mean_sd(st.durations)
            total = math.fsum(st.durations)
            row = {"calls": len(st.durations), "mean_s": mean, "sd_s": sd, "total_s": total,
                   "share": total / wall if wall > 0 else 0.0, "recorded_calls": None,
                   "syncs_per_call": None, "syncs_sd": None, "blocked_ms_per_call": None,
                   "blocked_ms_sd": None, "blocked_share": None}
            if self.agent:
                n = len(st.syncs)
                s_mean, s_sd = _mean_sd(st.syncs)
                b_mean, b_sd = _mean_sd([b / 1e6 for b in st.blocked_ns])
                rec_time = st.recorded_s
                row.update(recorded_calls=n, syncs_per_call=s_mean, syncs_sd=s_sd,
                           blocked_ms_per_call=b_mean, blocked_ms_sd=b_sd,
                           blocked_share=(math.fsum(st.blocked_ns) / 1e9 / rec_time) if rec_time > 0 else 0.0)
            out[action] = row
        return out

    def summary(self):
        sep = os.linesep
        stats = self.stats()
        title = (f"{self._stage.upper()} " if self._stage is not None else "") + "Profiler Report (syncspy)"
        if self._local_rank is not None:
            title += f", rank {self._local_rank}"
        lines = [title]
        if not self.agent:
            lines.append("syncspy: the agent is not loaded in this process, so no sync was counted "
                         "(run the program under `syncspy run -- python ...`); durations only")
        elif self.scope == syncspy.SCOPE_PROCESS:
            lines.append("syncs and blocked time per call: every thread's (autograd's engine thread "
                         "included) between the action's start and its end; actions nest as "
                         "Lightning nests them")
        else:
            lines.append("syncs and blocked time per call: the thread that ran the action")
        if not stats:
            lines.append("(no action was profiled)")
            return sep.join(lines) + sep
        order = sorted(stats.items(), key=lambda kv: (-(kv[1]["blocked_share"] or 0.0) * kv[1]["total_s"],
                                                      -kv[1]["total_s"], kv[0]))
        head = ("Action", "Calls", "Mean (s)", "Std (s)", "Total (s)", "Time %",
                "Syncs/call", "Syncs sd", "Blocked/call", "Blocked sd", "Blocked %")
        rows = []
        for action, r in order:
            if r["syncs_per_call"] is None:
                sync_cols = ("-", "-", "-", "-", "-")
            else:
                sync_cols = (f"{r['syncs_per_call']:.2f}", f"{r['syncs_sd']:.2f}",
                             _ms(r["blocked_ms_per_call"]), _ms(r["blocked_ms_sd"]),
                             f"{100 * r['blocked_share']:.1f}")
            rows.append((action, str(r["calls"]), f"{r['mean_s']:.5f}", f"{r['sd_s']:.5f}",
                         f"{r['total_s']:.4f}", f"{100 * r['share']:.1f}") + sync_cols)
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]

        def fmt(cols):
            return "|  " + "  |  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i])
                                        for i, c in enumerate(cols)) + "  |"
        rule = "-" * len(fmt(head))
        lines += [rule, fmt(head), rule] + [fmt(r) for r in rows] + [rule]
        unrecorded = {a: st.unrecorded for a, st in self._stats.items() if st.unrecorded}
        if self.agent and unrecorded:
            lines.append("syncs per call are over the calls made in steps the schedule (SYNCSPY_SCHEDULE) "
                         "records; %d calls were made in other steps" % sum(unrecorded.values()))
        return sep.join(lines) + sep


def _ms(v):
    return f"{v:.3f} ms"
