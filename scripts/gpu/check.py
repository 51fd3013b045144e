#!/usr/bin/env python3
"""scripts/gpu/check.py: judges what syncspy reported for the GPU check's cases (scripts/gpu/*.py,
run by scripts/gpu-check.sh) and gathers every figure into results.json. Needs no torch.

    check.py selftest [FIXTURES]     judge the fabricated summaries fixtures/summary_<case>_<good|bad>*.json:
                                     exit 0 when every good one is accepted and every bad one rejected
    check.py case CASE SUMMARY.json [--torch VERSION]
                                     judge one summary.json as case CASE (run on that torch: some
                                     expectations depend on its version); prints the verdict as JSON
    check.py results OUT             read OUT/runs/*, write OUT/results.json, print the table last;
                                     exit 0 when every case that ran met its expectations

Expected sites come from marker comments in the case files, never from line numbers written here:
`# sync: NAME` marks a line that makes the host wait, `# call: NAME` a line worth naming that is
not a sync itself (loss.backward(), whose syncs run in the autograd thread). A site names a
marker when its innermost Python frame in the case file is on a marked line.

Steps: syncspy ends a step at every optimizer.step() (step 0 runs from process start: imports,
model set-up); "steady" steps are the complete (not partial) ones from step STEADY_FROM on, and
syncs per step is their mean."""
import glob
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STEADY_FROM = 2      # steps 0 and 1 are warm-up (start-up, first allocations, autotuning)
ZERO_TOL = 0.2       # "about zero" syncs per steady step for the rewritten variants
MARK_RE = re.compile(r"#\s*(sync|call):\s*([A-Za-z0-9_.-]+)")

# What each case must show. require: markers that must be named by a site; native_at: for a
# marker, a substring of a native frame's function in one of the sites that name it; native: a
# substring that a site's native frames must contain (a sync outside any Python frame: the
# autograd thread); absent_native: a substring no site may contain; zero: about zero syncs per
# steady step; min_syncs: at least that many syncs per steady step; one_process: exactly one
# process folder, none for the DataLoader workers; backward_of: {marker: node}: a backward-pass
# sync of that autograd node attributed to the marked forward line (its forward frames);
# since_torch: {version: overrides} for what a torch release does differently (the newest
# version <= the run's torch applies), measured on that release (docs/TORCH.md).
CASES = {
    "seg_loss": {
        "file": "seg_loss.py", "require": ["nonzero", "unique", "mask-target", "mask-pred"],
        "min_syncs": 3.0, "backward_of": {"mask-pred": "IndexBackward0"},
        "about": "segmentation loss: torch.nonzero, torch.unique, boolean-mask indexing"},
    "seg_loss_fixed": {
        "file": "seg_loss.py", "zero": True,
        "about": "the same loss with torch.where, a sort-based count, cross_entropy(ignore_index)"},
    "vit_gather": {
        "file": "vit_gather.py", "native": "GatherBackward", "min_syncs": 1.0,
        "about": "timm ViT patch_drop_rate=0.5, deterministic: GatherBackward syncs in the autograd thread",
        # torch 2.15's deterministic gather backward does not sync (measured on the simulator)
        "since_torch": {"2.15": {"native": None, "min_syncs": None, "absent_native": "GatherBackward",
                                 "zero": True, "about": "timm ViT patch_drop_rate=0.5, deterministic: "
                                 "on torch 2.15 the gather backward does not sync"}}},
    "vit_indexing": {
        "file": "vit_gather.py", "absent_native": "GatherBackward",
        "about": "the same ViT with PatchDropout's gather replaced by indexing"},
    "item_loop": {
        "file": "item_loop.py", "require": ["item"], "native_at": {"item": "_local_scalar_dense"},
        "min_syncs": 1.0, "about": "loss.item() every step"},
    "compiled": {
        "file": "compiled.py", "require": ["item"], "min_syncs": 1.0,
        "about": "torch.compile'd model (mode default), loss.item() every step"},
    "dataloader": {
        "file": "dataloader.py", "require": ["h2d"], "min_syncs": 1.0, "one_process": True,
        "about": "DataLoader(num_workers=2), pageable host-to-device copies"},
}
COMPILE_STACK_RE = re.compile(r"torch/_dynamo|torch/_inductor|triton|BackendCompilerFailed|InductorError")
TOOL_CASES = ("seg_loss", "item_loop", "vit_gather")   # run under the profiler and sync-debug mode
OVERHEAD_CASES = ("seg_loss_fixed", "item_loop")       # run with and without the agent


