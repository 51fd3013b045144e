"""tests/e2e/test_budget.py: sync budgets with the agent preloaded. The public C API
(agent/syncspy.h's syncspy_tally_*) from a C program that looks it up with dlsym, as one that must
also run without the agent does (tests/progs/budget.c): a region's syncs per thread and site,
named by file:line, another thread's apart, nothing counted outside the region, the schedule's
unrecorded steps; and python/syncspy's budget() on the miniature torch (tests/e2e/pyprogs/budget.py):
within budget, over it (the line named, with its count and hint), allow-lists, a deliberate sync
in another thread (not counted for threads="this", counted and named for threads="all"), nested
regions, AgentNotLoaded without the agent, NotRecorded under a schedule. The pytest plugin and
real torch: tests/torch/test_torch_budget.py."""
import json
import os
import re
import subprocess
import unittest

import util

BUDGET_C = os.path.join(util.ROOT, "tests", "progs", "budget.c")
BUDGET_PY = os.path.join(util.PYPROGS, "budget.py")


def tallies(stdout):
    """[(scope, tid, syncs, [api, kind, file, line, function, module, node, hint])]"""
    out = []
    for line in stdout.splitlines():
        m = re.match(r"^tally (this|all) (\d+) (\d+) (.*)$", line)
        if m:
            out.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4).split("|")))
    return out


def at_line(rows, scope, line):
    return sum(r[2] for r in rows if r[0] == scope and r[3][2].endswith("tests/progs/budget.c")
               and int(r[3][3]) == line)


class CApi(unittest.TestCase):
    def test_a_region_by_thread_and_line(self):
        r = util.run([util.prog("budget")], env={"SYNCSPY_REPORT": "off"})
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = tallies(r.stdout)
        three = util.source_line(BUDGET_C, "budget: three")
        one = util.source_line(BUDGET_C, "budget: one")
        other = util.source_line(BUDGET_C, "budget: other")
        # this thread: 3 at three, 1 at one (the one_sync before and after the region not
        # counted), nothing of the other thread
        self.assertEqual(at_line(rows, "this", three), 3, r.stdout)
        self.assertEqual(at_line(rows, "this", one), 1, r.stdout)
        self.assertEqual(at_line(rows, "this", other), 0, r.stdout)
        self.assertEqual(sum(x[2] for x in rows if x[0] == "this"), 4, r.stdout)
        # all threads: the other thread's 2 as well, under its own tid
        self.assertEqual(at_line(rows, "all", other), 2, r.stdout)
        self.assertEqual(sum(x[2] for x in rows if x[0] == "all"), 6, r.stdout)
        main_tid = {x[1] for x in rows if x[0] == "this"}
        other_tids = {x[1] for x in rows if x[0] == "all" and int(x[3][3]) == other}
        self.assertEqual(len(main_tid), 1)
        self.assertEqual(len(other_tids), 1)
        self.assertNotEqual(main_tid, other_tids)
        # each site named: API, kind, function, the program as its module, a hint where one applies
        for scope, tid, n, f in rows:
            self.assertEqual(len(f), 8, f)
            self.assertEqual(f[1], "line")
            self.assertTrue(f[5].endswith("/progs/budget"), f)
        names = {int(f[3]): (f[0], f[4], f[7]) for _, _, _, f in rows}
        self.assertEqual(names[three][:2], ("cudaStreamSynchronize", "three_syncs"))
        self.assertEqual(names[one][:2], ("cudaDeviceSynchronize", "one_sync"))
        self.assertIn("synchronize", names[one][2])
        self.assertEqual(names[other][1], "other_thread_syncs")
        self.assertIn("tallies after the region: 0", r.stdout)

    def test_without_the_agent(self):
        r = util.run([util.prog("budget")], preload=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "no agent")
        self.assertEqual(r.process_dirs(), [])

    def test_unrecorded_steps(self):
        # wait=1,active=1: step 0 not recorded, step 1 recorded, step 2 not
        r = util.run([util.prog("budget"), "steps"],
                     env={"SYNCSPY_REPORT": "off", "SYNCSPY_SCHEDULE": "wait=1,active=1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), ["recording 0 unrecorded 1", "recording 1 unrecorded 1",
                                                 "recording 0 unrecorded 2"])
        r = util.run([util.prog("budget"), "steps"], env={"SYNCSPY_REPORT": "off"})
        self.assertEqual(r.stdout.splitlines(), ["recording 1 unrecorded 0"] * 3)


