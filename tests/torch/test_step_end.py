"""tests/torch/test_step_end.py: what a step's end runs (issue 26 item 3). The optimizer step hook
is C (agent/pyhook.c): a step that is not attributed runs none of the agent's Python, so a loop
of tiny steps pays for the step mark only. Seen from the program: a profile function
(sys.setprofile) sees every Python frame the training thread runs, the agent's compiled as
"<syncspy>", and every call of a C function from Python, the hook's among them."""
import json
import unittest

import harness

# A step's end: the hook, and the agent's Python functions a step end may run (those of the
# optimizer hook before it was C are named too: a return to them fails the test).
CODE = r'''
import json, sys, torch
STEP_END = {"_syncspy_hook", "_attr_step", "_attr_pop", "_attr_begin", "_pop_ours",
            "_compiled_anything"}
calls = {}
def prof(frame, event, arg):
    name = None
    if event == "call" and frame.f_code.co_filename == "<syncspy>":
        name = frame.f_code.co_name
    elif event == "c_call":
        name = getattr(arg, "__name__", None)
        name = "hook" if name == "_syncspy_hook" else None
    if name in STEP_END or name == "hook":
        calls[name] = calls.get(name, 0) + 1
sys.path.insert(0, PROGS)
from backward import ClampGrad  # its backward syncs (.item()): attributed in some steps
dev = torch.device("cuda")
w = torch.zeros(16, device=dev, requires_grad=True)
x = torch.zeros(16, device=dev)
opt = torch.optim.SGD([w], lr=0.001)
sys.setprofile(prof)
for _ in range(STEPS):
    if BACKWARD:
        ClampGrad.apply(w * 2.0).sum().backward()
    else:
        w.grad = torch.ones(16, device=dev) if w.grad is None else w.grad
        x.add_(1.0)
    opt.step()
sys.setprofile(None)
print(json.dumps(calls))
'''


def run(steps, backward):
    r = harness.python_code(f"STEPS = {steps}\nBACKWARD = {backward}\nPROGS = {harness.PROGS!r}\n"
                            + CODE)
    return r, json.loads(r.stdout.strip().splitlines()[-1])


class StepEnd(unittest.TestCase):
    def test_tiny_steps_run_no_agent_python(self):
        r, calls = run(200, False)
        self.assertEqual(r.returncode, 0, r.stderr)
        # every optimizer step but those before the hook was registered (at the first launches)
        self.assertGreaterEqual(calls.pop("hook", 0), 195, (calls, r.stderr))
        self.assertEqual(calls, {}, r.stderr)  # no step end ran the agent's Python
        s = r.summary()
        self.assertGreaterEqual(s["steps_seen"], 196, s)

    def test_python_only_at_attribution_steps(self):
        # the backward sync is attributed in the step after it is first seen and 100 active
        # steps later (SYNCSPY_BACKWARD=auto); 150 steps: the last one is not attributed
        r, calls = run(150, True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreaterEqual(calls.pop("hook", 0), 145, (calls, r.stderr))
        attributed = r.summary()["attribution_steps"]
        self.assertGreaterEqual(attributed, 2, r.stderr)
        # one call at an attribution step's beginning, one at its end (popping the mode);
        # nothing at any other step's end
        self.assertEqual(calls, {"_attr_begin": attributed, "_attr_pop": attributed,
                                 "_pop_ours": attributed}, r.stderr)


if __name__ == "__main__":
    unittest.main()
