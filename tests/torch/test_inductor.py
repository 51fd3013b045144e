"""tests/torch/test_inductor.py: torch.compile with its default backend, Inductor, on the
simulated device (issue 34 item 5): Triton compiles its kernels on the CPU (the triton wheel's
ptxas; its launcher with gcc against Python's headers) and loads and launches them through the
simulated driver (sim/module_api.c: cuModuleLoad[Data], cuModuleGetFunction, cuLaunchKernelEx),
cuBLAS runs the matmuls. progs/inductor.py trains a small model for several steps, with the
agent and without it: the same output and exit status; the agent's report counts the steps, and
its launches per step equal the launches the simulator saw in that step (simcuda_launch_count,
read by the program after each optimizer step): launches through the driver API, which no
interposed symbol sees, are counted through CUPTI's driver domain (entry/cupti.c). The same with
mode="reduce-overhead": Inductor captures CUDA graphs (sim/graphs.c) and replays them, each
graph launch one launch however many kernels it holds.

Runs in the inductor venv (`make torch-inductor-venv`: tests/torch/requirements.txt and
requirements-inductor.txt, i.e. the pinned torch and its triton), or the interpreter
TORCH_INDUCTOR_PYTHON names."""
import json
import os
import re
import shutil
import tempfile
import unittest

import harness
import test_compile

PYTHON = os.environ.get("TORCH_INDUCTOR_PYTHON") or os.path.join(harness.BUILD, "inductor-venv", "bin", "python")
STEPS = 6
# the compile caches of one test run, shared by its runs: the second run of a configuration
# loads what the first compiled (as a user's second run does), the agent's run included
CACHE = tempfile.mkdtemp(prefix="syncspy-inductor-")


def run(*args, preload=True):
    """progs/inductor.py with ARGS, in the inductor venv, its compile caches shared."""
    env = {"TRITON_CACHE_DIR": os.path.join(CACHE, "triton"),
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(CACHE, "inductor"),
           "TRITON_DEFAULT_FP_FUSION": "1"}  # triton 3.9 warns where it is unset
    return harness.run("inductor.py", "--steps", STEPS, *args, env=env, preload=preload,
                       timeout=900, python=PYTHON)


def per_step(r, what):
    """The program's list of what ("launches", "kernels") per step."""
    line = [l for l in r.stdout.splitlines() if l.startswith(f"{what} per step: ")][-1]
    return json.loads(line.split(": ", 1)[1])


def strip_counts(r):
    return [l for l in r.stdout.splitlines() if " per step: " not in l]


class Base:
    ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.plain = run(*cls.ARGS, preload=False)
        cls.agent = run(*cls.ARGS)

    def test_same_output_and_exit_status(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stderr[-3000:])
        self.assertEqual(self.agent.returncode, 0, self.agent.stderr[-3000:])
        # the launches of each step (the first one compiles, autotunes, records graphs: its count
        # may differ with a warm cache) and the rest of the output
        for what in ("launches", "kernels"):
            self.assertEqual(per_step(self.plain, what)[1:], per_step(self.agent, what)[1:], what)
        self.assertEqual(strip_counts(self.plain), strip_counts(self.agent))  # Dynamo's counters too
        self.assertIn(f"steps: {STEPS}", strip_counts(self.agent))
        self.assertTrue([l for l in self.agent.stdout.splitlines() if l.startswith("dynamo: {")], self.agent.stdout)

    def test_launches_per_step_are_the_launches_made(self):
        s = self.agent.summary()
        steps = [st for st in s["steps"] if not st["partial"] and not st.get("startup")]
        # the optimizer step hook ends each step: the steps after the first (which compiled)
        self.assertGreaterEqual(len(steps), STEPS - 2, s["steps"])
        made = per_step(self.agent, "launches")
        # the last complete steps, the program's and the agent's, align from the end
        mine = [st["launches"] for st in steps]
        for got, truth in zip(reversed(mine), reversed(made[1:])):
            self.assertEqual(got, truth, (made, mine))


@unittest.skipUnless(os.path.exists(PYTHON), f"no inductor venv at {PYTHON}: make torch-inductor-venv")
class Inductor(Base, unittest.TestCase):
    def test_steady_state_launches(self):
        # Inductor's steady state: its Triton kernels (through the driver API) and the cuBLAS
        # matmuls, every one a launch of its own
        made, kernels = per_step(self.agent, "launches"), per_step(self.agent, "kernels")
        self.assertGreater(made[-1], 4, made)
        self.assertEqual(made[1:], kernels[1:])


