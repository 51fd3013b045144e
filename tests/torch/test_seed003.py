"""Real PyTorch over the simulated device: the seed-003 segmentation loop (examples/seg_loss.py,
the demo). torch.nonzero, torch.unique and the two boolean-mask indexings each sync once per
step on their own Python line with their hint; the backward of the masked prediction
(IndexBackward0) syncs once per step in autograd's engine thread; the rewritten loss makes no sync
inside a step. Expected lines come from the program's "# sync:" markers."""
import re
import unittest

import harness
from harness import complete_steps, count_at, marked_lines, sites_at

PROG = harness.DEMO
STEPS = 8
QUIET = ("--steps", STEPS, "--log-every", 0, "--step-times")  # no loss reads, a line per step
MARKS = marked_lines(PROG)
HINTS = {"nonzero": "torch.nonzero(as_tuple=True) syncs to size its output",
         "mask_target": "x[bool_mask] syncs to size its output",
         "mask_pred": "x[bool_mask] syncs to size its output",
         "unique": "torch.unique syncs to size its output",
         "item": ".item() copies a scalar to the host"}


def step_lines(stdout):
    """The program's per-step lines without their timings."""
    return [re.sub(r" [0-9.]+$", "", line) for line in stdout.splitlines() if line.startswith("step ")]


class OriginalLoss(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(PROG, *QUIET)
        cls.plain = harness.run(PROG, *QUIET, preload=False)
        cls.s = cls.r.summary()

    def test_exit_status_and_output_unchanged(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stderr)
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        self.assertEqual(step_lines(self.r.stdout), step_lines(self.plain.stdout))
        self.assertEqual(len(step_lines(self.r.stdout)), STEPS)
        last = lambda out: re.sub(r"[0-9.]+ ms", "T ms", out.splitlines()[-1])
        self.assertEqual(last(self.r.stdout), last(self.plain.stdout))
        self.assertIn(f"{STEPS} steps of the original loss", self.r.stdout)
        self.assertNotIn("syncspy", self.plain.stderr)

    def test_each_line_syncs_once_per_step(self):
        for name in ("nonzero", "mask_target", "mask_pred", "unique"):
            with self.subTest(name):
                sites = sites_at(self.s, PROG, MARKS[name])
                self.assertTrue(sites, name)
                self.assertEqual(count_at(self.s, PROG, MARKS[name]), STEPS, name)
                self.assertTrue(all(s["api"] == "cudaStreamSynchronize" for s in sites), sites)

    def test_report_rows_with_their_hints(self):
        for name in ("nonzero", "mask_target", "mask_pred", "unique"):
            with self.subTest(name):
                g = harness.group_at(self.r.stderr, "seg_loss.py", MARKS[name])
                self.assertIsNotNone(g, self.r.stderr)
                self.assertIn(HINTS[name], g["hint"] or "", g["lines"])
                # syncs/step: 1.00 over the complete training steps
                self.assertRegex(g["head"], r"\s1\.00\s", g["head"])

    def test_backward_sync_in_the_autograd_thread(self):
        backward = [s for s in self.s["sites"]
                    if any("IndexBackward0::apply" in (f["function"] or "") for f in s["frames"])]
        self.assertEqual(sum(s["count"] for s in backward), STEPS, harness.frames_text(backward[0])
                         if backward else self.s["sites"])
        for s in backward:
            functions = [f["function"] or "" for f in s["frames"]]
            self.assertTrue(any("Engine::thread_main" in f for f in functions), functions)
            self.assertEqual(s["api"], "cudaStreamSynchronize")

    def test_training_steps_from_the_optimizer_hook(self):
        steps = complete_steps(self.s)
        self.assertEqual([st["step"] for st in steps], list(range(STEPS)), self.s["steps"])
        # four lines in the forward pass and one in the backward: five syncs in every step
        # after the first (which also holds the set-up: model.to(dev))
        self.assertEqual([st["syncs"] for st in steps[1:]], [5] * (STEPS - 1), steps)
        self.assertEqual(steps[0]["syncs"], 5 + count_at(self.s, PROG, MARKS["set_up"]), steps[0])
        self.assertEqual(sum(s["count"] for s in self.s["sites"]),
                         sum(st["syncs"] for st in self.s["steps"]))


class ItemEveryStep(unittest.TestCase):
    def test_item_line(self):
        r = harness.run(PROG, *QUIET[:2], "--log-every", 1)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual(count_at(s, PROG, MARKS["item"]), STEPS)
        g = harness.group_at(r.stderr, "seg_loss.py", MARKS["item"])
        self.assertIsNotNone(g, r.stderr)
        self.assertIn(HINTS["item"], g["hint"] or "")
        # .item() comes after optimizer.step(): step k's read falls in step k + 1
        steps = complete_steps(s)
        self.assertEqual([st["syncs"] for st in steps[1:]], [6] * (STEPS - 1), steps)


class CaptureMemo(unittest.TestCase):
    """A sync whose native and Python stacks are those of one of the thread's last captures takes
    its site from the thread's capture memo (agent/record/capture_memo.h): the four forward lines
    after their first step. Their counts stay one a step each (OriginalLoss checks the same with
    the memo in use; here, that the memo is in use and the rows stay exact)."""

    def test_forward_syncs_reuse_their_capture(self):
        r = harness.run(PROG, *QUIET, env={"SYNCSPY_DEBUG": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"sites: (\d+) syncs found theirs in the thread's capture memo", r.stderr)
        self.assertIsNotNone(m, r.stderr)
        # four lines on the main thread, each new in the first step; the backward sync (autograd's
        # engine thread, where a node's forward stack is added) never comes from the memo
        self.assertGreaterEqual(int(m.group(1)), 4 * (STEPS - 1))
        self.assertLessEqual(int(m.group(1)), 4 * STEPS)
        s = r.summary()
        for name in ("nonzero", "mask_target", "mask_pred", "unique"):
            with self.subTest(name):
                self.assertEqual(count_at(s, PROG, MARKS[name]), STEPS, name)


class FixedLoss(unittest.TestCase):
    def test_no_sync_inside_a_step(self):
        r = harness.run(PROG, *QUIET, "--fixed")
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        steps = complete_steps(s)
        self.assertEqual(len(steps), STEPS, s["steps"])
        self.assertEqual([st["syncs"] for st in steps[1:]], [0] * (STEPS - 1), steps)
        text = "\n".join(harness.frames_text(x) for x in s["sites"])
        for name in ("nonzero", "unique", "IndexBackward0", "index_put"):
            self.assertNotIn(name, text)
        # what is left is the set-up's copy, before the first optimizer step
        self.assertEqual(sum(x["count"] for x in s["sites"]), count_at(s, PROG, MARKS["set_up"]))


if __name__ == "__main__":
    unittest.main()
