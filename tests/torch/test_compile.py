"""tests/torch/test_compile.py: torch.compile on real torch over the simulator (issue 34), each
case of tests/torch/progs/compiled.py run with the agent, without it, and under torch's own
sync-debug mode (the oracle): the compiler does exactly what it does alone (Dynamo's counters and
the results are the program's output, compared whole), every sync the oracle names at a user
line is in the report at that line, and a sync inside a compiled graph, which the oracle names
at torch/_ops.py, is at the user's line it was traced from, never at generated code."""
import json
import unittest

import harness

PROG = "compiled.py"
STEPS = 8
MARKS = harness.marked_lines(PROG)


class Compiled(unittest.TestCase):
    runs = {}

    def run_case(self, case):
        if case not in self.runs:
            r = harness.run(PROG, case, STEPS)
            plain = harness.run(PROG, case, STEPS, preload=False)
            warned = harness.run(PROG, case, STEPS, "--oracle", preload=False)
            self.runs[case] = (r, plain, warned)
        r, plain, warned = self.runs[case]
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, plain.stdout)  # Dynamo's counters, the parameters
        self.assertEqual(warned.returncode, 0, warned.stderr)
        out = json.loads(r.stdout.splitlines()[-1])  # after what the program printed
        self.assertEqual(out["dynamo"]["frames"]["ok"], out["dynamo"]["frames"]["total"])
        self.assertNotIn("Dynamo does not know how to trace", r.stderr)  # the agent's hook
        self.assertEqual(len(r.summary()["steps"]), STEPS + 1)  # start-up, then one per step()
        oracle = {line for path, line in json.loads(warned.stdout.splitlines()[-1])["warned"]
                  if path.endswith(PROG)}
        return r, out, oracle

    def group(self, r, mark, backward=False):
        g = harness.group_at(r.stderr, PROG, MARKS[mark], backward=backward)
        self.assertIsNotNone(g, r.stderr)
        return g

    def test_item_in_forward_breaks_the_graph(self):
        r, out, oracle = self.run_case("item_stat")
        self.assertEqual(oracle, {MARKS["item_stat"]})
        self.assertEqual(sum(out["dynamo"]["graph_break"].values()), 1)
        g = self.group(r, "item_stat")
        self.assertIn("op: Tensor.item", g["lines"][1])
        self.assertIn("1.00", g["head"].split()[4])  # syncs/step
        self.assertIn(".item()", g["hint"])
        self.assertIn("graph break: torch.compile breaks its graph at this .item()", "\n".join(g["lines"]))
        self.assertIn("capture_scalar_outputs", "\n".join(g["lines"]))

    def test_assert_in_forward_is_made_async(self):
        # the seed's `assert torch.all(x >= 0)`: Dynamo turns it into an asynchronous assert (no
        # sync, no graph break), so neither torch's oracle nor the report has anything to say
        r, out, oracle = self.run_case("assert_all")
        self.assertEqual(oracle, set())
        self.assertEqual(sum(out["dynamo"]["graph_break"].values()), 0)
        self.assertIn("no host-device syncs in the training steps", r.stderr)

    def test_print_in_forward(self):
        # the seed's print(x): torch's oracle names torch/_tensor_str.py; the report the user's
        # line, with the graph break it costs
        r, out, oracle = self.run_case("print_h")
        self.assertEqual(oracle, set())
        self.assertGreater(sum(out["dynamo"]["graph_break"].values()), 0)
        g = self.group(r, "print_h")
        self.assertIn("op: Tensor.__repr__", g["lines"][1])
        self.assertIn("graph break: torch.compile breaks its graph to print a tensor", "\n".join(g["lines"]))

    def test_mask_loss_compiled_apart(self):
        r, out, oracle = self.run_case("mask_apart")
        self.assertEqual(oracle, {MARKS["mask"]})
        g = self.group(r, "mask")
        self.assertIn("op: x[bool_mask]", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "2.00")  # logits[valid] and target[valid]
        # the backward of the index, outside any graph, named by its forward line (the sequence
        # number hook attributes under torch.compile: it pushes no mode)
        b = self.group(r, "mask", backward=True)
        self.assertIn("backward of x[bool_mask]", b["lines"][1])
        self.assertIn("backward of masked_loss", b["at"])
        self.assertIn("graph break: torch.compile breaks its graph at this data-dependent shape",
                      "\n".join(g["lines"]))
        # Dynamo's resume function is named by the function it resumes
        self.assertNotIn("torch_dynamo_resume", r.stderr)
        self.assertNotIn("torch.compile is in use", r.stderr)

    def test_mask_inside_the_compiled_graph(self):
        r, out, oracle = self.run_case("mask_in_graph")
        self.assertEqual(oracle, set())  # torch names torch/_ops.py: no user line
        self.assertEqual(sum(out["dynamo"]["graph_break"].values()), 0)
        g = self.group(r, "mask")
        self.assertIn("[compiled]", g["lines"][1])
        self.assertIn("op: torch.nonzero", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "2.00")
        self.assertIn("nonzero_static", g["hint"])
        self.assertNotIn("graph break:", "\n".join(g["lines"]))  # it runs inside the graph
        # the compiled graph's backward (one node for the whole graph): the op that waited in it
        # is named, at the user line its generated code came from
        groups = [x for x in harness.report_groups(r.stderr) if x["backward"] and x["head"].split()[1] != "x"]
        self.assertEqual(len(groups), 1, r.stderr)
        text = "\n".join(groups[0]["lines"])
        self.assertIn("node CompiledFunctionBackward", text)
        self.assertIn("backward of x[bool_mask]", groups[0]["lines"][1])
        self.assertRegex(text, rf"in masked_loss +\S*{PROG}:{MARKS['mask']} +\[compiled\]")
        for x in harness.report_groups(r.stderr):  # generated code is never a row's line
            self.assertNotIn("<eval_with_key>", x["at"] or "")

    def test_recompiles_keep_one_row(self):
        # a new generated module per recompilation, one user line: one row, every sync in it
        r, out, _ = self.run_case("recompile")
        self.assertGreater(out["dynamo"]["stats"]["unique_graphs"], 1)
        g = self.group(r, "mask")
        self.assertIn("[compiled]", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "2.00")
        rows = [x for x in harness.report_groups(r.stderr)
                if not x["backward"] and x["head"].split()[1] != "x"]  # not start-up's "2 x api"
        self.assertEqual(len(rows), 1, r.stderr)

    def test_compiled_optimizer_step(self):
        r, out, _ = self.run_case("opt_step")
        self.assertIn("no host-device syncs in the training steps", r.stderr)


