"""bench/compile_time.py [RUNS]: torch.compile's cost under the agent (issue 34: <= x1.05).
Alternates runs of tests/torch/progs/compiled.py (the mask_in_graph case, backend aot_eager, 2
steps: import, Dynamo + AOTAutograd compile of forward and backward, the generated code's lines
named) with and without the agent on real torch over the simulator, and prints each run's wall
time, the medians and their ratio. The whole process is timed (start-up and the exit report
included), so the ratio bounds the compile's from above. Needs build/torch-venv/3.11."""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, "build/torch-venv/3.11/bin/python")
PROG = os.path.join(ROOT, "tests/torch/progs/compiled.py")


def one(preload):
    env = dict(os.environ, LD_LIBRARY_PATH=f"{ROOT}/build/sim:/usr/local/cuda/lib64",
               PYTHONPATH=f"{ROOT}/python", SYNCSPY_OUT="/tmp/syncspy-bench-compile")
    if preload:
        env["LD_PRELOAD"] = f"{ROOT}/build/libsyncspy.so"
    t = time.monotonic()
    subprocess.run([PY, PROG, "mask_in_graph", "2"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    plain, agent = [], []
    for _ in range(runs):
        plain.append(one(False))
        agent.append(one(True))
        print(f"plain {plain[-1]:.2f} s  agent {agent[-1]:.2f} s", flush=True)
    p, a = statistics.median(plain), statistics.median(agent)
    print(f"median plain {p:.2f} s, agent {a:.2f} s: x{a / p:.3f}")


if __name__ == "__main__":
    main()
