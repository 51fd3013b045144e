"""`syncspy top` on a pseudo-terminal against a running real-torch loop (examples/seg_loss.py,
many steps, on the simulated device): after 3 s the loop is frozen (SIGSTOP, so its files stop
changing), and the screen top then shows matches the files: its training steps, syncs/step
and blocked share since start are `check --json`'s, its last 10 s are the newest steps of the
trace whose wall times make 10 s (read through `export --chrome`'s steps track), its heaviest
line is check's. q quits it; it wrote nothing into the folder. `t` over a loop whose backward
pass syncs (tests/torch/progs/backward.py no_grad) shows autograd's engine thread's lines alone,
with the figures of that thread's sync records in the trace, and "all threads" comes back."""
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

import harness

ROWS, COLS = 60, 220


def rate(v):
    """report_format_rate: three significant digits."""
    return f"{v:.2f}" if v < 9.995 else f"{v:.1f}" if v < 99.95 else f"{v:.0f}"


class Top(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="syncspy-top-")
        self.out = os.path.join(self.tmp, "out")
        env = dict(os.environ)
        env.update(harness.torch_env({"SYNCSPY_OUT": self.out, "SYNCSPY_REPORT": "off"}))
        env["LD_PRELOAD"] = harness.LIB
        self.env = env
        self.loop = None
        self.top = None

    def start(self, *argv):
        self.loop = subprocess.Popen([harness.PYTHON, *argv], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)

    def tearDown(self):
        for p in (self.loop, self.top):
            if p and p.poll() is None:
                p.send_signal(signal.SIGCONT) if p is self.loop else None
                p.kill()
                p.wait()
        if self.loop and self.loop.stderr:
            self.loop.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def wait_for_steps(self, n, timeout=240):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.assertIsNone(self.loop.poll(), "the loop ended early")
            if glob.glob(os.path.join(self.out, "pid*", "trace.bin")):
                p = harness.cli("top", "--once", self.out)
                m = re.search(r"^steps\s+\d+\s+(\d+)", p.stdout, re.M)
                if m and int(m.group(1)) >= n:
                    return
            time.sleep(0.5)
        self.fail("the loop made no steps")

    def screen(self, fd, seconds):
        """What the terminal got in that time; the last whole frame."""
        data = b""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    data += os.read(fd, 65536)
                except OSError:
                    break
        frames = data.decode("utf-8", "replace").split("\x1b[H")
        whole = [f for f in frames if "\x1b[J" in f]
        self.assertTrue(whole, data[-2000:])
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", whole[-1]).replace("\r", "")

    def show(self, fd, thread):
        """Presses t until the lines shown are thread's ("all threads": every thread's)."""
        text = self.screen(fd, 1.5)
        for _ in range(6):
            if f"top lines of {thread} (" in text:
                return text
            os.write(fd, b"t")
            text = self.screen(fd, 1.5)
        self.fail(f"t never showed {thread}:\n{text}")

    def test_t_shows_the_engine_threads_lines(self):
        self.start(os.path.join(harness.PROGS, "backward.py"), "no_grad", "1000000")
        self.wait_for_steps(20)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.top = subprocess.Popen([harness.CLI, "top", self.out], stdin=slave, stdout=slave, stderr=slave,
                                    close_fds=True, start_new_session=True)
        os.close(slave)
        lines = lambda text: re.findall(r"(?m)^\s*(?:\d+|-)\s+\S+ \S+\s+(\S+)\s+\S+ \S+\s+(\S+)\s+\S+\s+"
                                        r"cudaStreamSynchronize (at \S+|backward of \S+)", text)
        text = self.show(master, "all threads")
        self.assertEqual({w for _, _, w in lines(text)}, {"at run", "at masked_loss", "backward of masked_loss"}, text)
        text = self.show(master, "pt_autograd_0")
        self.loop.send_signal(signal.SIGSTOP)  # the files stop changing
        time.sleep(0.5)
        text = self.screen(master, 2.5)
        self.assertIn("top lines of pt_autograd_0 (", text)
        shown = lines(text)
        self.assertEqual([w for _, _, w in shown], ["backward of masked_loss"], text)  # the engine's own line
        self.assertNotIn("not in the trace", text)
        d = glob.glob(os.path.join(self.out, "pid*"))[0]
        trace = json.loads(harness.cli("export", "--chrome", "-", d).stdout)["traceEvents"]
        tid = [e["tid"] for e in trace if e.get("name") == "thread_name" and e["args"]["name"] == "pt_autograd_0"]
        self.assertEqual(len(tid), 1, tid)
        steps = sorted((e["args"]["step"], e["dur"]) for e in trace if e.get("cat") == "step"
                       and e["args"]["active"] and e["args"]["step"] > 0 and not e["args"]["partial"])
        window, wall = set(), 0.0
        for step, dur in reversed(steps):
            if wall >= 10e6:
                break
            window.add(step)
            wall += dur
        mine = [e for e in trace if e.get("cat") == "sync" and e["tid"] == tid[0]
                and 0 < e["args"]["step"] <= steps[-1][0]]
        win = [e for e in mine if e["args"]["step"] in window]
        self.assertEqual(shown[0][:2], (rate(len(win) / len(window)), rate(len(mine) / len(steps))), text)
        row = re.search(r"(?m)^syncs/step\s+(\S+)\s+(\S+)\s+\(thread pt_autograd_0's\)$", text)
        self.assertIsNotNone(row, text)
        self.assertEqual(row.groups(), (rate(len(win) / len(window)), rate(len(mine) / len(steps))), text)
        text = self.show(master, "all threads")  # and back
        self.assertEqual(len(lines(text)), 3, text)
        os.write(master, b"q")
        self.assertEqual(self.top.wait(timeout=10), 0)
        os.close(master)

    def test_figures_after_3_s_match_the_files(self):
        self.start(harness.DEMO, "--steps", "100000", "--log-every", "100000")
        self.wait_for_steps(5)
        before = sorted(os.listdir(self.out)), sorted(os.listdir(glob.glob(os.path.join(self.out, "pid*"))[0]))
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.top = subprocess.Popen([harness.CLI, "top", self.out], stdin=slave, stdout=slave, stderr=slave,
                                    close_fds=True, start_new_session=True)
        os.close(slave)
        self.screen(master, 3.0)
        self.loop.send_signal(signal.SIGSTOP)  # the files stop changing
        time.sleep(0.5)                        # a flush under way ends in the kernel's write
        text = self.screen(master, 2.5)        # at least two refreshes of the frozen files
        os.write(master, b"q")
        self.assertEqual(self.top.wait(timeout=10), 0)
        os.close(master)
        d = glob.glob(os.path.join(self.out, "pid*"))[0]
        check = json.loads(harness.cli("check", "--json", "--max-syncs-per-step", "1000", d).stdout)["processes"][0]
        row = lambda name: re.search(rf"^{name}\s+(\S+)\s+(\S+)", text, re.M)
        self.assertIsNotNone(row("steps"), text)
        self.assertEqual(int(row("steps").group(2)), round(check["training_steps"]), text)
        self.assertEqual(row("syncs/step").group(2), rate(check["syncs_per_step"]), text)
        self.assertEqual(row(r"blocked share").group(2), f"{100 * check['blocked_share']:.1f}%", text)
        # the last 10 s: the newest training steps whose wall times add up to 10 s
        trace = json.loads(harness.cli("export", "--chrome", "-", d).stdout)["traceEvents"]
        steps = [e for e in trace if e.get("cat") == "step" and e["args"]["active"]]
        steps = [s for s in steps if s["args"]["step"] > 0 and not s["args"]["partial"]]
        steps.sort(key=lambda s: s["args"]["step"])
        # the newest step (the one still open) has no record yet: the trace's steps are the report's
        window, wall = [], 0.0
        for s in reversed(steps):
            if wall >= 10e6:
                break
            window.append(s)
            wall += s["dur"]
        self.assertEqual(int(row("steps").group(1)), len(window), text)
        self.assertEqual(row("syncs/step").group(1), rate(sum(s["args"]["syncs"] for s in window) / len(window)), text)
        heaviest = check["sites"][0]
        self.assertRegex(text, rf"{re.escape(rate(heaviest['syncs_per_step']))}\s+\S+\s+{heaviest['api']} at "
                               rf"{re.escape(heaviest['function'])}  {re.escape(heaviest['file'])}:{heaviest['line']}")
        self.assertIn("running", text)
        after = sorted(os.listdir(self.out)), sorted(os.listdir(d))
        self.assertEqual(before, after)  # top wrote nothing into the folder


if __name__ == "__main__":
    unittest.main()
