"""Real PyTorch over the simulated device: Python frames merged with torch's native ones, steps
from torch.optim's real step hook and from syncspy.step() (explicit marks win;
SYNCSPY_STEP=manual), syncs from a Python thread, a torch program that never uses the device
(silent), and a program's exit status and output kept. Expected lines come from the programs'
"# sync:" / "# call:" comments."""
import unittest

import harness
from harness import complete_steps, count_at, frames_text, marked_lines, python_frames, sites_at, user_frame

STEPS = harness.prog("steps.py")
THREAD = harness.prog("thread.py")
EXIT = harness.prog("exit_code.py")
NO_CUDA = harness.prog("no_cuda.py")
TORCH_PY = "/site-packages/torch/"


def check_steps(tc, summary, complete, syncs):
    done = complete_steps(summary)
    tc.assertEqual([st["step"] for st in done], list(complete), summary["steps"])
    tc.assertEqual([st["syncs"] for st in done], list(syncs), summary["steps"])


class Frames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(STEPS, "--iters", 3)
        cls.s = cls.r.summary()
        cls.sites = sites_at(cls.s, STEPS, marked_lines(STEPS)["nonzero"])

    def test_python_frames_innermost_first(self):
        call = marked_lines(STEPS, "call")
        expected = [("Loss.ignore_background", marked_lines(STEPS)["nonzero"]),
                    ("Loss.forward", call["ignore_background"]), ("Module._call_impl", None),
                    ("Module._wrapped_call_impl", None), ("train_step", call["loss_fn"]),
                    ("main", call["train_step"]), ("<module>", call["module"])]
        self.assertEqual(sum(s["count"] for s in self.sites), 3)
        for site in self.sites:
            pys = python_frames(site)
            self.assertEqual([f["function"] for f in pys], [e[0] for e in expected], frames_text(site))
            for f, (function, line) in zip(pys, expected):
                if line is None:  # torch's own Python code
                    self.assertIn(TORCH_PY, f["file"], f)
                else:
                    self.assertEqual((f["file"], f["line"]), (STEPS, line), f)

    def test_native_frames_in_call_order(self):
        for site in self.sites:
            frames = site["frames"]
            first_py = next(i for i, f in enumerate(frames) if f["python"])
            last_py = max(i for i, f in enumerate(frames) if f["python"])
            inner = frames[:first_py]
            # torch's native frames first, from the op at the CUDA call down to the binding
            self.assertIn("nonzero_cuda", inner[0]["function"], frames_text(site))
            self.assertTrue(inner[0]["module"].endswith("libtorch_cuda.so"), inner[0])
            self.assertTrue(any(f["module"].endswith("libtorch_python.so") for f in inner), frames_text(site))
            # the evaluation loop is replaced by the Python frames it runs
            self.assertNotIn("_PyEval_EvalFrameDefault", [f["function"] for f in frames], frames_text(site))
            outer = [f["function"] for f in frames[last_py + 1:]]
            self.assertTrue({"main", "Py_RunMain", "Py_BytesMain"} & set(outer), frames_text(site))
            self.assertTrue(all(not f["python"] for f in frames[last_py + 1:]))


class Steps(unittest.TestCase):
    def nonzero_count(self, s):
        return count_at(s, STEPS, marked_lines(STEPS)["nonzero"])

    def test_optimizer_steps_end_steps(self):
        r = harness.run(STEPS, "--iters", 4)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "steps: 4 iterations\n")
        check_steps(self, r.summary(), [0, 1, 2, 3], [1, 1, 1, 1])

    def test_explicit_marks_take_precedence(self):
        # a mark after the set-up, then one every 2 optimizer steps: the optimizer's own steps
        # no longer count
        r = harness.run(STEPS, "--iters", 8, "--mark-setup", "--mark-every", 2)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        check_steps(self, s, [0, 1, 2, 3, 4], [0, 2, 2, 2, 2])
        self.assertEqual(self.nonzero_count(s), 8)

    def test_manual_ignores_the_optimizer(self):
        r = harness.run(STEPS, "--iters", 4, env={"SYNCSPY_STEP": "manual"})
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertEqual([st["step"] for st in s["steps"]], [0])
        self.assertTrue(s["steps"][0]["partial"])
        self.assertEqual(self.nonzero_count(s), 4)


class Threads(unittest.TestCase):
    def test_sync_from_a_python_thread(self):
        r = harness.run(THREAD)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "thread: done\n")
        s = r.summary()
        line = marked_lines(THREAD)["worker"]
        self.assertEqual(count_at(s, THREAD, line), 3, [frames_text(x) for x in s["sites"]])
        for site in sites_at(s, THREAD, line):
            self.assertEqual(user_frame(site, THREAD)["function"], "worker")
            names = [f["function"] for f in python_frames(site)]
            self.assertIn("Thread.run", names, frames_text(site))
            self.assertNotIn("<module>", names)  # the thread's own stack, not the main thread's


class ProgramUnchanged(unittest.TestCase):
    def test_torch_without_the_device_is_silent(self):
        r = harness.run(NO_CUDA, env={"SYNCSPY_TOP": "garbage"})
        plain = harness.run(NO_CUDA, preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertTrue(r.stdout.startswith("no cuda: 2.15.0"), r.stdout)
        self.assertEqual(r.stdout.replace("agent loaded", "no agent"), plain.stdout)
        self.assertEqual(r.stderr, "")
        self.assertEqual(r.process_dirs(), [])

    def test_exit_status_and_output(self):
        plain = harness.run(EXIT, preload=False)
        r = harness.run(EXIT)
        self.assertEqual(plain.returncode, 5, plain.stderr)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(plain.stderr, "")
        self.assertEqual(r.stdout, plain.stdout)
        self.assertIn("summary.json", r.stderr)
        # the report on stdout comes after the program's own (buffered) output
        r2 = harness.run(EXIT, env={"SYNCSPY_REPORT": "stdout"})
        self.assertEqual(r2.returncode, 5)
        self.assertTrue(r2.stdout.startswith(plain.stdout), r2.stdout)
        self.assertIn("syncspy:", r2.stdout[len(plain.stdout):])


if __name__ == "__main__":
    unittest.main()
