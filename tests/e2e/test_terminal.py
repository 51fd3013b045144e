"""tests/e2e/test_terminal.py: a received summary.json or trace.bin whose names carry terminal
control sequences (a title set with ESC ] 0 ; ... BEL, the clipboard written with OSC 52, the
screen cleared with ESC [ 2 J, BEL, CR, DEL, the C1 controls NEL and CSI as U+0085/U+009B and a
raw 0x9b byte) in function, file, module, thread, operator and node names and in a source line:
every command that prints them (report, check, diff, top, export --folded to stdout, html -o -)
writes no control byte but its own newlines, and with SYNCSPY_COLOR=always no escape sequence
but its own SGR colour; JSON stays JSON whose strings read back as they were; non-ASCII names
are kept as they are."""
import json
import os
import re
import subprocess
import tempfile
import unittest

from test_check_cli import frame, native, process, site
from test_cli import write
from tracegen import FEATURE_LAUNCHES, FEATURE_PYTHON, MS, Trace
from util import CLI

TITLE = "\x1b]0;pwned\x07"
CLIP = "\x1b]52;c;cm0gLXJmIH4=\x07"
CLEAR = "\x1b[2J\x1b[H"
C1 = "\u009b31m\u0085"
FN = "Loss.mask" + TITLE + CLEAR + "\x07\r" + C1 + "\x7f"
NODE = "Index" + TITLE + "Backward0"
OP = "aten::nonzero" + CLEAR
THREAD = "py" + CLIP + "thon\r"
MODULE = "/venv/lib/libt" + CLEAR + "orch\x07.so"
UNICODE = "übung_λ"  # a non-ASCII identifier: kept as it is
# a source line with a raw CSI byte (0x9b, not UTF-8) and the C1 CSI written as UTF-8
SOURCE_LINE = (b"keep = torch.nonzero(m)  # \x1b]0;pwned\x07\x1b[2J\x9b2J\xc2\x9b2J\x07\x7f"
               b"\r x\tz \xc3\xbcbung\n")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def shown_problems(data, colour):
    """The bytes of data a terminal would act on: every C0 control but the newline, DEL, the C1
    controls (as UTF-8) and bytes that are not UTF-8; with colour, escape sequences other than
    SGR (ESC [ digits ; m). Returns a list of what was found (empty: clean)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"not UTF-8 at byte {e.start}: {data[max(0, e.start - 20):e.start + 20]!r}"]
    if colour:
        text = SGR.sub("", text)
    bad = [(i, c) for i, c in enumerate(text)
           if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
    return [f"{c!r} at {i}: {text[max(0, i - 30):i + 30]!r}" for i, c in bad[:5]]


def json_strings(doc):
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from json_strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from json_strings(v)


class TerminalInjection(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-term-")
        d = self.tmp.name
        self.src = os.path.join(d, "proj", "tr\x1b[2Jain.py")  # a file name with ESC on disk
        os.makedirs(os.path.dirname(self.src))
        with open(self.src, "wb") as f:
            f.write(b"\n" * 54 + (b"    " + SOURCE_LINE) * 7 + b"\n" * 40)  # lines 55..61
        self.base, self.new = os.path.join(d, "base"), os.path.join(d, "new")
        write(os.path.join(self.base, "pid100", "summary.json"), self.summary(100, 4))
        write(os.path.join(self.new, "pid200", "summary.json"), self.summary(200, 8))
        self.traced = os.path.join(d, "traced", "pid300")
        self.trace().write(os.path.join(self.traced, "trace.bin"))

    def tearDown(self):
        self.tmp.cleanup()

    def summary(self, pid, n):
        sites = [
            site("cudaStreamSynchronize", [native("at::_ops::nonzero::call(at::Tensor const&)", MODULE),
                                           frame(FN, self.src, 61), frame(UNICODE, self.src, 90)],
                 n, n * MS, op=OP),
            site("cudaStreamSynchronize" + TITLE,
                 [native("at::_ops::nonzero::call(at::Tensor const&)"),
                  {"function": NODE, "module": "", "file": "", "line": 0, "python": False,
                   "marker": "backward"},
                  frame("Loss.forward" + CLEAR, self.src, 55), frame(UNICODE, self.src, 88)],
                 n, 2 * n * MS, backward_node=NODE),
            site("cudaMemcpy", [native("lo\x1b[2Jss_fn" + TITLE, MODULE)], n, 3 * n * MS),
        ]
        doc = process(pid, sites, training_steps=4)
        doc["threads"] = [{"tid": pid, "name": THREAD, "syncs": 3 * n, "blocked_ns": 6 * n * MS,
                           "startup_count": 0, "startup_blocked_ns": 0, "partial_count": 0,
                           "partial_blocked_ns": 0, "ends_steps": True}]
        doc["host"] = "node" + TITLE
        # torch.compile's recompilations: Dynamo's words and the function's names are file data
        doc["recompiles"] = [{"function": "Net.forward" + TITLE, "file": self.src, "line": 54, "count": 2,
                              "in_steps": 1, "reason": "size mismatch\x1b[2J\nexpected 3" + TITLE}]
        return doc

    def trace(self):
        """The same kind of names as raw bytes in a trace.bin (a raw 0x9b too)."""
        t = Trace(pid=300, features=FEATURE_LAUNCHES | FEATURE_PYTHON)
        t.thread(100, THREAD.encode() + b"\x9b")
        nz = t.frame("at::_ops::nonzero::call(at::Tensor const&)", module=MODULE.encode() + b"\x9b",
                     offset=0x1234)
        fn = t.frame(FN.encode() + b"\x9b2J", file=self.src, line=61, python=True)
        un = t.frame(UNICODE, file=self.src, line=90, python=True)
        s1 = t.stack([nz, fn, un])
        t.step(0, 0, 10 * MS, active=False)
        for step in (1, 2, 3):
            base = step * 40 * MS
            t.sync("cudaStreamSynchronize", base + 2 * MS, 5 * MS, tid=100, stack=s1, step=step)
            t.site_totals("cudaStreamSynchronize", s1, step, 5 * MS * step, 5 * MS, site_id=1)
            t.step(step, base, base + 30 * MS, syncs=1, blocked_ns=5 * MS, launches=1)
        t.end(200 * MS)
        return t

    def cli(self, *args, colour=False):
        env = dict(os.environ, SYNCSPY_COLOR="always" if colour else "never")
        env.pop("NO_COLOR", None)
        p = subprocess.run([CLI, *args], capture_output=True, timeout=60, env=env)
        self.assertGreaterEqual(p.returncode, 0, p.stderr)  # no crash
        return p

    def assert_clean(self, p, colour=False, what=""):
        for name, data in (("stdout", p.stdout), ("stderr", p.stderr)):
            problems = shown_problems(data, colour)
            self.assertEqual(problems, [], f"{what} {name}")

    def test_report_check_diff_show_no_control_byte(self):
        for colour in (False, True):
            with self.subTest(colour=colour):
                runs = {
                    "report": self.cli("report", self.base, colour=colour),
                    "report trace": self.cli("report", self.traced, colour=colour),
                    "check": self.cli("check", self.base, "--max-syncs-per-step", "0", colour=colour),
                    "check trace": self.cli("check", self.traced, "--max-syncs-per-step", "0",
                                            colour=colour),
                    "diff": self.cli("diff", self.base, self.new, colour=colour),
                    "diff trace": self.cli("diff", self.traced, self.new, colour=colour),
                }
                for what, p in runs.items():
                    self.assert_clean(p, colour, what)
                rep = runs["report"]
                self.assertEqual(rep.returncode, 0, rep.stderr)
                self.assertEqual(runs["check"].returncode, 1, runs["check"].stderr)
                self.assertEqual(runs["diff"].returncode, 0, runs["diff"].stderr)
                out = rep.stdout.decode()
                # what was there is shown, escaped: the source line, the name, the thread
                self.assertIn("\\x1b]0;pwned\\x07", out)
                self.assertIn("\\x1b[2J", out)
                self.assertIn("\\x9b2J\\u009b2J", out)  # raw 0x9b byte, then U+009B
                self.assertIn("\\x7f\\r x\\tz übung", out)
                self.assertIn(UNICODE, out)
                self.assertIn("\\u009b31m\\u0085", out)
                self.assertIn("recompiled 1 time after start-up", out)
                self.assertIn("size mismatch\\x1b[2J\\nexpected 3\\x1b]0;pwned\\x07", out)
                if colour:  # the tool's own colour still works
                    self.assertRegex(out, r"\x1b\[1m")
                for what in ("report trace", "check", "diff"):
                    self.assertIn("\\x1b", runs[what].stdout.decode(), what)

    def test_top_export_html_show_no_control_byte(self):
        for colour in (False, True):
            for args in (("top", "--once", self.base), ("top", "--once", self.traced),
                         ("export", "--folded", "-", self.base),
                         ("export", "--folded", "-", self.traced),
                         ("html", self.base, "-o", "-")):
                with self.subTest(colour=colour, args=args):
                    p = self.cli(*args, colour=colour)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assert_clean(p, colour, " ".join(args))
        folded = self.cli("export", "--folded", "-", self.traced).stdout.decode()
        self.assertIn(UNICODE, folded)
        self.assertIn("\\x9b2J", folded)

    def test_json_outputs_escape_and_read_back(self):
        for args in (("check", self.base, "--max-syncs-per-step", "0", "--json"),
                     ("diff", self.base, self.new, "--json"),
                     ("export", "--chrome", "-", self.traced)):
            with self.subTest(args=args):
                p = self.cli(*args)
                self.assertIn(p.returncode, (0, 1), p.stderr)
                self.assert_clean(p, False, " ".join(args))
                doc = json.loads(p.stdout.decode())  # valid JSON, \u escapes
                strings = list(json_strings(doc))
                # the names read back as they were in the file
                self.assertTrue(any(MODULE in x or FN in x for x in strings), strings)


if __name__ == "__main__":
    unittest.main()


class PathsInErrorLines(unittest.TestCase):
    """Paths in the CLI's error lines on stderr are file data too: a process folder named with
    ESC ] 0 ; ... BEL and ESC [ 2 J (as anyone may make one in a shared SYNCSPY_OUT), missing,
    empty, or holding a bad trace.bin or summary.json, given to report and check (and under a
    root, for the folder's own files): stderr carries no control byte but its newlines, and
    names the folder escaped (`\\x1b]0;pwned\\x07`)."""

    def test_error_lines_escape_the_folder_name(self):
        with tempfile.TemporaryDirectory(prefix="syncspy-term-paths-") as tmp:
            root = os.path.join(tmp, "root" + CLEAR)
            bad_trace = os.path.join(root, "pid7" + TITLE)
            os.makedirs(bad_trace)
            with open(os.path.join(bad_trace, "trace.bin"), "wb") as f:
                f.write(b"SYNCSPY\0" + b"\xff" * 40)
            bad_summary = os.path.join(tmp, "pid8" + TITLE)
            os.makedirs(bad_summary)
            with open(os.path.join(bad_summary, "summary.json"), "w") as f:
                f.write('{"version": 1, "pid": 8, "steps": [')
            empty = os.path.join(tmp, "empty" + TITLE)
            os.makedirs(empty)
            missing = os.path.join(tmp, "missing" + TITLE + "\x07")
            for d in (root, bad_trace, bad_summary, empty, missing):
                for args in (["report"], ["check", "--max-syncs-per-step", "1"]):
                    with self.subTest(dir=d, cmd=args[0]):
                        r = subprocess.run([CLI, *args, d], capture_output=True, timeout=60)
                        self.assertNotEqual(r.returncode, 0)
                        self.assertTrue(r.stderr, d)
                        self.assertEqual(shown_problems(r.stderr, False), [], r.stderr)
                        self.assertIn(b"\\x1b", r.stderr)
