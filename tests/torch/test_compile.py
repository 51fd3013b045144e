"""tests/torch/test_compile.py: torch.compile on real torch over the simulator (issue 34), each
case of tests/torch/progs/compiled.py run with the agent, without it, and under torch's own
sync-debug mode (the oracle): the compiler does exactly what it does alone (Dynamo's counters and
the results are the program's output, compared whole), every sync the oracle names at a user
line is in the report at that line, and a sync inside a compiled graph, which the oracle names
at torch/_ops.py, is at the user's line it was traced from, never at generated code."""
import json
import os
import re
import shutil
import tempfile
import unittest

import harness

PROG = "compiled.py"
STEPS = 8
MARKS = harness.marked_lines(PROG)


# Inductor's output code as a row's line would be: DIR/XY/cXY<hash>.py
INDUCTOR_FILE = re.compile(r"/c[a-z0-9]{32,}\.py")


class Compiled(unittest.TestCase):
    runs = {}
    BACKEND = "aot_eager"
    PYTHON = None  # the harness's
    ENV = None

    def run_case(self, case):
        if case not in self.runs:
            def go(*extra, preload=True):
                return harness.run(PROG, case, STEPS, self.BACKEND, *extra, preload=preload,
                                   python=self.PYTHON, env=self.ENV, timeout=900)
            self.runs[case] = (go(), go(preload=False), go("--oracle", preload=False))
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
        # the generated code calls aten.index.Tensor as the user's logits[valid] does
        self.assertIn("op: x[bool_mask]", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "2.00")
        self.assertIn("torch.where(mask, x, 0)", g["hint"])
        self.assertNotIn("graph break:", "\n".join(g["lines"]))  # it runs inside the graph
        # the compiled graph's backward (one node for the whole graph): the op that waited in it
        # is named, and the row is the forward line that op came from (the node itself is made
        # at the compiled function's call, shown below it)
        groups = [x for x in harness.report_groups(r.stderr) if x["backward"] and x["head"].split()[1] != "x"]
        self.assertEqual(len(groups), 1, r.stderr)
        b = self.group(r, "mask", backward=True)
        self.assertEqual(b, groups[0])
        text = "\n".join(b["lines"])
        self.assertIn("node CompiledFunctionBackward", text)
        self.assertRegex(b["lines"][1], rf"backward of masked_loss +\S*{PROG}:{MARKS['mask']} +\[compiled\]"
                                        r"  op: backward of x\[bool_mask\]")
        self.assertIn("Net.forward", text)  # the forward stack that made the node
        self.assertIn("select with torch.where(mask, x, 0)", b["hint"])
        self.assertNoGeneratedLine(r.stderr)
        # the same row in `syncspy check --json` (one row model)
        chk = harness.cli("check", r.out_dir, "--max-syncs-per-step", "1000", "--json")
        self.assertEqual(chk.returncode, 0, chk.stderr)
        rows = [x for x in json.loads(chk.stdout)["processes"][0]["sites"] if x["kind"] == "backward"]
        self.assertEqual([(x["line"], x["op"]) for x in rows], [(MARKS["mask"], "backward of x[bool_mask]")], rows)

    def assertNoGeneratedLine(self, text):
        """Generated code is never a row's line (FX's or Inductor's)."""
        for x in harness.report_groups(text):
            self.assertNotIn("<eval_with_key>", x["at"] or "")
            self.assertIsNone(INDUCTOR_FILE.search(x["at"] or ""), x["at"])

    def test_item_inside_the_compiled_graph(self):
        # capture_scalar_outputs: the .item() is traced into the graph (_local_scalar_dense in
        # generated code); torch's oracle names torch/_ops.py, the report the user's line
        r, out, oracle = self.run_case("item_in_graph")
        self.assertEqual(oracle, set())
        self.assertEqual(sum(out["dynamo"]["graph_break"].values()), 0)
        g = self.group(r, "item_in_graph")
        self.assertIn("[compiled]", g["lines"][1])
        self.assertIn("op: Tensor.item", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "1.00")
        self.assertIn(".item()", g["hint"])
        self.assertNoGeneratedLine(r.stderr)
        # the same row from the files the run left (trace.bin: the frame may have been written
        # before its user line came, then named by a FRAME_NAME record)
        rep = harness.cli("report", r.process_dirs()[0])
        self.assertEqual(rep.returncode, 0, rep.stderr)
        g = harness.group_at(rep.stdout, PROG, MARKS["item_in_graph"])
        self.assertIsNotNone(g, rep.stdout)
        self.assertIn("[compiled]", g["lines"][1])
        self.assertNoGeneratedLine(rep.stdout)

    def test_fullgraph(self):
        # fullgraph=True raises at any graph break in the model: the agent adds none, and the
        # mask inside the graph is at its user line
        r, out, _ = self.run_case("fullgraph")
        g = self.group(r, "mask")
        self.assertIn("[compiled]", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "2.00")
        self.assertNoGeneratedLine(r.stderr)

    def test_dynamic_shapes_compile_once(self):
        # dynamic=True: the growing batch is one graph, no recompile; one row for the mask
        r, out, _ = self.run_case("dynamic")
        self.assertEqual(out["dynamo"]["stats"]["unique_graphs"], 1)
        self.assertEqual(out["dynamo"]["recompiles"], {})
        self.assertNotIn("recompiled", r.stderr)
        self.assertEqual(r.summary()["recompiles"], [])
        g = self.group(r, "mask")
        self.assertIn("[compiled]", g["lines"][1])
        self.assertEqual(g["head"].split()[4], "2.00")

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

    def test_html_opens_the_compiled_backward_at_its_line(self):
        # syncspy html: the compiled graph's backward row is the mask's line, and the stack it
        # opens marks as the user's frame the generated code named by that line (the report's
        # row line), not the forward stack's frame of the compiled function's call
        r, _, _ = self.run_case("mask_in_graph")
        tmp = tempfile.mkdtemp(prefix="syncspy-html-compiled-")
        try:
            page = os.path.join(tmp, "p.html")
            p = harness.cli("html", r.out_dir, "-o", page)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(page, encoding="utf-8") as f:
                text = f.read()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        data = json.loads(re.search(r'<script id="syncspy-data" type="application/json">(.*?)</script>',
                                    text, re.S).group(1))
        run = data["runs"][0]
        rows = [l for l in run["lines"] if l["kind"] == "backward" and l["count"]]
        self.assertEqual([(l["line"], l["function"]) for l in rows], [(MARKS["mask"], "masked_loss")], rows)
        site = run["sites"][rows[0]["site"]]
        frame = site[5][rows[0]["user"]]
        fn, file, line = data["frames"][5 * frame:5 * frame + 3]
        self.assertEqual((data["strings"][fn], data["strings"][file], line),
                         ("masked_loss", os.path.join(harness.PROGS, PROG), MARKS["mask"]))

    def test_recompiles_counted_with_their_reason(self):
        # the batch grows by one row per step: Dynamo compiles Net.forward again at step 1 (its
        # guard on x's size fails), then marks the size dynamic: one recompilation, in the
        # counted steps, with Dynamo's reason and the dynamic-size advice
        r, out, _ = self.run_case("recompile")
        forward = next(n for n, l in enumerate(open(os.path.join(harness.PROGS, PROG)), 1)
                       if l.strip().startswith("def forward(self, x, target)"))
        want = [{"function": "Net.forward", "file": os.path.join(harness.PROGS, PROG),
                 "line": forward, "count": 1, "in_steps": 1}]
        got = r.summary()["recompiles"]
        self.assertEqual([{k: v for k, v in x.items() if k != "reason"} for x in got], want)
        self.assertRegex(got[0]["reason"], r"^tensor '.*x.*' size mismatch at index 0\. expected 32, actual 33$")
        steps = STEPS - 1  # start-up aside
        m = re.search(r"\n  torch.compile recompiled (\d+) times? after start-up \(([\d.]+)/step\), "
                      r"(\d+) in all:\n    1 x Net.forward  \S+compiled.py:(\d+): (.*)\n      hint: (.*)\n",
                      r.stderr)
        self.assertIsNotNone(m, r.stderr)
        self.assertEqual(m.group(1, 2, 3, 4), ("1", "%.2f" % (1 / steps), "1", str(forward)))
        self.assertEqual(m.group(5), got[0]["reason"])
        self.assertIn("mark_dynamic", m.group(6))
        # `syncspy report DIR` (the trace, the recompilations from summary.json) says the same
        again = harness.cli("report", r.out_dir)
        self.assertIn(m.group(0), again.stdout + again.stderr)

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
