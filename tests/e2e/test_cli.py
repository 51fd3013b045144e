"""tests/e2e/test_cli.py: the `syncspy` command on hand-written summary.json files: report of one
process and of a SYNCSPY_OUT root with two ranks, bad input (clear message, non-zero exit, no
crash), usage errors, and both exports (folded stacks, Chrome trace JSON)."""
import json
import os
import subprocess
import tempfile
import unittest

CLI = os.path.join(os.environ.get("BUILD", "build"), "syncspy")

TORCH = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"


def summary(pid, rank=None, sites=None, steps=None, **extra):
    """A summary.json document as DESIGN.md describes it."""
    if steps is None:
        steps = [{"step": s, "wall_ns": 40_000_000, "syncs": 3, "blocked_ns": 12_000_000,
                  "launches": 200, "partial": False} for s in range(2, 6)]
    if sites is None:
        sites = [
            {"api": "cudaStreamSynchronize", "count": 8, "blocked_ns": 40_000_000,
             "max_ns": 6_000_000, "frames": [
                 {"function": "at::_ops::nonzero::call(at::Tensor const&)", "module": TORCH,
                  "file": "", "line": 0, "python": False, "offset": 4660},
                 {"function": "MaskedLoss.ignore_background", "module": "",
                  "file": "/home/u/proj/train.py", "line": 61, "python": True},
                 {"function": "MaskedLoss.forward", "module": "",
                  "file": "/home/u/proj/train.py", "line": 70, "python": True},
             ]},
            {"api": "cudaMemcpy", "count": 4, "blocked_ns": 8_000_000, "max_ns": 3_000_000,
             "frames": [
                 {"function": "loss_fn(float*, int)", "module": "/home/u/train",
                  "file": "train.cpp", "line": 42, "python": False, "offset": 4352},
                 {"function": "main", "module": "/home/u/train", "file": "train.cpp",
                  "line": 120, "python": False, "offset": 4864},
             ]},
        ]
    doc = {"version": 1, "pid": pid, "rank": rank, "steps": steps, "sites": sites}
    doc.update(extra)
    return doc


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    # a signal (a crash) shows as a negative return code
    assert p.returncode >= 0, f"syncspy {args} died of signal {-p.returncode}: {p.stderr}"
    return p


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-cli-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    # ---- report --------------------------------------------------------------------------

    def test_report_process_folder(self):
        write(self.path("pid4242", "summary.json"),
              summary(4242, schedule="wait=1,warmup=1,active=4"))
        p = run("report", self.path("pid4242"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        out = p.stdout
        self.assertIn("syncspy: pid 4242: 6 step marks (schedule: wait=1,warmup=1,active=4)\n"
                      "  4 steps counted (the schedule records 4 of 6)\n", out)
        # 160 ms wall, 48 ms blocked, 12 syncs (from the steps: no totals in the file)
        self.assertIn("step 40.0 ms median (mean 40.0 ms, sd 0 ns) | 3.00 syncs/step | blocked 12.0 ms/step (30.0%)", out)
        # heaviest group first, at the user frame, with its hint
        self.assertLess(out.index("MaskedLoss.ignore_background"), out.index("loss_fn"))
        self.assertIn("10.0 ms", out)
        self.assertIn("/home/u/proj/train.py:61", out)
        self.assertIn("[matched: aten::nonzero]", out)
        self.assertIn("train.cpp:42", out)
        self.assertIn("(train)", out)

    def test_report_summary_file_and_top(self):
        write(self.path("pid7", "summary.json"), summary(7))
        p = run("report", "--top", "1", self.path("pid7", "summary.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("MaskedLoss.ignore_background", p.stdout)
        self.assertNotIn("loss_fn", p.stdout)
        self.assertIn("(1 more site, 2.00 ms/step together", p.stdout)
        p = run("report", "--top=5", self.path("pid7"))
        self.assertIn("loss_fn", p.stdout)

    def test_top_has_the_agents_range(self):
        """--top and SYNCSPY_TOP accept what the agent's SYNCSPY_TOP accepts: 1..1000
        (output/report.h, REPORT_TOP_MAX), one range for both."""
        write(self.path("pid7", "summary.json"), summary(7))
        p = run("report", "--top", "1000", self.path("pid7"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("loss_fn", p.stdout)
        p = run("report", "--top", "1001", self.path("pid7"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("--top wants a whole number from 1 to 1000, not '1001'", p.stderr)
        env = dict(os.environ, SYNCSPY_TOP="1001")
        p = subprocess.run([CLI, "report", self.path("pid7")], capture_output=True, text=True,
                           timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "syncspy: SYNCSPY_TOP='1001' is not a whole number from 1 to "
                                   "1000; using 10\n")
        env["SYNCSPY_TOP"] = "1000"
        p = subprocess.run([CLI, "report", self.path("pid7")], capture_output=True, text=True,
                           timeout=60, env=env)
        self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_report_root_two_ranks(self):
        one_site = summary(101, rank=1)["sites"][1:]
        write(self.path("out", "rank1-pid101", "summary.json"),
              summary(101, rank=1, sites=one_site))
        write(self.path("out", "rank0-pid100", "summary.json"), summary(100, rank=0))
        os.makedirs(self.path("out", "not-a-process"))
        p = run("report", self.path("out"))
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        self.assertLess(out.index("syncspy: rank 0 pid 100:"),
                        out.index("syncspy: rank 1 pid 101:"))
        self.assertIn("hotspots of all 2 processes", out)
        self.assertEqual(out.count("blocked/step"), 1)  # one merged table
        self.assertIn("in all 2 processes", out)        # loss_fn: both ranks
        self.assertIn("in 1 of 2 processes: rank 0", out)
        # 40 ms over 8 process-steps
        self.assertIn("5.00 ms", out)

    def test_report_root_with_a_bad_rank(self):
        write(self.path("out", "rank0-pid100", "summary.json"), summary(100, rank=0))
        good = json.dumps(summary(101, rank=1))
        write(self.path("out", "rank1-pid101", "summary.json"), good[: len(good) // 2])
        os.makedirs(self.path("out", "rank2-pid102"))
        p = run("report", self.path("out"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("syncspy: rank 0 pid 100:", p.stdout)
        self.assertIn("rank1-pid101/summary.json ends early at byte", p.stderr)
        self.assertIn("rank2-pid102 has no trace.bin and no summary.json", p.stderr)
        self.assertIn("2 problems reading", p.stderr)

    def test_report_no_syncs(self):
        write(self.path("pid5", "summary.json"), summary(5, sites=[], steps=[
            {"step": 0, "wall_ns": 1000, "syncs": 0, "blocked_ns": 0}]))
        p = run("report", self.path("pid5"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("syncspy: pid 5: no step found: whole-run totals\n", p.stdout)
        self.assertIn("no host-device syncs in 1 recorded step\n", p.stdout)

    def test_bad_files(self):
        cases = {
            "truncated": (json.dumps(summary(1))[:100], "ends early at byte 100"),
            "empty": ("", "is empty"),
            "newer": (json.dumps(dict(summary(1), version=3)),
                      "summary.json version 3 is newer than this syncspy understands (1)"),
            "foreign": ('{"traceEvents": []}', 'no "version" field'),
            "garbage": ("\x00\x01binary\xff", "does not start with '{'"),
            "wrong type": (json.dumps(dict(summary(1), pid="12")), '"pid"'),
            "deep": ('{"version": 1, "x": ' + "[" * 100000, "nested deeper than 64"),
        }
        for name, (text, message) in cases.items():
            with self.subTest(name):
                folder = self.path(name.replace(" ", "_"))
                write(os.path.join(folder, "summary.json"), text)
                p = run("report", folder)
                self.assertEqual(p.returncode, 2)  # nothing could be read: bad input
                self.assertEqual(p.stdout, "")
                self.assertIn(message, p.stderr)
                self.assertIn(os.path.join(folder, "summary.json"), p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertNotIn("Traceback", p.stderr)

    def test_missing_and_empty_dirs(self):
        # bad input, the same exit status and message for every command that reads a DIR
        os.makedirs(self.path("empty"))
        good = self.path("good", "pid3")
        write(os.path.join(good, "summary.json"), summary(3))
        for name, message in (("nope", "No such file or directory"), ("empty", "is it a SYNCSPY_OUT folder?")):
            d = self.path(name)
            for args in (("report", d), ("export", "--folded", self.path("f.txt"), d),
                         ("export", "--chrome", self.path("c.json"), d),
                         ("check", "--max-syncs-per-step", "1", d), ("diff", d, good), ("diff", good, d),
                         ("html", "-o", self.path("p.html"), d)):
                with self.subTest(args=args):
                    p = run(*args)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertEqual(p.stdout, "")
                    self.assertIn(message, p.stderr)
                    self.assertNotIn("Traceback", p.stderr)

    # ---- usage ---------------------------------------------------------------------------

    def test_usage(self):
        # no command, or an unknown one: every command's usage
        for args in [(), ("frobnicate",)]:
            with self.subTest(args=args):
                p = run(*args)
                self.assertEqual(p.returncode, 2)
                self.assertIn("usage: syncspy run", p.stderr)
                self.assertIn("syncspy report [--top N]", p.stderr)
                self.assertEqual(p.stdout, "")
        # a command's usage error: its own usage only
        for args in [("report",), ("report", "--top", "0", "x"), ("report", "--top", "abc", "x"),
                     ("report", "--bogus", "x"), ("report", "a", "b"), ("export", "x"),
                     ("export", "--folded"), ("export", "--folded", "o", "--chrome", "p", "x")]:
            with self.subTest(args=args):
                p = run(*args)
                self.assertEqual(p.returncode, 2)
                self.assertTrue(p.stderr.startswith(f"syncspy {args[0]}: "), p.stderr)
                self.assertIn(f"usage: syncspy {args[0]} ", p.stderr)
                self.assertNotIn("syncspy run", p.stderr)
                self.assertEqual(p.stdout, "")

    def test_help_and_version(self):
        p = run("--version")
        self.assertEqual((p.returncode, p.stdout), (0, "syncspy 0.1.0\n"))
        p = run("--help")
        self.assertEqual(p.returncode, 0)
        for command in ("report [--top N] [--color WHEN] DIR", "export --chrome OUT DIR",
                        "check --max-syncs-per-step N", "diff [--json] BASE NEW", "html [-o FILE] [--top N] DIR",
                        "top [--interval SECONDS] [--once] DIR", "completion bash|zsh", "exit status", "trace.bin"):
            self.assertIn(command, p.stdout)
        # each command's --help is its own: its usage and section, none of the others'
        own = {"report": "report [--top N] [--color WHEN] DIR", "export": "export --chrome OUT DIR",
               "check": "--max-syncs-per-step N", "diff": "diff [--json] BASE NEW", "html": "html [-o FILE]"}
        for cmd, text in own.items():
            with self.subTest(cmd=cmd):
                p = run(cmd, "--help")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(p.stdout.startswith("usage: syncspy " + cmd), p.stdout)
                self.assertIn(text, p.stdout)
                for other, other_text in own.items():
                    if other != cmd:
                        self.assertNotIn(other_text, p.stdout)

    # ---- export --------------------------------------------------------------------------

    def test_export_folded(self):
        write(self.path("pid9", "summary.json"), summary(9))
        out = self.path("stacks.folded")
        p = run("export", "--folded", out, self.path("pid9"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(out + ".tmp"))
        with open(out, encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertEqual(lines, [
            "MaskedLoss.forward (/home/u/proj/train.py:70);"
            "MaskedLoss.ignore_background (/home/u/proj/train.py:61);"
            "at::_ops::nonzero::call;cudaStreamSynchronize 40000000",
            "main;loss_fn;cudaMemcpy 8000000",
        ])
        for line in lines:  # the format: stack, one space, an integer weight
            stack, weight = line.rsplit(" ", 1)
            self.assertTrue(weight.isdigit())
            self.assertNotIn("\n", stack)
        # start-up left out, as the report leaves it out; --include-startup keeps it
        steps = [{"step": 0, "wall_ns": 50_000_000, "syncs": 3, "blocked_ns": 15_000_000, "launches": 0,
                  "partial": False, "startup": True}] + \
                [{"step": k, "wall_ns": 40_000_000, "syncs": 3, "blocked_ns": 15_000_000, "launches": 0,
                  "partial": False} for k in (1, 2)]
        sites = summary(9)["sites"]
        sites[0].update(count=8, blocked_ns=40_000_000, startup_count=2, startup_blocked_ns=10_000_000)
        sites[1].update(count=1, blocked_ns=5_000_000, startup_count=1, startup_blocked_ns=5_000_000)
        write(self.path("st", "pid9", "summary.json"),
              summary(9, sites=sites, steps=steps, syncs=9, steps_seen=3,
                      startup={"step": 0, "wall_ns": 50_000_000, "syncs": 3, "blocked_ns": 15_000_000,
                               "launches": 0}))
        p = run("export", "--folded=-", self.path("st", "pid9"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([l.rsplit(" ", 1)[1] for l in p.stdout.splitlines()], ["30000000"], p.stdout)
        p = run("export", "--folded=-", "--include-startup", self.path("st", "pid9"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([l.rsplit(" ", 1)[1] for l in p.stdout.splitlines()], ["40000000", "5000000"], p.stdout)
        p = run("export", "--chrome=-", "--include-startup", self.path("st", "pid9"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("--include-startup goes with --folded", p.stderr)
        # several processes: one subtree per process; - is stdout
        write(self.path("root", "rank0-pid1", "summary.json"), summary(1, rank=0))
        write(self.path("root", "pid2", "summary.json"), summary(2))
        p = run("export", "--folded=-", self.path("root"))
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 4)
        self.assertTrue(lines[0].startswith("rank0-pid1;MaskedLoss.forward"))
        self.assertTrue(lines[3].startswith("pid2;main;loss_fn;cudaMemcpy "))

    def test_export_chrome(self):
        steps = [{"step": 3, "wall_ns": 1_500_000, "syncs": 2, "blocked_ns": 500_000,
                  "launches": 7, "partial": False},
                 {"step": 4, "wall_ns": 2_000_500, "syncs": 1, "blocked_ns": 100,
                  "launches": 9, "partial": True}]
        write(self.path("rank0-pid77", "summary.json"), summary(77, rank=0, steps=steps))
        out = self.path("trace.json")
        p = run("export", "--chrome", out, self.path("rank0-pid77"))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as f:
            trace = json.load(f)
        events = trace["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        self.assertEqual([e["name"] for e in slices], ["step 3", "step 4"])
        self.assertEqual([e["ts"] for e in slices], [0, 1500])
        self.assertEqual([e["dur"] for e in slices], [1500, 2000.5])
        self.assertEqual(slices[0]["args"], {"step": 3, "syncs": 2, "blocked_ns": 500000,
                                             "launches": 7, "active": True, "partial": False})
        self.assertTrue(slices[1]["args"]["partial"])
        self.assertTrue(all(e["pid"] == 77 for e in events if "pid" in e))
        names = [e["args"]["name"] for e in events if e.get("name") == "process_name"]
        self.assertEqual(names, ["rank 0 pid 77"])

    def test_export_bad_input_and_unwritable_output(self):
        write(self.path("pid1", "summary.json"), "{")
        p = run("export", "--chrome", self.path("t.json"), self.path("pid1"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("ends early", p.stderr)
        self.assertFalse(os.path.exists(self.path("t.json")))
        write(self.path("pid2", "summary.json"), summary(2))
        p = run("export", "--folded", self.path("no", "such", "dir", "x"), self.path("pid2"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot create", p.stderr)


if __name__ == "__main__":
    unittest.main()
