"""The seeds' own training loops on real torch + timm + torchvision over the simulated device
(tests/torch/progs/seed_models.py; the vision venv: `make torch-vision-venv`, or
TORCH_VISION_PYTHON; without it these tests fail, never skip). Each test runs one loop under
syncspy and checks the syncs per training step it reports, by line and by hint, as
docs/SEEDS.md tabulates them:

- seed 000 (timm's ViT with patch dropout, deterministic algorithms, DataLoader workers with
  pin_memory): on torch 2.15 neither the deterministic GatherBackward (the article's finding on
  torch 2.0) nor the article's indexing rewrite syncs: no sync in a training step; without
  pin_memory the two batch copies sync, each on its own line with the pinned-copy hint.
- seed 003 (the convolutional Net with the article's loss): torch.nonzero, torch.unique, the
  two boolean-mask indexings and the masked prediction's backward: 5 syncs per step, each on
  its line; the rewritten loss: none.
- seed 002 (U-Net, ResNet-34 encoder, Adam): channels_last, zero_grad(set_to_none=False) and
  cudnn.benchmark add no sync to a step (benchmark's plan timing is start-up); float16 AMP's
  GradScaler.step adds one per step (its hint), anomaly detection one per backward node in the
  engine thread (its hint), pageable batches one per copy."""
import os
import unittest

import harness
from harness import marked_lines, sites_at

VISION_PYTHON = os.environ.get("TORCH_VISION_PYTHON") or os.path.join(
    harness.BUILD, "vision-venv", "bin", "python")
PROG = os.path.join(harness.PROGS, "seed_models.py")
SEG_LOSS = os.path.join(harness.ROOT, "examples", "seg_loss.py")
STEPS = 6
MARKS = marked_lines(PROG)
SEG_MARKS = marked_lines(SEG_LOSS)
PINNED_HINT = "x.to(...) between host and device waits when the host tensor is pageable"


def training(site):
    """A site's syncs in the training steps: start-up's and the open step's left out."""
    return site["count"] - site.get("startup_count", 0) - site.get("partial_count", 0)


