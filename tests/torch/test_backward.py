"""Real PyTorch over the simulated device: syncs made in the backward pass (in autograd's engine
thread) named by the forward line that created the autograd node (agent/record/autograd.h), with the
node, the backward() caller and the forward op's hint; the programs' own results, output,
exceptions and memory unchanged by the attribution; SYNCSPY_BACKWARD=off. Which ops sync in
their backward is what torch 2.15 does here (docs/TORCH.md): the boolean-mask index does
(IndexBackward0), a custom Function whose backward reads .item() does, and the deterministic
gather and the embedding do not."""
import json
import os
import re
import shutil
import tempfile
import unittest

import harness
import util
from harness import backward_sites, marked_lines, sections

SEG = harness.DEMO
PROG = harness.prog("backward.py")
SEG_STEPS = 30
ALL = {"SYNCSPY_BACKWARD": "all"}
SAMPLED = {"SYNCSPY_BACKWARD": "sampled"}


def user_frames(frames):
    return [f for f in frames if f.get("python") and "/site-packages/torch/" not in f["file"]]


class SeedLoss(unittest.TestCase):
    """The seed-003 loop with the default SYNCSPY_BACKWARD=auto (every recorded step attributed:
    node creation is watched from the interposed sequence number, agent/record/autograd_nodes.h)."""

    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(SEG, "--steps", SEG_STEPS, "--log-every", 0)
        cls.s = cls.r.summary()
        cls.marks = marked_lines(SEG)

    def test_attributed_site(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        attributed = [s for s in backward_sites(self.s) if s.get("backward_node")]
        self.assertTrue(attributed, [harness.frames_text(s) for s in backward_sites(self.s)])
        for s in attributed:
            own, node, forward, caller = sections(s)
            self.assertEqual(node, "IndexBackward0")
            self.assertEqual(s["backward_node"], "IndexBackward0")
            first = user_frames(forward)[0]
            self.assertEqual((first["function"], first["file"], first["line"]),
                             ("MaskedLoss.cross_entropy", SEG, self.marks["mask_pred"]))
            self.assertIn(("main", self.marks["backward"]),
                          [(f["function"], f["line"]) for f in user_frames(caller)])
            self.assertTrue(any("Engine::thread_main" in (f["function"] or "") for f in own))

    def test_every_step_counted_for_the_forward_line(self):
        # auto attributes every recorded step here: each backward sync named from its own node,
        # nothing estimated
        self.assertEqual(sum(s["count"] for s in backward_sites(self.s)), SEG_STEPS)
        self.assertEqual(self.s["attribution_steps"], SEG_STEPS - 1, self.r.stderr)
        g = harness.group_at(self.r.stderr, "seg_loss.py", self.marks["mask_pred"], backward=True)
        self.assertIsNotNone(g, self.r.stderr)
        self.assertRegex(g["head"], r"\s1\.00\s", g["head"])
        text = "\n".join(g["lines"])
        self.assertIn("node IndexBackward0, in autograd's thread; backward() called at main", text)
        self.assertIn(f"seg_loss.py:{self.marks['backward']}", text)
        self.assertNotIn("estimated", self.r.stderr)
        self.assertIn("the backward of a boolean-mask index", g["hint"])
        self.assertIn("[matched: IndexBackward0]", g["hint"])
        # the line's own (forward) sync is a group of its own, with its own hint
        fwd = harness.group_at(self.r.stderr, "seg_loss.py", self.marks["mask_pred"])
        self.assertIsNotNone(fwd, self.r.stderr)
        self.assertIn("x[bool_mask] syncs", fwd["hint"])
        self.assertNotIn("not recorded", self.r.stderr)

    def test_sampled_counts_every_step_for_the_line_as_an_estimate(self):
        # sampled: attributed in one step, the rest joined by node and native stack, said so
        r = harness.run(SEG, "--steps", SEG_STEPS, "--log-every", 0, env=SAMPLED)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sum(s["count"] for s in backward_sites(r.summary())), SEG_STEPS)
        g = harness.group_at(r.stderr, "seg_loss.py", self.marks["mask_pred"], backward=True)
        self.assertIsNotNone(g, r.stderr)
        self.assertRegex(g["head"], r"\s1\.00\s", g["head"])
        self.assertRegex("\n".join(g["lines"]), r"~0\.9\d/step of these estimated: the same node's "
                         r"syncs at the same native stack in steps without attribution, counted for "
                         r"the only forward line seen making it in the 1 attribution step")
        self.assertNotIn("not recorded", r.stderr)

    def test_fixed_loss_has_no_backward_sync(self):
        r = harness.run(SEG, "--steps", SEG_STEPS, "--log-every", 0, "--fixed", env=ALL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(backward_sites(r.summary()), [])
        self.assertNotIn("backward of", r.stderr)


class Cases(unittest.TestCase):
    """tests/torch/progs/backward.py, each case with every node attributed (SYNCSPY_BACKWARD=all)
    and compared with a run without the agent."""

    def run_case(self, case, steps=6, env=ALL):
        r = harness.run(PROG, case, steps, env=env)
        plain = harness.run(PROG, case, steps, preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(r.stdout, plain.stdout)  # what the program computed and printed
        return r, json.loads(r.stdout)

    def forward_lines(self, summary):
        out = set()
        for s in backward_sites(summary):
            _, node, forward, _ = sections(s)
            if node:
                f = user_frames(forward)[0]
                out.add((node, f["line"]))
        return out

    def test_torch_compile(self):
        # torch.compile runs here (backend aot_eager): the sequence number hook pushes no mode,
        # so the backward syncs get their forward line as in eager code, and Dynamo compiles,
        # breaks and counts exactly as without the agent (the counters are in the output)
        r, out = self.run_case("compiled", 8, env=None)
        self.assertEqual(out["dynamo"]["frames"]["ok"], out["dynamo"]["frames"]["total"])
        self.assertGreater(out["dynamo"]["frames"]["ok"], 0)
        s = r.summary()
        marks = marked_lines(PROG)
        self.assertGreater(s["attribution_steps"], 0)
        self.assertEqual(self.forward_lines(s), {("IndexBackward0", marks["mask_pred"])})
        g = harness.group_at(r.stderr, "backward.py", marks["mask_pred"], backward=True)
        self.assertIsNotNone(g, r.stderr)
        self.assertIn(f"backward.py:{marks['compiled']}", "\n".join(g["lines"]))  # the caller's line
        self.assertNotIn("torch.compile is in use", r.stderr)

    def test_custom_function(self):
        r, _ = self.run_case("custom")
        s = r.summary()
        marks = marked_lines(PROG)
        self.assertEqual(sum(x["count"] for x in backward_sites(s)), 6)
        self.assertEqual(self.forward_lines(s), {("ClampGradBackward", marks["custom"])})
        for x in backward_sites(s):
            own = sections(x)[0]
            self.assertIn(("ClampGrad.backward", marks["custom_backward"]),
                          [(f["function"], f["line"]) for f in own if f.get("python")])
        g = harness.group_at(r.stderr, "backward.py", marks["custom"], backward=True)
        self.assertIsNotNone(g, r.stderr)
        self.assertIn("node ClampGradBackward", "\n".join(g["lines"]))
        self.assertIn("a custom autograd.Function's backward syncs", g["hint"])

    def test_custom_function_auto(self):
        # the default: the node type, first seen syncing in step 0, is attributed from the next
        # step on, however short the steps (the flusher's pace does not decide it)
        marks = marked_lines(PROG)
        for steps in (6, 12, 30):
            with self.subTest(steps=steps):
                r, _ = self.run_case("custom", steps, env=None)
                s = r.summary()
                self.assertEqual(sum(x["count"] for x in backward_sites(s)), steps)
                self.assertEqual(self.forward_lines(s), {("ClampGradBackward", marks["custom"])})
                g = harness.group_at(r.stderr, "backward.py", marks["custom"], backward=True)
                self.assertIsNotNone(g, r.stderr)
                self.assertNotIn("not recorded", r.stderr)

    def test_strict_subclass_sees_only_the_programs_calls(self):
        # the agent reads each output's node without dispatch: a subclass that refuses every
        # call it did not expect receives exactly the calls it gets without the agent
        for env in (None, ALL):
            with self.subTest(env=env):
                r, out = self.run_case("strict", 12, env=env)
                self.assertNotIn("refused", out["calls"], out["calls"])
                self.assertEqual(out["calls"]["__get__"], 1, out["calls"])

    def test_ctc_loss_each_line_its_own_nodes(self):
        # CtcLossBackward0 is made inside the composite (under MeanBackward0 / SumBackward0):
        # every node the op made is tagged, so each line is named with its own syncs
        r, _ = self.run_case("ctc")
        s = r.summary()
        marks = marked_lines(PROG)
        ctc = [x for x in backward_sites(s) if sections(x)[1] == "CtcLossBackward0"]
        by_line = {}
        for x in ctc:
            line = user_frames(sections(x)[2])[0]["line"]
            by_line[line] = by_line.get(line, 0) + x["count"]
        self.assertEqual(set(by_line), {marks["ctc_mean"], marks["ctc_none"]}, r.stderr)
        self.assertEqual(by_line[marks["ctc_mean"]], by_line[marks["ctc_none"]])
        # every backward is named, start-up's too
        self.assertEqual([x for x in backward_sites(s) if not x.get("backward_node")], [], r.stderr)

    def test_custom_function_inside_a_composite(self):
        r, _ = self.run_case("composite")
        s = r.summary()
        marks = marked_lines(PROG)
        outer = {}
        for x in backward_sites(s):
            _, node, forward, _ = sections(x)
            self.assertEqual(node, "ClampGradBackward")
            frames = user_frames(forward)
            self.assertEqual(frames[0]["function"], "clamped_norm")
            outer[frames[1]["line"]] = outer.get(frames[1]["line"], 0) + x["count"]
        # two calls on one line, one on the other, in each of the 6 steps (start-up's included)
        self.assertEqual(outer, {marks["composite"]: 12, marks["composite2"]: 6}, r.stderr)

    def test_checkpoint(self):
        # non-reentrant checkpoint keeps the forward's nodes (it recomputes saved tensors in
        # backward): the masked index's node is named by its line, inside the checkpoint call
        r, _ = self.run_case("checkpoint")
        s = r.summary()
        marks = marked_lines(PROG)
        self.assertEqual(self.forward_lines(s), {("IndexBackward0", marks["mask_pred"])})
        for x in backward_sites(s):
            if x.get("backward_node"):
                lines = [f["line"] for f in user_frames(sections(x)[2]) if f["file"] == PROG]
                self.assertIn(marks["checkpoint"], lines)

    def test_line_that_first_syncs_late_says_why_once(self):
        # issue 36 item 4: past start-up a node's forward stack is kept where nodes were first
        # made less than 4 backward calls ago or a node made there was seen syncing
        # (agent/record/autograd_nodes.c, origins: here steps 1-4); a line whose node first
        # syncs in step 5 has that one sync without a forward line, saying why, never another
        # line's, and its later syncs (steps 6 and 7) named by it
        r, _ = self.run_case("late", 8)
        lines, causes = forward_line_counts(r.summary())
        self.assertEqual((lines, causes), ({marked_lines(PROG)["late"]: 2}, {"not_looked_for": 1}),
                         r.stderr)

    def test_node_made_in_another_thread_gets_its_own_line(self):
        # issue 24 item 5: the anomaly engine keys nodes by their forward thread: a node made in
        # a forward thread of its own is named by that thread's line, not by the training
        # thread's line that uses its output
        r, _ = self.run_case("thread")
        s = r.summary()
        marks = marked_lines(PROG)
        self.assertEqual(self.forward_lines(s), {("IndexBackward0", marks["mask_pred"])})
        lines = set()
        for x in backward_sites(s):
            _, node, forward, _ = sections(x)
            if node:
                lines.update(f["line"] for f in user_frames(forward))
        self.assertIn(marks["thread"], lines)
        self.assertNotIn(marks["thread_join"], lines)
        self.assertEqual(sum(x["count"] - x["startup_count"] for x in backward_sites(s)
                             if x.get("backward_node")), 5)

    def test_deterministic_gather_and_embedding_do_not_sync_in_backward(self):
        for case in ("gather_det", "embedding"):
            with self.subTest(case):
                r, _ = self.run_case(case)
                self.assertEqual(backward_sites(r.summary()), [], r.stderr)
                self.assertNotIn("backward of", r.stderr)

    def test_no_grad_part_makes_no_node(self):
        r, _ = self.run_case("no_grad")
        s = r.summary()
        marks = marked_lines(PROG)
        # only the index that needs grad has a backward; the one under no_grad syncs in forward only
        self.assertEqual(self.forward_lines(s), {("IndexBackward0", marks["mask_pred"])})
        nograd = marked_lines(PROG, "nograd")["masked"]
        self.assertEqual(harness.count_at(s, PROG, nograd), 6)
        self.assertIsNone(harness.group_at(r.stderr, "backward.py", nograd, backward=True))

    def test_results_unchanged(self):
        _, out = self.run_case("cpu_mix")
        self.assertEqual(len(out["cpu_weights"]), 32)

    def test_graph_not_kept_alive(self):
        _, out = self.run_case("weakref")
        self.assertEqual(out["alive"], 0)

    def test_backward_error_unchanged(self):
        # the anomaly mode attribution turns on is off inside a backward call: a node that
        # raises gets no "Error detected in BoomBackward" warning (run_case compares the output)
        for env in (ALL, None):
            with self.subTest(env=env):
                _, out = self.run_case("raises", env=env)
                self.assertEqual(out["error"], "boom in backward")
                self.assertEqual(out["warnings"], [])

    def test_double_backward(self):
        # create_graph: nodes made inside a backward call; the masked index still named
        r, _ = self.run_case("double")
        self.assertIn(("IndexBackward0", marked_lines(PROG)["mask_pred"]), self.forward_lines(r.summary()))

    def test_sequence_numbers_unchanged(self):
        # the agent interposes at::sequence_number::get_and_increment: torch's own counter (what
        # peek() and so the profiler read) moves as without it, in every mode
        for env in (ALL, None, {"SYNCSPY_BACKWARD": "sampled"}):
            with self.subTest(env=env):
                r, out = self.run_case("seqnr", env=env)
                self.assertEqual(len(out["seq"]), 6)
                for (prof, a, b) in out["seq"]:
                    self.assertEqual((prof, b - a), ([a, b], 1))
                self.assertIn("IndexBackward0", [sections(x)[1] for x in backward_sites(r.summary())])

    def test_anomaly_mode_left_alone(self):
        # attribution watches node creation from C: torch.is_anomaly_enabled() reads False in
        # every step (run_case compares the printed count with a run without the agent)
        for case in ("custom", "ctc"):
            with self.subTest(case=case):
                _, out = self.run_case(case, env=None)
                self.assertEqual(out["anomaly_steps"], 0)

    def test_exception_traceback_unchanged(self):
        _, out = self.run_case("exception")
        self.assertTrue(out["traceback"][-1].startswith("RuntimeError"), out["traceback"])
        self.assertNotIn("<syncspy>", "\n".join(out["traceback"]))


def check_json(r, *args):
    """`syncspy check --json` of a run's folder: its one process."""
    c = harness.cli("check", r.out_dir, "--max-syncs-per-step", "1000", "--json", *args)
    return json.loads(c.stdout)["processes"][0]


def rate_text(v):
    """A per-step rate as the report prints it (three figures: 2.92, 11.7)."""
    return f"{v:.2f}" if v < 9.995 else f"{v:.1f}" if v < 99.95 else f"{v:.0f}"


def backward_rates(proc):
    """{forward line: (syncs/step, estimated syncs)} of check --json's backward lines."""
    out = {}
    for x in proc["sites"]:
        if x["kind"] == "backward":
            rate, est = out.get(x["line"], (0.0, 0))
            out[x["line"]] = (rate + x["syncs_per_step"], est + x["estimated_syncs"])
    return out


class Estimates(unittest.TestCase):
    """Issue 24 items 2 and 3 under SYNCSPY_BACKWARD=sampled: the backward syncs of the
    steps without attribution split between the forward lines seen making the same node (three
    lines make CtcLossBackward0 through F.ctc_loss, in the proportion 1:1:2), never given to one;
    and every backward sync without its forward line says why, as the agent recorded it."""
    STEPS = 40

    @classmethod
    def setUpClass(cls):
        cls.marks = marked_lines(PROG)
        cls.sampled = harness.run(PROG, "ctc_split", cls.STEPS, env=SAMPLED)
        cls.all = harness.run(PROG, "ctc_split", cls.STEPS, env=ALL)

    def test_split_matches_the_true_counts(self):
        self.assertEqual(self.sampled.returncode, 0, self.sampled.stderr)
        m = self.marks
        true = backward_rates(check_json(self.all))
        est = backward_rates(check_json(self.sampled))
        lines = {m["split_mean"], m["split_none"], m["split_twice"]}
        self.assertEqual(set(true), lines, self.all.stderr)
        self.assertEqual(set(est), lines, self.sampled.stderr)
        # what SYNCSPY_BACKWARD=all counts in every step: 1:1:2
        self.assertAlmostEqual(true[m["split_twice"]][0], 2 * true[m["split_mean"]][0], places=6)
        self.assertAlmostEqual(true[m["split_none"]][0], true[m["split_mean"]][0], places=6)
        for line in lines:
            self.assertEqual(true[line][1], 0)  # all: nothing estimated
            self.assertGreater(est[line][1], 0)  # sampled: most steps estimated, for every line
            self.assertAlmostEqual(est[line][0], true[line][0], delta=0.02, msg=(line, est, true))

    def test_json_fields(self):
        proc = check_json(self.sampled)
        self.assertGreaterEqual(proc["attribution_steps"], 1)
        self.assertLess(proc["attribution_steps"], self.STEPS // 4)  # most steps not attributed
        self.assertGreater(proc["estimated_syncs_per_step"], 0)
        for x in proc["sites"]:
            if x["kind"] == "backward":
                self.assertEqual(x["estimate_split_lines"], 3, x)
                self.assertAlmostEqual(x["exact_syncs_per_step"] + x["estimated_syncs"] / proc["training_steps"],
                                       x["syncs_per_step"], places=5)
        s = self.sampled.summary()
        self.assertEqual(s["attribution_steps"], proc["attribution_steps"])
        shared = [x for x in s["sites"] if x.get("estimated_for")]
        self.assertTrue(shared, self.sampled.stderr)
        for x in shared:  # util.check_estimate_parts checked the sums; here the proportion
            self.assertEqual(x["unseen_cause"], "not_attributed_step")
            by_line = {}
            for p in x["estimated_for"]:
                line = user_frames(sections(s["sites"][p["site"]])[2])[0]["line"]
                by_line[line] = by_line.get(line, 0) + p["count"]
            m = self.marks
            self.assertEqual(set(by_line), {m["split_mean"], m["split_none"], m["split_twice"]})
            self.assertLessEqual(abs(by_line[m["split_twice"]] - 2 * by_line[m["split_mean"]]), 2, by_line)
        with_estimate = [x for x in s["sites"] if x.get("estimate")]
        self.assertTrue(with_estimate)
        self.assertEqual(sum(x["estimate"]["count"] for x in with_estimate),
                         sum(x["count"] for x in shared))

    def test_text_names_the_split(self):
        m = self.marks
        g = harness.group_at(self.sampled.stderr, "backward.py", m["split_twice"], backward=True)
        self.assertIsNotNone(g, self.sampled.stderr)
        text = "\n".join(g["lines"])
        self.assertRegex(text, rf"~11\.\d+/step of these estimated: the same node's syncs at the same native "
                               rf"stack in steps without attribution, split as in the \d+ attribution "
                               rf"steps?: ~11\.\d+/step here, ~5\.\d+/step from \S+backward\.py:"
                               rf"({m['split_mean']}|{m['split_none']}), ~5\.\d+/step from \S+backward\.py:")
        self.assertNotIn("not recorded", self.sampled.stderr)

    def test_html_shows_the_split(self):
        # issue 24 in `syncspy html`: each backward row's estimate in the report's words, and one
        # sub-row per forward line of the split with its share; figures of summary.json
        tmp = tempfile.mkdtemp(prefix="syncspy-html-split-")
        try:
            page = os.path.join(tmp, "split.html")
            p = harness.cli("html", self.sampled.out_dir, "-o", page)
            self.assertEqual(p.returncode, 0, p.stderr)
            seen = util.browse(page, "--screenshot", os.path.join(tmp, "split.png"), "--at", "#run-sites")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertIsNotNone(seen["load_ms"], "the page never finished drawing")
        self.assertEqual(seen["console"], [])
        self.assertEqual(seen["requests"], ["file://" + os.path.abspath(page)])
        s = self.sampled.summary()
        steps = check_json(self.sampled)["training_steps"]
        line_of = {}  # summary.json's forward (backward-pass) sites: their forward line (a row is
        # a line, its copies and synchronizes together: issue 35 item 6)
        for i, x in enumerate(s["sites"]):
            # the page's rows are the training steps' (a site whose syncs all fell in start-up,
            # named since issue 35 item 5, or after the last step has none)
            in_steps = x["count"] - x.get("startup_count", 0) - x.get("partial_count", 0)
            if x.get("backward_node") and not x.get("unseen_cause") and in_steps:
                line_of[i] = user_frames(sections(x)[2])[0]["line"]
        rows = {int(r["data"]["lineno"]): r for r in seen["rows"] if r["data"]["kind"] == "backward"}
        self.assertEqual(set(rows), set(line_of.values()))
        shares = {}
        for sh in seen["estimate_shares"]:
            shares.setdefault(int(sh["data"]["line"]), []).append(sh)
        notes = {n["line"]: n["text"].strip() for n in seen["estimate_notes"]}
        for key, row in rows.items():
            mine = [i for i, k in line_of.items() if k == key]
            # the training steps' syncs: start-up's (attributed too, issue 35 item 5) are not the rows'
            exact = sum(s["sites"][i]["count"] - s["sites"][i]["startup_count"] - s["sites"][i]["partial_count"]
                        for i in mine)
            estimated = sum(s["sites"][i]["estimate"]["count"] for i in mine if "estimate" in s["sites"][i])
            self.assertGreater(estimated, 0, key)
            self.assertEqual(int(row["data"]["count"]), exact + estimated, key)
            # the unseen sites split to this line, and each line's part of them
            parts = {}
            for x in s["sites"]:
                split = x.get("estimated_for", [])
                if any(line_of.get(q["site"]) == key for q in split):
                    for q in split:
                        parts[line_of[q["site"]]] = parts.get(line_of[q["site"]], 0) + q["count"]
            subs = shares[int(row["data"]["line"])]
            self.assertEqual(subs[0]["data"]["here"], "1")  # its own share first
            self.assertEqual({int(re.search(r":(\d+)$", x["data"]["where"])[1]): int(x["data"]["count"]) for x in subs},
                             parts, key)
            self.assertEqual(parts[key], estimated, key)
            for x in subs:
                self.assertAlmostEqual(float(x["data"]["syncsPerStep"]), int(x["data"]["count"]) / steps, places=5)
                self.assertEqual(x["cells"][3], "~" + rate_text(int(x["data"]["count"]) / steps))
                self.assertIn("estimate", x["where"])
            # the words of the text report's table, with these figures
            others = ", ".join(f"~{rate_text(int(x['data']['count']) / steps)}/step from {x['data']['where']}"
                               for x in subs[1:])
            here = rate_text(estimated / steps)
            k = s["attribution_steps"]
            self.assertEqual(notes[int(row["data"]["line"])],
                             f"estimate ~{here}/step of these estimated: the same node's syncs at the same native "
                             f"stack in steps without attribution, split as in the {k} attribution "
                             f"step{'' if k == 1 else 's'}: ~{here}/step here, {others}")
        self.assertRegex(self.sampled.stderr, r"split as in the \d+ attribution steps?: ~\S+/step here, ~\S+/step "
                                           r"from \.\.\./progs/backward\.py:\d+")  # the same place names

    def test_step_without_attribution_and_thread_causes(self):
        # the masked loss made in a forward thread: in the attribution step it is named by the
        # thread's own line (the anomaly engine keys nodes by forward thread), and the steps
        # without attribution are counted for that line as an estimate
        r = harness.run(PROG, "thread", 12, env=SAMPLED)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("made in another thread", r.stderr)
        self.assertNotIn("not recorded", r.stderr)
        g = harness.group_at(r.stderr, "backward.py", marked_lines(PROG)["mask_pred"], backward=True)
        self.assertIsNotNone(g, r.stderr)
        text = "\n".join(g["lines"])
        self.assertIn(f"backward.py:{marked_lines(PROG)['thread']}", text)
        self.assertRegex(text, r"~0\.9\d/step of these estimated: the same node's syncs at the same "
                               r"native stack in steps without attribution, counted for the only "
                               r"forward line seen making it in the 1 attribution step")
        causes = {}
        for x in check_json(r)["sites"]:
            for c in x["unseen_causes"] or []:
                causes[c["cause"]] = causes.get(c["cause"], 0) + c["syncs"]
        self.assertEqual(causes.get("other_thread", 0), 0, causes)


def forward_line_counts(summary):
    """{forward line: syncs} of the attributed backward sites (the node's first user frame), and
    {cause: syncs} of those without their forward line."""
    lines, causes = {}, {}
    for x in backward_sites(summary):
        _, node, forward, _ = sections(x)
        if node:
            line = user_frames(forward)[0]["line"]
            lines[line] = lines.get(line, 0) + x["count"]
        else:
            causes[x.get("unseen_cause")] = causes.get(x.get("unseen_cause"), 0) + x["count"]
    return lines, causes


class StartUp(unittest.TestCase):
    """Issue 35 item 5: the first iteration's backward syncs, before the first optimizer step
    (start-up), are named by their forward line as the training steps' are: the node creation
    watch (the sequence number hook) is on from the step hook's registration."""

    def test_custom_functions_start_up_backward_names_its_line(self):
        r = harness.run(PROG, "custom", 6)
        self.assertEqual(r.returncode, 0, r.stderr)
        marks = marked_lines(PROG)
        s = r.summary()
        lines, causes = forward_line_counts(s)
        self.assertEqual((lines, causes), ({marks["custom"]: 6}, {}), r.stderr)
        site = [x for x in backward_sites(s) if x.get("backward_node")][0]
        self.assertEqual((site["backward_node"], site["startup_count"]), ("ClampGradBackward", 1))
        startup = re.search(r"before the first step \(start-up, not in the rates\).*\n((?:    .*\n)+)", r.stderr)
        self.assertIsNotNone(startup, r.stderr)
        self.assertRegex(startup.group(1), r"1 x cudaStreamSynchronize, \S+ \S+, backward of run  "
                                           r"\S*progs/backward\.py:%d\n" % marks["custom"])
        self.assertNotIn("in the backward of", r.stderr)
        # one row for the line, start-up's sync in it; no row of the node alone
        rows = check_json(r)["sites"]
        self.assertEqual([x["kind"] for x in rows if x["kind"] != "line"], ["backward"], rows)
        # start-up is not an attribution step (it is not in the rates): the 5 training steps are
        self.assertEqual(s["attribution_steps"], 5)

    def test_masked_index_start_up_backward_names_its_line(self):
        r = harness.run(PROG, "no_grad", 3)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines, causes = forward_line_counts(r.summary())
        self.assertEqual((lines, causes), ({marked_lines(PROG)["mask_pred"]: 3}, {}), r.stderr)


class ForwardThreads(unittest.TestCase):
    """Issue 36 item 5: the forward run on a new thread in every step (44 threads, more than the
    16 forward-thread rings of agent/record/autograd_nodes.c) keeps every line's backward syncs on that
    line: the rings of threads that ended are reused; with more threads alive at once than rings,
    a thread without one gets no line, and the row says why. Never one line's syncs on another."""
    STEPS = 44

    @classmethod
    def setUpClass(cls):
        cls.marks = marked_lines(PROG)
        cls.each = harness.run(PROG, "thread_each", cls.STEPS)
        cls.crowd = harness.run(PROG, "thread_crowd", 6)

    def test_a_new_forward_thread_each_step(self):
        r = self.each
        self.assertEqual(r.returncode, 0, r.stderr)
        lines, causes = forward_line_counts(r.summary())
        # every step's masked index, every 3rd step's custom Function (steps 0, 3, ..., 42)
        self.assertEqual(lines, {self.marks["each_mask"]: self.STEPS,
                                 self.marks["each_custom"]: (self.STEPS + 2) // 3}, r.stderr)
        self.assertEqual(causes, {}, r.stderr)
        # the rates, start-up out: 43 steps with the masked index, 14 with the custom Function
        rates = backward_rates(check_json(r))
        self.assertEqual({k: (rate_text(v[0]), v[1]) for k, v in rates.items()},
                         {self.marks["each_mask"]: ("1.00", 0), self.marks["each_custom"]: ("0.33", 0)})
        for mark, rate in (("each_mask", "1.00"), ("each_custom", "0.33")):
            g = harness.group_at(r.stderr, "backward.py", self.marks[mark], backward=True)
            self.assertIsNotNone(g, r.stderr)
            self.assertEqual(g["head"].split()[4], rate, g["head"])
        self.assertNotIn("steps without attribution", r.stderr)
        self.assertNotIn("forward line was not recorded", r.stderr)

    def test_more_live_forward_threads_than_rings(self):
        r = self.crowd
        self.assertEqual(r.returncode, 0, r.stderr)
        steps, crowd = 6, 20  # progs/backward.py CROWD
        lines, causes = forward_line_counts(r.summary())
        self.assertEqual(set(lines) - {self.marks["crowd_even"], self.marks["crowd_odd"]}, set(), lines)
        # each line holds at most its own threads' syncs (half the crowd's)
        for line, n in lines.items():
            self.assertLessEqual(n, steps * crowd // 2, lines)
        # the rest say why: 16 rings for 20 live threads (and the training thread's)
        self.assertEqual(set(causes), {"no_thread_ring"}, causes)
        self.assertGreaterEqual(causes["no_thread_ring"], steps * (crowd - 16), causes)
        self.assertEqual(sum(lines.values()) + causes["no_thread_ring"], steps * crowd)
        self.assertRegex(r.stderr, r"why \(\S+/step\): made in a thread whose forward lines were not "
                                   r"kept: 16 other threads that make autograd nodes were running")
        unseen = {c["cause"] for x in check_json(r)["sites"] for c in x["unseen_causes"] or []}
        self.assertEqual(unseen, {"no_thread_ring"})


class Off(unittest.TestCase):
    def test_off(self):
        r = harness.run(SEG, "--steps", SEG_STEPS, "--log-every", 0, env={"SYNCSPY_BACKWARD": "off"})
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        self.assertTrue(backward_sites(s))
        self.assertFalse(any(x.get("backward_node") for x in s["sites"]))
        self.assertIn("backward of IndexBackward0, in autograd's thread (its forward line was not "
                      "recorded)", r.stderr)
        self.assertIn("why (1.00/step): SYNCSPY_BACKWARD=off", r.stderr)
        self.assertEqual({x.get("unseen_cause") for x in backward_sites(s)}, {"backward_off"})
        self.assertEqual(s["attribution_steps"], 0)

    def test_bad_value(self):
        r = harness.run(SEG, "--steps", 3, "--log-every", 0, env={"SYNCSPY_BACKWARD": "sometimes"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("syncspy: SYNCSPY_BACKWARD='sometimes' is not auto, all, sampled or off; using auto", r.stderr)


if __name__ == "__main__":
    unittest.main()
