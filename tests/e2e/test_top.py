"""`syncspy top`'s thread view on a pseudo-terminal over tests/progs/threads_loop.c (three named
threads, each syncing on lines of its own: per step trainer 1 x 1 ms, loader 2 x 2 ms, engine
3 x 1 ms): `t` goes from all threads to each thread and back, and what a thread's view shows
(its lines, its syncs/step and blocked share over the last 10 s and since start) is what the
files say: the trace's sync records of that thread (export --chrome) while the program runs,
summary.json's per-thread figures after it ended. Top writes nothing into the folder."""
import fcntl
import glob
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import termios
import time
import unittest

import tracegen
import util

CLI = util.CLI
ROWS, COLS = 60, 200
LINES = {"trainer": "trainer_sync", "loader": "loader_sync", "engine": "engine_sync"}


def sig3(v, unit=""):
    """output/report.c's three significant digits."""
    return (f"{v:.2f}" if v < 9.995 else f"{v:.1f}" if v < 99.95 else f"{v:.0f}") + unit


def ns_text(ns):
    return (f"{ns:.0f} ns" if ns < 999.5 else sig3(ns / 1e3, " us") if ns < 999.5e3
            else sig3(ns / 1e6, " ms") if ns < 999.5e6 else sig3(ns / 1e9, " s"))


class Screen:
    """syncspy top on a pseudo-terminal: keys in, the last whole frame out."""

    def __init__(self, test, folder):
        self.test = test
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.p = subprocess.Popen([CLI, "top", "--interval", "0.3", folder], stdin=slave, stdout=slave,
                                  stderr=slave, close_fds=True, start_new_session=True)
        os.close(slave)

    def frame(self, seconds):
        data = b""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([self.master], [], [], 0.05)
            if r:
                try:
                    data += os.read(self.master, 65536)
                except OSError:
                    break
        whole = [f for f in data.decode("utf-8", "replace").split("\x1b[H") if "\x1b[J" in f]
        self.test.assertTrue(whole, data[-2000:])
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", whole[-1]).replace("\r", "")

    def show(self, thread):
        """Presses t until the lines shown are thread's ("all threads" for every thread's)."""
        text = self.frame(1.0)
        for _ in range(6):
            if f"top lines of {thread} (" in text:
                return text
            os.write(self.master, b"t")
            text = self.frame(0.8)
        self.test.fail(f"t never showed {thread}:\n{text}")

    def quit(self):
        os.write(self.master, b"q")
        rc = self.p.wait(timeout=10)
        os.close(self.master)
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def lines_shown(text):
    """{where: (10 s blocked/step, 10 s syncs/step, blocked/step, syncs/step)} of the table."""
    rows = {}
    for m in re.finditer(r"(?m)^\s*(?:\d+|-)\s+(\S+(?: \S+)?)\s+(\S+)\s+(\S+ \S+)\s+(\S+)\s+\S+\s+cudaStreamSynchronize at (\w+)", text):
        rows[m.group(5)] = (m.group(1), m.group(2), m.group(3), m.group(4))
    return rows


def header(text, name):
    m = re.search(rf"(?m)^{name}\s+(\S+)\s+(\S+)\s*(.*)$", text)
    return m.groups() if m else None