# ---- markers and summaries -----------------------------------------------------------------

def markers(path):
    """{name: {"kind": "sync"|"call", "lines": [1-based line numbers]}} of a case file."""
    found = {}
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            m = MARK_RE.search(text)
            if m:
                entry = found.setdefault(m.group(2), {"kind": m.group(1), "lines": []})
                entry["lines"].append(number)
    return found


def case_path(case):
    return os.path.join(HERE, CASES[case]["file"])


def sections(site):
    """(own frames, backward node, forward frames, caller frames) of a site: a backward-pass
    sync's frames carry section markers (summary.json "marker")."""
    own, forward, caller, node = [], [], [], site.get("backward_node")
    cur = own
    for f in site.get("frames") or []:
        if f.get("marker") == "backward":
            node, cur = f.get("function"), forward
        elif f.get("marker") == "backward_caller":
            cur = caller
        else:
            cur.append(f)
    return own, node, forward, caller


def innermost_case_frame(site, base, frames=None):
    """The innermost Python frame of the case file among the site's own frames (or frames)."""
    for f in frames if frames is not None else sections(site)[0]:
        if f.get("python") and os.path.basename(f.get("file") or "") == base:
            return f
    return None


def version_key(v):
    return tuple(int(x) for x in re.findall(r"\d+", str(v))[:2]) or (0,)


def spec_for(case, torch_version=None):
    """CASES[case] with the overrides of the newest since_torch version <= torch_version."""
    spec = dict(CASES[case])
    if torch_version:
        for since in sorted(spec.get("since_torch", {}), key=version_key):
            if version_key(torch_version) >= version_key(since):
                spec.update(spec["since_torch"][since])
    return {k: v for k, v in spec.items() if v is not None}


def has_python(site):
    return any(f.get("python") for f in site.get("frames") or [])


def native_functions(site):
    return [f.get("function") or "" for f in site.get("frames") or [] if not f.get("python")]


def site_digest(site, base):
    py = [f for f in site.get("frames") or [] if f.get("python")]
    user = innermost_case_frame(site, base)
    return {"api": site.get("api"), "count": site.get("count", 0),
            "blocked_ms": round(site.get("blocked_ns", 0) / 1e6, 3),
            "case_line": user["line"] if user else None,
            "python": [f'{os.path.basename(f.get("file") or "?")}:{f.get("line")} {f.get("function")}'
                       for f in py[:4]],
            "native": [fn for fn in native_functions(site) if fn][:6]}


def step_stats(summary):
    steps = summary.get("steps") or []
    complete = [s for s in steps if not s.get("partial")]
    steady = [s for s in complete if s.get("step", 0) >= STEADY_FROM]
    basis = "steady"
    if not steady:
        steady = [s for s in complete if s.get("step", 0) >= 1] or complete
        basis = "complete"
    syncs = [s.get("syncs", 0) for s in steady]
    out = {"steps": len(steps), "complete_steps": len(complete), "steady_steps": len(steady),
           "basis": basis, "steps_seen": summary.get("steps_seen")}
    if steady:
        out["syncs_per_step"] = round(statistics.fmean(syncs), 3)
        out["max_syncs_in_a_step"] = max(syncs)
        out["blocked_ms_per_step"] = round(statistics.fmean(s.get("blocked_ns", 0) for s in steady) / 1e6, 3)
        out["launches_per_step"] = round(statistics.fmean(s.get("launches", 0) for s in steady), 1)
        walls = [s.get("wall_ns", 0) for s in steady]
        out["median_step_ms_syncspy"] = round(statistics.median(walls) / 1e6, 3)
    return out


