"""Prints docs/SEEDS.md's table: each seed loop of tests/torch/progs/seed_models.py (and its
switches) run under syncspy on real torch over the simulated device, with what syncspy reports
per training step: syncs (all threads), the lines that sync, launches, and the step's median
wall time. Run it as `build/vision-venv/bin/python tests/torch/seed_table.py [STEPS]`; its
numbers are checked by tests/torch/test_seed_models.py (the sync counts) on every run."""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness
from test_seed_models import PROG, VISION_PYTHON, training

ROWS = [
    ("000 ViT, deterministic (the article's loop)", ("vit",)),
    ("000 ViT, indexing instead of gather (the article's fix)", ("vit-index",)),
    ("000 ViT, deterministic algorithms off", ("vit", "--nondeterministic")),
    ("000 ViT, no workers, no pin_memory", ("vit", "--workers", "0", "--no-pin")),
    ("003 ConvNet, the article's loss", ("seg",)),
    ("003 ConvNet, the rewritten loss", ("seg-fixed",)),
    ("002 U-Net/ResNet-34, Adam", ("unet",)),
    ("002 + pin_memory off", ("unet", "--no-pin")),
    ("002 + channels_last", ("unet", "--channels-last")),
    ("002 + zero_grad(set_to_none=False)", ("unet", "--zero-grad", "zero")),
    ("002 + cudnn.benchmark", ("unet", "--benchmark")),
    ("002 + AMP float16 with GradScaler", ("unet", "--amp")),
    ("002 + anomaly detection", ("unet", "--anomaly")),
]


def user_file(f):
    return f["python"] and "-packages/torch/" not in f["file"] and "/lib/python3." not in f["file"]


def node_of(frames):
    for f in frames:
        m = re.search(r"torch::autograd::generated::(\w+)::apply", f["function"] or "")
        if m:
            return m.group(1)
    return None


def where(site, forward_of):
    """FILE:LINE of the site's innermost user frame; a backward sync: its node and the forward
    line (an unattributed step's sync: the line its node was attributed to in another step)."""
    own, marker_node, forward, _ = harness.sections(site)
    node = site.get("backward_node") or node_of(own)
    if node:
        for f in forward:
            if user_file(f):
                return f"backward of {os.path.basename(f['file'])}:{f['line']} ({node})"
        return forward_of.get(node, f"backward ({node})")
    for f in own:
        if user_file(f):
            return f"{os.path.basename(f['file'])}:{f['line']}"
    for f in own:
        if f["function"] and "Engine::evaluate_function" in f["function"]:
            return "autograd engine (anomaly check)"
    return (own[0]["function"] or "?")[:40] if own else "?"


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    print("| loop | syncs/step | where (syncs/step) | launches/step | step median |")
    print("| --- | ---: | --- | ---: | ---: |")
    for label, args in ROWS:
        r = harness.run(PROG, *args, "--steps", steps, python=VISION_PYTHON, timeout=900)
        if r.returncode != 0:
            print(f"| {label} | failed: exit {r.returncode} | | | |")
            continue
        s = r.summary()
        train = [st for st in s["steps"] if not st["partial"] and not st.get("startup")]
        n = len(train) or 1
        forward_of = {}
        for site in s["sites"]:
            key = where(site, {})
            if key.startswith("backward of "):
                forward_of[site.get("backward_node") or node_of(harness.sections(site)[0])] = key
        lines = {}
        for site in s["sites"]:
            c = training(site)
            if c:
                key = where(site, forward_of)
                lines[key] = lines.get(key, 0) + c
        total = sum(lines.values()) / n
        top = ", ".join(f"{k} ({v / n:g})" for k, v in sorted(lines.items(), key=lambda kv: -kv[1])[:5])
        launches = sum(st["launches"] for st in train) / n
        median = statistics.median(st["wall_ns"] for st in train) / 1e6 if train else 0
        print(f"| {label} | {total:g} | {top or '-'} | {launches:.0f} | {median:.1f} ms |", flush=True)


if __name__ == "__main__":
    main()
