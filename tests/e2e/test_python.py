"""End-to-end: the agent preloaded into Python processes running the miniature torch
(examples/site-packages, native side build/examples/site-packages/torch/lib/libminitorch.so) on the simulated device:
Python frames merged with native ones, per-line counts, steps from the optimizer hook and from
syncspy.step(), threads, the GIL, silence without CUDA, the demo and its fixed variant.
Expected lines come from the "# sync:" / "# call:" comments of the scripts, never hard-coded."""
import os
import re
import tempfile
import unittest

from util import (DEMO_PY, MS, PYPROGS, count_at, frames_text, local_pythons, python_frames, run,
                  run_py, sites_at, source_line, user_frame)

DEMO_STEPS = 20
LOSS_STEPS = os.path.join(PYPROGS, "loss_steps.py")
TORCH_DIR = "/site-packages/torch/"


def prog_py(name):
    return os.path.join(PYPROGS, name)


def complete_steps(summary):
    return [st for st in summary["steps"] if not st["partial"]]


def check_steps(tc, summary, complete, syncs=None):
    """The complete steps are numbered `complete` (with `syncs` syncs each, when given); a step
    still open at exit, if it is listed, is the last one and follows them."""
    steps = summary["steps"]
    done = complete_steps(summary)
    tc.assertEqual([st["step"] for st in done], list(complete), steps)
    if syncs is not None:
        tc.assertEqual([st["syncs"] for st in done], list(syncs), steps)
    open_steps = [st for st in steps if st["partial"]]
    tc.assertLessEqual(len(open_steps), 1, steps)
    if open_steps:
        tc.assertIs(steps[-1], open_steps[0], steps)
        tc.assertEqual(open_steps[0]["step"], complete[-1] + 1 if complete else 0, steps)


def all_sites_text(summary):
    return "\n".join(frames_text(s) for s in summary["sites"])