def check_summary(case, summary, path=None, torch_version=None):
    """The verdict for one summary.json of case (run on torch_version, when known):
    {"ok": bool, "reasons": [...], ...}."""
    spec = spec_for(case, torch_version)
    path = path or case_path(case)
    base = os.path.basename(path)
    marks = markers(path)
    sites = summary.get("sites") or []
    reasons = []
    verdict = {"case": case, "about": spec["about"], "file": spec["file"], "torch": torch_version}
    stats = step_stats(summary)
    verdict["stats"] = stats
    per_step_basis = max(1, int(summary.get("active_steps") or stats["steps"] or 1))

    # every marker: the sites that name it
    found = {}
    for name, m in marks.items():
        hits = []
        for s in sites:
            f = innermost_case_frame(s, base)
            if f and f.get("line") in m["lines"]:
                hits.append(s)
        count = sum(s.get("count", 0) for s in hits)
        found[name] = {"kind": m["kind"], "lines": m["lines"], "found": bool(hits), "sites": len(hits),
                       "count": count, "per_step": round(count / per_step_basis, 3),
                       "blocked_ms": round(sum(s.get("blocked_ns", 0) for s in hits) / 1e6, 3),
                       "apis": sorted({s.get("api") for s in hits}),
                       "native": sorted({fn for s in hits for fn in native_functions(s)[:3] if fn})[:6]}
        want = spec.get("native_at", {}).get(name)
        if want:
            found[name]["native_match"] = any(want in fn for s in hits for fn in native_functions(s))
    verdict["markers"] = found

    for name in spec.get("require", []):
        if name not in marks:
            reasons.append(f"marker '# sync: {name}' missing from {spec['file']}")
        elif not found[name]["found"]:
            reasons.append(f"no site names {spec['file']}:{marks[name]['lines']} ({name})")
    for name, want in spec.get("native_at", {}).items():
        if name in found and found[name]["found"] and not found[name].get("native_match"):
            reasons.append(f"the sites of {name} have no native frame with {want}")
    for name, node in spec.get("backward_of", {}).items():
        lines = marks.get(name, {}).get("lines", [])
        hits = []
        for s in sites:
            _, n, forward, _ = sections(s)
            f = innermost_case_frame(s, base, forward) if n == node else None
            if f and f.get("line") in lines:
                hits.append(s)
        verdict.setdefault("backward_of", {})[name] = {
            "node": node, "lines": lines, "sites": len(hits), "count": sum(s.get("count", 0) for s in hits)}
        if not hits:
            reasons.append(f"no backward sync of {node} attributed to {spec['file']}:{lines} ({name})")

    want = spec.get("native")
    if want:
        hits = [s for s in sites if any(want in fn for fn in native_functions(s))]
        verdict["native"] = {"want": want, "found": bool(hits),
                             "without_python_frames": bool(hits) and all(not has_python(s) for s in hits),
                             "count": sum(s.get("count", 0) for s in hits),
                             "sites": [{**site_digest(s, base), "native": native_functions(s)[:16]}
                                       for s in hits[:4]]}
        if not hits:
            reasons.append(f"no site with a native frame containing {want}")
        # whatever the autograd thread's syncs say, for the record
        verdict["no_python_sites"] = [{**site_digest(s, base), "native": native_functions(s)[:12]}
                                      for s in sites if not has_python(s)][:6]
    gone = spec.get("absent_native")
    if gone:
        hits = [s for s in sites if any(gone in fn for fn in native_functions(s))]
        verdict["absent"] = {"want_absent": gone, "present": bool(hits),
                             "count": sum(s.get("count", 0) for s in hits)}
        if hits:
            reasons.append(f"a site still has a native frame containing {gone}")
        verdict["zero_syncs"] = stats.get("syncs_per_step", 0) <= ZERO_TOL

    if "syncs_per_step" not in stats:
        reasons.append("no complete step (was the optimizer step hook seen?)")
    else:
        if spec.get("zero") and stats["syncs_per_step"] > ZERO_TOL:
            reasons.append(f"{stats['syncs_per_step']} syncs per steady step, expected about 0 (<= {ZERO_TOL})")
        if spec.get("min_syncs") and stats["syncs_per_step"] < spec["min_syncs"]:
            reasons.append(f"{stats['syncs_per_step']} syncs per steady step, expected >= {spec['min_syncs']}")

    verdict["other_case_lines"] = sorted({innermost_case_frame(s, base)["line"] for s in sites
                                          if innermost_case_frame(s, base)
                                          and all(innermost_case_frame(s, base)["line"] not in m["lines"]
                                                  for m in marks.values())})
    verdict["top_sites"] = [site_digest(s, base) for s in
                            sorted(sites, key=lambda s: -s.get("blocked_ns", 0))[:10]]
    verdict["unattributed_syncs"] = summary.get("unattributed_syncs")
    verdict["reasons"] = reasons
    verdict["ok"] = not reasons
    return verdict


