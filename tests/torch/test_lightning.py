"""syncspy.lightning.SyncSpyProfiler in a real lightning.pytorch Trainer (tests/torch/
requirements-lightning.txt, build/lightning-venv) with accelerator="gpu" on real torch over the
simulated device (tests/torch/progs/lightning_fit.py): per action the calls, the syncs per call
(training_step's two boolean-mask indexings, backward's IndexBackward0 in autograd's engine
thread, optimizer_step holding both, run_training_batch all three) with their spread, the
blocked time and its share; the summary in Lightning's report (the log, or dirpath/filename);
syncspy's steps ended at Lightning's batches (explicit marks, winning over the optimizer hook),
so its own report counts the same 3 syncs per step; the same under `syncspy run` as under
LD_PRELOAD, and without the agent durations only and a sentence saying why. Lightning's own
batch transfer from a pageable DataLoader (tests/torch/progs/lightning_batches.py) is reported at
the user's trainer.fit line as Lightning's, with pin_memory=False named; none with
pin_memory=True."""
import glob
import json
import os
import subprocess
import tempfile
import unittest

import harness
from harness import CLI, complete_steps, count_at, marked_lines

PROG = os.path.join(harness.PROGS, "lightning_fit.py")
PYTHON = os.environ.get("LIGHTNING_PYTHON") or os.path.join(harness.BUILD, "lightning-venv", "bin", "python")
STEPS = 5
MARKS = marked_lines(PROG)
TRAINING_STEP = "[Strategy]SingleDeviceStrategy.training_step"
BACKWARD = "[Strategy]SingleDeviceStrategy.backward"
OPTIMIZER_STEP = "[LightningModule]Seg.optimizer_step"
PER_CALL = {"run_training_batch": 3, OPTIMIZER_STEP: 3, TRAINING_STEP: 2, BACKWARD: 1,
            "[_TrainingEpochLoop].train_dataloader_next": 0, "[Strategy]SingleDeviceStrategy.batch_to_device": 0}


def stats_of(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("stats ")]
    assert line, stdout
    return json.loads(line[-1][len("stats "):])


def table_rows(text):
    """{action: [columns]} of the profiler's table."""
    rows = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cols) == 11 and cols[0] != "Action":
            rows[cols[0]] = cols[1:]
    return rows


class WithTheAgent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(PROG, STEPS, python=PYTHON)
        assert cls.r.returncode == 0, cls.r.stderr
        cls.stats = stats_of(cls.r.stdout)
        cls.s = cls.r.summary()

    def test_syncs_per_call_of_each_action(self):
        for action, n in PER_CALL.items():
            with self.subTest(action=action):
                st = self.stats[action]
                self.assertEqual(st["calls"], STEPS)
                self.assertEqual(st["recorded_calls"], STEPS)
                self.assertEqual(st["syncs_per_call"], n)
                self.assertEqual(st["syncs_sd"], 0.0)
                if n:
                    self.assertGreater(st["blocked_ms_per_call"], 0)
                    self.assertGreater(st["blocked_share"], 0)
                    self.assertLess(st["blocked_share"], 1)
                else:
                    self.assertEqual(st["blocked_ms_per_call"], 0)
        # nested: optimizer_step holds training_step and backward
        self.assertGreaterEqual(self.stats[OPTIMIZER_STEP]["total_s"],
                                self.stats[TRAINING_STEP]["total_s"] + self.stats[BACKWARD]["total_s"])
        self.assertEqual(self.stats["run_training_epoch"]["syncs_per_call"], 3 * STEPS)

    def test_summary_in_lightnings_report(self):
        self.assertIn("FIT Profiler Report (syncspy)", self.r.stderr)
        rows = table_rows(self.r.stderr)
        for action, n in PER_CALL.items():
            self.assertEqual(rows[action][0], str(STEPS))          # calls
            self.assertEqual(rows[action][5], f"{n:.2f}")         # syncs/call
            self.assertEqual(rows[action][6], "0.00")             # their sd
        self.assertRegex(rows[TRAINING_STEP][7], r"^\d+\.\d{3} ms$")
        self.assertNotEqual(rows[TRAINING_STEP][7], "0.000 ms")
        # the heaviest blocked time first: the actions that hold the most syncs lead
        order = list(rows)
        self.assertLess(order.index(TRAINING_STEP), order.index("[_TrainingEpochLoop].train_dataloader_next"))

    def test_steps_are_lightnings_batches(self):
        self.assertEqual(self.s["step_source"], "syncspy.step()")
        training = [st for st in complete_steps(self.s) if not st.get("startup")]
        self.assertEqual([st["syncs"] for st in training], [3] * STEPS, self.s["steps"])
        self.assertRegex(self.r.stderr, r"pid \d+: \d+ syncspy\.step\(\) marks\n")
        self.assertIn(f"start-up runs to the first, {STEPS} steps counted", self.r.stderr)
        # the masks' line: 2 syncs a batch
        self.assertEqual(count_at(self.s, PROG, MARKS["masks"]), 2 * STEPS)
        g = harness.group_at(self.r.stderr, "lightning_fit.py", MARKS["masks"])
        self.assertIsNotNone(g, self.r.stderr)
        self.assertRegex(g["head"], r"\s2\.00\s")
        # the profiler and the agent agree
        self.assertEqual(sum(st["syncs"] for st in training),
                         self.stats["run_training_batch"]["syncs_per_call"] * STEPS)

    def test_summary_to_a_file(self):
        with tempfile.TemporaryDirectory(prefix="syncspy-lightning-") as d:
            r = harness.run(PROG, STEPS, "--file", d, python=PYTHON)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "fit-syncspy.txt")) as f:
                text = f.read()
        self.assertIn("FIT Profiler Report (syncspy)", text)
        self.assertEqual(table_rows(text)["run_training_batch"][5], "3.00")
        self.assertNotIn("FIT Profiler Report", r.stderr)


