"""tests/e2e/test_contradictions.py: a file that contradicts itself is bad input for every command
that reads it (issue 22, item 7; cli/validate.c, one check in cli/load.c): `check` and `diff`
exit 2, `report` and `export` 1 (as for any file they cannot read), each naming the file and
the contradiction in one line, never "within budget". Also `diff` of many sites across several
processes (item 4: lines matched by sorted keys) gives the same rows as line-by-line matching."""
import copy
import json
import os
import tempfile
import unittest

from test_check_cli import MS, frame, process, seed_sites, site
from test_cli import run, write

BIG = 2 ** 63


def mutations():
    """(name, change to a valid summary.json, the clause the reader must name)."""
    def set_(key, value):
        return lambda d: d.__setitem__(key, value)

    def step(i, key, value):
        return lambda d: d["steps"][i].__setitem__(key, value)

    def site_(i, key, value):
        return lambda d: d["sites"][i].__setitem__(key, value)

    def dup(d):
        d["steps"].insert(2, copy.deepcopy(d["steps"][1]))

    def threads(d):
        d["threads"] = [{"tid": 7, "name": "python", "syncs": 3, "blocked_ns": 9, "partial_count": 4,
                         "ends_steps": True}]
    return [
        ("active_steps 2^63", set_("active_steps", BIG), f"active_steps is {BIG} but it lists 6 steps"),
        ("active_steps omitted", lambda d: d.update(active_steps=9, steps_omitted=2),
         "active_steps is 9 but it lists 6 steps and says more are omitted"),
        ("syncs total", set_("syncs", 5), "its syncs total is 5 but its steps add up to 1"),
        ("wall total", set_("wall_ns", 5), "its wall_ns total is 5 but its steps add up to"),
        ("steps_seen", set_("steps_seen", 3), "step 3 is listed but steps_seen is 3"),
        ("a step twice", dup, "step 1 is listed twice"),
        ("steps out of order", step(1, "step", 9), "step 2 is listed after a later one"),
        ("partial not last", step(2, "partial", True),
         "step 2 is the step still open at exit (partial) but is not the last one listed"),
        ("start-up part", site_(0, "startup_count", 7),
         "site 1 (cudaStreamSynchronize) has 6 syncs but 7 of them in start-up"),
        ("open-step part", site_(1, "partial_blocked_ns", 3 * MS),
         "site 2 (cudaStreamSynchronize) was blocked 2000000 ns but 0 ns of it in start-up and 3000000 ns"),
        ("longest sync", site_(1, "max_ns", 3 * MS), "site 2 (cudaStreamSynchronize) has its longest sync"),
        ("no syncs, blocked", lambda d: d["sites"][1].update(count=0, max_ns=0),
         "site 2 (cudaStreamSynchronize) has no syncs but 2000000 ns blocked"),
        ("gpu idle", site_(1, "gpu_idle_syncs", 3), "site 2 (cudaStreamSynchronize) has 2 syncs but 3 of them followed by GPU idle time"),
        ("thread part", threads, "thread 7 has 3 syncs but 0 of them in start-up and 4 in the open step"),
    ]


class Contradictions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-contra-")
        self.good = process(100, seed_sites())

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_valid_file_is_read(self):
        folder = os.path.join(self.tmp.name, "ok", "pid100")
        write(os.path.join(folder, "summary.json"), self.good)
        p = run("check", "--max-syncs-per-step", "100", folder)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("within budget", p.stdout)

    def test_every_command_refuses_each(self):
        for name, change, clause in mutations():
            with self.subTest(name):
                doc = copy.deepcopy(self.good)
                change(doc)
                folder = os.path.join(self.tmp.name, name.replace(" ", "_"), "pid100")
                path = os.path.join(folder, "summary.json")
                write(path, doc)
                line = f"syncspy: {path} contradicts itself: {clause}"
                for cmd, status in ((["check", "--max-syncs-per-step", "1000"], 2),
                                    (["diff", folder], 2), (["report"], 2),
                                    (["export", "--folded", os.path.join(self.tmp.name, "f.txt")], 2)):
                    p = run(*cmd, folder)
                    self.assertEqual(p.returncode, status, (cmd, p.stdout, p.stderr))
                    self.assertNotIn("within budget", p.stdout)
                    self.assertEqual(p.stdout, "", cmd)
                    [first] = [ln for ln in p.stderr.splitlines() if "contradicts itself" in ln]
                    self.assertTrue(first.startswith(line), (first, line))
                    self.assertLessEqual(len(p.stderr.splitlines()), 2, p.stderr)  # the line and "cannot read"


class DiffAtScale(unittest.TestCase):
    def test_many_sites_over_processes(self):
        """3 processes a run, 300 lines each, spread over the processes in other orders, files under
        other checkouts: every line matched with its twin (the same rate: 'same'), the ones only
        in one run gone or new, merged lines counted once per run."""
        with tempfile.TemporaryDirectory(prefix="syncspy-diffscale-") as tmp:
            def sites(root, lines, proc):
                train = root + "/pkg/model.py"
                return [site("cudaStreamSynchronize", [frame("layer", train, ln)], 4, 4 * MS)
                        for ln in lines if ln % 3 == proc]
            for run_, root, lines in (("base", "/a/x", range(1, 301)), ("new", "/b/y/z", range(101, 401))):
                for proc in range(3):
                    ordered = sorted(lines, key=lambda ln: (ln * 7919 + proc) % 301)
                    write(os.path.join(tmp, run_, f"pid{10 + proc}", "summary.json"),
                          process(10 + proc, sites(root, ordered, proc)))
            p = run("diff", "--json", os.path.join(tmp, "base"), os.path.join(tmp, "new"))
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            kinds = {}
            for s in doc["sites"]:
                kinds.setdefault(s["change"], set()).add(s["line"])
            self.assertEqual(kinds["same"], set(range(101, 301)))
            self.assertEqual(kinds["gone"], set(range(1, 101)))
            self.assertEqual(kinds["new"], set(range(301, 401)))
            self.assertEqual(len(doc["sites"]), 400)


if __name__ == "__main__":
    unittest.main()