class PythonPackage(unittest.TestCase):
    """The package as Python users expect one (issue 38 item 5): __version__ (the agent's and the
    program's), a namespace of its own names only (no ctypes or namedtuple), the context manager a
    CapWords class (Budget) made by the function budget(), type hints and py.typed, on every
    local CPython the package supports."""

    CODE = ("import json, typing, syncspy\n"
            "b = syncspy.budget(1, allow='train.py:3')\n"
            "print(json.dumps({'version': syncspy.__version__, 'all': sorted(syncspy.__all__),\n"
            "  'public': sorted(n for n in dir(syncspy) if not n.startswith('_')),\n"
            "  'made': type(b).__name__, 'is': isinstance(b, syncspy.Budget), 'max': b.max_syncs,\n"
            "  'hints': {k: str(v) for k, v in typing.get_type_hints(syncspy.counts).items()},\n"
            "  'budget_hints': sorted(typing.get_type_hints(syncspy.budget)),\n"
            "  'fields': list(syncspy.Counts._fields)}))\n")

    def test_version_namespace_and_hints(self):
        with open(os.path.join(util.ROOT, "cli", "version.h")) as f:
            version = re.search(r'#define SYNCSPY_VERSION "([^"]+)"', f.read()).group(1)
        with open(os.path.join(util.ROOT, "python", "pyproject.toml")) as f:
            self.assertIn(f'version = "{version}"', f.read())
        self.assertTrue(os.path.isfile(os.path.join(util.ROOT, "python", "syncspy", "py.typed")))
        cli = subprocess.run([util.CLI, "--version"], capture_output=True, text=True, timeout=30)
        self.assertEqual(cli.stdout.strip(), f"syncspy {version}")
        for (major, minor), py in sorted(util.local_pythons().items()):
            if minor < 9:  # requires-python >= 3.9 (python/pyproject.toml)
                continue
            with self.subTest(python=py):
                r = util.run([py, "-c", self.CODE], env={"PYTHONPATH": util.PY_MODULES}, preload=False)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = json.loads(r.stdout)
                self.assertEqual(got["version"], version)
                self.assertEqual(got["public"], sorted(n for n in got["all"] if n != "__version__"))
                self.assertNotIn("ctypes", got["public"])
                self.assertNotIn("namedtuple", got["public"])
                self.assertEqual((got["made"], got["is"], got["max"]), ("Budget", True, 1))
                self.assertEqual(sorted(got["hints"]), ["return", "scope"])
                self.assertEqual(got["budget_hints"], ["allow", "max_syncs", "name", "return", "threads"])
                self.assertEqual(got["fields"], ["syncs", "blocked_ns", "step", "recording"])


class PythonBudget(unittest.TestCase):
    def run_case(self, *args, env=None, preload=True):
        e = {"SYNCSPY_REPORT": "off"}
        e.update(env or {})
        return util.run_py(BUDGET_PY, *args, env=e, preload=preload)

    def test_within_budget(self):
        r = self.run_case("clean")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "passed 0"), r.stderr)

    def test_over_budget_names_the_line(self):
        r = self.run_case("over")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        line = util.source_line(BUDGET_PY, "# sync: nonzero")
        self.assertIn("exceeded 2", r.stdout)
        self.assertIn("made 2 host-device syncs (this thread and autograd's), more than its budget of 1", r.stdout)
        self.assertRegex(r.stdout, r"2 x cudaStreamSynchronize at two_nonzero  \S*pyprogs/budget.py:%d, " % line)
        self.assertIn("hint: torch.nonzero syncs", r.stdout)

    def test_allowed_line(self):
        line = util.source_line(BUDGET_PY, "# sync: nonzero")
        r = self.run_case("allow", str(line))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.split(), ["allowed", "2", "passed", "0"])
        # another line allowed: the syncs count
        r = self.run_case("allow", str(line + 1))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("exceeded 2", r.stdout)
        # the counts do not depend on the budget: under a budget with room the allowed syncs are
        # still allowed (not counted), and another line's still counted
        for room in ("1", "5"):
            r = self.run_case("allow", str(line), room)
            self.assertEqual((r.returncode, r.stdout.split()), (0, ["allowed", "2", "passed", "0"]),
                             r.stdout + r.stderr)
        r = self.run_case("allow", str(line + 1), "5")
        self.assertEqual((r.returncode, r.stdout.split()), (0, ["allowed", "0", "passed", "2"]),
                         r.stdout + r.stderr)

    def test_another_threads_deliberate_sync(self):
        r = self.run_case("thread")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "passed 0"), r.stdout + r.stderr)
        r = self.run_case("all")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        line = util.source_line(BUDGET_PY, "# sync: other")
        self.assertIn("made 1 host-device sync (all threads)", r.stdout)
        self.assertRegex(r.stdout, r"1 x cudaDeviceSynchronize at other_thread  \S*pyprogs/budget.py:%d, .* tid \d+\]"
                         % line)

    def test_nested_regions(self):
        r = self.run_case("nested")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines(), ["inner exceeded 2", "passed 3"])

    def test_step_marks_inside(self):
        r = self.run_case("steps")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "passed 0"), r.stderr)

    def test_a_child_forked_inside(self):
        r = self.run_case("fork")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)  # the parent's region
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 2, r.stdout)
        self.assertIn("passed 0", lines)
        child = [line for line in lines if line != "passed 0"][0]
        self.assertRegex(child, r"^error: NotRecorded: syncspy.budget: this region began in process \d+ "
                                r"before a fork; the syncs of this child \(pid \d+\) in it were not counted$")

    def test_without_the_agent(self):
        r = self.run_case("clean", preload=False)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("error: AgentNotLoaded: syncspy.budget: the syncspy agent is not loaded", r.stdout)

    def test_unrecorded_steps(self):
        r = self.run_case("steps", env={"SYNCSPY_SCHEDULE": "wait=1,active=1"})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("error: NotRecorded: syncspy.budget: this region ran in steps that "
                      "SYNCSPY_SCHEDULE does not record", r.stdout)


if __name__ == "__main__":
    unittest.main()
