"""bench/record_function_floor.py: what torch's RecordFunction costs before a backward attribution
built on it does any work of its own (issue 26 item 2). It builds bench/rf_probe.cpp (a global
callback on FUNCTION and BACKWARD_FUNCTION that only counts) against the venv's torch headers
into BUILD/bench/, then, without the agent:
- micro: `w * x` on 64 CPU floats, with the callback on and off in alternating rounds of 5,000
  ops, 40 rounds; the minimum ns per op of each (the least disturbed round on a shared
  machine), with an input that requires grad (one node per op) and under torch.no_grad().
- seg: the seed-003 loop (examples/seg_loss.py over the simulated device), the callback on in
  every other step (switched by an optimizer step hook); each step with it against the mean of
  its neighbours without it, the median difference after the first 20 % of the steps (the
  in-process figure of bench/torch_loop.py, same arithmetic); and what the callback counted per
  step.

    python3 bench/record_function_floor.py [--build build] [--python PY] [--procs 3] [--steps 300]

Prints one JSON document."""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "seg_loss.py")
PROBE_SRC = os.path.join(ROOT, "bench", "rf_probe.cpp")


def build_probe(python, out):
    torch_dir = subprocess.run(
        [python, "-c", "import os, torch; print(os.path.dirname(torch.__file__))"],
        check=True, capture_output=True, text=True).stdout.strip()
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(PROBE_SRC):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        # the headers need C++20; the wheel is built with the C++11 string ABI (the default)
        subprocess.run(["g++", "-std=gnu++20", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
                        "-I" + os.path.join(torch_dir, "include"), PROBE_SRC, "-o", out,
                        "-L" + os.path.join(torch_dir, "lib"), "-ltorch_cpu", "-lc10"], check=True)
    return out


# ---- in the child (the venv's python, torch imported) ------------------------------------------

def child_micro(probe):
    import torch
    lib = ctypes.CDLL(probe)
    w, x = torch.randn(64, requires_grad=True), torch.randn(64)

    def rounds(n, grad):
        t = time.perf_counter()
        with torch.set_grad_enabled(grad):
            for _ in range(n):
                w * x
        return (time.perf_counter() - t) / n * 1e9

    out = {}
    for grad in (True, False):
        best = {"on": float("inf"), "off": float("inf")}
        for _ in range(40):
            for mode in ("on", "off"):
                lib.rf_probe_on() if mode == "on" else lib.rf_probe_off()
                best[mode] = min(best[mode], rounds(5000, grad))
        lib.rf_probe_off()
        out["grad" if grad else "no_grad"] = {"off_ns": round(best["off"]), "on_ns": round(best["on"]),
                                             "added_ns": round(best["on"] - best["off"])}
    print(json.dumps(out))


def child_seg(probe, steps):
    import runpy
    import torch.optim.optimizer as optimizer
    lib = ctypes.CDLL(probe)
    times, state = [], {"t": None, "n": 0, "counts": None}

    def counts():
        return [lib.rf_probe_count(i) for i in range(3)]

    def hook(*args, **kwargs):
        now = time.perf_counter()
        if state["t"] is not None:
            times.append((state["n"] % 2 == 1, now - state["t"]))
        state["n"] += 1
        if state["n"] == steps // 5:
            state["counts"] = (counts(), state["n"])
        lib.rf_probe_on() if state["n"] % 2 else lib.rf_probe_off()
        state["t"] = time.perf_counter()

    optimizer.register_optimizer_step_post_hook(hook)
    sys.argv = [DEMO, "--steps", str(steps), "--log-every", "0"]
    sys.stdout = open(os.devnull, "w")
    try:
        runpy.run_path(DEMO, run_name="__main__")
    finally:
        sys.stdout = sys.__stdout__
    kept = times[len(times) // 5:]
    diffs = [kept[i][1] - (kept[i - 1][1] + kept[i + 1][1]) / 2 for i in range(1, len(kept) - 1)
             if kept[i][0] and not kept[i - 1][0] and not kept[i + 1][0]]
    plain = statistics.median(t for on, t in kept if not on)
    (c0, n0), c1 = state["counts"], counts()
    recorded = (state["n"] - n0) / 2  # the callback was on in every other step since then
    print(json.dumps({"plain_step_ms": plain * 1e3, "added_us": statistics.median(diffs) * 1e6,
                      "added_pct": statistics.median(diffs) / plain * 100,
                      "per_recorded_step": {k: round((c1[i] - c0[i]) / recorded, 1) for i, k in
                                            enumerate(("ops_with_seq", "ops_without_seq",
                                                       "backward_nodes"))}}))


# ---- the driver --------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--python", default="")
    p.add_argument("--procs", type=int, default=3)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--child", choices=("micro", "seg"), help=argparse.SUPPRESS)
    p.add_argument("--probe", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child == "micro":
        return child_micro(a.probe)
    if a.child == "seg":
        return child_seg(a.probe, a.steps)
    build = os.path.abspath(os.path.join(ROOT, a.build))
    python = a.python or os.path.join(build, "torch-venv", "%d.%d" % sys.version_info[:2], "bin", "python")
    probe = build_probe(python, os.path.join(build, "bench", "rf_probe.so"))
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCSPY_") and k != "LD_PRELOAD"}
    env["LD_LIBRARY_PATH"] = os.path.join(build, "sim") + ":" + os.path.join(cuda, "lib64")
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def child(kind):
        r = subprocess.run([python, os.path.abspath(__file__), "--child", kind, "--probe", probe,
                            "--steps", str(a.steps)], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("record_function_floor: the %s run failed: %s" % (kind, r.stderr[-500:]))
        return json.loads(r.stdout.strip().splitlines()[-1])

    micro = child("micro")
    seg = [child("seg") for _ in range(a.procs)]
    added = sorted(s["added_pct"] for s in seg)
    print(json.dumps({"micro": micro, "seg": seg,
                      "seg_added_pct_median": statistics.median(added),
                      "seg_added_pct_range": [added[0], added[-1]],
                      "seg_added_us_median": statistics.median(s["added_us"] for s in seg)},
                     indent=1))


if __name__ == "__main__":
    main()
