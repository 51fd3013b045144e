"""tests/torch/test_step_end.py: what a step's end runs (issue 26 item 3). The optimizer step hook
is C (agent/step/pyhook.c), and so is the switching of backward attribution on and off where node
creation is watched from C (agent/record/autograd_nodes.h): the agent's Python runs once per process,
when the hook is registered (its calibration, issue 35 item 5), never at a step's end, so a loop
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


def run(steps, backward, env=None):
    r = harness.python_code(f"STEPS = {steps}\nBACKWARD = {backward}\nPROGS = {harness.PROGS!r}\n"
                            + CODE, env=env)
    return r, json.loads(r.stdout.strip().splitlines()[-1])


class StepEnd(unittest.TestCase):
    def test_tiny_steps_run_no_agent_python(self):
        # auto: every recorded step is an attribution step, switched on in C (the calibration ran
        # when the hook was registered); sampled: no backward sync, no attribution step
        for env, want in ((None, {}), ({"SYNCSPY_BACKWARD": "sampled"}, {})):
            with self.subTest(env=env):
                r, calls = run(200, False, env)
                self.assertEqual(r.returncode, 0, r.stderr)
                # every optimizer step but those before the hook was registered (the first launches)
                self.assertGreaterEqual(calls.pop("hook", 0), 195, (calls, r.stderr))
                self.assertEqual(calls, want, r.stderr)
                s = r.summary()
                self.assertGreaterEqual(s["steps_seen"], 196, s)

    def test_python_only_at_the_first_attribution_step(self):
        # auto: all 149 counted steps attributed; sampled: the step after the backward sync is
        # first seen and 100 active steps later. Either way no call of the agent's Python at any
        # step's end (the calibration ran when the hook was registered)
        for env, least in ((None, 149), ({"SYNCSPY_BACKWARD": "sampled"}, 2)):
            with self.subTest(env=env):
                r, calls = run(150, True, env)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertGreaterEqual(calls.pop("hook", 0), 145, (calls, r.stderr))
                attributed = r.summary()["attribution_steps"]
                self.assertGreaterEqual(attributed, least, r.stderr)
                self.assertLess(attributed, 150 if env is None else 5, r.stderr)
                self.assertEqual(calls, {}, r.stderr)


if __name__ == "__main__":
    unittest.main()
