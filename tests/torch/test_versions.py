"""The demo (examples/seg_loss.py, 30 steps, the loss read every 5) on the torch of one venv:
TORCH_PYTHON's, so `make test-torch TORCH_VERSION=2.8 TORCH_TESTS=test_versions` checks torch 2.8
(build/torch-venv-2.8, on build/sim12) and the plain `make test-torch` torch 2.15. On the
simulated device torch sees a CUDA device; under the agent the demo's output and exit status are
its own, the report counts 30 optimizer steps and has exactly the rows DEMO_ROWS gives for that
torch series, each with its syncs per step (backward line included). Which operator and hint a
row names differs between versions and is not checked here (tests/torch/test_op_hints.py).
A torch series without a row in DEMO_ROWS fails: measure it and add one (docs/COMPATIBILITY.md)."""
import re
import subprocess
import unittest

import harness

PROG = harness.DEMO
STEPS = 30
MARKS = harness.marked_lines(PROG)


def line_of(text):
    """The line of examples/seg_loss.py that holds text."""
    with open(PROG) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError(f"{PROG} has no line with {text!r}")


# x[idx] = scalar with a CUDA index: torch 2.6 to 2.12 copy the 0-dim CPU value to the device
# from pageable memory (a copy and a wait per step), torch 2.15 does not.
INDEX_PUT = line_of("target[inds] = self.ignore_val")
# Every version: (line, backward?) -> syncs per step in the report (29 counted steps; the loss
# is read at 5 of them: 0.17)
COMMON_ROWS = {(MARKS["nonzero"], False): "1.00", (MARKS["mask_target"], False): "1.00",
               (MARKS["mask_pred"], False): "1.00", (MARKS["unique"], False): "1.00",
               (MARKS["item"], False): "0.17", (MARKS["mask_pred"], True): "1.00"}
# The rows of the report per torch series (measured: docs/COMPATIBILITY.md)
DEMO_ROWS = {
    "2.6": {**COMMON_ROWS, (INDEX_PUT, False): "2.00"},
    "2.8": {**COMMON_ROWS, (INDEX_PUT, False): "2.00"},
    "2.10": {**COMMON_ROWS, (INDEX_PUT, False): "2.00"},
    "2.12": {**COMMON_ROWS, (INDEX_PUT, False): "2.00"},
    "2.15": dict(COMMON_ROWS),
}


def torch_version(python):
    p = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                       capture_output=True, text=True, timeout=60)
    return p.stdout.strip()


def syncs_per_step(head):
    """The syncs/step column of a report row ("1  728 us  11.1%  1.00  728 us  5.41 ms  api")."""
    m = re.match(r"\d+\s+[0-9.]+ \S+\s+[0-9.]+%\s+([0-9.]+)\s", head)
    return m.group(1) if m else None


def step_lines(stdout):
    return [line for line in stdout.splitlines() if line.startswith("step ")]


def last_line(stdout):
    """The demo's closing line, its time left out ("30 steps of the original loss: T ms/step")."""
    return re.sub(r"[0-9.]+ ms", "T ms", stdout.splitlines()[-1])


def report_rows(stderr):
    """The report's rows as {(line of the demo, backward?): syncs per step}."""
    table = stderr[stderr.index("api / where"):]  # not the start-up lines
    got = {}
    for g in harness.report_groups(table):
        m = re.search(r"seg_loss\.py:(\d+)\b", g["at"] or "")
        assert m, g["lines"]
        got[(int(m.group(1)), g["backward"])] = syncs_per_step(g["head"])
    return got


class DemoOnThisTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = torch_version(harness.PYTHON)
        cls.series = ".".join(cls.version.split("+")[0].split(".")[:2])
        cls.r = harness.run(PROG)
        cls.plain = harness.run(PROG, preload=False)

    def test_torch_sees_the_simulated_device(self):
        r = harness.python_code("import torch\n"
                                "print(torch.version.cuda, torch.cuda.is_available(), "
                                "torch.cuda.get_device_name(0))\n", preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        cuda, available, name = r.stdout.strip().split(" ", 2)
        self.assertEqual((available, name), ("True", "Simulated CUDA device (syncspy)"), r.stdout)
        # the device folder of the harness is the one of that CUDA version
        want = harness.SIM12 if cuda.startswith("12.") else harness.SIM
        self.assertEqual(harness.sim_for(), want, cuda)

    def test_exit_status_and_output_unchanged(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stderr[-3000:])
        self.assertEqual(self.r.returncode, 0, self.r.stderr[-3000:])
        self.assertEqual(step_lines(self.r.stdout), step_lines(self.plain.stdout))
        self.assertEqual(len(step_lines(self.r.stdout)), STEPS // 5)
        self.assertEqual(last_line(self.r.stdout), last_line(self.plain.stdout))
        self.assertIn(f"{STEPS} steps of the original loss", self.r.stdout)
        self.assertNotIn("syncspy", self.plain.stderr)

    def test_thirty_optimizer_steps(self):
        self.assertEqual(harness.util.report_steps(self.r.stderr), (STEPS, STEPS - 1),
                         self.r.stderr[:2000])

    def test_the_rows_of_this_version(self):
        self.assertIn(self.series, DEMO_ROWS,
                      f"torch {self.version}: no rows measured for {self.series} in DEMO_ROWS")
        self.assertEqual(report_rows(self.r.stderr), DEMO_ROWS[self.series], f"torch {self.version}:\n" + self.r.stderr)


class CompiledOptimizerOnThisTorch(unittest.TestCase):
    """torch.compile(opt.step) (progs/compiled.py opt_step, backend aot_eager) on this torch: the
    agent's optimizer step hook is never seen by Dynamo (from 2.12 it is traced as a no-op; before,
    it leaves torch's table of global post hooks for the time of each compilation), so Dynamo's
    counters (frames, graph breaks, unimplemented) and the parameters are the program's, and
    every step is still counted."""

    def test_dynamo_left_alone_and_steps_counted(self):
        steps = 6
        plain = harness.run("compiled.py", "opt_step", steps, preload=False, timeout=600)
        r = harness.run("compiled.py", "opt_step", steps, timeout=600)
        self.assertEqual(plain.returncode, 0, plain.stderr[-3000:])
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertEqual(r.stdout, plain.stdout)
        self.assertNotIn("_syncspy", r.stdout + r.stderr)
        self.assertEqual(harness.util.report_steps(r.stderr)[0], steps, r.stderr[:2000])


if __name__ == "__main__":
    unittest.main()
