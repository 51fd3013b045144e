"""tests/e2e/test_lost_steps.py: step records and thread totals the trace must not lose (issue 22,
items 11 and 12). A loop of 20,000 short steps is run with and without the agent: the same
output and exit status, and every command that reads the trace (report, check, diff, export)
gives summary.json's exact figures, whether the agent's step queue kept every step (the default)
or lost most of them (the fault-injection build's SYNCSPY_FAULTS=steps=16: the trace counts the
lost ones). A trace that misses step records without a count of them (an older agent's) takes
its step figures from summary.json, or says they are estimates. A process with 100 threads has
every thread's totals in the trace and in summary.json."""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

from util import BUILD, CLI, prog, report_steps, run

FAULTS_LIB = os.path.join(BUILD, "libsyncspy-faults.so")
STEP, THREAD_TOTALS, STEPS_LOST, END = 6, 11, 12, 10
STEPS = 20000


def records(path):
    """(type, body) of every record of a trace.bin."""
    with open(path, "rb") as f:
        data = f.read()
    (header_bytes,) = struct.unpack_from("<I", data, 12)
    off, out = header_bytes, []
    while off + 8 <= len(data):
        typ, n = struct.unpack_from("<II", data, off)
        if n < 8:
            break
        out.append((typ, data[off:off + n]))
        off += n
    return out


def rewrite(path, dest, keep):
    """dest: path's trace.bin with only the records keep(type, body) is true for."""
    with open(path, "rb") as f:
        data = f.read()
    (header_bytes,) = struct.unpack_from("<I", data, 12)
    out = [data[:header_bytes]]
    for typ, body in records(path):
        if keep(typ, body):
            out.append(body)
    with open(dest, "wb") as f:
        f.write(b"".join(out))


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


