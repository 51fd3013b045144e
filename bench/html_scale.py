#!/usr/bin/env python3
"""bench/html_scale.py [--sites N] [--steps N] [--syncs-per-step K] [--runs R]: the page of
`syncspy html` at scale. Writes a trace.bin with tests/e2e/tracegen.py (an independent writer of
the format): N sites (each its own 14-frame stack: native frames, then Python frames with a line
of their own), N steps each with K syncs spread over the sites and two threads, the sites' exact
totals at the end; times `syncspy html` on it, then loads the page R times in Debian's chromium
(tests/browser/probe.py --load-only: from navigation to the page's script saying it has drawn)
and prints one JSON line: the page's bytes, the CLI's seconds, the load times (ms)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import tracegen  # noqa: E402

TORCH = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"


def make_trace(path, nsites, nsteps, per_step):
    t = tracegen.Trace(pid=777, features=tracegen.FEATURE_LAUNCHES | tracegen.FEATURE_PYTHON)
    t.thread(100, "python")
    t.thread(101, "pt_autograd_0")
    shared = [t.frame(f"at::native::op_{k}(at::Tensor const&)", module=TORCH, offset=0x1000 + k) for k in range(8)]
    outer = [t.frame("main", file="/home/u/proj/train.py", line=300, python=True),
             t.frame("<module>", file="/home/u/proj/train.py", line=400, python=True)]
    stacks = []
    for i in range(nsites):
        own = t.frame(f"Model.block_{i % 997}.forward", file=f"/home/u/proj/models/m{i % 50}.py", line=10 + i, python=True)
        mid = t.frame(f"Model.layer_{i % 31}", file="/home/u/proj/model.py", line=100 + i % 31, python=True)
        stacks.append(t.stack(shared[: 4 + i % 5] + [own, mid] + outer))
    t.step(0, 0, 50 * tracegen.MS, active=True)
    step_ns = 2 * tracegen.MS
    counts = [0] * nsites
    blocked = [0] * nsites
    k = 0
    for s in range(1, nsteps + 1):
        base = 50 * tracegen.MS + (s - 1) * step_ns
        for j in range(per_step):
            site = k % nsites
            k += 1
            dur = 20_000 + (site * 37 + s) % 50_000
            t.sync("cudaStreamSynchronize", base + 100_000 + j * 200_000, dur, tid=100 + (j & 1),
                   stack=stacks[site], step=s)
            counts[site] += 1
            blocked[site] += dur
        t.step(s, base, base + step_ns, syncs=per_step, blocked_ns=sum(20_000 for _ in range(per_step)), launches=0)
    for i in range(nsites):
        if counts[i]:
            t.site_totals("cudaStreamSynchronize", stacks[i], counts[i], blocked[i], 70_000, site_id=i + 1)
    t.end(50 * tracegen.MS + nsteps * step_ns + tracegen.MS)
    t.write(path)
    return os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sites", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--syncs-per-step", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--keep", help="write the page here too")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="syncspy-html-bench-")
    trace = os.path.join(tmp, "pid777", "trace.bin")
    trace_bytes = make_trace(trace, a.sites, a.steps, a.syncs_per_step)
    page = a.keep or os.path.join(tmp, "page.html")
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(a.build, "syncspy"), "html", os.path.dirname(trace), "-o", page],
                       capture_output=True, text=True)
    cli_s = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    loads = []
    for _ in range(a.runs):
        q = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "browser", "probe.py"), page,
                            "--load-only", "--timeout", "300"], capture_output=True, text=True)
        assert q.returncode == 0, q.stderr
        seen = json.loads(q.stdout)
        assert seen["console"] == [], seen["console"]
        loads.append(round(seen["load_ms"]))
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"sites": a.sites, "steps": a.steps, "syncs": a.steps * a.syncs_per_step,
                      "trace_bytes": trace_bytes, "page_bytes": os.path.getsize(page),
                      "cli_s": round(cli_s, 2), "load_ms": loads, "load_ms_median": statistics.median(loads)}))


if __name__ == "__main__":
    main()
