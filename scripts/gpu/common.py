"""scripts/gpu/common.py: the training-loop harness that the GPU check's cases share.

A case builds its model and a step function (one optimizer step, its syncs on lines marked
`# sync: NAME`), then calls run(). Modes (--mode):

  plain      the loop alone; scripts/gpu-check.sh runs it with and without LD_PRELOAD=libsyncspy.so
  profiler   the loop under torch.profiler.profile(activities=[CPU, CUDA], with_stack=True); after
             it, the cudaStreamSynchronize / cudaMemcpy* / ... events, with the case lines on the
             Python stacks of the ops above them
  syncdebug  the loop with torch.cuda.set_sync_debug_mode("warn"); every warning, with the case
             lines on the Python stack when it was issued

Every mode times each step on the host (perf_counter, no added sync: a sync added here would be
counted by syncspy) and writes --metrics (default $GPUCHECK_METRICS) as JSON. Nothing is printed."""
import argparse
import json
import os
import re
import statistics
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import check  # noqa: E402  (the marker reader; check.py imports no torch)

SYNC_EVENT_PREFIXES = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                       "cudaMemcpy", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
                       "cuMemcpy")
STACK_ENTRY_RE = re.compile(r"^\s*(?P<file>.+?)\((?P<line>\d+)\):\s*(?P<func>.*)$")


