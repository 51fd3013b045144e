"""tests/e2e/test_html.py: `syncspy html` on trace.bin files written by tracegen.py (an
independent writer of the format): a SYNCSPY_OUT root of two ranks, merged by default with a
rank selector and the per-rank spread, opened in Debian's chromium (headless, through
tests/browser/probe.py): no console message, no request but the page; the merged rows are the
report's merged lines; the timeline shows a step's syncs and launches. The per-rank card over
four real ranks (tests/progs/rank_work.c): the text report's per-rank section, the straggler,
the rank with no step. The first screen (issue 35) on tracegen.first_screen: a 50x step cut from
the chart's scale and marked, the op and hint columns, the flame graph from the program's
outermost frame, the timeline's note when launches were not traced. And the command's bad
input: exit 2 and one clear line."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import tracegen
import util

CLI = util.CLI


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode >= 0, f"syncspy {args} died of signal {-p.returncode}: {p.stderr}"
    return p


def page_data(path):
    """The JSON block of a page."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'<script id="syncspy-data" type="application/json">(.*?)</script>', text, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


class Ranks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="syncspy-html-e2e-")
        cls.root = os.path.join(cls.tmp, "out")
        tracegen.sample(pid=4242, rank=0).write(os.path.join(cls.root, "rank0-pid4242", "trace.bin"))
        t = tracegen.sample(pid=4343, rank=1)
        t.write(os.path.join(cls.root, "rank1-pid4343", "trace.bin"))
        cls.page = os.path.join(cls.tmp, "ranks.html")
        p = run("html", cls.root, "-o", cls.page)
        assert p.returncode == 0, p.stderr
        cls.seen = util.browse(cls.page)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_offline_and_clean(self):
        self.assertIsNotNone(self.seen["load_ms"])
        self.assertEqual(self.seen["console"], [])
        self.assertEqual(self.seen["requests"], ["file://" + os.path.abspath(self.page)])
        with open(self.page, encoding="utf-8") as f:
            text = f.read()
        # everything inline: no element loads anything
        self.assertNotRegex(text, r'<(script|link|img|iframe)[^>]+(src|href)=')
        self.assertIn("default-src 'none'", text)

    def test_merged_by_default_with_a_selector(self):
        self.assertEqual(self.seen["procs"], 3)  # merged, rank 0, rank 1
        p = run("report", self.root)
        self.assertEqual(self.seen["header"], p.stdout.split("\n\n", 1)[0].rstrip("\n"))
        self.assertIn("rank 0 pid 4242", self.seen["header"])
        self.assertIn("rank 1 pid 4343", self.seen["header"])

    def test_rows_merge_the_ranks(self):
        rows = self.seen["rows"]
        self.assertEqual([r["data"]["api"] for r in rows], ["cudaStreamSynchronize", "cudaMemcpy"])
        # each rank: steps 1-3 active, the site totals of step 3 (6 syncs, 30 ms; 3, 6 ms):
        # two ranks, 6 training steps
        self.assertEqual([int(r["data"]["count"]) for r in rows], [12, 6])
        self.assertAlmostEqual(float(rows[0]["data"]["syncsPerStep"]), 2.0)
        self.assertEqual(rows[0]["data"]["file"], "/home/u/proj/train.py")
        self.assertEqual(int(rows[0]["data"]["lineno"]), 61)
        self.assertEqual(rows[0]["cells"][1], "10.0 ms")  # blocked/step as the report prints it

    def test_chart_and_timeline(self):
        self.assertEqual([b["step"] for b in self.seen["bars"]], [1, 2, 3])
        # merged: the mean process-step (both ranks alike)
        self.assertEqual([b["wall_ns"] for b in self.seen["bars"]], [40 * tracegen.MS] * 3)
        # start-up (step 0, not an active step here) apart, with the header's figures of it
        self.assertIn("wall 10.0 ms", self.seen["apart"][0])
        self.assertIn("0 syncs", self.seen["apart"][0])
        self.assertIn("none", self.seen["apart"][1])  # no step was open at exit
        self.assertEqual(self.seen["timeline_slices"], 2)  # the step's two syncs
        self.assertIsNone(self.seen["launch_note"])  # launches traced: ticks, no note
        self.assertEqual(self.seen["timeline_steps"], 3)

    def test_data_has_the_spread_and_stacks(self):
        d = page_data(self.page)
        run_ = d["runs"][0]
        self.assertEqual([p["label"] for p in run_["procs"]], ["rank 0 pid 4242", "rank 1 pid 4343"])
        self.assertEqual([p["blocked_ns"] for p in run_["procs"]], [36 * tracegen.MS] * 2)
        line = run_["lines"][0]
        self.assertEqual(line["per_proc"], [[0, 6, 30 * tracegen.MS], [1, 6, 30 * tracegen.MS]])
        site = run_["sites"][line["site"]]
        names = [d["strings"][d["frames"][5 * f]] for f in site[5]]
        self.assertEqual(names, ["at::_ops::nonzero::call", "MaskedLoss.ignore_background", "MaskedLoss.forward"])