class StepRecords(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bare = run([prog("steps_fast"), str(STEPS)], preload=False)
        cls.default = run([prog("steps_fast"), str(STEPS)], env={"SYNCSPY_REPORT": "off"})
        cls.lossy = run([prog("steps_fast"), str(STEPS)],
                        env={"SYNCSPY_REPORT": "off", "LD_PRELOAD": FAULTS_LIB, "SYNCSPY_FAULTS": "steps=16"})

    def folder(self, r):
        [d] = [os.path.join(r.out_dir, x) for x in os.listdir(r.out_dir)]
        return d

    def test_host_sees_no_difference(self):
        for r in (self.default, self.lossy):
            self.assertEqual(r.returncode, self.bare.returncode)
            self.assertEqual(r.stdout, self.bare.stdout)
            self.assertEqual(r.stdout, f"steps: done {STEPS}\n")

    def test_default_queue_loses_no_step(self):
        recs = records(os.path.join(self.folder(self.default), "trace.bin"))
        steps = {struct.unpack_from("<Q", b, 8)[0] for t, b in recs if t == STEP}
        self.assertEqual(steps, set(range(STEPS)))  # every mark closed a step; the last one open is empty
        self.assertNotIn(STEPS_LOST, [t for t, _ in recs])

    def test_lost_steps_are_counted_in_the_trace(self):
        recs = records(os.path.join(self.folder(self.lossy), "trace.bin"))
        [lost] = [b for t, b in recs if t == STEPS_LOST][-1:]
        n_lost, active, syncs = struct.unpack_from("<QQQ", lost, 8)
        listed = sum(1 for t, _ in recs if t == STEP)
        self.assertGreater(n_lost, 1000)  # 16 queued at most: most of 20,000 fast steps
        self.assertEqual(listed + n_lost, STEPS)
        self.assertEqual(active, n_lost)
        self.assertEqual(syncs, n_lost)  # one sync a step
        self.assertIn("step records found the flusher's queue full", self.lossy.stderr)

    def figures_are_exact(self, folder):
        """report, check, diff and export --chrome of folder: summary.json's 20,000 steps, 1 sync each."""
        rep = cli("report", folder)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        # every mark made, the steps between them counted (start-up apart)
        self.assertEqual(report_steps(rep.stdout), (STEPS, STEPS - 1), rep.stdout)
        self.assertIn("| 1.00 syncs/step |", rep.stdout)
        chk = cli("check", "--json", "--max-syncs-per-step", "1", folder)
        self.assertEqual(chk.returncode, 0, chk.stdout + chk.stderr)
        [p] = json.loads(chk.stdout)["processes"]
        self.assertEqual((p["training_steps"], p["syncs_per_step"]), (STEPS - 1, 1.0))
        d = cli("diff", "--json", folder, folder)
        self.assertEqual(d.returncode, 0, d.stderr)
        doc = json.loads(d.stdout)
        self.assertEqual((doc["base"]["training_steps"], doc["base"]["syncs_per_step"]), (STEPS - 1, 1.0))
        return rep, chk, doc

    def test_every_command_reads_exact_figures(self):
        for r in (self.default, self.lossy):
            with self.subTest(queue="default" if r is self.default else "steps=16"):
                rep, _, _ = self.figures_are_exact(self.folder(r))
                if r is self.lossy:
                    self.assertIn("active steps lost their step records (the agent's step queue was full): in "
                                  "the totals, not in the step list", rep.stdout)

    def test_the_trace_alone_is_exact_too(self):
        """Without summary.json (killed before its exit), the trace's own count of the lost steps."""
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "pid1")
            os.mkdir(folder)
            shutil.copy(os.path.join(self.folder(self.lossy), "trace.bin"), folder)
            self.figures_are_exact(folder)

    def test_missing_records_without_a_count(self):
        """A trace that lost step records and does not say so (an older agent's: its STEPS_LOST and
        every third STEP record taken out): with summary.json, its exact figures, said in report,
        check, diff and export; without it, estimates, said as such."""
        src = os.path.join(self.folder(self.default), "trace.bin")
        def third(t, b):  # the last step kept: a lost tail is not seen as missing
            step = struct.unpack_from("<Q", b, 8)[0] if t == STEP else 0
            return t != STEPS_LOST and not (t == STEP and step % 3 == 1 and step < STEPS - 1)
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "pid1")
            os.mkdir(folder)
            rewrite(src, os.path.join(folder, "trace.bin"), third)
            shutil.copy(os.path.join(self.folder(self.default), "summary.json"), folder)
            missing = len(range(1, STEPS - 1, 3))
            note = f"trace.bin misses {missing} step records (the agent's step queue was full): the step figures are summary.json's"
            rep, chk, doc = self.figures_are_exact(folder)
            self.assertIn(note, rep.stdout)
            self.assertEqual(json.loads(chk.stdout)["processes"][0]["steps_note"], note)
            self.assertEqual(doc["base"]["steps_notes"], [note])
            txt = cli("check", "--max-syncs-per-step", "1", folder)
            self.assertIn("  " + note + "\n", txt.stdout)
            out = os.path.join(tmp, "chrome.json")
            ex = cli("export", "--chrome", out, folder)
            self.assertEqual(ex.returncode, 0, ex.stderr)
            with open(out) as f:
                self.assertEqual(json.load(f)["otherData"]["steps_notes"], [note])

            os.unlink(os.path.join(folder, "summary.json"))
            rep = cli("report", folder)
            self.assertEqual(rep.returncode, 0, rep.stderr)
            self.assertIn(f"trace.bin misses {missing} step records and there is no summary.json: active steps "
                          f"and per-step rates are estimates ({missing} of them counted as active steps", rep.stdout)
            self.assertEqual(report_steps(rep.stdout)[0], STEPS, rep.stdout)  # every mark counted
            self.assertIn("| 1.00 syncs/step |", rep.stdout)


class ManyThreads(unittest.TestCase):
    def test_every_threads_totals(self):
        """100 threads, 10 syncs each, alive for 1.5 s after them: the trace names every one
        of them in its THREAD_TOTALS (a snapshot of 64 left 36 out without a word), and its last
        totals and summary.json's add up to all 1,000 syncs (threads that exited beyond 64
        together, as "(others)"); the program's output is the same."""
        bare = run([prog("threads16"), "100", "20", "1500"], preload=False)
        r = run([prog("threads16"), "100", "20", "1500"], env={"SYNCSPY_REPORT": "off"})
        self.assertEqual((r.returncode, r.stdout), (bare.returncode, bare.stdout))
        [d] = [os.path.join(r.out_dir, x) for x in os.listdir(r.out_dir)]
        # a flush writes its THREAD_TOTALS one after another, each tid once
        flushes, run_ = [], []
        for t, b in records(os.path.join(d, "trace.bin")) + [(END, b"")]:
            tid = struct.unpack_from("<I", b, 8)[0] if t == THREAD_TOTALS else None
            if run_ and (tid is None or tid in run_):
                flushes.append(run_)
                run_ = []
            if tid is not None:
                run_.append(tid)
        self.assertEqual(max(len(set(f) - {0}) for f in flushes), 100)
        doc = r.summary()
        self.assertEqual(sum(t["syncs"] for t in doc["threads"]), 1000)
        lines = [t for t in doc["threads"] if t["tid"]]
        self.assertEqual(len(lines), 64)  # by name; the other 36 together in tid 0
        self.assertEqual([t["syncs"] for t in doc["threads"] if not t["tid"]], [360])


if __name__ == "__main__":
    unittest.main()