class TopThreads(unittest.TestCase):
    def setUp(self):
        self.env, self.out = util.agent_env()
        self.env["SYNCSPY_REPORT"] = "off"
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()
        shutil.rmtree(self.out, ignore_errors=True)

    def folder(self):
        found = glob.glob(os.path.join(self.out, "pid*"))
        self.assertEqual(len(found), 1, found)
        return found[0]

    def listing(self):
        return sorted(os.listdir(self.out)), sorted(os.listdir(self.folder()))

    def test_t_shows_each_threads_lines_of_a_running_loop(self):
        loop = subprocess.Popen([util.prog("threads_loop")], env=self.env, stdout=subprocess.PIPE)
        self.procs.append(loop)
        r, _, _ = select.select([loop.stdout], [], [], 60)
        self.assertTrue(r and loop.stdout.readline() == b"ready\n", "the loop did not start")
        time.sleep(11.0)  # more than the last 10 s: the window is not the whole run
        before = self.listing()
        top = Screen(self, self.out)
        try:
            text = top.show("all threads")
            self.assertEqual(set(lines_shown(text)), set(LINES.values()), text)
            text = top.show("engine")
            loop.send_signal(signal.SIGSTOP)  # the files stop changing
            time.sleep(0.5)
            text = top.frame(1.5)             # refreshes of the frozen files
            self.assertIn("top lines of engine (", text)
            shown = lines_shown(text)
            self.assertEqual(set(shown), {"engine_sync"}, text)  # that thread's lines only
            self.assertNotIn("not in the trace", text)
            # the files: the trace's steps and the engine thread's sync records
            trace = json.loads(util.run([CLI, "export", "--chrome", "-", self.folder()]).stdout)["traceEvents"]
            tid = [e["tid"] for e in trace if e.get("name") == "thread_name" and e["args"]["name"] == "engine"]
            self.assertEqual(len(tid), 1, tid)
            steps = sorted((e["args"]["step"], e["dur"] * 1e3) for e in trace if e.get("cat") == "step"
                           and e["args"]["active"] and e["args"]["step"] > 0 and not e["args"]["partial"])
            window, wall = [], 0.0
            for s in reversed(steps):
                if wall >= 10e9:
                    break
                window.append(s[0])
                wall += s[1]
            window = set(window)
            mine = [e for e in trace if e.get("cat") == "sync" and e["tid"] == tid[0] and e["args"]["step"] > 0
                    and e["args"]["step"] <= steps[-1][0]]
            win = [e for e in mine if e["args"]["step"] in window]
            since_ns = sum(round(e["dur"] * 1e3) for e in mine)
            win_ns = sum(round(e["dur"] * 1e3) for e in win)
            n, total_wall = len(steps), sum(s[1] for s in steps)
            win_wall = sum(s[1] for s in steps if s[0] in window)
            self.assertEqual(len(mine), 3 * n)  # the program's own count: 3 a step
            self.assertEqual(shown["engine_sync"], (ns_text(win_ns / len(window)), sig3(len(win) / len(window)),
                                                    ns_text(since_ns / n), sig3(len(mine) / n)), text)
            self.assertEqual(header(text, "syncs/step"), ("3.00", "3.00", "(thread engine's)"), text)
            self.assertEqual(header(text, "blocked share")[:2],
                             (f"{100 * win_ns / win_wall:.1f}%", f"{100 * since_ns / total_wall:.1f}%"), text)
            self.assertEqual(header(text, "steps")[:2], (str(len(window)), str(n)), text)
            text = top.show("all threads")   # and back to every thread's
            self.assertEqual(set(lines_shown(text)), set(LINES.values()), text)
            self.assertEqual(header(text, "syncs/step"), ("6.00", "6.00", "(every thread's)"), text)
            self.assertEqual(top.quit(), 0)
        finally:
            top.kill()
        self.assertEqual(before, self.listing())  # top wrote nothing into the folder

    def test_each_threads_figures_of_a_finished_run_are_summary_jsons(self):
        p = subprocess.run([util.prog("threads_loop"), "40"], env=self.env, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.folder(), "summary.json")) as f:
            doc = json.load(f)
        training = [s for s in doc["steps"] if not s.get("startup") and not s["partial"]]
        wall = sum(s["wall_ns"] for s in training)
        top = Screen(self, self.folder())
        try:
            for t in doc["threads"]:
                with self.subTest(thread=t["name"]):
                    text = top.show(t["name"])
                    syncs = t["syncs"] - t["startup_count"] - t["partial_count"]
                    blocked = t["blocked_ns"] - t["startup_blocked_ns"] - t["partial_blocked_ns"]
                    want = (sig3(syncs / len(training)), f"{100 * blocked / wall:.1f}%")
                    self.assertEqual(header(text, "syncs/step")[1], want[0], text)
                    self.assertEqual(header(text, "blocked share")[1], want[1], text)
                    # all its steps are in the last 10 s: both columns say the same
                    self.assertEqual(header(text, "syncs/step")[0], want[0], text)
                    shown = lines_shown(text)
                    self.assertEqual(set(shown), {LINES[t["name"]]}, text)
                    site = [s for s in doc["sites"] if s["frames"][0]["function"] == LINES[t["name"]]][0]
                    self.assertEqual(shown[LINES[t["name"]]][3], sig3(site["count"] / len(training)), text)
            text = top.show("all threads")
            self.assertEqual(set(lines_shown(text)), set(LINES.values()), text)
            self.assertEqual(top.quit(), 0)
        finally:
            top.kill()


