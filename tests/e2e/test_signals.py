"""End-to-end: SIGTERM/SIGINT and kill -9. A fatal signal still leaves the report and
summary.json; the program's own handlers and exit status are untouched; after kill -9 the trace
file holds every step flushed before it and `syncspy report` rebuilds the report from it."""
import glob
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

from util import CLI, LIB, SIM, preload_value, prog, report_steps, sanitizer_env


def start(mode, env=None, ready_after=5):
    out = tempfile.mkdtemp(prefix="syncspy-sig-")
    e = dict(os.environ, LD_LIBRARY_PATH=SIM, LD_PRELOAD=preload_value(LIB), SYNCSPY_OUT=out)
    e.update(sanitizer_env())
    e.pop("SYNCSPY_SCHEDULE", None)
    if env:
        e.update(env)
    p = subprocess.Popen([prog("loop"), mode, str(ready_after)], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line == "ready\n", line
    return p, out


def process_dir(out):
    dirs = [os.path.join(out, d) for d in os.listdir(out)]
    assert len(dirs) == 1, dirs
    return dirs[0]


class FatalSignals(unittest.TestCase):
    def check_report_then_death(self, sig):
        p, out = start("default")
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=30)
        self.assertEqual(p.returncode, -sig)  # the default action, as without the agent
        self.assertIn("step_sync", stderr)
        self.assertIn("cudaStreamSynchronize", stderr)
        with open(os.path.join(process_dir(out), "summary.json")) as f:
            s = json.load(f)
        steps = [st for st in s["steps"] if not st["partial"]]
        self.assertGreaterEqual(len(steps), 5)
        site = [x for x in s["sites"] if x["frames"] and x["frames"][0]["function"] == "step_sync"]
        self.assertEqual(len(site), 1)
        self.assertGreaterEqual(site[0]["count"], 5)

    def test_sigterm_default_action(self):
        self.check_report_then_death(signal.SIGTERM)

    def test_sigint_default_action(self):
        self.check_report_then_death(signal.SIGINT)


class ProgramHandlers(unittest.TestCase):
    def test_program_handler_runs_and_exit_status_kept(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            p, out = start("handler")
            p.send_signal(sig)
            stdout, stderr = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 7, stderr)
            self.assertEqual(stdout, f"caught {int(sig)}\n")
            # _exit() in the program's handler: the report and summary.json all the same
            # (entry/exit.c), written after the handler's own output
            self.assertIn("step_sync", stderr)
            self.assertEqual(len(glob.glob(os.path.join(out, "*", "summary.json"))), 1, stderr)

    def test_ignored_sigterm_stays_ignored(self):
        p, out = start("ignore")
        p.send_signal(signal.SIGTERM)
        stdout, stderr = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, stderr)
        self.assertEqual(stdout, "loop: done\n")
        self.assertIn("step_sync", stderr)  # the normal exit report


class KillNine(unittest.TestCase):
    def test_flushed_steps_survive_kill_9(self):
        p, out = start("default", ready_after=8)
        time.sleep(0.3)  # a few flusher ticks (every 100 ms) after the 8 steps
        p.kill()
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        d = process_dir(out)
        self.assertFalse(os.path.exists(os.path.join(d, "summary.json")))
        self.assertTrue(os.path.exists(os.path.join(d, "trace.bin")))
        r = subprocess.run([CLI, "report", d], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("step_sync", r.stdout)
        self.assertIn("cudaStreamSynchronize", r.stdout)
        self.assertIn("killed", r.stdout)
        # at least the 8 steps before "ready" were flushed
        steps = report_steps(r.stdout)
        self.assertIsNotNone(steps, r.stdout)
        self.assertGreaterEqual(steps[0], 8, r.stdout)


if __name__ == "__main__":
    unittest.main()