# ---- selftest on fabricated summaries --------------------------------------------------------

def resolve_fixture(summary, case):
    """Fixture frames may give their line as "@NAME": the line of the marker NAME in the frame's
    case file, so the fixtures follow edits of the case files."""
    marks = markers(case_path(case))
    for s in summary.get("sites") or []:
        for f in s.get("frames") or []:
            line = f.get("line")
            if isinstance(line, str) and line.startswith("@"):
                f["line"] = marks[line[1:]]["lines"][0]
    return summary


def fixture_case(name):
    """summary_<case>_<good|bad>[_anything][_torch<X.Y>].json -> (case, "good"|"bad", torch version
    the summary is judged as, or None)."""
    stem = os.path.basename(name)[len("summary_"):-len(".json")]
    m = re.search(r"_torch(\d+\.\d+)$", stem)
    torch_version = m.group(1) if m else None
    for case in sorted(CASES, key=len, reverse=True):
        if stem.startswith(case + "_"):
            rest = stem[len(case) + 1:]
            kind = rest.split("_")[0]
            if kind in ("good", "bad"):
                return case, kind, torch_version
    return None, None, None


def selftest(folder):
    files = sorted(glob.glob(os.path.join(folder, "summary_*.json")))
    if not files:
        print(f"check selftest: no fixtures in {folder}")
        return 1
    wrong = 0
    for path in files:
        case, kind, torch_version = fixture_case(path)
        if case is None:
            print(f"fixture {os.path.basename(path)}: not named summary_<case>_<good|bad>*.json")
            wrong += 1
            continue
        with open(path) as f:
            summary = resolve_fixture(json.load(f), case)
        v = check_summary(case, summary, torch_version=torch_version)
        judged = "accepted" if v["ok"] else "rejected"
        expected = "accepted" if kind == "good" else "rejected"
        mark = "" if judged == expected else f"  <-- WRONG, expected {expected}"
        why = f" ({'; '.join(v['reasons'])})" if v["reasons"] else ""
        print(f"fixture {os.path.basename(path)}: {judged}{why}{mark}")
        wrong += judged != expected
    print(f"check selftest: {len(files) - wrong} of {len(files)} fixtures judged as named")
    return 1 if wrong else 0


# ---- results of a GPU run ------------------------------------------------------------------

def read_text(path, default=None):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tail(text, lines=25, chars=3000):
    if not text:
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])[-chars:]


def process_dirs(run_dir):
    return sorted(d for d in glob.glob(os.path.join(run_dir, "syncspy-out", "*")) if os.path.isdir(d))


