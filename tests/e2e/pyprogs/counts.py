"""tests/e2e/pyprogs/counts.py: syncspy.counts() around known syncs: 2 torch.cuda.synchronize()
on the main thread, 3 on another thread, then a step mark. Prints one JSON line: the main
thread's and the process's differences, the step before and after the mark, and whether a bad
scope was refused; "no agent" and the step() no-op without the agent."""
import json
import threading

import syncspy
import torch

x = torch.randn(16, device="cuda")  # the first CUDA call: the agent starts recording
t0, p0 = syncspy.counts(), syncspy.counts(syncspy.SCOPE_PROCESS)
if t0 is None:
    syncspy.step()
    print(json.dumps({"agent": False, "process": syncspy.counts(syncspy.SCOPE_PROCESS)}))
    raise SystemExit(0)
torch.cuda.synchronize()
torch.cuda.synchronize()
worker = threading.Thread(target=lambda: [torch.cuda.synchronize() for _ in range(3)])
worker.start()
worker.join()
t1, p1 = syncspy.counts(), syncspy.counts(syncspy.SCOPE_PROCESS)
syncspy.step()
t2 = syncspy.counts()
try:
    syncspy.counts(7)
    refused = False
except ValueError:
    refused = True
print(json.dumps({"agent": True, "thread": t1.syncs - t0.syncs, "process": p1.syncs - p0.syncs,
                  "thread_blocked_ns": t1.blocked_ns - t0.blocked_ns,
                  "process_blocked_ns": p1.blocked_ns - p0.blocked_ns, "process_total": p1.syncs,
                  "step_before": t1.step, "step_after": t2.step, "recording": t2.recording,
                  "refused": refused}))