def parse_args(doc, flags=None):
    """The common options plus the case's own boolean flags ({name: help})."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    p.add_argument("--mode", choices=("plain", "profiler", "syncdebug"), default="plain")
    p.add_argument("--steps", type=int, default=30, help="optimizer steps (default 30)")
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the timings (default 5)")
    p.add_argument("--metrics", default=os.environ.get("GPUCHECK_METRICS", ""),
                   help="JSON file for the timings and findings (default $GPUCHECK_METRICS)")
    for name, text in (flags or {}).items():
        p.add_argument("--" + name, action="store_true", help=text)
    args = p.parse_args()
    args.warmup = max(0, min(args.warmup, args.steps - 1))
    return args


def write_json(path, doc):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, path)


def versions():
    out = {"python": sys.version.split()[0]}
    try:
        import torch
        out["torch"] = torch.__version__
        out["torch_cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            out["device"] = torch.cuda.get_device_name()
    except Exception as exc:  # noqa: BLE001  (recorded, never fatal)
        out["torch_error"] = repr(exc)
    timm = sys.modules.get("timm")
    if timm is not None:
        out["timm"] = getattr(timm, "__version__", "?")
    return out


def case_markers(case_file):
    """({line: marker name}, basename) of a case file."""
    marks = check.markers(case_file)
    return {line: name for name, m in marks.items() for line in m["lines"]}, os.path.basename(case_file)


class SyncDebugCapture:
    """torch.cuda.set_sync_debug_mode("warn") with every warning kept (filter "always") and
    grouped by where it was issued and the innermost case-file line on the Python stack."""

    def __init__(self, case_file):
        self.line_marks, self.base = case_markers(case_file)
        self.groups = {}
        self.total = 0
        self.sync_warnings = 0
        self.markers_found = set()
        self._cm = None

    def start(self):
        import torch
        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("always")
        warnings.showwarning = self._show
        torch.cuda.set_sync_debug_mode("warn")

    def stop(self):
        import torch
        torch.cuda.set_sync_debug_mode("default")
        if self._cm is not None:
            self._cm.__exit__(None, None, None)
            self._cm = None

    def _show(self, message, category, filename, lineno, file=None, line=None):
        text = str(message)
        is_sync = "called a synchronizing CUDA operation" in text  # not the "prototype" notice
        self.total += 1
        self.sync_warnings += is_sync
        case_lines = []
        f = sys._getframe(1)
        depth = 0
        while f is not None and depth < 100:
            if os.path.basename(f.f_code.co_filename) == self.base:
                case_lines.append(f.f_lineno)
            f = f.f_back
            depth += 1
        innermost = case_lines[0] if case_lines else None
        marker = self.line_marks.get(innermost)
        if is_sync and marker:
            self.markers_found.add(marker)
        key = (is_sync, f"{os.path.basename(filename)}:{lineno}", innermost, marker,
               text.splitlines()[0][:120] if text else "")
        self.groups[key] = self.groups.get(key, 0) + 1

    def result(self, steps):
        groups = sorted(self.groups.items(), key=lambda kv: -kv[1])
        return {"warnings": self.total, "sync_warnings": self.sync_warnings,
                "per_step": round(self.sync_warnings / max(1, steps), 3),
                "markers_found": sorted(self.markers_found),
                "groups": [{"count": n, "sync": k[0], "issued_at": k[1], "case_line": k[2],
                            "marker": k[3], "message": k[4]} for k, n in groups[:30]]}


def _is_sync_event(evt):
    return str(getattr(evt, "name", "") or "").startswith(SYNC_EVENT_PREFIXES)


def _enclosing_op(evt, ops, starts):
    """The latest-starting CPU op whose time range holds evt's (the innermost one around it), for
    a runtime event the profiler left without a cpu_parent (its thread id differs from the ops')."""
    import bisect
    t0, t1 = evt.time_range.start, evt.time_range.end
    i = bisect.bisect_right(starts, t0)
    for j in range(i - 1, max(-1, i - 5000), -1):
        op = ops[j]
        if op.time_range.end >= t1:
            return op
    return None


def analyze_profiler(prof, case_file, steps):
    """The profiler's sync-like runtime events, each with the case lines found on the stacks of
    the ops above it (cpu_parent chain, else the innermost op whose time range holds it) and the
    names of those ops."""
    line_marks, base = case_markers(case_file)
    counts, groups = {}, {}
    with_stack = 0
    by_time = 0
    found = set()
    events = list(prof.events())
    ops = sorted((e for e in events if not _is_sync_event(e) and not str(e.name).startswith(("cuda", "cu"))
                  and getattr(e, "device_type", None) is not None
                  and str(getattr(e, "device_type", "")).endswith("CPU")),
                 key=lambda e: e.time_range.start)
    starts = [e.time_range.start for e in ops]
    for evt in events:
        if not _is_sync_event(evt):
            continue
        name = evt.name
        counts[name] = counts.get(name, 0) + 1
        chain, entries = [], list(getattr(evt, "stack", None) or [])
        node = getattr(evt, "cpu_parent", None)
        how = "parent"
        if node is None:
            node = _enclosing_op(evt, ops, starts)
            how = "time" if node is not None else "none"
            by_time += node is not None
        depth = 0
        while node is not None and depth < 64:
            chain.append(node.name)
            entries.extend(getattr(node, "stack", None) or [])
            entries.append(node.name)  # python_function events are named "file(line): func"
            node, depth = getattr(node, "cpu_parent", None), depth + 1
        case_lines = []
        for entry in entries:
            m = STACK_ENTRY_RE.match(str(entry))
            if m and os.path.basename(m.group("file")) == base:
                case_lines.append(int(m.group("line")))
        if any(STACK_ENTRY_RE.match(str(e)) for e in entries):
            with_stack += 1
        hits = sorted({line_marks[ln] for ln in case_lines if ln in line_marks})
        found.update(hits)
        key = (name, tuple(hits), tuple(chain[:8]), case_lines[0] if case_lines else None, how)
        groups[key] = groups.get(key, 0) + 1
    total = sum(counts.values())
    out = {"sync_events": counts, "total": total, "per_step": round(total / max(1, steps), 3),
           "with_stack": with_stack, "placed_by_time": by_time, "markers_found": sorted(found),
           "groups": [{"count": n, "event": k[0], "markers": list(k[1]), "ops": list(k[2]),
                       "case_line": k[3], "parent": k[4]}
                      for k, n in sorted(groups.items(), key=lambda kv: -kv[1])[:40]]}
    try:
        rows = []
        for e in prof.key_averages(group_by_stack_n=5):
            if str(e.key).startswith(SYNC_EVENT_PREFIXES):
                rows.append({"name": e.key, "count": e.count, "stack": list(e.stack or [])[:5],
                             "cpu_time_total_us": round(float(e.cpu_time_total), 1)})
        out["key_averages"] = sorted(rows, key=lambda r: -r["count"])[:30]
    except Exception as exc:  # noqa: BLE001
        out["key_averages_error"] = repr(exc)
    return out


def run(case_file, step_fn, args, extra=None):
    """Runs step_fn(i) for i in range(args.steps) in args.mode and writes the metrics."""
    import torch
    case_file = os.path.abspath(case_file)
    metrics = {"case_file": os.path.basename(case_file), "mode": args.mode, "steps": args.steps,
               "warmup": args.warmup, "pid": os.getpid(), "argv": sys.argv[1:],
               "preloaded": "libsyncspy" in os.environ.get("LD_PRELOAD", "")}
    metrics.update(versions())
    metrics["extra"] = extra or {}
    capture = prof = None
    times = []
    try:
        torch.cuda.synchronize()  # the set-up's work is done before the first timed step
        if args.mode == "syncdebug":
            capture = SyncDebugCapture(case_file)
            capture.start()
        elif args.mode == "profiler":
            acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            prof = torch.profiler.profile(activities=acts, with_stack=True)
            prof.__enter__()
        t_warm = time.perf_counter()
        for i in range(args.steps):
            if i == args.warmup:
                t_warm = time.perf_counter()
            t0 = time.perf_counter()
            step_fn(i)
            times.append(time.perf_counter() - t0)
        if capture is not None:
            capture.stop()
        torch.cuda.synchronize()
        t_end = time.perf_counter()
        if prof is not None:
            prof.__exit__(None, None, None)
    except BaseException as exc:
        metrics["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        metrics["traceback"] = traceback.format_exc()[-6000:]
        metrics["steps_done"] = len(times)
        write_json(args.metrics, metrics)
        raise
    timed = times[args.warmup:] or times
    metrics["step_ms"] = [round(t * 1e3, 4) for t in times]
    metrics["median_step_ms"] = round(statistics.median(timed) * 1e3, 4)
    metrics["e2e_step_ms"] = round((t_end - t_warm) * 1e3 / max(1, args.steps - args.warmup), 4)
    if capture is not None:
        metrics["syncdebug"] = capture.result(args.steps)
    if prof is not None:
        try:
            metrics["profiler"] = analyze_profiler(prof, case_file, args.steps)
        except Exception as exc:  # noqa: BLE001
            metrics["error"] = f"profiler analysis: {exc!r}"
            metrics["traceback"] = traceback.format_exc()[-6000:]
    write_json(args.metrics, metrics)
    return metrics
