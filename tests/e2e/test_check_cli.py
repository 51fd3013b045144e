"""tests/e2e/test_check_cli.py: `syncspy check` and `syncspy diff` on hand-written summary.json
files: the budget per training step (start-up and the step still open at exit left out, as the
report counts), the exit status (0 within, 1 over, 2 for bad input or usage), the offending lines
named with their syncs and blocked time per step, --allow, --include-startup,
--max-blocked-share, --json, several processes, no step mark; diff's gone, new, more, fewer and
same lines matched across folders; hostile input (a clear message, exit 2, never a crash).
The same commands on real runs of the seed-003 loop: tests/torch/test_torch_budget.py."""
import json
import os
import re
import tempfile
import unittest

from test_cli import TORCH, run, write  # the same writer and runner (no crash: a signal fails)

MS = 1_000_000


def frame(function, file, line, python=True, module=""):
    return {"function": function, "module": module, "file": file, "line": line, "python": python}


def native(function, module=TORCH):
    return {"function": function, "module": module, "file": "", "line": 0, "python": False, "offset": 4660}


def site(api, frames, count, blocked_ns, startup=(0, 0), partial=(0, 0), **extra):
    s = {"api": api, "count": count, "blocked_ns": blocked_ns, "max_ns": blocked_ns // max(count, 1),
         "threads": 1, "startup_count": startup[0], "startup_blocked_ns": startup[1],
         "partial_count": partial[0], "partial_blocked_ns": partial[1], "frames": frames}
    s.update(extra)
    return s


def process(pid, sites, root="/home/u/proj", training_steps=4, step_ns=40 * MS, startup=True,
            partial=True, rank=None):
    """A process with start-up (step 0, 1 s), training steps 1..N of step_ns, and a last step still
    open at exit (partial)."""
    steps = []
    if startup:
        steps.append({"step": 0, "wall_ns": 1000 * MS, "syncs": 0, "blocked_ns": 0, "launches": 1,
                      "partial": False, "startup": True})
    first = 1 if startup else 0
    for i in range(training_steps):
        steps.append({"step": first + i, "wall_ns": step_ns, "syncs": 0, "blocked_ns": 0,
                      "launches": 10, "partial": False})
    if partial:
        steps.append({"step": first + training_steps, "wall_ns": 5 * MS, "syncs": 1, "blocked_ns": 1,
                      "launches": 1, "partial": True})
    doc = {"version": 1, "pid": pid, "rank": rank, "steps": steps, "sites": sites,
           "step_source": "optimizer.step()" if startup else None}
    doc["startup"] = {"step": 0, "wall_ns": 1000 * MS, "syncs": 0, "blocked_ns": 0, "launches": 1} \
        if startup else None
    return doc


def backward_site(train, count, blocked_ns):
    """A sync in the backward of an IndexBackward0 node created at train.py:55."""
    return site("cudaStreamSynchronize",
                [native("at::_ops::nonzero::call(at::Tensor const&)"),
                 native("torch::autograd::generated::IndexBackward0::apply(std::vector<at::Tensor>&&)"),
                 {"function": "IndexBackward0", "module": "", "file": "", "line": 0, "python": False,
                  "marker": "backward"},
                 frame("Loss.forward", train, 55), frame("main", train, 88)],
                count, blocked_ns, backward_node="IndexBackward0")


def seed_sites(root="/home/u/proj"):
    """Per training step (4 steps): 1 nonzero at train.py:61 (also 1 in start-up and 1 in the open
    step), 0.5 .item() at train.py:80, 1 backward sync of the node created at train.py:55; and
    10 copies at train.py:20 in start-up only."""
    train = root + "/train.py"
    return [
        site("cudaStreamSynchronize", [native("at::_ops::nonzero::call(at::Tensor const&)"),
                                       frame("Loss.mask", train, 61), frame("main", train, 90)],
             6, 60 * MS, startup=(1, 10 * MS), partial=(1, 10 * MS)),
        site("cudaStreamSynchronize", [native("at::native::_local_scalar_dense_cuda(at::Tensor const&)"),
                                       frame("main", train, 80)], 2, 2 * MS),
        backward_site(train, 4, 8 * MS),
        site("cudaMemcpyAsync", [native("at::native::copy_kernel_cuda(at::TensorIterator&, bool)"),
                                 frame("main", train, 20)], 10, 5 * MS, startup=(10, 5 * MS)),
    ]


