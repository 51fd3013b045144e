"""Real PyTorch over the simulated device: the report's headline numbers describe training steps.
Start-up (step 0: import torch, model set-up, the first iteration, up to the first optimizer
step) is reported apart and kept out of the per-step rates; the header's median step time matches
the program's own clock; summary.json says which step is start-up; the optimizer step hook is in
place for the first optimizer.step() even when the process's first CUDA call came before torch
was imported and the schedule starts with steps it does not record; when no hook can be
registered, the report says so."""
import json
import re
import statistics
import unittest

import harness
import util
from harness import complete_steps, marked_lines

SEG = harness.DEMO
STEPS = 60


def header_median_ms(report):
    m = re.search(r"^  step ([0-9.]+) (ms|us) median \(mean ([0-9.]+) (ms|us), sd ", report, re.M)
    assert m, report
    return float(m.group(1)) * (1 if m.group(2) == "ms" else 1e-3)


class SeedLoopHeader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(SEG, "--steps", STEPS, "--log-every", 0, "--step-times")
        cls.s = cls.r.summary()
        cls.own = [float(line.split()[2]) for line in cls.r.stdout.splitlines() if line.startswith("step ")]

    def test_median_step_time_matches_the_programs_clock(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        own = statistics.median(self.own[1:])  # the program's steps after the first
        ours = header_median_ms(self.r.stderr)
        self.assertLess(abs(ours - own) / own, 0.10, (ours, own, self.r.stderr[:600]))

    def test_startup_apart(self):
        s = self.s
        self.assertIsNotNone(s["startup"])
        self.assertEqual(s["steps"][0]["step"], 0)
        self.assertTrue(s["steps"][0]["startup"])
        self.assertFalse(any(st.get("startup") for st in s["steps"][1:]))
        training = [st for st in complete_steps(s) if not st.get("startup")]
        self.assertEqual(len(training), STEPS - 1)
        # start-up holds import torch and the set-up: far longer than a training step
        self.assertGreater(s["startup"]["wall_ns"], 20 * statistics.median(st["wall_ns"] for st in training))
        # (no loss is read after the last optimizer step: the step open at exit holds nothing)
        self.assertIn("60 optimizer steps\n  start-up runs to the first, 59 steps counted\n", self.r.stderr)
        self.assertRegex(self.r.stderr, r"  before the first step \(start-up, not in the rates\): [0-9.]+ s, \d+ syncs")
        # the set-up's copies (model.to(dev)) are start-up's, listed there, not in the table
        setup = marked_lines(SEG)["set_up"]
        self.assertRegex(self.r.stderr, rf"\s+2 x cudaMemcpyAsync, .* at main  \S*seg_loss.py:{setup}\n")
        self.assertIsNone(harness.group_at(self.r.stderr, "seg_loss.py", setup))
        for site in harness.sites_at(s, SEG, setup):
            self.assertEqual(site["startup_count"], site["count"])

    def test_per_step_rates_are_training_steps(self):
        # the loss's four forward lines: exactly one sync per training step each
        marks = marked_lines(SEG)
        for name in ("nonzero", "mask_target", "mask_pred", "unique"):
            g = harness.group_at(self.r.stderr, "seg_loss.py", marks[name])
            self.assertIsNotNone(g, self.r.stderr)
            self.assertRegex(g["head"], r"\s1\.00\s", (name, g["head"]))
        # the header counts every thread's, as the rows and check do: the four and the backward's;
        # the training loop's own thread has the four (the backward's is autograd's engine thread's)
        self.assertRegex(self.r.stderr, r"\| 5\.00 syncs/step \|")
        self.assertEqual(harness.training_thread_syncs(self.r.stderr), 4.0, self.r.stderr)

    def test_threads(self):
        threads = {t["name"]: t for t in self.s["threads"]}
        main = [t for t in self.s["threads"] if t["ends_steps"]]
        self.assertEqual(len(main), 1, self.s["threads"])
        # the autograd engine's thread syncs once per step (IndexBackward0), apart from the loop's
        engine = [t for t in self.s["threads"] if not t["ends_steps"]]
        self.assertEqual(len(engine), 1, threads)
        self.assertEqual(engine[0]["syncs"] - engine[0]["startup_count"] - engine[0]["partial_count"], STEPS - 1)
        others = harness.other_thread_rates(self.r.stderr)
        self.assertEqual([(n, t, r) for n, t, r in others], [(engine[0]["name"], engine[0]["tid"], 1.0)],
                         self.r.stderr)
        self.assertIn(" during backward()", self.r.stderr)


class FixedLoss(unittest.TestCase):
    def test_no_sync_in_the_training_steps(self):
        r = harness.run(SEG, "--steps", 30, "--log-every", 0, "--fixed")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no host-device syncs in the training steps", r.stderr)
        self.assertRegex(r.stderr, r"\| 0\.00 syncs/step \|")
        self.assertRegex(r.stderr, r"before the first step \(start-up, not in the rates\): [0-9.]+ s, 4 syncs")


class StepHook(unittest.TestCase):
    def test_first_cuda_call_before_torch_with_a_waiting_schedule(self):
        r = harness.run("late_optim.py", 12, env={"SYNCSPY_SCHEDULE": "skip_first=2,wait=1,warmup=1,active=2,repeat=2"})
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual(s["step_source"], "optimizer.step()")
        # torch.profiler's numbering: steps 4, 5 and 8, 9 recorded, one loss read each
        self.assertEqual([(st["step"], st["syncs"]) for st in complete_steps(s)], [(4, 1), (5, 1), (8, 1), (9, 1)])

    def test_every_step_without_a_schedule(self):
        r = harness.run("late_optim.py", 6)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        # step 0: the early sync (before torch); then one loss read per step
        self.assertEqual([st["syncs"] for st in complete_steps(s)], [1, 1, 1, 1, 1, 1])

    def test_no_hook_is_said(self):
        r = harness.run("no_optim.py")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "no_optim: done\n")
        s = r.summary()
        self.assertTrue(s["no_step_hook"])
        self.assertIsNone(s["step_source"])
        self.assertEqual(r.stderr.count("no step mark: torch.optim's optimizer step hook could not be registered"), 1)


