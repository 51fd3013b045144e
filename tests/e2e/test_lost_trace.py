"""tests/e2e/test_lost_trace.py: a trace.bin cut by a failed write (issue 36 part 4, item 1).
Under a 1 MiB RLIMIT_FSIZE (`ulimit -f 1024`) a loop of 200,000 one-sync steps outgrows the
file: the program's output and exit status are the same as without the agent (no SIGXFSZ for
the agent's own writes), and every reader says its figures are a lower bound because trace.bin
lost data (File too large), never a kill; check exits 2. The fault-injection build fails
trace.bin's writes alone (EIO, ENOSPC) or every file's: the header's mark, summary.json's
trace_lost_errno and the exit report say it."""
import json
import os
import resource
import struct
import subprocess
import unittest

from util import BUILD, CLI, agent_env, prog

FAULTS_LIB = os.path.join(BUILD, "libsyncspy-faults.so")
LIMIT = 1 << 20
STEPS = 200000
LOWER_BOUND = "the figures are a lower bound: trace.bin lost data (a write failed: "
WRITE_ERRNO_AT = 124  # struct trace_file_header_v13: id.write_errno (output/trace_format.h)


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


def limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def run_limited(argv, preload=True, env=None):
    e, out = agent_env(env, preload)
    p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=300, preexec_fn=limited)
    return p, out


def folder(out):
    [d] = [os.path.join(out, x) for x in os.listdir(out)]
    return d


class FileSizeLimit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        argv = [prog("steps_fast"), str(STEPS)]
        cls.bare, _ = run_limited(argv, preload=False)
        cls.r, out = run_limited(argv, env={"SYNCSPY_REPORT": "stderr"})
        cls.dir = folder(out)

    def test_program_output_and_status_unchanged(self):
        # SIGXFSZ's default action is to kill: the agent's writes past the limit raise none
        self.assertEqual(self.bare.returncode, 0)
        self.assertEqual(self.r.returncode, self.bare.returncode, self.r.stderr[-2000:])
        self.assertEqual(self.r.stdout, self.bare.stdout)
        self.assertEqual(self.r.stdout, f"steps: done {STEPS}\n")

    def test_exit_report_says_the_trace_lost_data_and_counts_exactly(self):
        err = self.r.stderr
        self.assertIn("syncspy: cannot write trace.bin: File too large", err)
        # the summary (every step listed up to its cap) is over the limit too: said, not silent
        self.assertIn("summary.json could not be written either (File too large)", err)
        self.assertIn("trace.bin lost data (a write failed: File too large): its events stop "
                      "there; these counts are exact", err)
        self.assertIn(f"{STEPS} syncspy.step() marks", err)
        self.assertIn("| 1.00 syncs/step |", err)
        self.assertNotIn("killed", err)

    def test_trace_is_cut_at_the_limit_and_marked(self):
        trace = os.path.join(self.dir, "trace.bin")
        self.assertLessEqual(os.path.getsize(trace), LIMIT)
        with open(trace, "rb") as f:
            f.seek(WRITE_ERRNO_AT)
            self.assertEqual(struct.unpack("<i", f.read(4))[0], 27)  # EFBIG

    def test_report_says_lower_bound_not_a_kill(self):
        r = cli("report", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(LOWER_BOUND + "File too large)", r.stdout)
        self.assertIn("the process was not killed", r.stdout)
        self.assertNotIn("killed?", r.stdout)
        self.assertNotIn("trace ends early", r.stdout)

    def test_check_exits_2_whatever_the_budget(self):
        for budget in ("0.99", "1", "100"):
            r = cli("check", "--max-syncs-per-step", budget, self.dir)
            self.assertEqual(r.returncode, 2, (budget, r.stdout, r.stderr))
            self.assertIn(LOWER_BOUND, r.stderr)
            self.assertIn("no budget is judged from a lower bound", r.stderr)
            self.assertNotIn("within budget", r.stdout)

    def test_diff_html_top_say_it(self):
        d = cli("diff", self.dir, self.dir)
        self.assertEqual(d.returncode, 0, d.stderr)
        self.assertIn(LOWER_BOUND, d.stderr)
        h = cli("html", "-o", "-", self.dir)
        self.assertEqual(h.returncode, 0, h.stderr)
        self.assertIn("the figures are a lower bound: trace.bin lost data", h.stdout)
        t = cli("top", "--once", self.dir)
        self.assertEqual(t.returncode, 0, t.stderr)
        self.assertIn(LOWER_BOUND, t.stdout)
        self.assertNotIn("running", t.stdout.splitlines()[0])


class InjectedWriteErrors(unittest.TestCase):
    """The fault-injection build: trace.bin's writes fail after 40 (summary.json is written), or
    every file's."""

    def faulty(self, spec, steps=20000):
        e, out = agent_env({"LD_PRELOAD": FAULTS_LIB, "SYNCSPY_FAULTS": spec,
                            "SYNCSPY_REPORT": "stderr"})
        p = subprocess.run([prog("steps_fast"), str(steps)], env=e, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertEqual(p.stdout, f"steps: done {steps}\n")
        return p, folder(out)

    def test_trace_only_the_summary_says_it_too(self):
        p, d = self.faulty("write=ENOSPC,after=40,file=trace.bin")
        self.assertIn("cannot write trace.bin: No space left on device", p.stderr)
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(s["trace_lost_errno"], 28)  # ENOSPC
        r = cli("report", d)
        self.assertIn(LOWER_BOUND + "No space left on device)", r.stdout)
        self.assertNotIn("killed?", r.stdout)
        # the summary itself: exact counts, and it says the trace lost data
        r = cli("report", os.path.join(d, "summary.json"))
        self.assertIn("trace.bin lost data (a write failed: No space left on device): its events "
                      "stop there; these counts are exact", r.stdout)
        self.assertIn("| 1.00 syncs/step |", r.stdout)
        self.assertIn("20000 syncspy.step() marks", r.stdout)
        c = cli("check", "--max-syncs-per-step", "1", d)
        self.assertEqual(c.returncode, 2, c.stdout + c.stderr)
        # a header whose mark could not be written: the folder's summary.json says it
        trace = os.path.join(d, "trace.bin")
        with open(trace, "r+b") as f:
            f.seek(WRITE_ERRNO_AT)
            f.write(b"\0\0\0\0")
        r = cli("report", d)
        self.assertIn(LOWER_BOUND + "No space left on device)", r.stdout)
        self.assertNotIn("killed?", r.stdout)
        c = cli("check", "--max-syncs-per-step", "1", d)
        self.assertEqual(c.returncode, 2, c.stdout + c.stderr)

    def test_every_file_the_trace_header_says_it(self):
        p, d = self.faulty("write=EIO,after=40")
        self.assertIn("cannot write trace.bin: Input/output error", p.stderr)
        self.assertIn("summary.json could not be written either (Input/output error): this report "
                      "is the only complete record of the run", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "summary.json")))
        r = cli("report", d)
        self.assertIn(LOWER_BOUND + "Input/output error)", r.stdout)
        self.assertNotIn("killed?", r.stdout)
        c = cli("check", "--max-syncs-per-step", "0.5", d)
        self.assertEqual(c.returncode, 2, c.stdout + c.stderr)


if __name__ == "__main__":
    unittest.main()
