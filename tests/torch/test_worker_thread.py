"""Real PyTorch over the simulated device: a training loop on a worker thread while the main
thread waits in Thread.join() (issue 36 item 2). CPython runs Py_AddPendingCall's callbacks on
its main thread only, so the optimizer step hook was never registered and the run had no step;
an attempt asked from another thread is now also made by the agent's Python thread, and the
report counts the worker's steps exactly as it counts the same loop on the main thread. Also a
process that ends while the worker still runs: parked in a wait as the interpreter finalizes,
training on through os._exit, and ending just after the worker's first CUDA calls, where the
hook's attempt may still be on its way (progs/worker_train.py). Exit status and output are the
program's own in every case, the threads it sees too."""
import unittest

import harness
from harness import complete_steps, count_at, marked_lines
from util import report_steps

PROG = harness.prog("worker_train.py")
ITEM = marked_lines(PROG)["item"]


def steps_and_syncs(summary):
    return [(st["step"], st["syncs"]) for st in complete_steps(summary)]


class WorkerThreadSteps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.on_main = harness.run(PROG, "main", "--iters", 6)
        cls.on_worker = harness.run(PROG, "worker", "--iters", 6)
        cls.plain = harness.run(PROG, "worker", "--iters", 6, preload=False)

    def test_program_unchanged(self):
        self.assertEqual(self.plain.returncode, 0, self.plain.stderr)
        self.assertEqual(self.plain.stdout, "worker: 6 iterations\nthreads: ['MainThread']\n")
        # the agent's Python thread leaves no thread (nor a _DummyThread) in the program's view
        self.assertEqual((self.on_worker.returncode, self.on_worker.stdout),
                         (0, self.plain.stdout), self.on_worker.stderr)

    def test_steps_are_the_main_threads(self):
        self.assertEqual(self.on_main.returncode, 0, self.on_main.stderr)
        main, worker = self.on_main.summary(), self.on_worker.summary()
        self.assertEqual(steps_and_syncs(main), [(0, 5), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1)])
        self.assertEqual(steps_and_syncs(worker), steps_and_syncs(main), worker["steps"])
        self.assertEqual(count_at(worker, PROG, ITEM), 6)
        for r in (self.on_main, self.on_worker):
            self.assertEqual(report_steps(r.stderr), (6, 5), r.stderr)
            self.assertIn("| 1.00 syncs/step |", r.stderr)


class CompiledOnAWorker(unittest.TestCase):
    """progs/compiled.py's syncs inside a compiled graph, the loop on a worker thread while the
    main thread waits in Thread.join() until the worker ends the process (os._exit): the user's
    lines of the generated code are asked of the agent's Python (_syncspy_graphs) through the
    main thread's pending call, which never runs there; the agent's Python thread answers where
    the main thread has not within 20 ms (before: the row was the compiled function's caller,
    "whose user line is not known"). The report names the lines as in the single-thread run."""

    COMPILED = "compiled.py"
    MARKS = marked_lines(harness.prog(COMPILED))
    runs = {}

    def run_case(self, case, *where):
        key = (case, *where)
        if key not in self.runs:
            # 40 steps: the answer comes 20 ms after the question at the latest (and the GIL)
            self.runs[key] = harness.run(self.COMPILED, case, 40, "aot_eager", *where, timeout=900)
        r = self.runs[key]
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def same_rows(self, case, mark, op):
        on_main, on_worker = self.run_case(case), self.run_case(case, "--worker")
        self.assertEqual(on_worker.stdout, on_main.stdout)  # Dynamo's counters, the parameters
        rows = []
        for r in (on_main, on_worker):
            g = harness.group_at(r.stderr, self.COMPILED, self.MARKS[mark])
            self.assertIsNotNone(g, r.stderr)
            self.assertIn("[compiled]", g["lines"][1], r.stderr)
            self.assertIn(op, g["lines"][1])
            for x in harness.report_groups(r.stderr):  # never generated code as a row's line
                self.assertNotIn("<eval_with_key>", x["at"] or "", r.stderr)
            rows.append((g["head"].split()[4], g["at"]))  # syncs/step, the line and its op
        self.assertEqual(rows[1], rows[0])

    def test_item_inside_the_compiled_graph(self):
        self.same_rows("item_in_graph", "item_in_graph", "op: Tensor.item")

    def test_mask_inside_the_compiled_graph(self):
        self.same_rows("mask_in_graph", "mask", "op: x[bool_mask]")


class ExitWhileTheWorkerRuns(unittest.TestCase):
    def same(self, case):
        plain = harness.run(PROG, case, preload=False)
        r = harness.run(PROG, case)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(plain.stdout, f"{case}: the main thread ends while the worker runs\n")
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout), r.stderr)
        self.assertIn("syncspy: pid", r.stderr)  # the report
        return r

    def test_worker_parked_while_the_interpreter_finalizes(self):
        r = self.same("worker-parked")
        self.assertEqual(steps_and_syncs(r.summary()), [(0, 5), (1, 1), (2, 1), (3, 1), (4, 1)])
        self.assertEqual(report_steps(r.stderr), (5, 4), r.stderr)

    def test_os_exit_while_the_worker_trains(self):
        r = self.same("worker-exit")
        done = steps_and_syncs(r.summary())
        self.assertGreaterEqual(len(done), 5, r.stderr)
        self.assertEqual(done[0], (0, 5))
        self.assertEqual({syncs for _, syncs in done[1:]}, {1}, done)

    def test_os_exit_right_after_the_workers_first_cuda_calls(self):
        for _ in range(3):  # the hook's attempt is anywhere on its way then
            self.same("worker-exit-early")


if __name__ == "__main__":
    unittest.main()