class UnderSyncspyRun(unittest.TestCase):
    def test_same_numbers(self):
        out = tempfile.mkdtemp(prefix="syncspy-lightning-run-")
        e = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SYNCSPY_")}
        e.update(harness.torch_env())
        p = subprocess.run([CLI, "run", "--out", out, "--", PYTHON, PROG, str(STEPS)], env=e,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        stats = stats_of(p.stdout)
        for action, n in PER_CALL.items():
            self.assertEqual(stats[action]["syncs_per_call"], n, action)
        [d] = glob.glob(os.path.join(out, "pid*"))
        self.assertIn(f"syncspy run: files in {d}/", p.stderr)


class WithoutTheAgent(unittest.TestCase):
    def test_durations_only(self):
        r = harness.run(PROG, STEPS, python=PYTHON, preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        stats = stats_of(r.stdout)
        self.assertEqual(stats["run_training_batch"]["calls"], STEPS)
        self.assertGreater(stats["run_training_batch"]["mean_s"], 0)
        self.assertIsNone(stats["run_training_batch"]["syncs_per_call"])
        self.assertIn("syncspy: the agent is not loaded in this process, so no sync was counted", r.stderr)
        self.assertEqual(table_rows(r.stderr)["run_training_batch"][5], "-")
        self.assertNotIn("syncspy: pid", r.stderr)
        self.assertEqual(os.listdir(r.out_dir), [])


BATCHES = os.path.join(harness.PROGS, "lightning_batches.py")


class LightningBatchTransfer(unittest.TestCase):
    """Lightning moves each batch to the device itself (lightning/fabric/utilities/apply_func.py):
    its frames, like torch's, are not the user's line; the row is the user's trainer.fit line,
    named as Lightning's batch transfer, with the DataLoader's pin_memory=False behind it. With
    pin_memory=True the copy does not wait (no such row)."""

    @classmethod
    def setUpClass(cls):
        cls.pageable = harness.run(BATCHES, STEPS, python=PYTHON)
        cls.pinned = harness.run(BATCHES, STEPS, "--pin", python=PYTHON)

    def test_named_at_the_users_line(self):
        r = self.pageable
        self.assertEqual(r.returncode, 0, r.stderr)
        fit = marked_lines(BATCHES)["fit"]
        g = harness.group_at(r.stderr, "lightning_batches.py", fit)
        self.assertIsNotNone(g, r.stderr)
        self.assertTrue(g["at"].startswith("at main"), g["at"])
        self.assertTrue(g["at"].endswith("op: Lightning batch transfer"), g["at"])
        self.assertIn("cudaMemcpyAsync", g["head"])
        self.assertRegex(g["head"], r"\s2\.00\s")  # x and y, each step
        self.assertIn("Lightning's batch transfer (move_data_to_device)", g["hint"])
        self.assertIn("pin_memory=False", g["hint"])
        self.assertIn("pin_memory=True", g["hint"])
        # no row is grouped at a frame of Lightning's
        for other in harness.report_groups(r.stderr):
            self.assertNotRegex(other["at"] or "", r"apply_func\.py|/lightning/", other["at"])
        sites = [s for s in r.summary()["sites"] if s.get("op") == "Lightning batch transfer"]
        self.assertTrue(sites)
        for s in sites:
            self.assertEqual(s["api"], "cudaMemcpyAsync")
            self.assertEqual(harness.user_frame(s, BATCHES)["line"], fit)
            self.assertTrue(any(f["file"].endswith("lightning/fabric/utilities/apply_func.py")
                                for f in s["frames"] if f["python"]), harness.frames_text(s))
        steps = [st for st in complete_steps(r.summary()) if st["step"] > 0]  # past start-up
        self.assertTrue(steps)
        self.assertEqual([st["syncs"] for st in steps], [2] * len(steps))
        # the framework's own line that made the wait, under the user's (issue 35 item 2): the
        # innermost of Lightning's frames, in the report and in `check --json`
        inner = next(f for f in sites[0]["frames"] if f["python"] and "/lightning/" in f["file"])
        self.assertEqual(inner["function"], "move_data_to_device.<locals>.batch_to")
        self.assertIn(f"      in the framework: {inner['function']}  .../utilities/apply_func.py:{inner['line']}",
                      g["lines"], g["lines"])
        chk = json.loads(harness.cli("check", r.out_dir, "--max-syncs-per-step", "100", "--json").stdout)
        rows = [l for l in chk["processes"][0]["sites"] if l["op"] == "Lightning batch transfer"]
        self.assertEqual([l["framework_at"] for l in rows], [f"{inner['function']}  {inner['file']}:{inner['line']}"])

    def test_pinned_batches_do_not_wait(self):
        r = self.pinned
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual([x for x in s["sites"] if x.get("op") == "Lightning batch transfer"], [])
        steps = [st for st in complete_steps(s) if st["step"] > 0]  # past start-up
        self.assertTrue(steps)
        self.assertEqual([st["syncs"] for st in steps], [0] * len(steps))
        self.assertIn("no host-device syncs in the training steps", r.stderr)

    def test_logged_metrics_are_not_batches(self):
        # self.log moves the metric's state with move_data_to_device too, and teardown moves the
        # logged metrics to the CPU: each named for what it is (issue 35 item 3), never a batch
        r = harness.run(BATCHES, STEPS, "--pin", "--log", python=PYTHON)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual([x for x in s["sites"] if x.get("op") == "Lightning batch transfer"], [])
        def through(x, name):
            return any(f["python"] and f["function"] == name for f in x["frames"])
        logged = [x for x in s["sites"] if through(x, "_ResultCollection.log")]
        torn = [x for x in s["sites"] if through(x, "_LoggerConnector.teardown") or through(x, "_ResultCollection.cpu")]
        self.assertTrue(logged and torn, [harness.frames_text(x) for x in s["sites"]])
        for x in logged:
            self.assertEqual(x["op"], "self.log metric state", harness.frames_text(x))
            self.assertTrue(x["hint"].startswith("self.log(name, value) moves the name's metric state"))
            self.assertEqual(harness.user_frame(x, BATCHES)["line"], marked_lines(BATCHES)["log"])
        for x in torn:
            self.assertEqual(x["op"], "Lightning teardown: logged metrics to the CPU", harness.frames_text(x))
        steps = [st for st in complete_steps(s) if st["step"] > 0]  # past start-up
        self.assertEqual([st["syncs"] for st in steps], [0] * len(steps))


if __name__ == "__main__":
    unittest.main()