def rows(out):
    """The table rows of check's text: (syncs/step, blocked/step, rest)."""
    found = []
    for line in out.splitlines():
        m = re.match(r"^\s+(\d+\.\d+|\d+)\s+(\S+ \S+)\s+(cuda\S+ .*)$", line)
        if m:
            found.append((float(m.group(1)), m.group(2), m.group(3)))
    return found


class Check(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-check-")
        self.dir = self.tmp.name
        self.proc = os.path.join(self.dir, "pid100")
        write(os.path.join(self.proc, "summary.json"), process(100, seed_sites()))

    def tearDown(self):
        self.tmp.cleanup()

    def test_over_budget_names_the_lines(self):
        p = run("check", self.proc, "--max-syncs-per-step", "0")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("syncspy check: pid 100: over budget: 2.50 syncs/step (budget 0)", p.stdout)
        self.assertIn("over 4 training steps", p.stdout)
        r = rows(p.stdout)
        # the start-up and open-step syncs of train.py:61 are not in its rate; the start-up-only
        # copies at train.py:20 are not listed
        self.assertEqual([(x[0], x[1]) for x in r], [(1.0, "10.0 ms"), (1.0, "2.00 ms"), (0.5, "500 us")])
        self.assertIn("at Loss.mask  /home/u/proj/train.py:61", r[0][2])
        self.assertIn("backward of Loss.forward  /home/u/proj/train.py:55", r[1][2])
        self.assertIn("at main  /home/u/proj/train.py:80", r[2][2])
        self.assertNotIn("train.py:20", p.stdout.split("start-up")[-1].split("\n", 1)[1])
        self.assertIn("start-up (before the first step): 11 syncs, not in the budget", p.stdout)
        self.assertIn("hint: torch.nonzero syncs", p.stdout)
        self.assertIn("syncspy check: 1 of 1 process over budget (--max-syncs-per-step 0)", p.stdout)

    def test_within_budget(self):
        p = run("check", "--max-syncs-per-step", "2.5", self.proc)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("pid 100: within budget: 2.50 syncs/step (budget 2.5)", p.stdout)
        self.assertEqual(rows(p.stdout), [])
        self.assertIn("the process is within budget", p.stdout)
        p = run("check", "--max-syncs-per-step=2.49", self.proc)
        self.assertEqual(p.returncode, 1, p.stdout)

    def test_the_numbers_are_the_reports(self):
        rep = run("report", self.proc)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        # the report's table: each group's head row, then its lines
        groups = re.split(r"\n(?=\s+\d+\s+\S+ \S+\s+\S+%)", rep.stdout)
        for line, rate in (("train.py:61", "1.00"), ("train.py:55", "1.00"), ("train.py:80", "0.50")):
            group = [g for g in groups[1:] if line in g]
            self.assertEqual(len(group), 1, (line, rep.stdout))
            self.assertEqual(group[0].split()[4], rate, group[0])  # rank, blocked (2), share, syncs
        p = run("check", self.proc, "--max-syncs-per-step", "0", "--json")
        doc = json.loads(p.stdout)
        rates = {(s["file"], s["line"], s["kind"]): s["syncs_per_step"] for s in doc["processes"][0]["sites"]}
        self.assertEqual(rates[("/home/u/proj/train.py", 61, "line")], 1.0)
        self.assertEqual(rates[("/home/u/proj/train.py", 55, "backward")], 1.0)
        self.assertEqual(rates[("/home/u/proj/train.py", 80, "line")], 0.5)
        self.assertEqual(rates[("/home/u/proj/train.py", 20, "line")], 0.0)

    def test_allow(self):
        p = run("check", self.proc, "--max-syncs-per-step", "1", "--allow", "train.py:61",
                "--allow", "proj/train.py:80")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("within budget: 1.00 syncs/step", p.stdout)
        # each allowed line once, with its API and figures, as the counted lines are shown
        self.assertIn("allowed, not counted: 1.50 syncs/step\n", p.stdout)
        allowed = p.stdout.split("allowed, not counted: 1.50 syncs/step\n")[1].splitlines()
        self.assertRegex(allowed[0], r"^ +1\.00 +\S+ \S+  cudaStreamSynchronize at Loss\.mask  /home/u/proj/train\.py:61$")
        self.assertRegex(allowed[1], r"^ +0\.50 +\S+ \S+  \S+ at main  /home/u/proj/train\.py:80$")
        self.assertEqual(len([l for l in allowed if "train.py:61" in l]), 1, p.stdout)
        # a tail must end at a '/': "ain.py" is no file's name
        p = run("check", self.proc, "--max-syncs-per-step", "1", "--allow", "ain.py:61", "--allow", "train.py:80")
        self.assertEqual(p.returncode, 1, p.stdout)
        # the backward sync is allowed by its forward line
        p = run("check", self.proc, "--max-syncs-per-step", "0", "--allow", "train.py:61", "--allow",
                "train.py:80", "--allow", "/home/u/proj/train.py:55")
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_include_startup(self):
        p = run("check", self.proc, "--max-syncs-per-step", "3", "--include-startup")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("start-up (before the first step): 11 syncs, over the budget as one step", p.stdout)
        self.assertIn("start-up: 10 x cudaMemcpyAsync, 5.00 ms, at main  /home/u/proj/train.py:20", p.stdout)
        self.assertIn("start-up: 1 x cudaStreamSynchronize, 10.0 ms, at Loss.mask  /home/u/proj/train.py:61", p.stdout)
        p = run("check", self.proc, "--max-syncs-per-step", "3", "--include-startup", "--allow", "train.py:20")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("1 sync, within the budget as one step", p.stdout)

    def test_blocked_share(self):
        # 50 ms blocked in the training steps' 160 ms: 31.25 %
        p = run("check", self.proc, "--max-blocked-share", "31.25%")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("blocked 12.5 ms/step, 31.2% of the step (budget 31.25%)", p.stdout)
        p = run("check", self.proc, "--max-blocked-share", "30")
        self.assertEqual(p.returncode, 1, p.stdout)
        p = run("check", self.proc, "--max-blocked-share", "10", "--allow", "train.py:61")
        self.assertEqual(p.returncode, 0, p.stdout)  # 10 ms of 160 ms left: 6.25 %
        p = run("check", self.proc, "--max-blocked-share", "10", "--max-syncs-per-step", "1",
                "--allow", "train.py:61")
        self.assertEqual(p.returncode, 1, p.stdout)  # 1.5 syncs/step

    def test_json(self):
        p = run("check", self.proc, "--max-syncs-per-step", "1", "--allow", "train.py:80", "--json")
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertFalse(doc["ok"])
        self.assertEqual(doc["budget"], {"max_syncs_per_step": 1.0, "max_blocked_share": None,
                                         "include_startup": False, "allow": ["train.py:80"],
                                         "settings_from": None})
        pr = doc["processes"][0]
        self.assertEqual((pr["pid"], pr["rank"], pr["ok"], pr["training_steps"]), (100, None, False, 4.0))
        self.assertEqual(pr["syncs_per_step"], 2.0)
        self.assertEqual(pr["allowed_syncs_per_step"], 0.5)
        self.assertEqual(pr["blocked_per_step_ns"], 12 * MS)
        self.assertEqual(pr["startup"], {"apart": True, "checked": False, "syncs": 11,
                                         "blocked_ns": 15 * MS, "ok": True})
        allowed = {s["line"]: s["allowed"] for s in pr["sites"]}
        self.assertEqual(allowed, {61: False, 55: False, 80: True, 20: False})
        back = [s for s in pr["sites"] if s["kind"] == "backward"][0]
        self.assertEqual((back["node"], back["function"], back["api"]), ("IndexBackward0", "Loss.forward",
                                                                         "cudaStreamSynchronize"))
        self.assertEqual(back["blocked_per_step_ns"], 2.0 * MS)

    def test_every_process_of_a_root(self):
        write(os.path.join(self.dir, "rank1-pid101", "summary.json"),
              process(101, seed_sites()[1:2], rank=1))
        write(os.path.join(self.dir, "rank0-pid102", "summary.json"), process(102, [], rank=0))
        os.rename(self.proc, os.path.join(self.dir, "rank2-pid100"))
        p = run("check", self.dir, "--max-syncs-per-step", "1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("rank 0 pid 102: within budget: 0 syncs/step", p.stdout.replace("0.00", "0"))
        self.assertIn("rank 1 pid 101: within budget: 0.50 syncs/step", p.stdout)
        self.assertIn("check: pid 100: over budget: 2.50 syncs/step", p.stdout)  # its file has no rank
        self.assertIn("1 of 3 processes over budget", p.stdout)
        p = run("check", self.dir, "--max-syncs-per-step", "3")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("every process is within budget", p.stdout)

    def test_no_step_mark(self):
        write(os.path.join(self.proc, "summary.json"),
              process(100, seed_sites()[1:2], startup=False, partial=False, training_steps=1))
        p = run("check", self.proc, "--max-syncs-per-step", "1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("2.00 syncs/step (budget 1), blocked 2.00 ms/step", p.stdout)
        self.assertIn("over 1 step (no step mark: the whole run is one step)", p.stdout)

    def test_bad_input(self):
        cases = {
            "garbage": "\x00\xff{{{",
            "truncated": json.dumps(process(100, seed_sites()))[:300],
            "wrong type": json.dumps(dict(process(100, []), steps="many")),
            "huge count": json.dumps(process(100, [site("cudaFree", [frame("f", "/a.py", 1)], 10**30, 1)])),
        }
        for name, text in cases.items():
            with self.subTest(name=name):
                write(os.path.join(self.proc, "summary.json"), text)
                p = run("check", self.proc, "--max-syncs-per-step", "0")
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn("syncspy check: cannot read", p.stderr)
                self.assertEqual(p.stdout, "")
        # no steps recorded at all
        write(os.path.join(self.proc, "summary.json"), dict(process(100, [], startup=False, partial=False,
                                                                    training_steps=0), active_steps=0))
        p = run("check", self.proc, "--max-syncs-per-step", "0")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("recorded no step", p.stderr)
        for args in (["check", os.path.join(self.dir, "missing"), "--max-syncs-per-step", "0"],
                     ["check", self.dir + "/", "--max-syncs-per-step", "0"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)

    def test_usage(self):
        for args, says in (([self.proc], "syncspy check: no budget given"),
                           (["--max-syncs-per-step", "1"], "syncspy check: missing DIR"),
                           ([self.proc, "--max-syncs-per-step", "-1"], "wants a number >= 0"),
                           ([self.proc, "--max-syncs-per-step", "1e3"], "wants a number >= 0"),
                           ([self.proc, "--max-syncs-per-step"], "--max-syncs-per-step needs a value (N)"),
                           ([self.proc, "--max-blocked-share", "101"], "percentage from 0 to 100"),
                           ([self.proc, "--max-blocked-share", "5%%"], "percentage from 0 to 100"),
                           ([self.proc, "--max-syncs-per-step", "1", "--allow", "train.py"], "FILE:LINE"),
                           ([self.proc, "--max-syncs-per-step", "1", "--allow", "train.py:0"], "FILE:LINE"),
                           ([self.proc, "--max-syncs-per-step", "1", "--bogus"], "unknown option"),
                           ([self.proc, self.proc, "--max-syncs-per-step", "1"], "one DIR")):
            with self.subTest(args=args):
                p = run("check", *args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(says, p.stderr)


class Diff(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-diff-")
        self.dir = self.tmp.name
        base_sites = seed_sites("/home/u/proj")
        # the rewrite, checked out elsewhere: the mask line gone, .item() every step (more), the
        # backward sync halved (fewer), a new sync at train.py:70; the copies the same
        train = "/ci/build/proj/train.py"
        new_sites = [
            site("cudaStreamSynchronize", [native("at::native::_local_scalar_dense_cuda(at::Tensor const&)"),
                                           frame("main", train, 80)], 4, 4 * MS),
            backward_site(train, 2, 4 * MS),
            site("cudaDeviceSynchronize", [frame("main", train, 70)], 4, 1 * MS),
            site("cudaMemcpyAsync", [native("at::native::copy_kernel_cuda(at::TensorIterator&, bool)"),
                                     frame("main", train, 20)], 10, 5 * MS, startup=(10, 5 * MS)),
        ]
        self.base = os.path.join(self.dir, "base", "pid1")
        self.new = os.path.join(self.dir, "new", "pid2")
        write(os.path.join(self.base, "summary.json"), process(1, base_sites))
        write(os.path.join(self.new, "summary.json"), process(2, new_sites, root="/ci/build/proj"))

    def tearDown(self):
        self.tmp.cleanup()

    def test_text(self):
        p = run("diff", self.base, self.new)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = p.stdout
        self.assertIn("syncs/step 2.50 -> 2.50, blocked/step 12.5 ms -> 2.25 ms", out)
        self.assertIn("start-up syncs 11 -> 10", out)
        lines = {}
        for line in out.splitlines():
            m = re.match(r"^  (gone|new|more|fewer|same)\s+(\S+) -> (\S+)\s+(.+?) -> (.+?)\s{2,}(cuda.*)$", line)
            if m:
                lines[m.group(6)] = m.groups()[:5]
        def find(text):
            hits = [v for k, v in lines.items() if text in k]
            self.assertEqual(len(hits), 1, (text, out))
            return hits[0]
        self.assertEqual(find("train.py:61"), ("gone", "1.00", "-", "10.0 ms", "-"))
        self.assertEqual(find("at main  /ci/build/proj/train.py:80"), ("more", "0.50", "1.00", "500 us", "1.00 ms"))
        self.assertEqual(find("backward of Loss.forward"), ("fewer", "1.00", "0.50", "2.00 ms", "1.00 ms"))
        self.assertEqual(find("cudaDeviceSynchronize at main  /ci/build/proj/train.py:70"),
                         ("new", "-", "1.00", "-", "250 us"))
        self.assertNotIn("train.py:20", out)  # start-up only
        self.assertIn("syncspy diff: 1 gone, 1 new, 1 more, 1 fewer, 0 the same", out)
        same = run("diff", self.base, self.base)
        self.assertIn("syncspy diff: 0 gone, 0 new, 0 more, 0 fewer, 3 the same", same.stdout)

    def test_json(self):
        p = run("diff", "--json", self.base, self.new)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["base"]["syncs_per_step"], 2.5)
        self.assertEqual(doc["new"]["training_steps"], 4.0)
        self.assertEqual(doc["new"]["startup_syncs"], 10)
        by = {(s["change"], s["line"]): s for s in doc["sites"]}
        self.assertEqual(set(by), {("gone", 61), ("more", 80), ("fewer", 55), ("new", 70)})
        self.assertIsNone(by[("gone", 61)]["new"])
        self.assertEqual(by[("gone", 61)]["base"], {"syncs_per_step": 1.0, "blocked_per_step_ns": 10.0 * MS})
        self.assertIsNone(by[("new", 70)]["base"])
        self.assertEqual(by[("more", 80)]["delta_syncs_per_step"], 0.5)
        self.assertEqual(by[("fewer", 55)]["kind"], "backward")

    def test_bad_input_and_usage(self):
        write(os.path.join(self.new, "summary.json"), "{\"version\": 1, \"pid\": ")
        p = run("diff", self.base, self.new)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("syncspy diff: cannot read", p.stderr)
        self.assertEqual(p.stdout, "")
        for args, says in (([self.base], "syncspy diff: missing BASE and NEW"),
                           ([self.base, self.base, self.base], "one more"),
                           (["--bogus", self.base, self.base], "unknown option")):
            p = run("diff", *args)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(says, p.stderr)


if __name__ == "__main__":
    unittest.main()