class Demo(unittest.TestCase):
    """examples/train.py as `make demo-py` runs it."""

    @classmethod
    def setUpClass(cls):
        cls.r = run_py(DEMO_PY)
        cls.plain = run_py(DEMO_PY, preload=False)
        cls.s = cls.r.summary() if cls.r.process_dirs() else None

    def line(self, marker):
        return source_line(DEMO_PY, "# sync: " + marker)

    def summary(self):
        self.assertIsNotNone(self.s, self.r.stderr)
        return self.s

    def test_output_and_exit_code_unchanged(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stderr)
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        self.assertEqual(self.plain.stderr, "")

        def losses(out):  # every line but the timing one
            return [line for line in out.splitlines() if "ms per step" not in line]
        self.assertEqual(losses(self.r.stdout), losses(self.plain.stdout))
        self.assertEqual(len(losses(self.plain.stdout)), DEMO_STEPS // 5)
        self.assertIn("ms per step", self.r.stdout)

    def test_steps_from_optimizer_hook(self):
        s = self.summary()
        check_steps(self, s, range(DEMO_STEPS))
        # the loss logged after the last step and torch.cuda.synchronize: the step left open
        self.assertEqual(s["steps"][-1]["step"], DEMO_STEPS)
        self.assertEqual(s["steps"][-1]["syncs"], 2)

    def test_nonzero_line(self):
        s = self.summary()
        line = self.line("nonzero")
        sites = sites_at(s, DEMO_PY, line)
        self.assertTrue(sites, all_sites_text(s))
        self.assertEqual(count_at(s, DEMO_PY, line), DEMO_STEPS, [frames_text(x) for x in sites])
        for site in sites:
            self.assertEqual(site["api"], "cudaStreamSynchronize")
            f0 = site["frames"][0]
            self.assertTrue(f0["function"].startswith("at::native::nonzero_cuda"), frames_text(site))
            self.assertTrue(f0["module"].endswith("libminitorch.so"), f0)
            self.assertFalse(f0["python"])
            user = user_frame(site, DEMO_PY)
            self.assertEqual(user["function"], "MaskedLoss.ignore_background")
            self.assertEqual(user["module"], "")
            # the next frame of the script: the caller, MaskedLoss.forward, on its call line
            pys = [f for f in python_frames(site) if f["file"] == DEMO_PY]
            self.assertEqual(pys[1]["function"], "MaskedLoss.forward")
            self.assertEqual(pys[1]["line"], source_line(DEMO_PY, "target = self.ignore_background(target)",
                                                         after="class MaskedLoss("))
        blocked = sum(x["blocked_ns"] for x in sites)
        self.assertGreaterEqual(blocked / DEMO_STEPS, 1 * MS)  # the demo's waits are visible

    def test_unique_and_mask_lines(self):
        s = self.summary()
        expect = {"unique": ("at::native::unique_cuda", "MaskedLoss.forward"),
                  "mask target": ("at::native::nonzero_cuda", "MaskedLoss.cross_entropy"),
                  "mask pred": ("at::native::nonzero_cuda", "MaskedLoss.cross_entropy")}
        for marker, (native, function) in expect.items():
            line = self.line(marker)
            sites = sites_at(s, DEMO_PY, line)
            self.assertEqual(count_at(s, DEMO_PY, line), DEMO_STEPS, (marker, all_sites_text(s)))
            for site in sites:
                self.assertEqual(site["api"], "cudaStreamSynchronize")
                self.assertTrue(site["frames"][0]["function"].startswith(native), frames_text(site))
                self.assertEqual(user_frame(site, DEMO_PY)["function"], function)
                if marker.startswith("mask"):  # x[mask] asks nonzero from inside at::native::index,
                    # each through the dispatcher's entry (at::_ops::<op>::call), as in torch
                    names = [f["function"].split("(")[0] for f in site["frames"][:4]]
                    self.assertEqual(names, ["at::native::nonzero_cuda", "at::_ops::nonzero::call",
                                             "at::native::index", "at::_ops::index_Tensor::call"],
                                     frames_text(site))
                    self.assertEqual(site["op"], "x[bool_mask]")
                else:
                    self.assertEqual(site["op"], "torch.unique")

    def test_item_line(self):
        s = self.summary()
        line = self.line("item")
        self.assertEqual(count_at(s, DEMO_PY, line), DEMO_STEPS // 5, all_sites_text(s))
        for site in sites_at(s, DEMO_PY, line):
            self.assertTrue(site["frames"][0]["function"].startswith("at::native::_local_scalar_dense_cuda"))
            self.assertEqual(user_frame(site, DEMO_PY)["function"], "train")
            self.assertEqual(python_frames(site)[0]["function"], "Tensor.item")

    def test_mask_backward_in_the_autograd_thread(self):
        # as torch 2.15 does (tests/torch/test_backward.py checks the real one): the backward of
        # the masked prediction syncs in the engine's thread, the deterministic gather's does not
        s = self.summary()
        sites = [x for x in s["sites"] if x["api"] == "cudaStreamSynchronize" and
                 any("IndexBackward0::apply" in (f["function"] or "") for f in x["frames"])]
        self.assertEqual(len(sites), 1, all_sites_text(s))
        site = sites[0]
        self.assertEqual(site["count"], DEMO_STEPS)
        self.assertEqual(python_frames(site), [], frames_text(site))  # a native thread: no Python
        self.assertTrue(any("Engine::thread_main" in f["function"] for f in site["frames"]), frames_text(site))
        self.assertNotIn("GatherBackward0", all_sites_text(s))

    def test_syncs_per_step(self):
        s = self.summary()
        # nonzero, unique, two masks, the masked prediction's backward in every step; .item()
        # after steps 5, 10, 15
        for st in complete_steps(s):
            self.assertEqual(st["syncs"], 5 + (st["step"] in (5, 10, 15)), st)
        self.assertEqual(sum(x["count"] for x in s["sites"]), sum(st["syncs"] for st in s["steps"]))

    def test_report_names_the_lines(self):
        err = self.r.stderr
        for marker in ("nonzero", "unique", "item"):
            self.assertIn(f"train.py:{self.line(marker)}", err, marker)
        self.assertIn("torch.nonzero syncs", err)
        self.assertIn("torch.unique syncs", err)
        self.assertIn(".item()", err)
        self.assertIn("backward of IndexBackward0, in autograd's thread", err)
        self.assertIn("summary.json", err)

    def test_report_groups_by_the_python_line(self):
        # libminitorch.so is the framework (like libtorch_cuda.so): each line of the script is a
        # group of its own, the mask lines with the boolean-mask hint.
        err = self.r.stderr
        groups = [line.strip() for line in err.splitlines() if line.lstrip().startswith("at ")]
        for function, marker in (("MaskedLoss.cross_entropy", "mask target"),
                                 ("MaskedLoss.cross_entropy", "mask pred"),
                                 ("MaskedLoss.ignore_background", "nonzero"),
                                 ("MaskedLoss.forward", "unique")):
            pattern = rf"^at {re.escape(function)}\s+\S*train\.py:{self.line(marker)}\b"
            self.assertTrue(any(re.search(pattern, g) for g in groups), (marker, groups))
        self.assertIn("x[bool_mask] syncs", err)


class FixedDemo(unittest.TestCase):
    def test_fixed_loss_has_no_syncs_in_the_step(self):
        r = run_py(DEMO_PY, "--fixed")
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        check_steps(self, s, range(DEMO_STEPS))
        steps = complete_steps(s)
        # only the loss logged after steps 5, 10 and 15 (.item()) is left
        self.assertLessEqual(sum(st["syncs"] for st in steps) / len(steps), 0.15 + 1e-9, steps)
        text = all_sites_text(s)
        for name in ("nonzero_cuda", "unique_cuda", "native::index(", "GatherBackward0"):
            self.assertNotIn(name, text)


def check_loss_frames(tc, site, where=""):
    """The Python frames of loss_steps.py's nonzero sync, innermost first, qualified names."""
    mark = lambda m: source_line(LOSS_STEPS, m)
    expected = [("nonzero", None), ("Loss.ignore_background", mark("# sync: nonzero")),
                ("Loss.forward", mark("# call: ignore_background")), ("Module._call_impl", None),
                ("train_step", mark("# call: loss_fn")), ("main", mark("# call: train_step")),
                ("<module>", mark("# call: module"))]
    pys = python_frames(site)
    tc.assertEqual([f["function"] for f in pys], [e[0] for e in expected], (where, frames_text(site)))
    for f, (function, line) in zip(pys, expected):
        tc.assertEqual(f["module"], "")
        if line is None:  # the miniature torch's own Python code: framework frames
            tc.assertIn(TORCH_DIR, f["file"], (where, f))
        else:
            tc.assertEqual((f["file"], f["line"]), (LOSS_STEPS, line), (where, f))


def check_native_order(tc, site, where=""):
    """Native and Python frames of loss_steps.py's nonzero sync merged in call order."""
    frames = site["frames"]
    text = (where, frames_text(site))
    first_py = next(i for i, f in enumerate(frames) if f["python"])
    last_py = max(i for i, f in enumerate(frames) if f["python"])
    inner = frames[:first_py]
    # the framework's native frames first, at the CUDA call
    tc.assertTrue(inner[0]["function"].startswith("at::native::nonzero_cuda"), text)
    tc.assertTrue(inner[0]["module"].endswith("libminitorch.so"))
    n_lib = next(i for i, f in enumerate(inner) if not f["module"].endswith("libminitorch.so"))
    tc.assertIn("mt_nonzero", [f["function"] for f in inner[:n_lib]])
    tc.assertFalse(any(f["module"].endswith("libminitorch.so") for f in frames[n_lib:]), text)
    # then ctypes / libffi, still before the first Python frame
    tc.assertTrue(any("ffi" in os.path.basename(f["module"]) or "_ctypes" in f["module"]
                      for f in inner[n_lib:]), text)
    # the evaluation loop is replaced by the Python frames it runs
    tc.assertNotIn("_PyEval_EvalFrameDefault", [f["function"] for f in frames], text)
    # the interpreter's outer native frames come after the last Python frame
    outer = [f["function"] for f in frames[last_py + 1:]]
    tc.assertTrue({"main", "Py_RunMain", "Py_BytesMain"} & set(outer), text)
    tc.assertTrue(all(not f["python"] for f in frames[last_py + 1:]))


class Frames(unittest.TestCase):
    """The merged stack of one sync: native framework frames, ctypes, Python frames innermost
    first, then the interpreter's outer native frames."""

    @classmethod
    def setUpClass(cls):
        cls.r = run_py(LOSS_STEPS, "--iters", "3")
        cls.s = cls.r.summary() if cls.r.process_dirs() else None

    def nonzero_sites(self):
        self.assertIsNotNone(self.s, self.r.stderr)
        sites = sites_at(self.s, LOSS_STEPS, source_line(LOSS_STEPS, "# sync: nonzero"))
        self.assertTrue(sites, all_sites_text(self.s))
        return sites

    def test_count(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        self.assertEqual(sum(x["count"] for x in self.nonzero_sites()), 3)

    def test_python_frames_innermost_first(self):
        for site in self.nonzero_sites():
            check_loss_frames(self, site)

    def test_native_frames_in_call_order(self):
        for site in self.nonzero_sites():
            check_native_order(self, site)


class Steps(unittest.TestCase):
    def nonzero_count(self, s):
        return count_at(s, LOSS_STEPS, source_line(LOSS_STEPS, "# sync: nonzero"))

    def test_optimizer_steps_end_steps(self):
        r = run_py(LOSS_STEPS, "--iters", "4")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "loss_steps: 4 iterations\n")
        s = r.summary()
        check_steps(self, s, [0, 1, 2, 3], [1, 1, 1, 1])

    def test_schedule_over_optimizer_steps(self):
        r = run_py(LOSS_STEPS, "--iters", "6", env={"SYNCSPY_SCHEDULE": "wait=1,warmup=1,active=2,repeat=1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual([st["step"] for st in s["steps"]], [2, 3])
        self.assertEqual(self.nonzero_count(s), 2, all_sites_text(s))

    def test_explicit_marks_take_precedence(self):
        # a mark after the setup, then one every 2 optimizer steps: the optimizer's own steps
        # no longer count
        r = run_py(LOSS_STEPS, "--iters", "8", "--mark-setup", "--mark-every", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        check_steps(self, s, [0, 1, 2, 3, 4], [0, 2, 2, 2, 2])
        self.assertEqual(self.nonzero_count(s), 8)

    def test_manual_ignores_the_optimizer(self):
        r = run_py(LOSS_STEPS, "--iters", "4", env={"SYNCSPY_STEP": "manual"})
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual([st["step"] for st in s["steps"]], [0])
        self.assertTrue(s["steps"][0]["partial"])
        self.assertEqual(s["steps"][0]["syncs"], 4)
        self.assertEqual(self.nonzero_count(s), 4)

    def test_child_forked_between_steps_has_its_own(self):
        # the parent forks after 6 iterations with two optimizers in each; the child's 3 with one
        # optimizer are all its summary.json holds (its steps, syncs and optimizers: issue 37, the
        # optimizers' histogram was the parent's)
        r = run_py(prog_py("fork_steps.py"), "--parent", "6", "--child", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        child_pid = int(re.search(r"^child (\d+): 3 iterations$", r.stdout, re.M).group(1))
        self.assertIn("parent: 7 iterations, child 0", r.stdout)
        summaries = {int(os.path.basename(d)[3:]): r.summary(i) for i, d in enumerate(r.process_dirs())}
        self.assertEqual(len(summaries), 2, r.stderr)
        child = summaries.pop(child_pid)
        parent = summaries.popitem()[1]
        self.assertEqual((parent["optimizers"], parent["optimizers_max"]), (2, 2))
        self.assertEqual([st["step"] for st in parent["steps"]], list(range(7)))
        self.assertEqual((child["optimizers"], child["optimizers_max"]), (1, 1), child["steps"])
        self.assertEqual(child["step_source"], "optimizer.step()")
        self.assertEqual([st["step"] for st in child["steps"]], list(range(len(child["steps"]))))
        self.assertEqual(child["syncs"], 3)


class EveryCPython(unittest.TestCase):
    """Every CPython pyenv has here (and Debian's 3.14 of `make debian-cpython`, whose evaluation
    loop lies outside its symbol): from 3.9 on the frame reader names the stack as CPython does,
    class names included (3.9 and 3.10 have no co_qualname: the reader derives them), merged
    with the native frames in call order; an older one gets native frames only, said once, and
    its optimizer steps all the same."""

    def test_supported_versions_name_the_frames(self):
        pythons = {v: p for v, p in local_pythons().items() if v >= (3, 9)}
        self.assertIn((3, 9), pythons, "pyenv's CPython 3.9 and 3.10 are the ones without co_qualname")
        self.assertIn((3, 10), pythons)
        for v, python in pythons.items():
            with self.subTest(python=v):
                r = run_py(LOSS_STEPS, "--iters", "3", python=python)
                self.assertEqual(r.returncode, 0, r.stderr)
                s = r.summary()
                check_steps(self, s, [0, 1, 2], [1, 1, 1])
                sites = sites_at(s, LOSS_STEPS, source_line(LOSS_STEPS, "# sync: nonzero"))
                self.assertTrue(sites, (v, all_sites_text(s)))
                for site in sites:
                    check_loss_frames(self, site, v)
                    check_native_order(self, site, v)

    def test_unsupported_version_still_gets_its_steps(self):
        older = {v: p for v, p in local_pythons().items() if v < (3, 9)}
        self.assertTrue(older, "pyenv's CPython 3.8 (or older) stands for a CPython the reader does not know")
        v, python = max(older.items())
        r = run_py(LOSS_STEPS, "--iters", "4", python=python)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"CPython 3.{v[1]}: frame layout unknown to this syncspy; native frames only", r.stderr)
        s = r.summary()
        self.assertEqual(s["step_source"], "optimizer.step()", r.stderr)
        self.assertFalse(s["no_step_hook"])
        check_steps(self, s, [0, 1, 2, 3], [1, 1, 1, 1])
        self.assertNotIn("no step mark came", r.stderr)
        self.assertFalse(any(python_frames(site) for site in s["sites"]), all_sites_text(s))


class GilAndThreads(unittest.TestCase):
    def test_gil_released_and_held(self):
        script = prog_py("gil.py")
        r = run_py(script)
        self.assertEqual(r.returncode, 0, r.stderr)
        # the premise: CDLL calls run without the GIL, PyDLL calls with it
        self.assertIn("gil while calling through CDLL: 0\n", r.stdout)
        self.assertIn("gil while calling through PyDLL: 1\n", r.stdout)
        s = r.summary()
        for marker, inner_py in (("without gil", "Tensor.item"), ("with gil", "item_holding_gil")):
            line = source_line(script, "# sync: " + marker)
            sites = sites_at(s, script, line)
            self.assertEqual(count_at(s, script, line), 1, (marker, all_sites_text(s)))
            site = sites[0]
            self.assertEqual(site["api"], "cudaStreamSynchronize")
            self.assertTrue(site["frames"][0]["function"].startswith("at::native::_local_scalar_dense_cuda"))
            self.assertEqual(python_frames(site)[0]["function"], inner_py, frames_text(site))
            self.assertEqual(user_frame(site, script)["function"], "<module>")

    def test_sync_from_a_python_thread(self):
        script = prog_py("thread.py")
        r = run_py(script)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "thread: done\n")
        s = r.summary()
        line = source_line(script, "# sync: worker")
        sites = sites_at(s, script, line)
        self.assertEqual(count_at(s, script, line), 3, all_sites_text(s))
        for site in sites:
            self.assertEqual(user_frame(site, script)["function"], "worker")
            names = [f["function"] for f in python_frames(site)]
            self.assertIn("Thread.run", names, frames_text(site))
            self.assertNotIn("<module>", names)  # the thread's own stack, not the main thread's


class Counts(unittest.TestCase):
    """syncspy.counts(): the agent's counters (syncspy_counts) read from Python."""

    def test_thread_and_process_counts(self):
        import json
        r = run_py(prog_py("counts.py"))
        self.assertEqual(r.returncode, 0, r.stderr)
        c = json.loads(r.stdout)
        self.assertEqual((c["agent"], c["thread"], c["process"]), (True, 2, 5))
        self.assertGreater(c["thread_blocked_ns"], 0)
        self.assertGreater(c["process_blocked_ns"], c["thread_blocked_ns"])
        self.assertEqual((c["step_before"], c["step_after"], c["recording"], c["refused"]), (0, 1, True, True))
        total = sum(site["count"] for site in r.summary()["sites"])
        self.assertEqual(c["process_total"], total)  # every sync of the process so far

    def test_without_the_agent(self):
        import json
        r = run_py(prog_py("counts.py"), preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"agent": False, "process": None})


class ProgramUnchanged(unittest.TestCase):
    def test_no_cuda_no_output(self):
        for argv in (["python3", "-c", "print('hi')"],
                     ["python3", "-c", "import json, ctypes; print(json.dumps({'a': 1}))"]):
            r = run(argv, env={"SYNCSPY_TOP": "garbage"})
            self.assertEqual(r.returncode, 0)
            self.assertEqual(r.stderr, "", argv)
            self.assertEqual(r.process_dirs(), [], argv)
        self.assertEqual(run(["python3", "-c", "print('hi')"]).stdout, "hi\n")

    def test_torch_and_syncspy_without_cuda(self):
        r = run_py(prog_py("no_cuda.py"), env={"SYNCSPY_TOP": "garbage"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "no cuda: 2.5.0+minitorch agent loaded\n")
        self.assertEqual(r.stderr, "")
        self.assertEqual(r.process_dirs(), [])
        plain = run_py(prog_py("no_cuda.py"), preload=False)
        self.assertEqual(plain.stdout, "no cuda: 2.5.0+minitorch no agent\n")

    def test_exit_code_and_stdout(self):
        script = prog_py("exit_code.py")
        plain = run_py(script, preload=False)
        r = run_py(script)
        self.assertEqual(plain.returncode, 5, plain.stderr)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(plain.stderr, "")
        self.assertEqual(r.stdout, plain.stdout)
        self.assertEqual(plain.stdout.splitlines()[0].split(":")[0], "positive")
        self.assertIn("summary.json", r.stderr)
        # the report on stdout comes after the program's own (buffered) output
        r2 = run_py(script, env={"SYNCSPY_REPORT": "stdout"})
        self.assertEqual(r2.returncode, 5)
        self.assertTrue(r2.stdout.startswith(plain.stdout), r2.stdout)
        self.assertIn("syncspy:", r2.stdout[len(plain.stdout):])

    def test_report_begins_on_a_line_of_its_own(self):
        # the program's last output does not end its line: the report still starts on a new one
        code = ("import sys, torch\nx = torch.randn(8, device='cuda')\ntorch.nonzero(x > 0)\n"
                "sys.stdout.write('no newline'); sys.stdout.flush()\n")
        path = os.path.join(tempfile.mkdtemp(), "no_newline.py")
        with open(path, "w") as f:
            f.write(code)
        plain = run_py(path, preload=False)
        self.assertEqual((plain.returncode, plain.stdout), (0, "no newline"))
        r = run_py(path, env={"SYNCSPY_REPORT": "stdout"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("no newline\nsyncspy: pid "), r.stdout[:200])
        r = run_py(path)
        self.assertEqual(r.stdout, "no newline")
        self.assertTrue(r.stderr.startswith("\nsyncspy: pid "), r.stderr[:200])
        # the line's source under it, read from the file at report time
        self.assertIn("      3 | torch.nonzero(x > 0)\n", r.stderr)


if __name__ == "__main__":
    unittest.main()