class TopSummaryOnly(unittest.TestCase):
    """A process folder that holds summary.json and no trace.bin (SYNCSPY_TRACE_MB=0, or the
    trace removed): top shows what summary.json has, says where the figures come from, and under
    a root keeps waiting until such a folder appears; a summary it cannot read is named."""

    @classmethod
    def setUpClass(cls):
        cls.env, cls.out = util.agent_env()
        cls.env["SYNCSPY_REPORT"] = "off"
        p = subprocess.run([util.prog("threads_loop"), "40"], env=cls.env, capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        cls.folder = glob.glob(os.path.join(cls.out, "pid*"))[0]
        os.remove(os.path.join(cls.folder, "trace.bin"))
        with open(os.path.join(cls.folder, "summary.json")) as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def check_shown(self, text):
        self.assertNotIn("cannot open", text)
        self.assertIn("no trace.bin there; the figures are its summary.json's (the process ended)", text)
        self.assertIn("1 process, ended", text)
        training = [s for s in self.doc["steps"] if not s.get("startup") and not s["partial"]]
        self.assertEqual(header(text, "steps")[1], str(len(training)), text)
        syncs = sum(s["syncs"] for s in training)
        self.assertEqual(header(text, "syncs/step")[1], sig3(syncs / len(training)), text)
        shown = lines_shown(text)
        self.assertEqual(set(shown), set(LINES.values()), text)
        for name in LINES.values():
            site = [s for s in self.doc["sites"] if s["frames"][0]["function"] == name][0]
            self.assertEqual(shown[name][3], sig3(site["count"] / len(training)), text)

    def test_folder_and_root_show_summary_json(self):
        for d in (self.folder, self.out):
            with self.subTest(dir=d):
                p = subprocess.run([CLI, "top", "--once", d], capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.check_shown(p.stdout)

    def test_root_waits_for_the_folder(self):
        root = tempfile.mkdtemp(prefix="syncspy-top-summary-")
        try:
            top = Screen(self, root)
            try:
                first = top.frame(1.0)
                self.assertIn("no process has written a trace yet (waiting)", first)
                bad = os.path.join(root, "pid77")
                os.makedirs(bad)
                with open(os.path.join(bad, "summary.json"), "w") as f:
                    f.write('{"version": 1, "pid": 77, "steps": [')  # still being written
                text = top.frame(1.0)
                self.assertIn("no process has written a trace yet (waiting)", text)
                self.assertIn("summary.json", text)  # the reader's sentence names the file
                shutil.copy(os.path.join(self.folder, "summary.json"), os.path.join(bad, "summary.json"))
                text = top.frame(1.2)
                self.assertEqual(top.quit(), 0)
            finally:
                top.kill()
            self.check_shown(text)
        finally:
            shutil.rmtree(root, ignore_errors=True)


class TopFollows(unittest.TestCase):
    """Each refresh reads only what was appended: a trace written in two parts, the first cut in
    the middle of a record, shows after the second part what `top --once` shows of the whole
    file, even when the bytes read already were spoilt in between (they are not read again)."""

    def test_appended_records_are_read_from_where_it_stopped(self):
        tmp = tempfile.mkdtemp(prefix="syncspy-top-follow-")
        try:
            data = tracegen.sample(pid=4242).data()
            path = os.path.join(tmp, "pid4242", "trace.bin")
            os.makedirs(os.path.dirname(path))
            with open(path, "wb") as f:
                f.write(data)
            whole = subprocess.run([CLI, "top", "--once", path], capture_output=True, text=True)
            self.assertEqual(whole.returncode, 0, whole.stderr)
            cut = len(data) * 2 // 3 + 4  # inside a record
            with open(path, "wb") as f:
                f.write(data[:cut])
            top = Screen(self, path)
            try:
                first = top.frame(1.0)
                self.assertIn("running", first)  # no END record yet
                with open(path, "r+b") as f:
                    f.write(b"X" * 8)            # the magic, read already: not read again
                    f.seek(0, os.SEEK_END)
                    f.write(data[cut:])
                text = top.frame(1.0)
                self.assertEqual(top.quit(), 0)
            finally:
                top.kill()
            # the terminal's rows are cut at its width (an op's hint under a row is longer)
            body = lambda t: [re.sub(r"\d\d:\d\d:\d\d$", "", line[:COLS]).rstrip() for line in t.strip().splitlines()]
            self.assertEqual(body(text), body(whole.stdout))
            self.assertIn("ended", text)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()


class TopOneLineThreeFunctions(unittest.TestCase):
    """Three functions defined on one source line, each one sync a step (tests/progs/host_harm.c
    one-line): the last 10 s split per row as since start does, 1.00/1.00/1.00 (it showed
    3.00/0.00/0.00: the window's lines were matched to rows by file and line alone); one process
    and a root of two."""

    def test_last_10_s_splits_rows_as_since_start(self):
        env, out = util.agent_env({"SYNCSPY_REPORT": "off"})
        try:
            for _ in range(2):
                p = subprocess.run([util.prog("host_harm"), "one-line", "300"], env=env,
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout, "one line: 300 steps\n")
            folders = sorted(glob.glob(os.path.join(out, "pid*")))
            for d in (folders[0], out):
                with self.subTest(dir=d):
                    t = subprocess.run([CLI, "top", "--once", d], capture_output=True, text=True,
                                       timeout=30)
                    self.assertEqual(t.returncode, 0, t.stderr)
                    rows = lines_shown(t.stdout)
                    self.assertEqual(set(rows), {"line_a", "line_b", "line_c"}, t.stdout)
                    for name, (_, win, _, since) in rows.items():
                        self.assertEqual((win, since), ("1.00", "1.00"), (name, t.stdout))
            r = subprocess.run([CLI, "report", folders[0]], capture_output=True, text=True)
            self.assertEqual(len(re.findall(r"(?m)^\s+\d+\s.*\s1\.00\s.*cudaStreamSynchronize$",
                                            r.stdout)), 3, r.stdout)
        finally:
            shutil.rmtree(out, ignore_errors=True)