@unittest.skipUnless(os.path.exists(PYTHON), f"no inductor venv at {PYTHON}: make torch-inductor-venv")
class CompiledStep(Base, unittest.TestCase):
    """torch.compile(opt.step) with Inductor beside the compiled model: Dynamo's counters (printed
    by the program) equal with and without the agent, every step counted by the hook."""
    ARGS = ("--compile-step",)


@unittest.skipUnless(os.path.exists(PYTHON), f"no inductor venv at {PYTHON}: make torch-inductor-venv")
class ReduceOverhead(Base, unittest.TestCase):
    """mode="reduce-overhead": torch's CUDA graph trees capture the compiled forward and backward
    on the simulator (cudaStreamBeginCapture ... cudaGraphLaunch) and replay them."""
    ARGS = ("--mode", "reduce-overhead")

    def test_graph_recording_is_compile_work(self):
        # CUDA graph trees warm up and record in the counted steps (torch.cuda.synchronize around
        # each capture): torch.compile's own work, in no row and no step's figures
        s = self.agent.summary()
        trees = [x for x in s["sites"]
                 if any((f.get("file") or "").endswith("torch/_inductor/cudagraph_trees.py")
                        for f in x["frames"] if f.get("python"))]
        self.assertTrue(trees, [x["frames"][:4] for x in s["sites"]])
        self.assertTrue(all(x.get("compile_work") for x in trees), trees)
        self.assertTrue(all(x["hint"].startswith("torch.compile's own work") and "graph_break" not in x
                            for x in trees), trees)
        self.assertGreater(sum(x["count"] - x["startup_count"] - x["partial_count"] for x in trees), 0)
        counted = [st for st in s["steps"] if not st["partial"] and not st.get("startup")]
        self.assertEqual([st["syncs"] for st in counted], [0] * len(counted), s["steps"])
        self.assertIn("\n  no host-device syncs in the training steps\n", self.agent.stderr)
        self.assertRegex(self.agent.stderr, r"\n  torch.compile's own work \(compiling, autotuning; "
                                            r"not in the rates\): \d+ syncs")

    def test_graphs_replace_launches(self):
        made, kernels = per_step(self.agent, "launches"), per_step(self.agent, "kernels")
        # a graph launch queues its kernels: fewer launches than kernels once graphs replay
        self.assertLess(made[-1], kernels[-1], (made, kernels))
        default = run()  # the same model without graphs: more launches per step
        self.assertLess(made[-1], per_step(default, "launches")[-1])


