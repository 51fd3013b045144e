"""`syncspy start/stop` and syncspy.start()/stop() on real torch (issue 38 item 1): a long loop
(tests/torch/progs/control_loop.py, one .item() sync and one optimizer step per iteration) under
SYNCSPY_SCHEDULE=off records nothing until asked. From another process, `syncspy start DIR --steps
100` at about step 200 records exactly the 100 steps it names, then `syncspy start` and `syncspy
stop` record exactly the steps the stop names; the exit report, `syncspy report` and summary.json
list those steps (numbers and count) with their cause, and the program's output is what it is
without any of it. In the program, syncspy.start(steps=20) in iteration 50, start() in 100 and
stop() in 130 record steps 51-70 and 101-130."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import harness


def expected_stdout(iters):
    return "".join(f"iteration {i} total 0.0\n" for i in range(0, iters, 100)) + f"done {iters}\n"


class Control(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="syncspy-control-")
        self.out = os.path.join(self.tmp, "out")
        self.progress = os.path.join(self.tmp, "progress")
        self.loop = None

    def tearDown(self):
        if self.loop and self.loop.poll() is None:
            self.loop.kill()
            self.loop.communicate()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def iteration(self):
        try:
            with open(self.progress) as f:
                return int(f.read() or 0)
        except FileNotFoundError:
            return -1

    def wait_for(self, n, timeout=300):
        end = time.monotonic() + timeout
        while self.iteration() < n:
            if self.loop.poll() is not None:
                self.fail("the loop ended early: " + self.loop.stderr.read())
            self.assertLess(time.monotonic(), end, f"the loop did not reach iteration {n}")
            time.sleep(0.05)

    def test_cli_start_stop_records_exactly_those_steps(self):
        iters = 1500
        env = dict(os.environ)
        env.update(harness.torch_env({"SYNCSPY_OUT": self.out, "SYNCSPY_SCHEDULE": "off"}))
        env["LD_PRELOAD"] = harness.LIB
        self.loop = subprocess.Popen([harness.PYTHON, os.path.join(harness.PROGS, "control_loop.py"),
                                      str(iters), self.progress], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.wait_for(200)
        folder = os.path.join(self.out, "pid%d" % self.loop.pid)
        r = harness.cli("start", folder, "--steps", 100)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.fullmatch(rf"syncspy start: pid {self.loop.pid} records steps (\d+) to (\d+) \(100 "
                         r"steps, asked during step (\d+)\)\n", r.stdout)
        self.assertTrue(m, r.stdout + r.stderr)
        a_first, a_last, during = map(int, m.groups())
        self.assertEqual((a_first, a_last), (during + 1, during + 100))
        self.assertGreaterEqual(during, 200)
        self.wait_for(a_last + 20)
        r = harness.cli("start", self.loop.pid)  # by pid this time, until a stop
        self.assertEqual(r.returncode, 0, r.stderr)
        b_first = int(re.search(r"records steps from (\d+) on, until `syncspy stop`", r.stdout).group(1))
        self.wait_for(b_first + 30)
        r = harness.cli("stop", folder)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"stopped recording after step (\d+) \(recorded on request: steps (\d+) to (\d+)\)",
                      r.stdout)
        self.assertTrue(m, r.stdout)
        self.assertEqual(int(m.group(2)), b_first)
        b_last = int(m.group(3))
        self.assertGreaterEqual(b_last, b_first + 30)
        out, err = self.loop.communicate(timeout=600)
        self.assertEqual(self.loop.returncode, 0, err)
        self.assertEqual(out, expected_stdout(iters))  # the program's own output, unchanged
        want = list(range(a_first, a_last + 1)) + list(range(b_first, b_last + 1))
        with open(os.path.join(folder, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual([st["step"] for st in s["steps"]], want)
        self.assertEqual(s["active_steps"], len(want))
        self.assertEqual(s["syncs"], len(want))  # one .item() a step, none outside them
        self.assertEqual(s["recorded"], [{"first": a_first, "last": a_last, "cause": "syncspy start"},
                                         {"first": b_first, "last": b_last, "cause": "syncspy start"}])
        title = (f"syncspy: pid {self.loop.pid}: {iters} optimizer steps (schedule: off; recorded: "
                 f"steps {a_first}-{a_last} by syncspy start, {b_first}-{b_last} by syncspy start)")
        counted = f"{len(want)} steps counted ({len(want)} of {iters + 1} recorded)"
        for text in (err, harness.cli("report", folder).stdout):
            self.assertIn(title + "\n", text)
            self.assertIn(counted, text)
            self.assertRegex(text, r"\| 1\.00 syncs/step \|")
        self.assertNotIn("ignored", err)
        self.assertFalse(os.path.exists(os.path.join(folder, "control")))

    def test_python_start_and_stop(self):
        r = harness.run("control_loop.py", 200, self.progress, "--py-start", "50:20", "--py-start",
                        "100:", "--py-stop", 130, env={"SYNCSPY_SCHEDULE": "off"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, expected_stdout(200))
        s = r.summary()
        want = list(range(51, 71)) + list(range(101, 131))
        self.assertEqual([st["step"] for st in s["steps"]], want)
        self.assertEqual(s["recorded"], [{"first": 51, "last": 70, "cause": "syncspy.start()"},
                                         {"first": 101, "last": 130, "cause": "syncspy.start()"}])
        self.assertIn("(schedule: off; recorded: steps 51-70 by syncspy.start(), 101-130 by "
                      "syncspy.start())", r.stderr)
        # beside a schedule: its steps keep their cause
        r = harness.run("control_loop.py", 40, self.progress, "--py-start", "20:5",
                        env={"SYNCSPY_SCHEDULE": "wait=4,active=1,repeat=2"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.summary()["recorded"], [
            {"first": 4, "last": 4, "cause": "schedule"}, {"first": 9, "last": 9, "cause": "schedule"},
            {"first": 21, "last": 25, "cause": "syncspy.start()"}])

    def test_python_api_without_agent_and_bad_counts(self):
        r = harness.python_code(
            "import syncspy\n"
            "print(syncspy.start(steps=5), syncspy.stop())\n"
            "for bad in (-1, 0, 10**9 + 1, 2.5, True):\n"
            "    try:\n"
            "        syncspy.start(steps=bad)\n"
            "    except (ValueError, TypeError) as e:\n"
            "        print(type(e).__name__, e)\n", preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            "False False",
            "ValueError steps must be from 1 to 1000000000 (None: until stop()), not -1",
            "ValueError steps must be from 1 to 1000000000 (None: until stop()), not 0",
            "ValueError steps must be from 1 to 1000000000 (None: until stop()), not 1000000001",
            "TypeError steps must be a whole number or None, not 2.5",
            "TypeError steps must be a whole number or None, not True"])


if __name__ == "__main__":
    unittest.main()
