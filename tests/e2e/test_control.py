"""`syncspy start/stop` end to end on a C training loop (tests/progs/loop.c: a step mark every
2 ms, until SIGTERM) under SYNCSPY_SCHEDULE=off: what the CLI says and its exit status, what the
agent does with control files that are not requests (garbage, a symbolic link, a file of
another user, an oversized one: one line each on stderr, a refused acknowledgment, nothing
recorded, the link's target untouched), and that a request after all of them still works and
the files then list exactly the steps it recorded. The real-torch loop is tests/torch/
test_control.py."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import util

REQUEST = "syncspy-control 1\ncommand=start\nsteps=50\n"


def cli(*args):
    return subprocess.run([util.CLI, *[str(a) for a in args]], capture_output=True, text=True,
                          timeout=60)


def put(dirpath, text, name="control", uid=None):
    """A control file written as the CLI writes one: a temporary name, then a rename."""
    tmp = os.path.join(dirpath, name + ".tmp-test")
    with open(tmp, "w") as f:
        f.write(text)
    if uid is not None:
        os.chown(tmp, uid, -1)
    os.replace(tmp, os.path.join(dirpath, name))


def ack(dirpath):
    try:
        with open(os.path.join(dirpath, "control.ack")) as f:
            return dict(line.split("=", 1) for line in f.read().splitlines()[1:] if "=" in line)
    except FileNotFoundError:
        return {}


class Loop:
    def __init__(self, env=None):
        e, self.out = util.agent_env({"SYNCSPY_SCHEDULE": "off", **(env or {})})
        self.proc = subprocess.Popen([os.path.join(util.PROGS, "loop"), "default", "5"], env=e,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"
        self.dir = os.path.join(self.out, "pid%d" % self.proc.pid)

    def finish(self):
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        return err

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        shutil.rmtree(self.out, ignore_errors=True)


class ControlFiles(unittest.TestCase):
    def setUp(self):
        self.loop = Loop()
        self.tmp = tempfile.mkdtemp(prefix="syncspy-control-")

    def tearDown(self):
        self.loop.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def wait_refused(self, reason, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            a = ack(self.loop.dir)
            if a.get("result") == "refused" and reason in a.get("reason", "") and \
                    not os.path.lexists(os.path.join(self.loop.dir, "control")):
                return a
            time.sleep(0.05)
        self.fail(f"no refusal saying {reason!r}: {ack(self.loop.dir)}")

    def test_hostile_files_are_refused_and_a_request_still_works(self):
        d = self.loop.dir
        put(d, "garbage\x01 not a request\n")
        self.wait_refused("not a syncspy control file")
        # a link to a valid request elsewhere: never followed (it would record 50 steps)
        target = os.path.join(self.tmp, "elsewhere")
        with open(target, "w") as f:
            f.write(REQUEST)
        os.symlink(target, os.path.join(d, "control.tmp-link"))
        os.replace(os.path.join(d, "control.tmp-link"), os.path.join(d, "control"))
        self.wait_refused("symbolic link")
        with open(target) as f:
            self.assertEqual(f.read(), REQUEST, "the link's target was changed")
        put(d, REQUEST + "#" * 600)
        self.wait_refused("more than a request's 512")
        put(d, "syncspy-control 1\ncommand=start\nsteps=-5\n")
        self.wait_refused("steps '-5' is not a whole number")
        refusals = 4
        if os.geteuid() == 0:  # only root can give a file to another user
            put(d, REQUEST, uid=65534)
            self.wait_refused("belongs to uid 65534")
            refusals += 1
        time.sleep(0.3)  # polls of the same state say nothing more
        # after all of that, a real request
        r = cli("start", "--steps", 7, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.fullmatch(r"syncspy start: pid (\d+) records steps (\d+) to (\d+) \(7 steps, asked "
                         r"during step (\d+)\)\n", r.stdout)
        self.assertTrue(m, r.stdout)
        pid, first, last, during = map(int, m.groups())
        self.assertEqual((pid, first, last), (self.loop.proc.pid, during + 1, during + 7))
        time.sleep(0.5)  # its 7 steps of 2 ms pass
        err = self.loop.finish()
        said = [l for l in err.splitlines() if "ignored " in l]
        self.assertEqual(len(said), refusals, err)
        self.assertTrue(all(l.startswith("syncspy: ignored %s/control: " % d) and
                            l.endswith("nothing changed") for l in said), said)
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(s["recorded"], [{"first": first, "last": last, "cause": "syncspy start"}])
        self.assertEqual([st["step"] for st in s["steps"]], list(range(first, last + 1)))
        self.assertEqual(s["active_steps"], 7)
        self.assertEqual(s["syncs"], 7)  # one sync a step
        self.assertIn(f"(schedule: off; recorded: steps {first}-{last} by syncspy start)", err)
        rep = cli("report", d)
        self.assertIn(f"(schedule: off; recorded: steps {first}-{last} by syncspy start)", rep.stdout)
        self.assertFalse(os.path.lexists(os.path.join(d, "control")))

    def test_stop_ends_a_start_without_count(self):
        d = self.loop.dir
        r = cli("start", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = int(re.search(r"records steps from (\d+) on, until `syncspy stop`", r.stdout).group(1))
        time.sleep(0.3)
        r = cli("stop", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"stopped recording after step (\d+) \(recorded on request: steps (\d+) to "
                      r"(\d+)\)$", r.stdout.strip())
        self.assertTrue(m, r.stdout)
        self.assertEqual(int(m.group(2)), first)
        last = int(m.group(3))
        self.assertEqual(last, int(m.group(1)))
        self.assertGreater(last, first)
        r = cli("stop", d)  # nothing to stop now
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("was recording no steps on request", r.stdout)
        self.loop.finish()
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(s["recorded"], [{"first": first, "last": last, "cause": "syncspy start"}])
        self.assertEqual([st["step"] for st in s["steps"]], list(range(first, last + 1)))


class ControlCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="syncspy-control-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_usage_errors(self):
        for args, want in ((["start", "--steps", "-5", self.tmp], "--steps wants a whole number from 1 "
                            "to 1000000000, not '-5'"),
                           (["start", "--steps", "0", self.tmp], "not '0'"),
                           (["start", "--steps", "1e3", self.tmp], "not '1e3'"),
                           (["start"], "missing PID or DIR"),
                           (["stop", "--steps", "3", self.tmp], "unknown option '--steps'"),
                           (["stop", "--wait", "0", self.tmp], "--wait wants seconds")):
            with self.subTest(args=args):
                r = cli(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(want, r.stderr)
                self.assertIn("usage: syncspy " + args[0], r.stderr)
                self.assertEqual(r.stdout, "")

    def test_not_a_run_folder(self):
        r = cli("start", self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no process folder", r.stderr)
        self.assertEqual(os.listdir(self.tmp), [], "it wrote into a folder that is not a run's")

    def test_folder_of_another_user(self):
        if os.geteuid() == 0:  # root makes one; anyone else has "/" (root's)
            d, uid = os.path.join(self.tmp, "pid1"), 65534
            os.mkdir(d)
            os.chown(d, uid, uid)
        else:
            d, uid = "/", 0
        before = os.listdir(d)
        r = cli("start", d)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, f"syncspy start: {d} belongs to another user (uid {uid}): only "
                                   "the process's own user can start or stop its recording\n")
        self.assertEqual(os.listdir(d), before)

    def test_no_agent_gone_and_ended(self):
        sleeper = subprocess.Popen(["sleep", "30"])
        try:
            r = cli("start", sleeper.pid)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"process {sleeper.pid} has no syncspy agent", r.stderr)
        finally:
            sleeper.kill()
            sleeper.wait()
        r = cli("stop", sleeper.pid)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"no process {sleeper.pid} here", r.stderr)
        loop = Loop()
        try:
            loop.finish()
            r = cli("start", loop.dir)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"the process of {loop.dir} (pid {loop.proc.pid}) has ended", r.stderr)
            os.unlink(os.path.join(loop.dir, "summary.json"))  # as after kill -9
            r = cli("start", loop.dir)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"process {loop.proc.pid} of {loop.dir} is gone", r.stderr)
            self.assertFalse(os.path.lexists(os.path.join(loop.dir, "control")))
        finally:
            loop.close()

    def test_by_pid(self):
        loop = Loop()
        try:
            r = cli("start", "--steps", 3, loop.proc.pid)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, rf"^syncspy start: pid {loop.proc.pid} records steps \d+ to \d+ "
                                       r"\(3 steps")
        finally:
            loop.close()


if __name__ == "__main__":
    unittest.main()
