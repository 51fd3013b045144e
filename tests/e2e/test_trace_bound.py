"""tests/e2e/test_trace_bound.py: SYNCSPY_TRACE_MB, the bound on a process's trace.bin (issue 26
item 1). A loop of 300,000 short steps (one sync each) is run with SYNCSPY_TRACE_MB=1, with no
bound (0) and without the agent: the program's output and exit status do not change; the bounded
file stays under 1 MiB where the unbounded one takes tens; every command that reads the trace
(report, check, diff, top, export --chrome/--folded, html) gives the unbounded run's counts; and
the report says for how many steps the per-event detail was kept, which is what the file holds.
(The CLI's memory on such files is a benchmark's: docs/PERFORMANCE.md, not a test.)"""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import unittest

import tracegen
from test_lost_steps import records
from util import CLI, MS, prog, report_steps, run

STEPS = 300000
BOUND = 1 << 20
STEP, SYNC, STEP_RUN, BOUND_REC = 6, 4, 13, 14


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)


def chrome_doc(d):
    """export --chrome of folder d, parsed."""
    with tempfile.TemporaryDirectory() as tmp:
        chrome = os.path.join(tmp, "t.json")
        r = cli("export", "--chrome", chrome, d)
        assert r.returncode == 0, r.stderr
        with open(chrome) as f:
            return json.load(f)


def folder(r):
    [d] = [os.path.join(r.out_dir, x) for x in os.listdir(r.out_dir)]
    return d


