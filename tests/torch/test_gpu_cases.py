"""scripts/gpu-check.sh's cases on real torch (with timm and torchvision: build/vision-venv) over
the simulated device (GPU_CHECK_SIMULATOR): every case but those that need a real GPU
(torch.compile's Triton kernels, the timings with and without the agent, torch.profiler's CUDA
activity), judged by scripts/gpu/check.py with the expectations of the torch release that runs:
on torch 2.15 the seg_loss case's boolean-mask index syncs in its backward (IndexBackward0,
attributed to its forward line) and the ViT's deterministic gather backward does not sync."""
import json
import os
import subprocess
import tempfile
import unittest

import harness

VISION = os.environ.get("TORCH_VISION_PYTHON") or os.path.join(harness.BUILD, "vision-venv", "bin", "python")


class GpuCheckOnTheSimulator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(VISION):
            raise AssertionError(f"no vision venv at {VISION}: make torch-vision-venv")
        cls.out = tempfile.mkdtemp(prefix="syncspy-gpucheck-sim-")
        env = dict(os.environ, OUT=cls.out, GPU_CHECK_SIMULATOR=harness.SIM, PYTHON=VISION,
                   GPU_CHECK_BUILD="never", BUILD=os.path.relpath(harness.BUILD, harness.ROOT))
        env.pop("LD_PRELOAD", None)
        cls.p = subprocess.run(["bash", os.path.join(harness.ROOT, "scripts", "gpu-check.sh")],
                               env=env, cwd=harness.ROOT, capture_output=True, text=True, timeout=900)
        with open(os.path.join(cls.out, "results.json")) as f:
            cls.results = json.load(f)

    def test_every_case_meets_its_expectation(self):
        self.assertEqual(self.p.returncode, 0, self.p.stdout[-3000:] + self.p.stderr[-2000:])
        self.assertTrue(self.results["ok"])
        cases = {r["case"]: r for r in self.results["table"]}
        self.assertEqual(sorted(cases), sorted(["seg_loss", "seg_loss_fixed", "vit_gather",
                                                "vit_indexing", "item_loop", "dataloader"]))
        self.assertIn("syncspy's simulated CUDA device", self.p.stdout)

    def test_torch_215_facts(self):
        seg = self.results["cases"]["seg_loss"]["verdict"]
        self.assertTrue(seg["torch"].startswith("2.15"))
        self.assertEqual(seg["backward_of"]["mask-pred"]["node"], "IndexBackward0")
        self.assertGreater(seg["backward_of"]["mask-pred"]["count"], 0)
        vit = self.results["cases"]["vit_gather"]["verdict"]
        self.assertFalse(vit["absent"]["present"])  # no GatherBackward sync on torch 2.15
        self.assertEqual(vit["stats"]["syncs_per_step"], 0.0)
        self.assertEqual(self.results["cases"]["item_loop"]["verdict"]["stats"]["syncs_per_step"], 1.0)
        self.assertEqual(self.results["cases"]["dataloader"]["process_dirs"].__len__(), 1)

    def test_torch_sync_debug_mode_compared(self):
        tools = self.results["tools"]
        self.assertEqual(tools["seg_loss"]["syncdebug"]["found"], "yes (4/4 lines)")
        self.assertEqual(tools["item_loop"]["syncdebug"]["found"], "yes (1/1 lines)")
        self.assertEqual(tools["vit_gather"]["syncdebug"]["data"]["sync_warnings"], 0)

    def test_gpu_only_runs_left_out(self):
        runs = sorted(os.listdir(os.path.join(self.out, "runs")))
        for name in ("compiled", "seg_loss_fixed.plain", "item_loop.plain", "seg_loss.profiler"):
            self.assertNotIn(name, runs)


if __name__ == "__main__":
    unittest.main()
