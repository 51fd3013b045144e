"""Issue 35 items 6 and 1 on real torch (tests/torch/progs/copy_and_sync.py): a line whose syncs
come through a copy and the synchronize after it (`x.cpu()`) is one row with one number in
every output (the report, `check --json`, `syncspy html` in chromium, `syncspy top --once`), and
the chart's legend names it once; a row where two operators synced (`a, b = x.sum().item(),
bool((x > 0).all())`) lists both, heaviest first, each with its own syncs/step, blocked time
and hint, in html and top as check --json has them."""
import glob
import json
import os
import re
import shutil
import tempfile
import unittest

import harness
import util

PROG = "copy_and_sync.py"


def rate(v):
    """report_format_rate: three significant digits."""
    return f"{v:.2f}" if v < 9.995 else f"{v:.1f}" if v < 99.95 else f"{v:.0f}"


class OneRow(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="syncspy-onerow-")
        out = os.path.join(cls.tmp, "out")
        r = harness.run(PROG, 20, env={"SYNCSPY_OUT": out, "SYNCSPY_REPORT": "off"})
        assert r.returncode == 0, r.stderr
        cls.dir = glob.glob(os.path.join(out, "pid*"))[0]
        cls.marks = harness.marked_lines(PROG)
        p = harness.cli("report", "--top", "20", cls.dir)
        assert p.returncode == 0, p.stderr
        cls.report = p.stdout
        p = harness.cli("check", "--json", "--max-syncs-per-step", "1000", cls.dir)
        assert p.returncode == 0, p.stderr
        cls.check = [s for s in json.loads(p.stdout)["processes"][0]["sites"] if s["syncs_per_step"] > 0]
        cls.page = os.path.join(cls.tmp, "page.html")
        p = harness.cli("html", cls.dir, "-o", cls.page)
        assert p.returncode == 0, p.stderr
        cls.shot = os.path.join(cls.tmp, "page.png")
        cls.seen = util.browse(cls.page, "--screenshot", cls.shot, "--at", "#run-sites")
        if os.environ.get("SYNCSPY_KEEP_SHOT"):  # to look at it: SYNCSPY_KEEP_SHOT=PATH
            shutil.copy(cls.shot, os.environ["SYNCSPY_KEEP_SHOT"])
        p = harness.cli("top", "--once", cls.dir)
        assert p.returncode == 0, p.stderr
        cls.top = p.stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def at(self, name):
        return rf"{re.escape(PROG)}:{self.marks[name]}\b"

    def check_site(self, name):
        [site] = [s for s in self.check if s["line"] == self.marks[name]]
        return site

    def html_rows(self, name):
        return [r for r in self.seen["rows"] if r["data"]["lineno"] == str(self.marks[name])]

    def top_rows(self, name):
        return re.findall(rf"(?m)^\s*(\d+|-)\s+.*?\s(cuda\S+(?: x\d+)?(?:, cuda\S+ x\d+)*) at \S+\s+\S*{self.at(name)}$",
                          self.top)

    def test_page_loads_offline_without_errors(self):
        self.assertIsNotNone(self.seen["load_ms"])
        self.assertEqual(self.seen["console"], [])
        self.assertEqual(self.seen["requests"], ["file://" + os.path.abspath(self.page)])

    def test_a_copy_and_its_synchronize_are_one_row_with_one_number(self):
        g = harness.group_at(self.report, PROG, self.marks["copy"])
        self.assertIsNotNone(g, self.report)
        self.assertIn("cudaMemcpyAsync x", g["head"])
        self.assertIn("cudaStreamSynchronize x", g["head"])
        number = g["rank"]
        site = self.check_site("copy")  # one row of check's: both APIs in it
        self.assertEqual(site["row"], number)
        self.assertEqual({a["api"] for a in site["apis"]}, {"cudaMemcpyAsync", "cudaStreamSynchronize"})
        head = g["head"].split()  # "1  327 us  26.6%  2.00  163 us ..."
        self.assertEqual(rate(site["syncs_per_step"]), head[4])
        [row] = self.html_rows("copy")  # one row of the page's, numbered as the report
        self.assertEqual(row["cells"][0], str(number))
        self.assertIn("cudaMemcpyAsync x", row["cells"][6])
        self.assertIn("cudaStreamSynchronize x", row["cells"][6])
        self.assertEqual(row["cells"][3], head[4])  # syncs/step as the report prints it
        [(num, apis)] = self.top_rows("copy")  # one row of top's, numbered as the report
        self.assertEqual(num, str(number), self.top)
        self.assertIn("cudaMemcpyAsync x", apis)

    def test_every_row_is_numbered_alike(self):
        groups = [g for g in harness.report_groups(self.report) if g["at"]]  # not start-up's lines
        by_line = {}
        for g in groups:
            m = re.search(rf"{re.escape(PROG)}:(\d+)\b", g["at"] or "")
            if m and not g["backward"]:
                by_line[int(m.group(1))] = g["rank"]
        self.assertEqual(set(by_line), {self.marks[k] for k in ("copy", "item", "two")})
        self.assertEqual({s["line"]: s["row"] for s in self.check if s["kind"] == "line"}, by_line)
        self.assertEqual({int(r["data"]["lineno"]): int(r["cells"][0]) for r in self.seen["rows"]
                          if r["data"]["kind"] == "line"}, by_line)
        self.assertEqual(len(self.seen["rows"]), len(groups))
        for name, line in self.marks.items():
            self.assertEqual([n for n, _ in self.top_rows(name)], [str(by_line[line])], self.top)

    def test_the_legend_names_each_row_once(self):
        legend = self.seen["chart"]["legend"]
        for name in ("copy", "item", "two"):
            entries = re.findall(rf"#(\d+) \S+ {self.at(name)}", legend)
            self.assertEqual(entries, [str(self.check_site(name)["row"])], legend)

    def test_a_row_lists_every_op_in_html(self):
        site = self.check_site("two")
        self.assertEqual({o["op"] for o in site["ops"]}, {"Tensor.item", "Tensor.__bool__"})
        [row] = self.html_rows("two")
        ops = [o for o in self.seen["op_rows"] if o["data"]["line"] == row["data"]["line"]]
        self.assertEqual([o["data"]["op"] for o in ops], [o["op"] for o in site["ops"]])  # heaviest first
        for shown, want in zip(ops, site["ops"]):
            self.assertAlmostEqual(float(shown["data"]["syncsPerStep"]), want["syncs_per_step"], places=5)
            self.assertAlmostEqual(float(shown["data"]["blockedPerStepNs"]), want["blocked_per_step_ns"], places=2)
            self.assertEqual(shown["cells"][3], rate(want["syncs_per_step"]))
            self.assertEqual(shown["hint"], want["hint"])
        # a row of one op shows it in the row itself, with no sub-rows
        [item] = self.html_rows("item")
        self.assertEqual(item["op"], "Tensor.item")
        self.assertFalse([o for o in self.seen["op_rows"] if o["data"]["line"] == item["data"]["line"]])

    def test_a_row_lists_every_op_in_top(self):
        site = self.check_site("two")
        start = re.search(rf"(?m)^.*{self.at('two')}$", self.top).end()
        block = self.top[start:].split("\n")[1:1 + len(site["ops"])]
        for shown, want in zip(block, site["ops"]):
            m = re.match(r"^\s+op (\S+)  (\S+) syncs/step  (\S+ \S+)/step  hint: (.*)$", shown)
            self.assertIsNotNone(m, self.top)
            self.assertEqual(m.group(1), want["op"])
            self.assertEqual(m.group(2), rate(want["syncs_per_step"]))
            self.assertEqual(m.group(4), want["hint"])


if __name__ == "__main__":
    unittest.main()
