"""tests/e2e/test_run_signals.py: `syncspy run` as if CMD ran in its place (issue 22, items 8 and 9).
Every signal a shell lets a program see reaches CMD once when it is sent to syncspy run (as with
the program run directly), SIGCHLD excepted; one the terminal sends the whole foreground group
(a window resize) reaches it once, not twice; CMD stopping stops syncspy run, and SIGCONT to
syncspy run continues both. An output folder that cannot be written is named as the reason
nothing was recorded, not "no CUDA call"."""
import os
import pty
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from test_run import ExitAndSignals, srun
from util import CLI, agent_env, prog, run

SIGNALS = [signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE, signal.SIGALRM,
           signal.SIGTERM, signal.SIGCONT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGURG,
           signal.SIGXCPU, signal.SIGXFSZ, signal.SIGVTALRM, signal.SIGPROF, signal.SIGWINCH, signal.SIGIO,
           signal.SIGPWR, signal.SIGSYS, signal.SIGTRAP, signal.SIGSEGV, signal.SIGRTMIN, signal.SIGRTMAX,
           signal.SIGCHLD]

# A program that counts the signals it gets (each handled, so none ends or stops it) until it
# reads a line on stdin, then prints the counts.
COUNTER = ("import signal, sys\n"
           "sigs = [%s]\n"
           "n = {s: 0 for s in sigs}\n"
           "def h(s, f):\n"
           "    n[s] += 1\n"
           "for s in sigs:\n"
           "    signal.signal(s, h)\n"
           "print('ready', flush=True)\n"
           "sys.stdin.readline()\n"
           "print(' '.join('%%d:%%d' %% (s, n[s]) for s in sigs), flush=True)\n") % ", ".join(
               str(int(s)) for s in SIGNALS)


def counts(line):
    return {int(a): int(b) for a, b in (x.split(":") for x in line.split())}


class PassedOn(unittest.TestCase):
    def deliver(self, wrapped):
        """Starts the counter (under syncspy run when wrapped), sends each signal to the process
        started, waits for each to be counted, and returns the counts."""
        e = agent_env(preload=False)[0]
        argv = [sys.executable, "-c", COUNTER]
        if wrapped:
            argv = [CLI, "run", "--", *argv]
        p = subprocess.Popen(argv, env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline(), "ready\n")
        for s in SIGNALS:
            os.kill(p.pid, s)
            time.sleep(0.05)  # one at a time: two of one kind pending are one
        time.sleep(0.3)
        out, _ = p.communicate("go\n", timeout=30)
        self.assertEqual(p.returncode, 0)
        return counts(out.strip())

    def test_each_signal_once_as_without_syncspy_run(self):
        bare = self.deliver(False)
        wrapped = self.deliver(True)
        for s in SIGNALS:
            with self.subTest(signal=signal.Signals(s).name if s in signal.Signals._value2member_map_ else s):
                want = 0 if s == signal.SIGCHLD else bare[s]  # SIGCHLD is about syncspy run's own child
                if s != signal.SIGCHLD:
                    self.assertEqual(bare[s], 1)
                self.assertEqual(wrapped[s], want)


class Terminal(unittest.TestCase):
    def test_window_resize_reaches_the_program_once(self):
        """A resized terminal sends SIGWINCH to its foreground group: CMD gets one, not two."""
        code = ("import signal, sys, time\n"
                "n = 0\n"
                "def h(s, f):\n"
                "    global n\n"
                "    n += 1\n"
                "signal.signal(signal.SIGWINCH, h)\n"
                "print('ready', flush=True)\n"
                "end = time.time() + 20\n"
                "while n == 0 and time.time() < end:\n"
                "    time.sleep(0.01)\n"
                "time.sleep(0.5)\n"
                "print('got', n, flush=True)\n")
        for wrapped in (False, True):
            with self.subTest(wrapped=wrapped):
                pid, fd = pty.fork()
                if pid == 0:
                    e = agent_env(preload=False)[0]
                    argv = [sys.executable, "-c", code]
                    if wrapped:
                        argv = [CLI, "run", "--", *argv]
                    os.execve(argv[0], argv, e)
                text = ExitAndSignals.read_until(fd, "ready")
                import fcntl
                import termios
                fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
                text += ExitAndSignals.read_until(fd, "got")
                text += ExitAndSignals.read_until(fd, "\n")
                _, status = os.waitpid(pid, 0)
                os.close(fd)
                self.assertIn("got 1", text)
                self.assertEqual(os.waitstatus_to_exitcode(status), 0, text)


def state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_state(pid, want, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if state(pid) in want:
            return True
        time.sleep(0.02)
    return False


class JobControl(unittest.TestCase):
    def test_stop_and_continue(self):
        """SIGTSTP to syncspy run: CMD (default action) stops, and syncspy run stops with it, as a
        shell's job would; SIGCONT to syncspy run continues both; CMD then ends as it would."""
        e = agent_env(preload=False)[0]
        # its own process group, whose parent (this test) is outside it: stops are not discarded
        p = subprocess.Popen([CLI, "run", "--", sys.executable, "-c",
                              "import sys; print('ready', flush=True); sys.stdin.readline(); print('done')"],
                             env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             preexec_fn=os.setpgrp)
        self.assertEqual(p.stdout.readline(), "ready\n")
        child = int(open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()[0])
        for stop in (signal.SIGTSTP, signal.SIGSTOP):
            with self.subTest(stop=stop.name):
                os.kill(p.pid if stop == signal.SIGTSTP else child, stop)
                self.assertTrue(wait_state(child, "T"), state(child))
                self.assertTrue(wait_state(p.pid, "T"), state(p.pid))
                os.kill(p.pid, signal.SIGCONT)
                self.assertTrue(wait_state(child, "SR"), state(child))
                self.assertTrue(wait_state(p.pid, "SR"), state(p.pid))
        out, _ = p.communicate("go\n", timeout=30)
        self.assertEqual((p.returncode, out), (0, "done\n"))


class Unwritable(unittest.TestCase):
    def test_the_folder_is_named_as_the_reason(self):
        """--out /proc/nope or /dev/null with a program that synced: the agent's warning, the
        program's output and exit status as without the agent, and a closing line that says the
        folder cannot be written (not that no process made a CUDA call)."""
        bare = run([prog("basic"), "1"], preload=False)
        for out, why in (("/proc/nope", "No such file or directory"), ("/dev/null", "Not a directory"),
                         ("/dev/null/deeper", "Not a directory")):
            with self.subTest(out=out):
                p, _ = srun("--", prog("basic"), "1", out=out)
                self.assertEqual((p.returncode, p.stdout), (bare.returncode, bare.stdout))
                self.assertIn(out, p.stderr.split("syncspy run:")[0])  # the agent's own warning
                self.assertTrue(p.stderr.endswith(
                    f"syncspy run: nothing recorded: the output folder {out} cannot be written ({why}): "
                    "give --out a folder that can\n"), p.stderr[-400:])
                self.assertNotIn("no process made a CUDA call", p.stderr)

    def test_a_writable_folder_is_left_as_it_was(self):
        """A program with no CUDA call: the old line, and the check leaves nothing behind."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "a", "b")
            p, _ = srun("--", "true", out=out)
            self.assertEqual(p.returncode, 0)
            self.assertIn("nothing recorded: no process made a CUDA call the agent saw", p.stderr)
            self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main()
