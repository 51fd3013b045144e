"""tests/e2e/test_colour.py: colour in the report (SYNCSPY_COLOR=auto|always|never, NO_COLOR,
TERM=dumb): the agent's exit report is coloured when its stderr is a terminal (a pty here), the
CLI's `syncspy report` when its stdout is; a pipe or a file gets the very bytes it got before
(no escape; the coloured text less its escapes is the plain text)."""
import os
import re
import select
import subprocess
import tempfile
import unittest

from util import CLI, agent_env, prog

SGR = re.compile(r"\x1b\[[0-9;]*m")


def on_pty(argv, env, which="stderr"):
    """Runs argv with stderr (or stdout) on a pseudo-terminal; returns (status, the terminal's text
    with its \\r\\n as \\n, the other stream)."""
    master, slave = os.openpty()
    kw = {which: slave, "stdout" if which == "stderr" else "stderr": subprocess.PIPE}
    p = subprocess.Popen(argv, env=env, **kw)
    os.close(slave)
    buf = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side is closed
                break
            if not chunk:
                break
            buf += chunk
        elif p.poll() is not None:
            break
    pipe = p.stdout if which == "stderr" else p.stderr
    other = pipe.read()
    pipe.close()
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, buf.decode(errors="replace").replace("\r\n", "\n"), other.decode(errors="replace")


class ExitReport(unittest.TestCase):
    def run_on_pty(self, extra=None):
        e, _ = agent_env(extra)
        e.setdefault("TERM", "xterm")
        if extra and "TERM" in extra:
            e["TERM"] = extra["TERM"]
        e.pop("NO_COLOR", None)
        if extra and "NO_COLOR" in extra:
            e["NO_COLOR"] = extra["NO_COLOR"]
        status, text, _ = on_pty([prog("basic"), "2"], e)
        self.assertEqual(status, 3)
        self.assertIn("syncspy: pid", text)
        return text

    def test_coloured_on_a_terminal(self):
        text = self.run_on_pty()
        self.assertRegex(text, r"\x1b\[1msyncspy: pid \d+: ")
        self.assertIn("\x1b[32mhint:\x1b[0m", text)
        self.assertIn("\x1b[1mloss_fn\x1b[0m", text)  # the user line's function

    def test_no_colour_when_asked(self):
        for extra in ({"NO_COLOR": "1"}, {"SYNCSPY_COLOR": "never"}, {"TERM": "dumb"},
                      {"SYNCSPY_COLOR": "never", "NO_COLOR": ""}):
            with self.subTest(**extra):
                self.assertNotIn("\x1b[", self.run_on_pty(extra))
        # always wins over NO_COLOR
        self.assertIn("\x1b[1msyncspy: pid", self.run_on_pty({"SYNCSPY_COLOR": "always", "NO_COLOR": "1"}))

    def test_pipe_gets_no_colour_unless_always(self):
        e, _ = agent_env()
        e["TERM"] = "xterm"
        p = subprocess.run([prog("basic"), "2"], env=e, capture_output=True, text=True)
        self.assertIn("syncspy: pid", p.stderr)
        self.assertNotIn("\x1b", p.stderr)
        e2, _ = agent_env({"SYNCSPY_COLOR": "always"})
        q = subprocess.run([prog("basic"), "2"], env=e2, capture_output=True, text=True)
        self.assertIn("\x1b[1msyncspy: pid", q.stderr)


class CliReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        e, cls.out = agent_env({"SYNCSPY_REPORT": "off"})
        subprocess.run([prog("basic"), "3"], env=e, capture_output=True, check=False)

    def env(self, **extra):
        e = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "SYNCSPY_COLOR")}
        e["TERM"] = "xterm"
        e.update(extra)
        return e

    def test_pipe_bytes_unchanged_and_colour_only_adds_escapes(self):
        plain = subprocess.run([CLI, "report", self.out], env=self.env(), capture_output=True, text=True)
        never = subprocess.run([CLI, "report", self.out], env=self.env(SYNCSPY_COLOR="never"), capture_output=True,
                               text=True)
        always = subprocess.run([CLI, "report", self.out], env=self.env(SYNCSPY_COLOR="always"), capture_output=True,
                                text=True)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertNotIn("\x1b", plain.stdout)
        self.assertEqual(plain.stdout, never.stdout)
        self.assertIn("\x1b[", always.stdout)
        self.assertEqual(SGR.sub("", always.stdout), plain.stdout)
        with tempfile.NamedTemporaryFile("w+") as f:  # a file, as a shell's > makes it
            subprocess.run([CLI, "report", self.out], env=self.env(), stdout=f, check=True)
            f.seek(0)
            self.assertEqual(f.read(), plain.stdout)

    def test_terminal_stdout(self):
        plain = subprocess.run([CLI, "report", self.out], env=self.env(), capture_output=True, text=True).stdout
        status, text, _ = on_pty([CLI, "report", self.out], self.env(), which="stdout")
        self.assertEqual(status, 0)
        self.assertRegex(text, r"^\x1b\[1msyncspy: pid \d+")
        self.assertEqual(SGR.sub("", text), plain)
        status, text, _ = on_pty([CLI, "report", self.out], self.env(NO_COLOR="1"), which="stdout")
        self.assertEqual(text, plain)

    def test_bad_value_warned_as_the_agent_does(self):
        p = subprocess.run([CLI, "report", self.out], env=self.env(SYNCSPY_COLOR="rainbow"), capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("syncspy: SYNCSPY_COLOR='rainbow' is not auto, always or never; using auto\n", p.stderr)
        self.assertNotIn("\x1b", p.stdout)


if __name__ == "__main__":
    unittest.main()