def read_run(run_dir):
    """What the harness left for one run: rc, elapsed, stderr tail, metrics, process folders."""
    run = {"dir": os.path.basename(run_dir)}
    if os.path.exists(os.path.join(run_dir, "skipped")):
        run["status"] = "skipped"
        run["why"] = (read_text(os.path.join(run_dir, "skipped")) or "").strip()
        return run
    rc = (read_text(os.path.join(run_dir, "rc")) or "").strip()
    run["rc"] = int(rc) if rc.lstrip("-").isdigit() else None
    el = (read_text(os.path.join(run_dir, "elapsed_s")) or "").strip()
    run["elapsed_s"] = float(el) if el else None
    run["command"] = (read_text(os.path.join(run_dir, "cmd.txt")) or "").strip()
    stderr = read_text(os.path.join(run_dir, "stderr.txt"), "")
    run["stderr_tail"] = tail(stderr)
    run["metrics"] = read_json(os.path.join(run_dir, "metrics.json"))
    run["timed_out"] = run["rc"] in (124, 137)
    run["status"] = "ok" if run["rc"] == 0 else ("timeout" if run["timed_out"] else "failed")
    run["stderr_sync_warnings"] = stderr.count("called a synchronizing CUDA operation")
    run["agent_lines"] = [ln for ln in stderr.splitlines() if ln.startswith("syncspy")][:20]
    return run


def judge_agent_run(case, run_dir):
    run = read_run(run_dir)
    out = {"run": run}
    if run["status"] == "skipped":
        out["ok"] = False
        out["reasons"] = ["skipped: " + run["why"]]
        return out
    dirs = process_dirs(run_dir)
    out["process_dirs"] = [os.path.basename(d) for d in dirs]
    metrics = run["metrics"] or {}
    reasons = []
    if run["status"] != "ok":
        err = metrics.get("error")
        reasons.append(f"{run['status']} (rc {run['rc']})" + (f": {err}" if err else ""))
    chosen = None
    if metrics.get("pid"):
        chosen = next((d for d in dirs if d.endswith(f"pid{metrics['pid']}")), None)
    if chosen is None and dirs:
        chosen = dirs[0]
    summary = read_json(os.path.join(chosen, "summary.json")) if chosen else None
    if summary is None:
        reasons.append("no summary.json" + (f" in {os.path.basename(chosen)}" if chosen else
                                             " (no process folder under SYNCSPY_OUT)"))
    else:
        out["summary_file"] = os.path.relpath(os.path.join(chosen, "summary.json"), os.path.dirname(os.path.dirname(run_dir)))
        out["summary"] = summary
        v = check_summary(case, summary, torch_version=(metrics.get("torch") or "").split("+")[0] or None)
        out["verdict"] = v
        reasons += v["reasons"]
    report = read_text(os.path.join(run_dir, "report.txt"))
    if report is not None:
        out["report"] = report
    cli = read_text(os.path.join(run_dir, "cli-report.txt"))
    if cli is not None:
        out["cli_report_rc"] = (read_text(os.path.join(run_dir, "cli-report.rc")) or "").strip()
    if CASES[case].get("one_process"):
        workers = [int(w) for w in (read_text(os.path.join(run_dir, "worker_pids.txt")) or "").split()
                   if w.isdigit()]
        out["worker_pids"] = workers
        if len(dirs) != 1:
            reasons.append(f"{len(dirs)} process folders under SYNCSPY_OUT, expected 1: "
                           f"{[os.path.basename(d) for d in dirs]}")
        loud = [w for w in workers if any(os.path.basename(d).endswith(f"pid{w}") for d in dirs)]
        if loud:
            reasons.append(f"DataLoader workers wrote process folders: {loud}")
        if not workers and run["status"] == "ok":
            reasons.append("no worker pid recorded (did the workers start?)")
    # torch.compile failing on this machine (no Triton, no compiler, ...) is recorded, not held
    # against syncspy
    trace = (metrics.get("traceback") or "") + run.get("stderr_tail", "")
    if case == "compiled" and run["status"] == "failed" and COMPILE_STACK_RE.search(trace):
        out["compile_error"] = metrics.get("error") or tail(trace, 3)
        out["notes"] = [f"torch.compile failed here (recorded): {out['compile_error']}"]
        reasons = []
    out["reasons"] = reasons
    out["ok"] = not reasons
    return out


