"""`syncspy html` on the seed-003 demo (examples/seg_loss.py on real torch over the simulated
device), opened in Debian's chromium (headless): the page loads with no console message and no
request but itself, shows the report's header, one bar per training step, the rows and figures
of summary.json and `check --json`, opens a row's stack, sorts; the diff page of the demo and its
--fixed run says "5 gone"; every JSON output follows its schema (docs/schemas/)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness
import util


def header_of(report_text):
    return report_text.split("\n\n", 1)[0].rstrip("\n")


class DemoPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="syncspy-html-")
        cls.out = os.path.join(cls.tmp, "demo")
        cls.fixed = os.path.join(cls.tmp, "fixed")
        for out, args in ((cls.out, ()), (cls.fixed, ("--fixed",))):
            r = harness.run(harness.DEMO, *args, env={"SYNCSPY_OUT": out, "SYNCSPY_REPORT": "off"})
            assert r.returncode == 0, r.stderr
        cls.dir = glob.glob(os.path.join(cls.out, "pid*"))[0]
        cls.page = os.path.join(cls.tmp, "demo.html")
        p = harness.cli("html", cls.dir, "-o", cls.page)
        assert p.returncode == 0, p.stderr
        cls.seen = util.browse(cls.page)
        cls.summary = json.load(open(os.path.join(cls.dir, "summary.json")))
        p = harness.cli("check", "--json", "--max-syncs-per-step", "1000", cls.dir)
        assert p.returncode == 0, p.stderr
        cls.check = json.loads(p.stdout)["processes"][0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_outputs_follow_their_schemas(self):
        # issue 38 item 2: summary.json, check --json, diff --json (the demo against its --fixed
        # run) and the page's data, each with its version, against docs/schemas/ on real torch
        import test_schemas
        fixed = glob.glob(os.path.join(self.fixed, "pid*"))[0]
        test_schemas.validate_outputs(self, self.dir, fixed, tmp=self.tmp)

    def test_loads_offline_without_errors(self):
        self.assertIsNotNone(self.seen["load_ms"], "the page never finished drawing")
        self.assertEqual(self.seen["console"], [])
        self.assertEqual(self.seen["requests"], ["file://" + os.path.abspath(self.page)])

    def test_header_is_the_reports(self):
        p = harness.cli("report", self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.seen["header"], header_of(p.stdout))
        self.assertIn("30 optimizer steps\n  start-up runs to the first, 29 steps counted", self.seen["header"])

    def test_one_bar_per_training_step(self):
        steps = self.summary["steps"]
        training = [s for s in steps if not s.get("startup") and not s.get("partial")]
        self.assertEqual(len(training), round(self.check["training_steps"]))
        self.assertEqual([b["step"] for b in self.seen["bars"]], [s["step"] for s in training])
        self.assertEqual([b["wall_ns"] for b in self.seen["bars"]], [s["wall_ns"] for s in training])
        self.assertEqual([b["blocked_ns"] for b in self.seen["bars"]], [s["blocked_ns"] for s in training])
        # start-up and the step still open at exit are apart, each with its own figures
        before, after = self.seen["apart"]
        self.assertIn("before the first step", before)
        self.assertIn(f"{steps[0]['syncs']} syncs", before)
        self.assertIn("after the last step", after)

    def test_rows_are_checks_lines(self):
        want = [s for s in self.check["sites"] if s["syncs_per_step"] > 0]
        rows = self.seen["rows"]
        self.assertEqual(len(rows), len(want))
        for row, site in zip(rows, want):
            d = row["data"]
            self.assertEqual((d["api"], d["kind"], d["file"], int(d["lineno"])),
                             (site["api"], site["kind"], site["file"], site["line"]))
            self.assertAlmostEqual(float(d["syncsPerStep"]), site["syncs_per_step"], places=5)
            self.assertAlmostEqual(float(d["blockedPerStepNs"]), site["blocked_per_step_ns"], places=3)
        # every sync of the training steps is in one row (summary.json's steps count them all)
        training = [s for s in self.summary["steps"] if not s.get("startup") and not s.get("partial")]
        self.assertEqual(sum(int(r["data"]["count"]) for r in rows), sum(s["syncs"] for s in training))
        heaviest = rows[0]  # check's heaviest line (which one depends on the machine's timing)
        self.assertIn(f"{want[0]['function']} ", heaviest["where"])
        self.assertIn(f"seg_loss.py:{want[0]['line']}", heaviest["where"])
        self.assertEqual(heaviest["cells"][3], "1.00")  # syncs/step as the report prints it

    def test_a_row_opens_its_stack_source_and_hint(self):
        o = self.seen["opened"]
        # the heaviest line of the program's own (not a backward row), as check names it
        line = [s for s in self.check["sites"] if s["syncs_per_step"] > 0 and s["kind"] == "line"][0]
        self.assertIn(f"{line['function']} ", self.seen["opened_row"])
        self.assertIn(f"seg_loss.py:{line['line']}", self.seen["opened_row"])
        self.assertIn(line["function"], o["stack"])
        self.assertIn("MaskedLoss.forward", o["stack"])
        with open(line["file"]) as f:  # the user's line, read from the file
            code = f.read().splitlines()[line["line"] - 1].strip()
        self.assertIn(code.split("#")[0].strip(), o["source"])
        self.assertIn(line["hint"].split(":")[0], o["hint"])
        self.assertEqual(self.seen["closed_details"], 0)  # a second click closes it
        b = self.seen["opened_backward"]
        self.assertIn("IndexBackward0", b)
        self.assertIn("backward() called at main", b)

    def test_sorting(self):
        s = self.seen["sorted"]
        rates = lambda rows: [float(r["data"]["syncsPerStep"]) for r in rows]
        self.assertEqual(rates(s["syncs_1"]), sorted(rates(s["syncs_1"]), reverse=True))
        self.assertEqual(rates(s["syncs_2"]), sorted(rates(s["syncs_2"])))
        self.assertNotEqual(rates(s["syncs_1"]), rates(s["syncs_2"]))
        where = lambda rows: [r["where"] for r in rows]
        self.assertEqual(where(s["where_1"]), sorted(where(s["where_1"]), key=lambda w: w.lower()))
        self.assertEqual(where(s["where_2"]), where(s["where_1"])[::-1])
        self.assertTrue(all("cross_entropy" in r["where"] for r in self.seen["filtered"]))
        self.assertEqual(len(self.seen["filtered"]), 3)

    def test_flame_graph_and_timeline(self):
        self.assertGreater(self.seen["flame_nodes"], 20)
        # rooted at the script's <module>, not at _start and CPython's frames (issue 35)
        self.assertTrue(self.seen["flame_rows"][1][0].startswith("<module> (seg_loss.py:"), self.seen["flame_rows"][1])
        self.assertRegex(self.seen["flame_cut"], r"^\d+ runtime frames above the first row, left out: _start ")
        # the demo counts launches (SYNCSPY_LAUNCHES's default): the timeline says how to trace them
        self.assertIn("SYNCSPY_LAUNCHES=trace", self.seen["launch_note"])
        self.assertIn("all", self.seen["flame_zoomed_crumbs"])
        self.assertLess(self.seen["flame_zoomed_nodes"], self.seen["flame_nodes"])
        self.assertGreaterEqual(self.seen["timeline_slices"], 5)  # the slowest step's syncs
        self.assertEqual(self.seen["timeline_steps"], len(self.summary["steps"]))  # few: all carried
        slowest = max((s for s in self.summary["steps"] if not s.get("startup") and not s.get("partial")),
                      key=lambda s: s["wall_ns"])
        self.assertTrue(self.seen["timeline_shown"].startswith(f"step {slowest['step']} ("), self.seen["timeline_shown"])

    def test_diff_page_says_5_gone(self):
        fixed = glob.glob(os.path.join(self.fixed, "pid*"))[0]
        page = os.path.join(self.tmp, "diff.html")
        p = harness.cli("html", self.dir, fixed, "-o", page)
        self.assertEqual(p.returncode, 0, p.stderr)
        seen = util.browse(page, "--diff")
        self.assertEqual(seen["console"], [])
        self.assertEqual(seen["requests"], ["file://" + os.path.abspath(page)])
        self.assertIn("5 gone", seen["diff_counts"])
        marks = [r["data"]["change"] for r in seen["diff_rows"]]
        self.assertEqual(marks.count("gone"), 5)
        text = harness.cli("diff", self.dir, fixed).stdout
        self.assertIn("5 gone", text)
        self.assertEqual(seen["diff_header"], header_of(text))


    def test_per_rank_card_of_eight_ranks(self):
        """Eight ranks synthesized by bench/synth_ranks.py from the two real runs: seven of the
        --fixed run, rank 3 of the demo (it syncs at 5 lines more and waits most: the straggler,
        those lines on 1 of 8). The card's figures are the text report's per-rank section's, each
        rank's row its summary.json's."""
        root, other = os.path.join(self.tmp, "ranks"), os.path.join(self.tmp, "ranks-demo")
        fixed = glob.glob(os.path.join(self.fixed, "pid*"))[0]
        synth = os.path.join(harness.ROOT, "bench", "synth_ranks.py")
        for src, out in ((fixed, root), (self.dir, other)):
            p = subprocess.run([sys.executable, synth, src, out, "8"], capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
        [slow] = [d for d in os.listdir(root) if d.startswith("rank3-")]
        shutil.rmtree(os.path.join(root, slow))
        shutil.copytree(os.path.join(other, slow), os.path.join(root, slow))
        page = os.path.join(self.tmp, "ranks.html")
        p = harness.cli("html", root, "-o", page)
        self.assertEqual(p.returncode, 0, p.stderr)
        shot = os.path.join(self.tmp, "ranks.png")
        seen = util.browse(page, "--screenshot", shot, "--at", "#run-ranks")
        if os.environ.get("SYNCSPY_KEEP_SHOT"):  # the picture docs/ shows: SYNCSPY_KEEP_SHOT=PATH
            shutil.copy(shot, os.environ["SYNCSPY_KEEP_SHOT"])
        self.assertEqual(seen["console"], [])
        self.assertEqual(seen["requests"], ["file://" + os.path.abspath(page)])
        rep = harness.cli("report", root)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        t, r = util.rank_section(rep.stdout), seen["ranks"]
        self.assertEqual(r["header"], t["header"])
        self.assertIn("per rank: 8 processes on 1 host, job 4242", r["header"])
        for key in ("syncs", "share"):
            self.assertEqual({k: r[key][k] for k in ("min", "median", "max")}, t[key])
        for key in ("waits_most", "stragglers"):
            self.assertEqual(r[key]["text"], t[key])
        self.assertEqual(r["stragglers"]["procs"], [3])
        self.assertTrue(t["stragglers"].startswith("stragglers: rank 3 on node0000 (blocked share"), t["stragglers"])
        self.assertEqual(r["share"]["procs"][1], 3)
        self.assertEqual([(x["where"], x["on"]) for x in r["partial"]], t["partial"][:len(r["partial"])])
        self.assertEqual(len(r["partial"]), 5)  # the 5 lines --fixed removes
        for x in r["partial"]:
            self.assertEqual((x["on"], x["procs"]), ("on 1 of 8: rank 3 on node0000", [3]))
        self.assertIsNone(r["no_step"])  # every rank marked its steps
        rows = {x["proc"]: x["cells"] for x in r["procs"]}
        for i, folder in enumerate(sorted(os.listdir(root), key=lambda d: int(d[4:].split("-")[0]))):
            with open(os.path.join(root, folder, "summary.json")) as f:
                s = json.load(f)
            training = [x for x in s["steps"] if not x.get("startup") and not x.get("partial")]
            cells = rows[i]
            self.assertTrue(cells[0].startswith(f"rank {i} pid {s['pid']}"), cells[0])
            self.assertEqual(("straggler" in cells[0]), i == 3)
            self.assertEqual(cells[1], str(len(training)))
            share = 100 * sum(x["blocked_ns"] for x in training) / sum(x["wall_ns"] for x in training)
            self.assertEqual(cells[5], f"{share:.1f}%")
            self.assertAlmostEqual(float(cells[6]), sum(x["syncs"] for x in training) / len(training), places=2)
        self.assertEqual(seen["ranks_picked"]["proc"], 3)  # its name shows it alone
        self.assertEqual(seen["ranks_picked"]["selected_rows"], [3])


if __name__ == "__main__":
    unittest.main()