class FirstScreen(unittest.TestCase):
    """The page's first screen (issue 35 item 7) on tracegen.first_screen: 31 steps of 4 ms and
    one of 200 ms. SYNCSPY_KEEP_FIRST_SCREEN=PATH keeps its screenshot."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="syncspy-html-first-")
        cls.page = os.path.join(cls.tmp, "first.html")
        tracegen.first_screen().write(os.path.join(cls.tmp, "plain", "trace.bin"))
        p = run("html", os.path.join(cls.tmp, "plain"), "-o", cls.page)
        assert p.returncode == 0, p.stderr
        cls.shot = os.path.join(cls.tmp, "first.png")
        cls.seen = util.browse(cls.page, "--screenshot", cls.shot)
        # the same run with SYNCSPY_LAUNCHES=trace: a launch record each
        cls.traced_page = os.path.join(cls.tmp, "traced.html")
        tracegen.first_screen(launches=True).write(os.path.join(cls.tmp, "traced", "trace.bin"))
        p = run("html", os.path.join(cls.tmp, "traced"), "-o", cls.traced_page)
        assert p.returncode == 0, p.stderr
        cls.traced = util.browse(cls.traced_page)

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("SYNCSPY_KEEP_FIRST_SCREEN"):
            shutil.copy(cls.shot, os.environ["SYNCSPY_KEEP_FIRST_SCREEN"])
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_clean_and_offline(self):
        for seen, page in ((self.seen, self.page), (self.traced, self.traced_page)):
            self.assertIsNotNone(seen["load_ms"])
            self.assertEqual(seen["console"], [])
            self.assertEqual(seen["requests"], ["file://" + os.path.abspath(page)])
        self.assertGreater(os.path.getsize(self.shot), 10000)

    def test_launch_ticks_say_what_they_need(self):
        # counted, not traced: no tick, and the note says how to get them
        self.assertEqual(page_data(self.page)["runs"][0]["procs"][0]["launches_traced"], False)
        self.assertEqual(self.seen["launch_ticks"], 0)
        self.assertEqual(self.seen["launch_note"], "no kernel launches here: they were counted, not traced; "
                                                   "run with SYNCSPY_LAUNCHES=trace to see each one as a tick")
        self.assertEqual(self.seen["timeline_legend"], "2 syncs in step 16")
        # traced: the slowest step's one launch as a tick, no note
        self.assertEqual(page_data(self.traced_page)["runs"][0]["procs"][0]["launches_traced"], True)
        self.assertIsNone(self.traced["launch_note"])
        self.assertEqual(self.traced["launch_ticks"], 1)
        self.assertEqual(self.traced["timeline_legend"], "2 syncs and 1 launches in step 16")

    def test_an_outlier_step_does_not_set_the_scale(self):
        bars, chart = self.seen["bars"], self.seen["chart"]
        self.assertEqual([b["step"] for b in bars], list(range(1, 32)))
        slow = [b for b in bars if b["step"] == 16]
        normal = [b for b in bars if b["step"] != 16]
        # the 4 ms bars fill most of the chart (a 200 ms scale would leave them 2% of it)
        self.assertLessEqual(chart["scale_ns"], 5 * tracegen.MS)
        for b in normal:
            self.assertFalse(b["clipped"])
            self.assertIsNone(b["clip_label"])
            self.assertGreater(b["height"] / chart["plot_h"], 0.7, b)
        # the slow step: cut at the top of the chart, marked broken, its true value above it
        self.assertEqual(len(slow), 1)
        self.assertTrue(slow[0]["clipped"])
        self.assertTrue(slow[0]["has_break"])
        self.assertEqual(slow[0]["wall_ns"], 200 * tracegen.MS)
        self.assertEqual(slow[0]["clip_label"], "200 ms")
        self.assertAlmostEqual(slow[0]["height"], chart["plot_h"], delta=1)
        self.assertIn("1 step above the scale, cut with a break", chart["legend"])

    def test_op_and_hint_columns(self):
        rows = self.seen["rows"]
        self.assertEqual([r["op"] for r in rows], ["torch.nonzero", "Tensor.item"])
        self.assertEqual([r["where"] for r in rows], ["at ignore_background .../proj/train.py:61line",
                                                       "at log_loss .../proj/train.py:88line"])  # its "line" tag
        # the whole hint, the report's (two lines of it shown, the rest clipped)
        self.assertTrue(rows[0]["hint"].startswith("torch.nonzero syncs to size its output: use torch.nonzero_static("), rows[0])
        self.assertTrue(rows[1]["hint"].startswith(".item() copies a scalar to the host: keep the value on the device"), rows[1])
        for r in rows:
            self.assertEqual(r["hint"], r["hint_title"])
            self.assertEqual(r["cells"][7:], [r["op"], r["where"], r["hint"]])
        self.assertEqual(self.seen["headers"][7:], ["op", "where", "hint"])

    def test_flame_graph_starts_at_the_programs_outermost_frame(self):
        rows = self.seen["flame_rows"]
        self.assertEqual(rows[0], ["all"])
        self.assertEqual(rows[1], ["<module> (train.py:120)"])  # not _start, nor runpy's
        self.assertEqual(rows[2], ["main (train.py:100)"])
        # the runtime's frames between two of the program's: one row; those under its last stay
        self.assertEqual(rows[3], ["\u22ef 2 runtime frames", "log_loss (train.py:88)"])
        self.assertEqual(rows[4], ["ignore_background (train.py:61)", "Tensor.item (_tensor.py:1000)"])
        self.assertEqual(self.seen["flame_cut"], "9 runtime frames above the first row, left out: "
                         "_start \u203a __libc_start_main \u203a Py_BytesMain \u203a ... \u203a _run_module_as_main \u203a _run_code")


class RankPage(unittest.TestCase):
    """The per-rank card over a root of four real ranks (tests/progs/rank_work.c under the agent,
    RANK set): rank 2 waits for 10 ms kernels where the others wait 2 ms (the straggler), rank 1
    also copies at fetch_copy (a line on one rank only), rank 3 never marks a step. Its figures
    are the text report's per-rank section's, and each rank's row summary.json's."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="syncspy-html-ranks-")
        cls.root = os.path.join(cls.tmp, "out")
        for rank, args in ((0, ()), (1, ("copy",)), (2, ()), (3, ("nostep",))):
            kernel_ms = "10" if rank == 2 else "2"
            p = util.run([util.prog("rank_work"), "8", "2", kernel_ms, *args],
                         env={"SYNCSPY_OUT": cls.root, "SYNCSPY_REPORT": "off", "RANK": str(rank), "WORLD_SIZE": "4",
                              "SLURM_JOB_ID": "991"})
            assert p.returncode == 0, p.stderr
        cls.folders = sorted(os.listdir(cls.root))
        cls.page = os.path.join(cls.tmp, "ranks.html")
        p = run("html", cls.root, "-o", cls.page)
        assert p.returncode == 0, p.stderr
        cls.shot = os.path.join(cls.tmp, "ranks.png")
        cls.seen = util.browse(cls.page, "--screenshot", cls.shot, "--at", "#run-ranks")
        rep = run("report", cls.root)
        assert rep.returncode == 0, rep.stderr
        cls.report = rep.stdout
        cls.text = util.rank_section(rep.stdout)

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("SYNCSPY_KEEP_SHOT"):  # the picture docs/ shows: SYNCSPY_KEEP_SHOT=PATH
            shutil.copy(cls.shot, os.environ["SYNCSPY_KEEP_SHOT"])
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_clean_and_offline(self):
        self.assertEqual(self.seen["console"], [])
        self.assertEqual(self.seen["requests"], ["file://" + os.path.abspath(self.page)])
        self.assertEqual([f.split("-")[0] for f in self.folders], ["rank0", "rank1", "rank2", "rank3"])
        self.assertTrue(os.path.getsize(self.shot) > 10000)

    def test_figures_are_the_text_sections(self):
        r, t = self.seen["ranks"], self.text
        self.assertEqual(r["header"], t["header"])
        self.assertIn("per rank: 4 processes on 1 host, job 991", r["header"])
        for key in ("syncs", "share"):
            self.assertEqual({k: r[key][k] for k in ("min", "median", "max")}, t[key])
        self.assertEqual(r["waits_most"]["text"], t["waits_most"])
        self.assertEqual(r["stragglers"]["text"], t["stragglers"])
        self.assertEqual(r["no_step"]["text"], t["no_step"])
        self.assertEqual([(p["where"], p["on"]) for p in r["partial"]], t["partial"])
        self.assertEqual(r["partial_title"], t["lines"][[i for i, l in enumerate(t["lines"])
                                                          if "lines on some ranks only" in l][0]].strip())
        # the page's whole text report ends with the same section
        self.assertTrue(page_data(self.page)["runs"][0]["report"].endswith("\n".join(t["lines"]) + "\n"))

    def test_the_straggler_and_the_rank_with_no_step(self):
        r = self.seen["ranks"]
        self.assertEqual(r["stragglers"]["procs"], [2])  # its kernels take 10 ms, the others' 2
        self.assertRegex(r["stragglers"]["text"], r"^stragglers: rank 2 on \S+ \(blocked share 1\.5x")
        self.assertEqual(r["waits_most"]["procs"][0], 2)
        self.assertEqual(r["share"]["procs"][1], 2)  # the max
        self.assertEqual(r["no_step"]["procs"], [3])
        self.assertRegex(r["no_step"]["text"], r"^no step mark \(the whole run is one step\): 1: rank 3 on ")
        copy = [p for p in r["partial"] if "fetch_copy" in p["where"]]
        self.assertEqual(len(copy), 1)
        self.assertEqual(copy[0]["procs"], [1])
        self.assertTrue(copy[0]["where"].startswith("cudaMemcpy at fetch_copy  "), copy[0]["where"])
        self.assertRegex(copy[0]["on"], r"^on 1 of 4: rank 1 on ")
        rows = {p["proc"]: p["cells"] for p in r["procs"]}
        self.assertIn("straggler", rows[2][0])
        self.assertIn("no step mark", rows[3][0])
        self.assertEqual(sum("straggler" in c[0] for c in rows.values()), 1)

    def test_each_row_is_summary_json(self):
        rows = {p["proc"]: p["cells"] for p in self.seen["ranks"]["procs"]}
        for i, folder in enumerate(self.folders):
            with self.subTest(folder=folder):
                with open(os.path.join(self.root, folder, "summary.json")) as f:
                    s = json.load(f)
                if i == 3:  # no step mark: the whole run is one step
                    training = s["steps"]
                    syncs, wall, blocked = s["syncs"], s["wall_ns"], s["blocked_ns"]
                else:
                    training = [x for x in s["steps"] if not x.get("startup") and not x.get("partial")]
                    syncs = sum(x["syncs"] for x in training)
                    wall = sum(x["wall_ns"] for x in training)
                    blocked = sum(x["blocked_ns"] for x in training)
                cells = rows[i]
                self.assertTrue(cells[0].startswith(f"rank {i} pid {s['pid']}"), cells[0])
                self.assertEqual(cells[1], str(1 if i == 3 else len(training)))
                self.assertEqual(cells[5], f"{100 * blocked / wall:.1f}%")
                n = 1 if i == 3 else len(training)
                self.assertEqual(float(cells[6]), round(syncs / n, 2 if syncs / n < 9.995 else 1))

    def test_a_rank_link_shows_that_process(self):
        p = self.seen["ranks_picked"]
        self.assertEqual(p["proc"], 2)  # the selector shows the straggler alone
        self.assertEqual(p["selected_rows"], [2])
        self.assertTrue(p["selected_links"] and all(x.startswith("rank 2 on ") for x in p["selected_links"]))
        self.assertEqual(p["bars"], 7)  # its 7 training steps
        self.assertTrue(p["controls"].startswith("rank 2 pid "), p["controls"])