def run_loop(*args):
    r = harness.run(PROG, *args, "--steps", STEPS, python=VISION_PYTHON, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


class Loop:
    """One loop's run: its summary, report and per-step figures."""

    args = ()

    @classmethod
    def setUpClass(cls):
        cls.r = run_loop(*cls.args)
        cls.s = cls.r.summary()

    def per_step(self, path, line):
        return sum(training(s) for s in sites_at(self.s, path, line)) / STEPS

    def total_per_step(self):
        return sum(training(s) for s in self.s["sites"]) / STEPS

    def header_syncs(self):
        """The training thread's own syncs per step, as the header gives them."""
        v = harness.training_thread_syncs(self.r.stderr)
        self.assertIsNotNone(v, self.r.stderr)
        return v

    def assert_no_sync_in_a_step(self):
        self.assertEqual(self.r.stdout.count("\nstep "), STEPS, self.r.stdout)  # + step 0
        self.assertEqual(self.total_per_step(), 0, [harness.util.frames_text(s) for s in self.s["sites"] if training(s)])
        self.assertIn("no host-device syncs in the training steps", self.r.stderr)
        self.assertEqual(self.s["step_source"], "optimizer.step()")
        self.assertEqual(len([st for st in self.s["steps"] if not st["partial"] and not st.get("startup")]), STEPS)

    def group(self, path, line, backward=False):
        g = harness.group_at(self.r.stderr, os.path.basename(path), line, backward=backward)
        self.assertIsNotNone(g, self.r.stderr)
        return g


class Seed000Vit(Loop, unittest.TestCase):
    args = ("vit",)

    def test_deterministic_gather_backward_makes_no_sync_on_torch_2_15(self):
        self.assert_no_sync_in_a_step()
        self.assertEqual(harness.backward_sites(self.s), [])


class Seed000VitIndexing(Loop, unittest.TestCase):
    args = ("vit-index",)

    def test_indexing_rewrite_makes_no_sync_either(self):
        self.assert_no_sync_in_a_step()
        self.assertEqual(self.per_step(PROG, MARKS["index_fix"]), 0)


class Seed000VitPageable(Loop, unittest.TestCase):
    args = ("vit", "--no-pin", "--workers", "0")

    def test_each_pageable_batch_copy_syncs_on_its_line(self):
        for mark in ("inputs", "label"):
            self.assertEqual(self.per_step(PROG, MARKS[mark]), 1.0, mark)
            g = self.group(PROG, MARKS[mark])
            self.assertTrue(g["head"].endswith("cudaMemcpyAsync"), g["head"])
            self.assertTrue(g["hint"].startswith(PINNED_HINT), g["hint"])
        self.assertEqual(self.total_per_step(), 2.0)
        self.assertEqual(self.header_syncs(), 2.0)


class Seed003ConvNet(Loop, unittest.TestCase):
    args = ("seg",)

    def test_the_losss_five_syncs_per_step(self):
        for mark, hint in (("nonzero", "torch.nonzero(as_tuple=True) syncs"), ("unique", "torch.unique syncs"),
                           ("mask_target", "x[bool_mask] syncs"), ("mask_pred", "x[bool_mask] syncs")):
            self.assertEqual(self.per_step(SEG_LOSS, SEG_MARKS[mark]), 1.0, mark)
            self.assertTrue(self.group(SEG_LOSS, SEG_MARKS[mark])["hint"].startswith(hint), mark)
        back = harness.backward_sites(self.s, "IndexBackward0")
        self.assertEqual(sum(training(s) for s in back) / STEPS, 1.0)
        g = self.group(SEG_LOSS, SEG_MARKS["mask_pred"], backward=True)
        self.assertIn("IndexBackward0", "\n".join(g["lines"]))
        self.assertEqual(self.total_per_step(), 5.0)
        # the header is the training thread's: 4 (the backward's, in autograd's engine thread, apart)
        self.assertEqual(self.header_syncs(), 4.0)
        self.assertEqual([(n.startswith("pt_autograd_"), r) for n, _, r in harness.other_thread_rates(self.r.stderr)],
                         [(True, 1.0)], self.r.stderr)
        self.assertRegex(self.r.stderr, r"\| 5\.00 syncs/step \|")  # every thread's, as the rows


class Seed003ConvNetFixed(Loop, unittest.TestCase):
    args = ("seg-fixed",)

    def test_rewritten_loss_makes_no_sync(self):
        self.assert_no_sync_in_a_step()


class Seed002UNet(Loop, unittest.TestCase):
    args = ("unet",)

    def test_no_sync_in_a_step(self):
        self.assert_no_sync_in_a_step()


class Seed002ChannelsLast(Loop, unittest.TestCase):
    args = ("unet", "--channels-last")

    def test_no_sync_in_a_step(self):
        self.assert_no_sync_in_a_step()


class Seed002ZeroGrad(Loop, unittest.TestCase):
    args = ("unet", "--zero-grad", "zero")

    def test_no_sync_but_more_launches(self):
        self.assert_no_sync_in_a_step()
        # zero_grad(set_to_none=False) zeroes each gradient: launches, not syncs
        unet = run_loop("unet").summary()
        launches = lambda s: sum(st["launches"] for st in s["steps"] if not st["partial"] and not st.get("startup"))
        self.assertGreater(launches(self.s), launches(unet))


class Seed002Benchmark(Loop, unittest.TestCase):
    args = ("unet", "--benchmark")

    def test_plan_timing_is_start_up(self):
        self.assert_no_sync_in_a_step()
        timing = [s for s in self.s["sites"] if s["api"] == "cudaDeviceSynchronize" and any(
            "time_sorted_plan" in (f["function"] or "") for f in s["frames"])]
        self.assertTrue(timing, [harness.util.frames_text(s) for s in self.s["sites"]])
        self.assertEqual(sum(training(s) for s in timing), 0)
        self.assertGreater(sum(s.get("startup_count", 0) for s in timing), 0)


class Seed002Amp(Loop, unittest.TestCase):
    args = ("unet", "--amp")

    def test_grad_scaler_step_syncs_once_per_step(self):
        self.assertEqual(self.per_step(PROG, MARKS["scaler_step"]), 1.0)
        self.assertEqual(self.total_per_step(), 1.0)
        g = self.group(PROG, MARKS["scaler_step"])
        self.assertTrue(g["hint"].startswith("GradScaler.step reads found_inf"), g["hint"])


class Seed002Anomaly(Loop, unittest.TestCase):
    args = ("unet", "--anomaly")

    def test_anomaly_detection_syncs_in_the_engine_thread(self):
        engine = [s for s in self.s["sites"] if any(
            "Engine::evaluate_function" in (f["function"] or "") for f in s["frames"])]
        per_step = sum(training(s) for s in engine) / STEPS
        self.assertGreater(per_step, 100)  # one per backward node of the U-Net
        self.assertEqual(per_step, int(per_step))
        self.assertIn("autograd anomaly detection (torch.autograd.set_detect_anomaly(True)", self.r.stderr)
        self.assertEqual(self.header_syncs(), 0.0)  # none on the training thread


class Seed002Pageable(Loop, unittest.TestCase):
    args = ("unet", "--no-pin")

    def test_pageable_batches_sync(self):
        for mark in ("inputs", "label"):
            self.assertEqual(self.per_step(PROG, MARKS[mark]), 1.0, mark)
        self.assertEqual(self.total_per_step(), 2.0)


if __name__ == "__main__":
    unittest.main()