def tool_findings(case, run_dir, kind):
    """What the profiler or sync-debug mode found in one run of case."""
    run = read_run(run_dir)
    res = {"run": {k: run.get(k) for k in ("status", "rc", "elapsed_s", "stderr_tail", "why")}}
    m = run.get("metrics") or {}
    data = m.get(kind)
    if run["status"] != "ok" or not data:
        res["found"] = "not run" if run["status"] == "skipped" else "failed"
        if m.get("error"):
            res["error"] = m["error"]
        return res
    res["data"] = data
    spec = CASES[case]
    marks = markers(case_path(case))
    hit = set(data.get("markers_found") or [])
    if spec.get("require"):
        n = len([r for r in spec["require"] if r in hit])
        res["found"] = f"{'yes' if n == len(spec['require']) else ('partly' if n else 'no')} ({n}/{len(spec['require'])} lines)"
    elif spec.get("native"):
        if kind == "profiler":
            chains = " ".join(" ".join(g.get("ops") or []) for g in data.get("groups") or [])
            res["found"] = f"yes ({spec['native']} op)" if spec["native"] in chains else "no"
        else:
            backward = "backward" in hit and "backward" in marks
            any_warn = (data.get("warnings") or 0) + run.get("stderr_sync_warnings", 0)
            res["found"] = ("partly (at the loss.backward() line, no op named)" if backward else
                            ("partly (warnings without a case line)" if any_warn else "no"))
    else:
        res["found"] = "n/a"
    res["sync_events_per_step"] = data.get("per_step")
    return res


def fmt_ratio(x):
    return f"{x:.2f}" if isinstance(x, (int, float)) else "-"


def overhead(out_dir, case):
    agent = (read_run(os.path.join(out_dir, "runs", case)).get("metrics") or {})
    plain = (read_run(os.path.join(out_dir, "runs", case + ".plain")).get("metrics") or {})
    res = {"with_agent_median_ms": agent.get("median_step_ms"),
           "without_median_ms": plain.get("median_step_ms"),
           "with_agent_e2e_ms": agent.get("e2e_step_ms"), "without_e2e_ms": plain.get("e2e_step_ms")}
    if res["with_agent_median_ms"] and res["without_median_ms"]:
        res["ratio"] = round(res["with_agent_median_ms"] / res["without_median_ms"], 3)
    if res["with_agent_e2e_ms"] and res["without_e2e_ms"]:
        res["e2e_ratio"] = round(res["with_agent_e2e_ms"] / res["without_e2e_ms"], 3)
    for kind in ("profiler", "syncdebug"):
        t = (read_run(os.path.join(out_dir, "runs", f"{case}.{kind}")).get("metrics") or {})
        if t.get("median_step_ms") and res["without_median_ms"]:
            res[f"{kind}_ratio"] = round(t["median_step_ms"] / res["without_median_ms"], 3)
    return res


def found_text(case, judged):
    v = judged.get("verdict")
    spec = spec_for(case, (v or {}).get("torch"))
    if judged.get("compile_error"):
        return "compile failed (recorded)"
    if v is None:
        return judged["run"].get("status", "failed") if judged["run"].get("status") != "ok" else "no summary"
    if spec.get("require"):
        n = len([r for r in spec["require"] if v["markers"].get(r, {}).get("found")])
        text = f"{'yes' if n == len(spec['require']) else 'NO'} ({n}/{len(spec['require'])})"
        for name, b in (v.get("backward_of") or {}).items():
            text += f", backward of {name}: " + ("yes" if b["sites"] else "NO")
    elif spec.get("native"):
        nat = v.get("native") or {}
        text = ("yes" + (", autograd thread" if nat.get("without_python_frames") else "")) if nat.get("found") else "NO"
    elif spec.get("absent_native"):
        text = "gone: " + ("NO" if v["absent"]["present"] else "yes")
    elif spec.get("zero"):
        text = "zero: " + ("yes" if "syncs_per_step" in v["stats"] and v["stats"]["syncs_per_step"] <= ZERO_TOL else "NO")
    else:
        text = "-"
    if not judged.get("ok") and "NO" not in text:
        text += " !"
    return text