class BadInput(unittest.TestCase):
    def test_usage_and_missing_folders(self):
        for args, want in ((["html"], "syncspy html: missing DIR"),
                           (["html", "--bogus", "x"], "unknown option '--bogus'"),
                           (["html", "a", "b", "c"], "one more"),
                           (["html", "-o"], "syncspy html: -o needs a value (FILE)"),
                           (["html", "/nonexistent/syncspy"], "cannot read /nonexistent/syncspy")):
            with self.subTest(args=args):
                p = run(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(want, p.stderr)
                self.assertNotIn("Traceback", p.stderr)

    def test_cut_trace_is_read_to_its_last_record(self):
        tmp = tempfile.mkdtemp(prefix="syncspy-html-e2e-")
        try:
            data = tracegen.sample(end=False).data()
            path = os.path.join(tmp, "pid1", "trace.bin")
            os.makedirs(os.path.dirname(path))
            with open(path, "wb") as f:
                f.write(data[:-5])
            out = os.path.join(tmp, "page.html")
            p = run("html", os.path.dirname(path), "-o", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("trace ends early", page_data(out)["runs"][0]["report"])
            with open(path, "wb") as f:
                f.write(b"SYNCSPY\x01garbage")
            p = run("html", os.path.dirname(path), "-o", out + "2")
            self.assertEqual(p.returncode, 2)
            self.assertFalse(os.path.exists(out + "2"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_stdout_and_unwritable_output(self):
        tmp = tempfile.mkdtemp(prefix="syncspy-html-e2e-")
        try:
            d = os.path.join(tmp, "pid1")
            tracegen.sample().write(os.path.join(d, "trace.bin"))
            p = run("html", d, "-o", "-")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.startswith("<!DOCTYPE html>"))
            self.assertTrue(p.stdout.rstrip().endswith("</html>"))
            p = run("html", d, "-o", os.path.join(tmp, "no", "such", "dir", "x.html"))
            self.assertEqual(p.returncode, 1)
            self.assertIn("cannot create", p.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()


class TopOnce(unittest.TestCase):
    """`syncspy top --once` on a root of two finished ranks, and its bad input."""

    def test_a_root_and_bad_input(self):
        tmp = tempfile.mkdtemp(prefix="syncspy-top-e2e-")
        try:
            tracegen.sample(pid=4242, rank=0).write(os.path.join(tmp, "rank0-pid4242", "trace.bin"))
            tracegen.sample(pid=4343, rank=1).write(os.path.join(tmp, "rank1-pid4343", "trace.bin"))
            p = run("top", "--once", tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("\x1b", p.stdout)  # no terminal codes into a pipe
            self.assertRegex(p.stdout, r"2 processes, ended")
            # 3 training steps of 40 ms a rank: 25 steps/s; 3 syncs a step, 12 ms blocked of 40
            self.assertRegex(p.stdout, r"(?m)^steps/s\s+25\.0\s+25\.0$")
            self.assertRegex(p.stdout, r"(?m)^syncs/step\s+3\.00\s+3\.00")
            self.assertRegex(p.stdout, r"(?m)^blocked share\s+30\.0%\s+30\.0%\s+\(every thread's\)$")
            self.assertRegex(p.stdout, r"(?m)^rank 0 pid 4242\s+3\s+25\.0\s+3\.00\s+30\.0%\s+ended$")
            self.assertRegex(p.stdout, r"(?m)^rank 1 pid 4343\s+3\s+25\.0\s+3\.00\s+30\.0%\s+ended$")
            # since start 2 syncs a step (SITE_TOTALS); the last 10 s from the sync records there
            # are: the sample's agent dropped 3 of each rank's (said on a line of its own)
            self.assertRegex(p.stdout, r"(?m)^\s+1\s+5\.00 ms\s+1\.00\s+10\.0 ms\s+2\.00\s+\S+\s+cudaStreamSynchronize at "
                                       r"MaskedLoss\.ignore_background")
            self.assertRegex(p.stdout, r"(?m)^  6 sync records not in the trace")
            self.assertEqual(sorted(os.listdir(tmp)), ["rank0-pid4242", "rank1-pid4343"])
            for args, want in ((["top"], "syncspy top: missing DIR"), (["top", "--bogus", tmp], "unknown option"),
                               (["top", "--interval", "0", tmp], "--interval wants"),
                               (["top", "/nonexistent/x"], "cannot read /nonexistent/x")):
                with self.subTest(args=args):
                    p = run(*args)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertIn(want, p.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class RunTop(unittest.TestCase):
    """`syncspy run --live -- PROG` on a pseudo-terminal: the live view of the program's folder while
    it runs, the program's output and report in SYNCSPY_OUT/run.log, the program's exit status."""

    def test_the_view_beside_a_running_loop(self):
        import fcntl
        import pty
        import select
        import signal
        import struct
        import termios
        import time
        tmp = tempfile.mkdtemp(prefix="syncspy-runtop-")
        out = os.path.join(tmp, "out")
        env, _ = util.agent_env(preload=False)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        p = subprocess.Popen([CLI, "run", "--out", out, "--live", "--", util.prog("loop")], env=env,
                             stdin=slave, stdout=slave, stderr=slave, close_fds=True, start_new_session=True)
        os.close(slave)
        data = b""

        def read_for(seconds):
            nonlocal data
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                r, _, _ = select.select([master], [], [], 0.1)
                if r:
                    try:
                        data += os.read(master, 65536)
                    except OSError:
                        return
        try:
            read_for(3.0)
            screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", data.decode("utf-8", "replace"))
            self.assertIn("syncspy top  " + out, screen)
            self.assertIn("running", screen)
            self.assertRegex(screen, r"cudaStreamSynchronize at step_sync")
            folders = [f for f in os.listdir(out) if f.startswith("pid")]
            self.assertEqual(len(folders), 1)
            os.kill(int(folders[0][3:]), signal.SIGTERM)  # the program ends: so does the view
            self.assertEqual(p.wait(timeout=20), -signal.SIGTERM)  # run ends as its CMD did
            read_for(0.5)
            tail = data.decode("utf-8", "replace")
            self.assertIn(f"output and report: {out}/run.log", tail)
            with open(os.path.join(out, "run.log")) as f:
                log = f.read()
            self.assertIn("ready", log)             # the program's own output
            self.assertIn("step_sync", log)         # and the agent's report at its exit
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(master)
            shutil.rmtree(tmp, ignore_errors=True)