class FirstScreen(unittest.TestCase):
    """Issue 25 on real torch: the header counts what the rows and `syncspy check` count, the
    steps read as the user made them, the time after the last step has its line, the user line's
    code is under its row, a run with no step mark says so, and the report starts on a line of
    its own."""

    @classmethod
    def setUpClass(cls):
        # 10 optimizer steps, loss.item() after every 5th: the last read comes after the last step
        cls.r = harness.run(SEG, "--steps", 10, "--log-every", 5)
        cls.s = cls.r.summary()
        d = cls.r.process_dirs()[0]
        p = harness.cli("check", "--json", "--max-syncs-per-step", "1000", d)
        assert p.returncode == 0, p.stdout + p.stderr
        cls.check = json.loads(p.stdout)["processes"][0]

    def test_header_is_the_rows_sum_and_checks_figure(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        head = float(re.search(r"\| ([0-9.]+) syncs/step \|", self.r.stderr).group(1))
        rows = util.table_rates(self.r.stderr)
        self.assertAlmostEqual(sum(rows), head, delta=0.011 * len(rows))
        self.assertAlmostEqual(self.check["syncs_per_step"], head, delta=0.006)
        # the loss's four lines, the backward's, and .item() once in the 9 training steps
        self.assertAlmostEqual(head, 5 + 1 / 9, delta=0.006)
        # summary.json: the same count over the training steps
        training = sum(x["count"] - x["startup_count"] - x["partial_count"] for x in self.s["sites"])
        self.assertEqual(training, round(head * 9))
        # the training thread's own: all but the backward's (autograd's engine thread)
        self.assertAlmostEqual(harness.training_thread_syncs(self.r.stderr), 4 + 1 / 9, delta=0.006)

    def test_steps_as_the_user_counts_them(self):
        self.assertRegex(self.r.stderr, r"\nsyncspy: pid \d+: 10 optimizer steps\n  start-up runs to the first, "
                                        r"9 steps counted, the time after the last is shown apart\n")
        self.assertTrue(self.r.stderr.startswith("\nsyncspy: pid ") or "\n\nsyncspy: pid " in self.r.stderr,
                        self.r.stderr[:300])

    def test_after_the_last_step_has_its_line(self):
        item = marked_lines(SEG)["item"]
        m = re.search(r"^  after the last step \(not in the rates\): \S+ \S+, (\d+) syncs?, blocked .*\n"
                      r"    (\d+) x cudaStreamSynchronize, \S+ \S+, at main  \S*seg_loss\.py:(\d+)\n",
                      self.r.stderr, re.M)
        self.assertIsNotNone(m, self.r.stderr)
        self.assertEqual((m.group(1), m.group(2), int(m.group(3))), ("1", "1", item))
        partial = sum(x["partial_count"] for x in self.s["sites"])
        self.assertEqual(partial, 1)

    def test_the_user_lines_code_under_its_row(self):
        marks = marked_lines(SEG)
        with open(SEG) as f:
            code = f.read().splitlines()
        for name in ("nonzero", "unique", "mask_target"):
            line = marks[name]
            g = harness.group_at(self.r.stderr, "seg_loss.py", line)
            self.assertIsNotNone(g, self.r.stderr)
            self.assertIn(f"      {line} | {code[line - 1].strip()}", g["lines"], g["lines"])
        self.assertNotIn("runtime frames)", self.r.stderr)  # the unexplained "via" line is gone

    def test_no_step_mark_says_whole_run_totals(self):
        r = harness.run("no_optim.py")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"syncspy: pid \d+: no step found: whole-run totals\n  wall \S+ \S+ \| 3 syncs \|")
        s = r.summary()
        self.assertIsNone(s["startup"])
        for x in s["sites"]:  # the parts partition the count: all of it the one open step's
            self.assertEqual((x["startup_count"], x["partial_count"]), (0, x["count"]), x)


if __name__ == "__main__":
    unittest.main()