def results(out_dir):
    runs = os.path.join(out_dir, "runs")
    doc = {"version": 1, "env": read_json(os.path.join(out_dir, "env.json")) or {},
           "offline_checks": (read_text(os.path.join(out_dir, "offline.txt")) or "").splitlines(),
           "zero_tolerance": ZERO_TOL, "steady_from_step": STEADY_FROM,
           "cases": {}, "overhead": {}, "tools": {}}
    for case in CASES:
        if os.path.isdir(os.path.join(runs, case)):
            doc["cases"][case] = judge_agent_run(case, os.path.join(runs, case))
    for case in OVERHEAD_CASES:
        if os.path.isdir(os.path.join(runs, case + ".plain")):
            doc["overhead"][case] = overhead(out_dir, case)
    for case in TOOL_CASES:
        for kind in ("profiler", "syncdebug"):
            d = os.path.join(runs, f"{case}.{kind}")
            if os.path.isdir(d):
                doc["tools"].setdefault(case, {})[kind] = tool_findings(case, d, kind)
    rows = []
    for case, judged in doc["cases"].items():
        v = judged.get("verdict") or {}
        spp = (v.get("stats") or {}).get("syncs_per_step")
        tools = doc["tools"].get(case, {})
        rows.append({"case": case, "found": found_text(case, judged),
                     "syncs_per_step": spp, "overhead": (doc["overhead"].get(case) or {}).get("ratio"),
                     "profiler": (tools.get("profiler") or {}).get("found", "-"),
                     "syncdebug": (tools.get("syncdebug") or {}).get("found", "-"),
                     "ok": judged.get("ok", False),
                     "elapsed_s": judged["run"].get("elapsed_s"),
                     "reasons": judged.get("reasons", []) + judged.get("notes", [])})
    doc["table"] = rows
    doc["ok"] = bool(rows) and all(r["ok"] for r in rows)
    with open(os.path.join(out_dir, "results.json.tmp"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False, default=str)
    os.replace(os.path.join(out_dir, "results.json.tmp"), os.path.join(out_dir, "results.json"))
    print_table(rows)
    return 0 if doc["ok"] else 1


def print_table(rows):
    head = ("case", "expected site found", "syncs/step", "overhead", "profiler", "sync-debug-mode")
    body = [(r["case"], r["found"], "-" if r["syncs_per_step"] is None else f"{r['syncs_per_step']:.2f}",
             fmt_ratio(r["overhead"]), r["profiler"], r["syncdebug"]) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    for r in rows:
        if r["reasons"]:
            print(f"  {r['case']}: " + "; ".join(r["reasons"]))
    print(line(head))
    print(line(["-" * w for w in widths]))
    for b in body:
        print(line(b))


def main(argv):
    if len(argv) >= 1 and argv[0] == "selftest":
        return selftest(argv[1] if len(argv) > 1 else os.path.join(HERE, "fixtures"))
    if len(argv) in (3, 5) and argv[0] == "case" and argv[1] in CASES and (len(argv) == 3 or argv[3] == "--torch"):
        with open(argv[2]) as f:
            v = check_summary(argv[1], json.load(f), torch_version=argv[4] if len(argv) == 5 else None)
        print(json.dumps(v, indent=1))
        return 0 if v["ok"] else 1
    if len(argv) == 2 and argv[0] == "results":
        return results(argv[1])
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    print("cases: " + ", ".join(CASES), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