@unittest.skipUnless(os.path.exists(PYTHON), f"no inductor venv at {PYTHON}: make torch-inductor-venv")
class CompiledInductor(unittest.TestCase):
    """test_compile's cases whose syncs run inside compiled graphs, with Inductor: the sync is in
    Inductor's output code (a module in its cache folder, DIR/XY/cXY<hash>.py), named by the user
    line its node was traced from (PyCodeCache.linemaps), never by the output code; the mask's
    backward too."""
    runs = {}
    BACKEND = "inductor"
    PYTHON = PYTHON
    ENV = {"TRITON_CACHE_DIR": os.path.join(CACHE, "triton"),
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(CACHE, "inductor"),
           "TRITON_DEFAULT_FP_FUSION": "1"}
    run_case = test_compile.Compiled.run_case
    group = test_compile.Compiled.group
    assertNoGeneratedLine = test_compile.Compiled.assertNoGeneratedLine
    test_mask_inside_the_compiled_graph = test_compile.Compiled.test_mask_inside_the_compiled_graph
    test_item_inside_the_compiled_graph = test_compile.Compiled.test_item_inside_the_compiled_graph

    def test_lines_moved_since_the_cached_compile(self):
        # Inductor's cache keeps the stack traces of the run that compiled the graph: after the
        # user adds lines above the mask, a run that loads the cached graph still names the mask
        # at its line now (the code is found again in the file)
        tmp = tempfile.mkdtemp(prefix="syncspy-moved-")
        src = os.path.join(harness.PROGS, test_compile.PROG)
        copy = os.path.join(tmp, test_compile.PROG)
        env = dict(self.ENV, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"),
                   TRITON_CACHE_DIR=os.path.join(tmp, "triton"))
        shutil.copy(src, copy)
        first = harness.run(copy, "mask_in_graph", 4, "inductor", python=PYTHON, env=env, timeout=900)
        self.assertEqual(first.returncode, 0, first.stderr[-3000:])
        mark = test_compile.MARKS["mask"]
        self.assertIsNotNone(harness.group_at(first.stderr, test_compile.PROG, mark), first.stderr)
        with open(src) as f:
            text = f.read()
        with open(copy, "w") as f:
            f.write("# one\n# two\n# three\n" + text)
        again = harness.run(copy, "mask_in_graph", 4, "inductor", python=PYTHON, env=env, timeout=900)
        self.assertEqual(again.returncode, 0, again.stderr[-3000:])
        self.assertIn("inductor", os.listdir(tmp))
        g = harness.group_at(again.stderr, test_compile.PROG, mark + 3)
        self.assertIsNotNone(g, again.stderr)
        self.assertIn("[compiled]", g["lines"][1])
        self.assertIsNone(harness.group_at(again.stderr, test_compile.PROG, mark), again.stderr)

    def test_compile_and_autotuning_kept_apart(self):
        # the batch grows each step: Inductor recompiles in the counted steps, and autotunes each
        # new kernel at its first run (torch.cuda.synchronize in its benchmarker), constant
        # folding reads values (.item()): torch.compile's own syncs, shown apart, out of the rates
        r, out, _ = self.run_case("recompile")
        self.assertGreater(out["dynamo"]["stats"]["unique_graphs"], 1)
        m = re.search(r"\n  torch.compile's own work \(compiling, autotuning; not in the rates\): "
                      r"(\d+) syncs, blocked ", r.stderr)
        self.assertIsNotNone(m, r.stderr)
        rows = [g for g in harness.report_groups(r.stderr) if g["head"].split()[1] != "x"]
        for g in rows:
            self.assertNotIn("op: torch.cuda.synchronize", g["lines"][1], r.stderr)
        g = self.group(r, "mask")
        self.assertIn("[compiled]", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "2.00")
        b = self.group(r, "mask", backward=True)
        self.assertEqual(b["head"].split()[4], "1.00")
        # the header counts what the table shows
        rate = float(re.search(r"\| ([\d.]+) syncs/step \|", r.stderr).group(1))
        self.assertAlmostEqual(rate, sum(float(g["head"].split()[4]) for g in rows), places=1)
        own = [x for x in r.summary()["sites"] if x.get("compile_work")]
        self.assertEqual(sum(x["count"] for x in own), int(m.group(1)))
        # the agent leaves them out of what it counts as it goes too: every counted step's record
        # (top's "last 10 s" is made of them), the threads' figures, the process's total
        s = r.summary()
        counted = [x for x in s["steps"] if not x.get("startup") and not x.get("partial")]
        self.assertEqual([x["syncs"] for x in counted], [3] * len(counted), s["steps"])
        trainer = re.search(r"\n  the training thread, .*\(([\d.]+) syncs/step\); pt_autograd_0 "
                            r"\(tid \d+\) \S+ \S+ \(([\d.]+) syncs\) during backward", r.stderr)
        self.assertIsNotNone(trainer, r.stderr)
        self.assertEqual(trainer.groups(), ("2.00", "1.00"))
        self.assertEqual(s["syncs"], sum(x["count"] for x in s["sites"]) - int(m.group(1)))
        self.assertEqual(sum(t["syncs"] for t in s["threads"]), s["syncs"])
        # `syncspy check` counts as the report does: the same rate, the compile work apart
        chk = harness.cli("check", r.out_dir, "--max-syncs-per-step", "1000", "--json")
        proc = json.loads(chk.stdout)["processes"][0]
        self.assertAlmostEqual(proc["syncs_per_step"], rate, places=1)
        self.assertGreater(proc["compile_work"]["syncs"], 0)
        startup = re.search(r"before the first step \(start-up, not in the rates\): \S+ \S+, (\d+) sync", r.stderr)
        self.assertEqual(proc["startup"]["syncs"], int(startup.group(1)))
        for x in own:
            files = " ".join(f.get("file") or "" for f in x["frames"] if f.get("python"))
            self.assertRegex(files, r"torch/_inductor/(runtime/benchmarking|compile_fx)\.py|"
                                    r"torch/_dynamo/convert_frame\.py", x["frames"][:3])

    def test_output_code_is_named_inductor(self):
        r, _, _ = self.run_case("mask_in_graph")
        frames = [f for s in r.summary()["sites"] for f in s["frames"] if f.get("python")]
        generated = {f["module"] for f in frames if f.get("module")}
        self.assertTrue(generated and all(m.startswith("<inductor>.c") for m in generated), generated)


if __name__ == "__main__":
    unittest.main()
