"""tests/torch/test_inductor.py: torch.compile with its default backend, Inductor, on the
simulated device (issue 34 item 5): Triton compiles its kernels on the CPU (the triton wheel's
ptxas; its launcher with gcc against Python's headers) and loads and launches them through the
simulated driver (sim/module_api.c: cuModuleLoad[Data], cuModuleGetFunction, cuLaunchKernelEx),
cuBLAS runs the matmuls. progs/inductor.py trains a small model for several steps, with the
agent and without it: the same output and exit status; the agent's report counts the steps, and
its launches per step equal the kernels the simulator queued in that step (simcuda_kernel_count,
read by the program after each optimizer step): launches through the driver API, which no
interposed symbol sees, are counted through CUPTI's driver domain (entry/cupti.c).

Runs in the inductor venv (`make torch-inductor-venv`: tests/torch/requirements.txt and
requirements-inductor.txt, i.e. the pinned torch and its triton), or the interpreter
TORCH_INDUCTOR_PYTHON names."""
import json
import os
import tempfile
import unittest

import harness

PYTHON = os.environ.get("TORCH_INDUCTOR_PYTHON") or os.path.join(harness.BUILD, "inductor-venv", "bin", "python")
STEPS = 6
# the compile caches of one test run, shared by its runs: the second run of a configuration
# loads what the first compiled (as a user's second run does), the agent's run included
CACHE = tempfile.mkdtemp(prefix="syncspy-inductor-")


def run(*args, preload=True):
    env = {"TRITON_CACHE_DIR": os.path.join(CACHE, "triton"),
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(CACHE, "inductor"),
           "TRITON_DEFAULT_FP_FUSION": "1"}  # triton 3.9 warns where it is unset
    return harness.run("inductor.py", "--steps", STEPS, *args, env=env, preload=preload,
                       timeout=900, python=PYTHON)


def kernels_per_step(r):
    line = [l for l in r.stdout.splitlines() if l.startswith("kernels per step: ")][-1]
    return json.loads(line.split(": ", 1)[1])


@unittest.skipUnless(os.path.exists(PYTHON), f"no inductor venv at {PYTHON}: make torch-inductor-venv")
class Inductor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain = run(preload=False)
        cls.agent = run()

    def test_same_output_and_exit_status(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stderr[-3000:])
        self.assertEqual(self.agent.returncode, 0, self.agent.stderr[-3000:])
        # the kernels of each step (the first one compiles and autotunes: its count may differ
        # with a warm cache) and the rest of the output
        plain, agent = self.plain.stdout.splitlines(), self.agent.stdout.splitlines()
        self.assertEqual(kernels_per_step(self.plain)[1:], kernels_per_step(self.agent)[1:])
        strip = lambda lines: [l for l in lines if not l.startswith("kernels per step: ")]
        self.assertEqual(strip(plain), strip(agent))
        self.assertIn(f"steps: {STEPS}", agent)

    def test_launches_per_step_are_the_kernels_queued(self):
        s = self.agent.summary()
        steps = [st for st in s["steps"] if not st["partial"] and not st.get("startup")]
        # the optimizer step hook ends each step: the steps after the first (which compiled)
        self.assertGreaterEqual(len(steps), STEPS - 2, s["steps"])
        queued = kernels_per_step(self.agent)
        # the last complete steps, the program's and the agent's, align from the end
        for mine, truth in zip(reversed([st["launches"] for st in steps]), reversed(queued[1:])):
            self.assertEqual(mine, truth, (queued, [st["launches"] for st in s["steps"]]))
        # Inductor's steady state: the Triton kernels (driver API) and the cuBLAS matmuls
        self.assertGreater(queued[-1], 4, queued)


if __name__ == "__main__":
    unittest.main()