class TraceBound(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        argv = [prog("steps_fast"), str(STEPS)]
        cls.bare = run(argv, preload=False, timeout=300)
        cls.bounded = run(argv, env={"SYNCSPY_REPORT": "off", "SYNCSPY_TRACE_MB": "1"}, timeout=300)
        cls.unbounded = run(argv, env={"SYNCSPY_REPORT": "off", "SYNCSPY_TRACE_MB": "0"}, timeout=300)
        cls.trace = os.path.join(folder(cls.bounded), "trace.bin")

    def test_host_sees_no_difference(self):
        for r in (self.bounded, self.unbounded):
            self.assertEqual(r.returncode, self.bare.returncode)
            self.assertEqual(r.stdout, self.bare.stdout)
            self.assertEqual(r.stdout, f"steps: done {STEPS}\n")
            self.assertEqual(r.stderr, "")

    def test_the_file_stays_under_the_bound(self):
        size = os.path.getsize(self.trace)
        unbounded = os.path.getsize(os.path.join(folder(self.unbounded), "trace.bin"))
        self.assertLessEqual(size, BOUND)
        self.assertGreater(unbounded, 20 * BOUND)  # the bound had work to do
        types = [t for t, _ in records(self.trace)]
        self.assertIn(STEP_RUN, types)
        self.assertIn(BOUND_REC, types)

    def test_the_folder_stays_under_the_bound(self):
        # summary.json included (issue 36 item 2): it lists the steps that fit, counts the rest
        d = folder(self.bounded)
        self.assertEqual(sorted(os.listdir(d)), ["summary.json", "trace.bin"])
        total = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        self.assertLessEqual(total, BOUND)
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        with open(os.path.join(folder(self.unbounded), "summary.json")) as f:
            u = json.load(f)
        self.assertGreater(len(s["steps"]), 100)
        self.assertLess(len(s["steps"]), len(u["steps"]))
        self.assertEqual(len(s["steps"]) + s["steps_omitted"], len(u["steps"]) + u["steps_omitted"])
        for key in ("active_steps", "syncs", "steps_seen"):  # the totals stay exact
            self.assertEqual(s[key], u[key], key)
        # the first steps are listed, as past the memory cap
        self.assertEqual([x["step"] for x in s["steps"]], [x["step"] for x in u["steps"][:len(s["steps"])]])

    def same_figures(self, a, b):
        """report, check and diff read the same counts from folders a and b."""
        ra, rb = cli("report", a), cli("report", b)
        self.assertEqual((ra.returncode, rb.returncode), (0, 0), ra.stderr + rb.stderr)
        self.assertEqual(report_steps(ra.stdout), (STEPS, STEPS - 1), ra.stdout)
        self.assertEqual(report_steps(ra.stdout), report_steps(rb.stdout))
        for text in (ra.stdout, rb.stdout):
            self.assertIn("| 1.00 syncs/step |", text)
            self.assertIn("1 x cudaStreamSynchronize", text)  # start-up's one sync, apart
        ca = cli("check", "--json", "--max-syncs-per-step", "1", a)
        cb = cli("check", "--json", "--max-syncs-per-step", "1", b)
        self.assertEqual((ca.returncode, cb.returncode), (0, 0), ca.stdout + cb.stdout)
        [pa], [pb] = json.loads(ca.stdout)["processes"], json.loads(cb.stdout)["processes"]
        for key in ("training_steps", "syncs_per_step", "ok"):
            self.assertEqual(pa[key], pb[key], key)
        self.assertEqual(pa["training_steps"], STEPS - 1)
        self.assertEqual(pa["startup"]["syncs"], pb["startup"]["syncs"])
        self.assertEqual([s["syncs_per_step"] for s in pa["sites"]], [s["syncs_per_step"] for s in pb["sites"]])
        d = cli("diff", "--json", a, b)
        self.assertEqual(d.returncode, 0, d.stderr)
        doc = json.loads(d.stdout)
        self.assertEqual(doc["base"]["training_steps"], doc["new"]["training_steps"])
        self.assertEqual(doc["base"]["syncs_per_step"], doc["new"]["syncs_per_step"])
        return ra

    def test_counts_equal_an_unbounded_run(self):
        self.same_figures(folder(self.bounded), folder(self.unbounded))

    def test_the_trace_alone_has_the_counts(self):
        """Without summary.json (a process killed before its exit writes it)."""
        with tempfile.TemporaryDirectory() as tmp:
            alone = os.path.join(tmp, "pid1")
            os.mkdir(alone)
            shutil.copy(self.trace, alone)
            self.same_figures(alone, folder(self.unbounded))

    def test_the_report_says_what_was_sampled(self):
        rep = cli("report", folder(self.bounded))
        m = re.search(r"per-event detail kept for (\d+) of (\d+) steps: SYNCSPY_TRACE_MB=1 "
                      r"\(every event before step (\d+), then a sample; counts stay exact\)", rep.stdout)
        self.assertIsNotNone(m, rep.stdout)
        kept, seen, first = (int(x) for x in m.groups())
        self.assertEqual(seen, STEPS + 1)  # the marks, and the step open at exit
        self.assertLess(kept, seen // 10)
        self.assertGreater(first, 1000)
        # the steps with a SYNC record: every one up to `first`, then the sample (a step whose
        # sync the ring had no room for has none, and the report counts those apart)
        recs = records(self.trace)
        steps = {struct.unpack_from("<Q", b, 40)[0] for t, b in recs if t == SYNC}
        dropped = re.search(r"(\d+) sync and \d+ launch events found the trace buffers full", rep.stdout)
        dropped = int(dropped.group(1)) if dropped else 0
        self.assertLessEqual(len(steps), kept + 1)
        self.assertGreaterEqual(len(steps), kept - dropped - 1)
        self.assertTrue(any(s > STEPS * 3 // 4 for s in steps), "the sample reaches the run's end")
        # the unbounded run says nothing of the kind
        self.assertNotIn("per-event detail kept", cli("report", folder(self.unbounded)).stdout)

    def test_every_reader_takes_it(self):
        d = folder(self.bounded)
        events = chrome_doc(d)["traceEvents"]
        syncs = [e for e in events if e.get("name") == "cudaStreamSynchronize"]
        self.assertGreater(len(syncs), 1000)
        with tempfile.TemporaryDirectory() as tmp:
            folded = os.path.join(tmp, "f.txt")
            r = cli("export", "--folded", folded, d)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(folded) as f:
                self.assertIn("step_sync", f.read())
            page = os.path.join(tmp, "p.html")
            r = cli("html", d, "-o", page)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(os.path.getsize(page), 10000)
        top = cli("top", "--once", d)
        self.assertEqual(top.returncode, 0, top.stderr)
        self.assertIn("step_sync", top.stdout)
        # the folded steps count since start: every training step, one sync each
        since = re.search(r"^steps\s+\d+\s+(\d+)", top.stdout, re.M)
        self.assertEqual(int(since.group(1)), STEPS - 1, top.stdout)
        self.assertRegex(top.stdout, r"syncs/step\s+\S+\s+1\.00\b")
        # the last 10 s are the newest steps, folded ones too (their exact counts: one sync each),
        # not the last steps listed one by one before the folding began; the lines of its sync
        # records are a sample's, said
        window = re.search(r"^steps\s+(\d+)\s+\d+", top.stdout, re.M)
        self.assertGreater(int(window.group(1)), 10000, top.stdout)
        self.assertRegex(top.stdout, r"syncs/step\s+1\.00\s+1\.00\b")
        self.assertIn("last 10 s: the newest runs of steps SYNCSPY_TRACE_MB folded, taken whole", top.stdout)
        self.assertIn("past half of SYNCSPY_TRACE_MB=1 the trace keeps the sync records of a sample of steps "
                      "(every one before step ", top.stdout)
        self.assertIn("the last 10 s's lines are that sample's, not exact", top.stdout)


class TimelineSample(unittest.TestCase):
    """A trace with more events than the readers keep (an unbounded run's 300,000 syncs, past the
    262,144 a timeline holds): export --chrome and html show every event of the first steps, then
    those of steps spread over the rest of the run, and say so."""

    @classmethod
    def setUpClass(cls):
        cls.unbounded = run([prog("steps_fast"), str(STEPS)],
                            env={"SYNCSPY_REPORT": "off", "SYNCSPY_TRACE_MB": "0"}, timeout=300)

    def test_chrome_spreads_its_events(self):
        doc = chrome_doc(folder(self.unbounded))
        steps = sorted(e["args"]["step"] for e in doc["traceEvents"]
                       if e.get("name") == "cudaStreamSynchronize" and e.get("ph") == "X" and "args" in e
                       and "step" in e["args"] and e.get("cat") != "step")
        self.assertGreater(len(steps), 100000)
        [note] = doc["otherData"]["timeline_notes"]
        m = re.search(r"drawn: every event kept of the steps before (\d+), then those of one step in (\d+)", note)
        self.assertIsNotNone(m, note)
        first, stride = int(m.group(1)), int(m.group(2))
        self.assertGreater(first, 50000)
        self.assertGreater(stride, 1)
        # the first steps' events (but those the agent's ring had no room for), then a spread to
        # the run's end
        self.assertGreater(len({s for s in steps if s < first}), first * 8 // 10)
        self.assertTrue(all(s < first or s % stride == 0 for s in steps))
        self.assertGreater(steps[-1], STEPS * 9 // 10)
        self.assertGreaterEqual(doc["otherData"]["events_not_exported"], STEPS - len(steps))

    def test_html_timeline_spreads_its_steps(self):
        import test_html
        d = folder(self.unbounded)
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "p.html")
            r = cli("html", d, "-o", page)
            self.assertEqual(r.returncode, 0, r.stderr)
            data = test_html.page_data(page)
        [proc] = data["runs"][0]["procs"] if "runs" in data else data["procs"]
        tl = proc["timeline"]
        self.assertIn("sample", tl)
        steps = [s["step"] for s in tl["steps"]]
        self.assertTrue(any(70000 < s < STEPS - 20000 for s in steps), steps)  # past the listed ones
        self.assertTrue(any(s.get("spanned") and s["syncs"] for s in tl["steps"]))


class KilledPastTheHalf(unittest.TestCase):
    """kill -9 of a bounded process well past half its bound: the file is still under the bound,
    and every command reads it (the counts of its last totals rewrite, said as such)."""

    def test_killed_run_reads(self):
        import signal
        import time
        from util import agent_env
        env, out = agent_env({"SYNCSPY_REPORT": "off", "SYNCSPY_TRACE_MB": "1"}, True)
        p = subprocess.Popen([prog("steps_fast"), "100000000"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the file has passed its half (sampling)
            dirs = os.listdir(out) if os.path.isdir(out) else []
            trace = os.path.join(out, dirs[0], "trace.bin") if dirs else ""
            if trace and os.path.exists(trace) and os.path.getsize(trace) > BOUND * 3 // 4:
                break
            time.sleep(0.2)
        time.sleep(2)
        p.send_signal(signal.SIGKILL)
        p.wait()
        d = os.path.join(out, os.listdir(out)[0])
        self.assertLessEqual(os.path.getsize(os.path.join(d, "trace.bin")), BOUND)
        rep = cli("report", d)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("trace ends early (the process was killed?)", rep.stdout)
        self.assertRegex(rep.stdout, r"per-event detail kept for \d+ of \d+ steps: SYNCSPY_TRACE_MB=1")
        marks, counted = report_steps(rep.stdout)
        self.assertGreater(marks, 10000)
        for args in (("check", "--max-syncs-per-step", "5", d), ("diff", d, d), ("top", "--once", d),
                     ("html", d, "-o", os.path.join(out, "p.html"))):
            r = cli(*args)
            self.assertEqual(r.returncode, 0, (args, r.stdout, r.stderr))


class HandMadeRecords(unittest.TestCase):
    """1.4's records as an independent writer (tracegen.py) lays them out: a STEP_RUN's steps are
    in every count, a BOUND record's figures are what the report says, a run that contradicts
    itself is bad input (exit 2, one line), and a file without them (1.0) reads as before."""

    def trace(self, run=(4, 1003, 1000, 1000, 3, 3, 3000), bound=True, counts=None):
        t = tracegen.sample(end=False)
        first, last, steps, active, lo, hi, syncs = run
        launches = 3 * active if counts else 200 * active  # counts: 3 launches a step
        t.step_run(first, last, steps, active, lo, hi, syncs, 12 * MS * active, launches, 40 * MS * active,
                   counts=counts)
        t.site_totals("cudaStreamSynchronize", 1, 6 + syncs, 30 * MS + 12 * MS * active, 6 * MS, site_id=1)
        if bound:
            t.bound(1 << 20, 3, 3, last + 1, steps)
        t.end(120 * MS)
        return t

    def report(self, t):
        with tempfile.TemporaryDirectory() as tmp:
            path = t.write(os.path.join(tmp, "pid4242", "trace.bin"))
            return cli("report", path), cli("check", "--json", "--max-syncs-per-step", "100", path)

    def test_runs_count_in_every_figure(self):
        rep, chk = self.report(self.trace())
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertEqual(report_steps(rep.stdout), (1003, 1003), rep.stdout)
        self.assertIn("1000 active steps are in the totals but not listed one by one", rep.stdout)
        self.assertIn("per-event detail kept for 3 of 1004 steps: SYNCSPY_TRACE_MB=1 "
                      "(every event before step 3, then a sample; counts stay exact)", rep.stdout)
        [p] = json.loads(chk.stdout)["processes"]
        self.assertEqual(p["training_steps"], 1003)
        self.assertAlmostEqual(p["syncs_per_step"], (9 + 3000) / 1003, places=6)

    def test_a_run_that_contradicts_itself_is_bad_input(self):
        for fields in ((4, 1003, 0, 0, 0, 0, 0),          # no step
                       (10, 4, 1, 1, 3, 3, 3),             # ends before it begins
                       (4, 13, 11, 11, 3, 3, 33),          # more steps than numbers
                       (4, 1003, 1000, 1001, 3, 3, 3000),  # more active than steps
                       (4, 1003, 1000, 1000, 4, 3, 3000)):  # fewest above most
            with self.subTest(run=fields):
                rep, _ = self.report(self.trace(run=fields))
                self.assertEqual(rep.returncode, 2, rep.stdout)
                self.assertEqual(len(rep.stderr.strip().splitlines()), 1, rep.stderr)
                self.assertIn("is corrupt at byte", rep.stderr)

    def test_a_run_of_different_counts_carries_them(self):
        # 1000 steps: 600 of 2 syncs, 400 of 4 (and 3 launches each): 2800 syncs
        counts = [(600, 2, 3), (400, 4, 3)]
        rep, chk = self.report(self.trace(run=(4, 1003, 1000, 1000, 2, 4, 2800), counts=counts))
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertNotIn("known only as their sums", rep.stdout)
        [p] = json.loads(chk.stdout)["processes"]
        self.assertAlmostEqual(p["syncs_per_step"], (9 + 2800) / 1003, places=6)
        for bad in ([(600, 2, 3), (300, 4, 3)],            # fewer steps than the run's
                    [(600, 2, 3), (400, 4, 3), (1, 1, 1)],  # more
                    [(600, 2, 3), (400, 5, 3)],            # other syncs than its sum
                    [(600, 2, 3), (400, 4, 2)]):           # other launches
            with self.subTest(counts=bad):
                rep, _ = self.report(self.trace(run=(4, 1003, 1000, 1000, 2, 4, 2800), counts=bad))
                self.assertEqual(rep.returncode, 2, rep.stdout)
                self.assertIn("is corrupt at byte", rep.stderr)
                self.assertIn("per-step counts", rep.stderr)

    def test_a_run_of_sums_alone_is_said(self):
        rep, _ = self.report(self.trace(run=(4, 1003, 1000, 1000, 2, 4, 2800)))
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("per-step counts of 1000 folded steps are known only as their sums "
                      "(SYNCSPY_TRACE_MB's room for steps was full); the totals stay exact", rep.stdout)
        rep, _ = self.report(self.trace())  # 3 syncs each: known
        self.assertNotIn("known only as their sums", rep.stdout)

    def test_killed_after_the_totals_counts_what_the_rows_count(self):
        """Steps recorded after the last rewrite of the totals (a BOUND record with them) of a
        trace without END: their syncs are not in the site totals, so they are left out, said."""
        t = tracegen.sample(end=False)
        t.step_run(4, 1003, 1000, 1000, 3, 3, 3000, 12 * MS * 1000, 0, 40 * MS * 1000)
        t.bound(1 << 20, 3, 3, 1004, 1000)
        t.site_totals("cudaStreamSynchronize", 1, 6 + 3000, 30 * MS + 12 * MS * 1000, 6 * MS, site_id=1)
        t.step_run(1004, 1503, 500, 500, 3, 3, 1500, 6 * MS * 500, 0, 20 * MS * 500)
        for k in range(1504, 1507):
            t.step(k, 0, 40 * MS, syncs=3, blocked_ns=12 * MS)
        with tempfile.TemporaryDirectory() as tmp:
            path = t.write(os.path.join(tmp, "pid4242", "trace.bin"))
            rep = cli("report", path)
            chk = cli("check", "--json", "--max-syncs-per-step", "100", path)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertEqual(report_steps(rep.stdout), (1003, 1003), rep.stdout)
        self.assertIn("trace ends early (the process was killed?): up to the last rewrite of the totals; "
                      "the records of 503 later steps are left out", rep.stdout)
        [p] = json.loads(chk.stdout)["processes"]
        self.assertEqual(p["training_steps"], 1003)
        # the header's rate is the rows' (every sync of the training steps at the one site)
        self.assertAlmostEqual(p["syncs_per_step"], sum(x["syncs_per_step"] for x in p["sites"]), places=6)

    def test_older_files_say_nothing_of_a_bound(self):
        rep, _ = self.report(tracegen.sample())
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertNotIn("per-event detail", rep.stdout)
        self.assertNotIn("not listed one by one", rep.stdout)


if __name__ == "__main__":
    unittest.main()
