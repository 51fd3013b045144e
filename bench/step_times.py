"""bench/step_times.py: how the bench's loops (tiny_step.py, block_step.py) print their step
times for bench/torch_loop.py: "step I MS" per step (after the loop, so that no write lands
inside a step), then "end <time.time()>" when asked."""
import time


def report(times_ms, end_stamp):
    print("\n".join(f"step {i} {t:.4f}" for i, t in enumerate(times_ms)), flush=True)
    if end_stamp:
        print(f"end {time.time():.6f}", flush=True)
