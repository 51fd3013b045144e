"""Real PyTorch over the simulated device: the syncs of host copies (pageable vs pinned with
non_blocking=True), torch.cuda.synchronize, torch.cuda.empty_cache; a DataLoader with worker
processes and pin_memory (one process folder, silent workers); training steps from the real
optimizer hook under a schedule; torch.profiler and torch.cuda.set_sync_debug_mode in the same
process (syncspy coexists with both; the syncs torch's own mode reports against syncspy's)."""
import json
import os
import unittest

import harness
from harness import complete_steps, count_at, marked_lines, sites_at

COPIES = harness.prog("copies.py")
LOADER = harness.prog("dataloader.py")
SYNC_DEBUG = harness.prog("sync_debug.py")
SEG = harness.DEMO


class Copies(unittest.TestCase):
    ROUNDS = 3

    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(COPIES, cls.ROUNDS)
        cls.s = cls.r.summary()

    def test_syncing_lines(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        apis = {"pageable_h2d": "cudaMemcpyAsync", "synchronize": "cudaDeviceSynchronize",
                "empty_cache": "cudaFree"}
        for name, line in marked_lines(COPIES).items():
            with self.subTest(name):
                self.assertEqual(count_at(self.s, COPIES, line, apis[name]), self.ROUNDS)
                self.assertEqual(count_at(self.s, COPIES, line), self.ROUNDS)

    def test_pinned_copies_do_not_sync(self):
        for name, line in marked_lines(COPIES, "nosync").items():
            with self.subTest(name):
                self.assertEqual(sites_at(self.s, COPIES, line), [])

    def test_one_kind_per_step(self):
        # five optimizer steps per round: pageable copy, pinned copy, pinned read, synchronize,
        # empty_cache; only the first, fourth and fifth sync
        steps = complete_steps(self.s)
        self.assertEqual([st["syncs"] for st in steps], [1, 0, 0, 1, 1] * self.ROUNDS, steps)

    def test_hints(self):
        for name, words in (("pageable_h2d", "pin_memory()"), ("synchronize", "torch.cuda.synchronize"),
                            ("empty_cache", "cudaFree synchronizes the device")):
            with self.subTest(name):
                g = harness.group_at(self.r.stderr, "copies.py", marked_lines(COPIES)[name])
                self.assertIsNotNone(g, self.r.stderr)
                self.assertIn(words, g["hint"] or "")


class TwoOpsOneLine(unittest.TestCase):
    def test_every_op_of_the_line(self):
        # issue 35 item 1: a row names its heaviest op beside the line and lists every other op
        # that synced there with its own rate and hint, whichever wins the blocked time this run
        prog = harness.prog("two_ops.py")
        r = harness.run(prog, 8)
        self.assertEqual(r.returncode, 0, r.stderr)
        g = harness.group_at(r.stderr, "two_ops.py", marked_lines(prog)["two"])
        self.assertIsNotNone(g, r.stderr)
        self.assertRegex(g["head"], r"\s2\.00\s")
        ops = {"Tensor.item": ".item() copies a scalar to the host",
               "Tensor.__bool__": "if t: / bool(t) / assert t reads a CUDA tensor on the host"}
        first = g["at"].split("op: ")[1]
        self.assertIn(first, ops)
        other = next(o for o in ops if o != first)
        text = "\n".join(g["lines"])
        self.assertIn(f"      also op: {other}  1.00 syncs/step, ", text)
        self.assertIn(f"        hint: {ops[other]}", text)
        # `check --json`: the row's ops, heaviest first, each with its rate and hint
        chk = json.loads(harness.cli("check", r.out_dir, "--max-syncs-per-step", "100", "--json").stdout)
        row = next(l for l in chk["processes"][0]["sites"] if l["line"] == marked_lines(prog)["two"])
        self.assertEqual(row["ops"][0]["op"], row["op"])
        self.assertEqual({o["op"]: (o["syncs_per_step"], o["hint"][:len(ops[o["op"]])]) for o in row["ops"]},
                         {o: (1.0, h) for o, h in ops.items()})
        self.assertGreaterEqual(row["ops"][0]["blocked_per_step_ns"], row["ops"][1]["blocked_per_step_ns"])
        # summary.json has each op's sites, at the line
        self.assertEqual({x["op"] for x in sites_at(r.summary(), prog, marked_lines(prog)["two"])}, set(ops))


class DataLoaderWorkers(unittest.TestCase):
    def test_one_folder_silent_workers(self):
        r = harness.run(LOADER, 2)
        plain = harness.run(LOADER, 2, preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, plain.stdout)
        self.assertEqual(r.stdout.strip(), "batches 8")
        self.assertEqual(len(r.process_dirs()), 1, r.process_dirs())
        self.assertEqual(r.stderr.count("syncspy: pid "), 1, r.stderr)
        s = r.summary()
        self.assertEqual(s["pid"], int(os.path.basename(r.process_dirs()[0])[3:]))
        self.assertEqual(count_at(s, LOADER, marked_lines(LOADER)["item"]), 8)
        # every sync is the loss read: the batches' copies from pinned memory never wait
        self.assertEqual(sum(x["count"] for x in s["sites"]), 8, harness.frames_text(s["sites"][0]))


class ScheduleOverOptimizerSteps(unittest.TestCase):
    def test_active_steps_exactly(self):
        # 12 optimizer steps; skip_first=1, then (wait 1, warmup 1, active 2) twice: steps
        # 3, 4, 7, 8 are recorded, as torch.profiler.schedule numbers them
        r = harness.run(SEG, "--steps", 12, "--log-every", 0,
                        env={"SYNCSPY_SCHEDULE": "skip_first=1,wait=1,warmup=1,active=2,repeat=2"})
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual([st["step"] for st in s["steps"]], [3, 4, 7, 8], s["steps"])
        self.assertEqual([st["syncs"] for st in s["steps"]], [5, 5, 5, 5], s["steps"])
        self.assertEqual(sum(x["count"] for x in s["sites"]), 20)
        self.assertIn("12 optimizer steps (schedule: skip_first=1,wait=1,warmup=1,active=2,repeat=2)\n"
                      "  4 steps counted (the schedule records 4 of 13)\n", r.stderr)


class TorchOwnTools(unittest.TestCase):
    """syncspy beside torch.cuda.set_sync_debug_mode and torch.profiler in one process."""

    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(SYNC_DEBUG)
        cls.prof = harness.run(SYNC_DEBUG, "--profile")
        cls.rows = [json.loads(line) for line in cls.r.stdout.splitlines() if line.startswith("{")]

    def syncspy_count(self, run, line):
        # the operations run twice: once before the mode is switched on, once with it
        return count_at(run.summary(), SYNC_DEBUG, line)

    def test_torch_mode_misses_what_syncspy_sees(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        by_op = {row["op"]: row for row in self.rows}
        self.assertEqual(sorted(by_op), sorted(marked_lines(SYNC_DEBUG)))
        for op, line in marked_lines(SYNC_DEBUG).items():
            with self.subTest(op):
                self.assertGreaterEqual(self.syncspy_count(self.r, line), 2, op)
        # torch.cuda.set_sync_debug_mode("warn") on torch 2.15: silent for the pageable
        # non_blocking copy, the explicit synchronize and the cudaFree of empty_cache
        missed = sorted(op for op, row in by_op.items() if row["torch_warnings"] == 0)
        self.assertEqual(missed, ["empty_cache", "pageable_h2d", "synchronize"], self.rows)

    def test_profiler_runs_beside_syncspy(self):
        self.assertEqual(self.prof.returncode, 0, self.prof.stderr)
        rows = [json.loads(line) for line in self.prof.stdout.splitlines() if line.startswith("{")]
        self.assertGreater(rows[-1]["profiler_events"], 0, rows)
        # syncspy keeps recording while the profiler runs: the same counts as without it
        for op, line in marked_lines(SYNC_DEBUG).items():
            with self.subTest(op):
                self.assertEqual(self.syncspy_count(self.prof, line), self.syncspy_count(self.r, line))
        self.assertNotIn("stepping aside", self.prof.stderr)


if __name__ == "__main__":
    unittest.main()