class DemoCompiled(unittest.TestCase):
    """The demo (examples/seg_loss.py) with --compile: the model and the loss torch.compile'd
    (aot_eager). Its syncs are the eager demo's, now at graph breaks: each at its own line with
    the op's hint and the break's advice, the mask's backward at its forward line."""

    def test_demo_compile(self):
        marks = harness.marked_lines(harness.DEMO)
        args = ("--compile", "--steps", 12, "--log-every", 4)
        r = harness.run(harness.DEMO, *args)
        plain = harness.run(harness.DEMO, *args, preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        losses = [l for l in r.stdout.splitlines() if l.startswith("step ")]
        self.assertEqual(len(losses), 3)
        self.assertEqual(losses, [l for l in plain.stdout.splitlines() if l.startswith("step ")])
        demo = "seg_loss.py"
        for name, op in (("mask_target", "x[bool_mask]"), ("mask_pred", "x[bool_mask]"),
                         ("nonzero", "torch.nonzero"), ("unique", "torch.unique")):
            with self.subTest(line=name):
                g = harness.group_at(r.stderr, demo, marks[name])
                self.assertIsNotNone(g, r.stderr)
                self.assertIn(f"op: {op}", g["lines"][1])
                self.assertEqual(g["head"].split()[4], "1.00")
                self.assertIn("graph break: torch.compile breaks its graph", "\n".join(g["lines"]))
        b = harness.group_at(r.stderr, demo, marks["mask_pred"], backward=True)
        self.assertIsNotNone(b, r.stderr)
        self.assertIn("backward of x[bool_mask]", b["lines"][1])
        self.assertNotIn("torch.compile is in use", r.stderr)


if __name__ == "__main__":
    unittest.main()
