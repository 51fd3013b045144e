"""tests/e2e/test_docs.py: the docs stay reference (issue 37 item 3). README.md is at most 150
lines and starts with the set-up commands; every SYNCSPY_* variable output/config.c parses has a
line in docs/CONFIG.md, and so has every option of every `syncspy CMD --help`; every key of
summary.json (top level, a site, a frame) that the agent writes is named in docs/OUTPUTS.md, as
is every field of the JSON Schemas; the README's links lead to files. Each check first proves it
can fail: it must find what it looks for in the real sources and must report a doc that lacks
one."""
import glob
import json
import os
import re
import subprocess
import unittest

from util import CLI, ROOT, prog, run


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def config_variables():
    """The SYNCSPY_* variables output/config.c parses: its config_variables table and every
    variable it reads, whichever way."""
    src = read("output/config.c")
    table = re.search(r"config_variables\[\]\s*=\s*\{(.*?)\};", src, re.S).group(1)
    names = set(re.findall(r'"(SYNCSPY_[A-Z0-9_]+)"', table))
    return names | set(re.findall(r'"(SYNCSPY_[A-Z0-9_]+)"', src))


def documented_variables(doc):
    """Variables with a row of their own in a table: a line that begins with | `NAME` |."""
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", doc, re.M))


def commands():
    """The commands `syncspy --help` lists."""
    p = subprocess.run([CLI, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    block = p.stdout.split("Commands:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  ([a-z]+)\s", block, re.M)


def help_options(cmd):
    """Every option `syncspy CMD --help` lists: '--name' and '-x' forms."""
    p = subprocess.run([CLI, cmd, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    block = p.stdout.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    opts = []
    for line in block.splitlines():
        m = re.match(r"^  (-\w, )?(--[\w-]+)", line)
        if m:
            opts.append(m.group(2))
            if m.group(1):
                opts.append(m.group(1)[:2])
    return opts


def missing_options(doc, cmd, opts):
    """The options of cmd that doc does not name, within its section `### syncspy CMD`."""
    m = re.search(r"^### syncspy %s\b.*?(?=^## |^### |\Z)" % re.escape(cmd), doc, re.M | re.S)
    if not m:
        return list(opts)
    section = m.group(0)
    return [o for o in opts if not re.search(r"`%s[`\s=\[|]" % re.escape(o), section)]


def named_fields(doc):
    """Every `word` in backticks of doc (field names are written so)."""
    return set(re.findall(r"`([a-z_][a-z0-9_]*)", doc))


def schema_fields(node, out):
    if isinstance(node, dict):
        for k, v in (node.get("properties") or {}).items():
            out.add(k)
            schema_fields(v, out)
        for v in node.values():
            if isinstance(v, (dict, list)):
                schema_fields(v, out)
    elif isinstance(node, list):
        for v in node:
            schema_fields(v, out)
    return out


def readme_links(text):
    """Relative links of the README: [..](path) and bare docs/*.md mentions."""
    links = re.findall(r"\]\(([^)#\s]+)", text)
    links += re.findall(r"\b(docs/[\w./-]+\.(?:md|png|json))", text)
    return sorted({l for l in links if not re.match(r"[a-z]+://", l)})


class Readme(unittest.TestCase):
    def test_short_and_starts_with_setup(self):
        text = read("README.md")
        lines = text.splitlines()
        self.assertLessEqual(len(lines), 150, "README.md is %d lines" % len(lines))
        body = [l for l in lines[1:] if l.strip()]
        self.assertTrue(lines[0].startswith("# "), lines[0])
        self.assertTrue(body[0].startswith("    make demo"), "README's first line after the title: %r" % body[0])
        first_block = []
        for l in lines[1:]:
            if first_block and not l.startswith("    "):
                break
            if l.startswith("    "):
                first_block.append(l)
        self.assertTrue(any(l.startswith("    make test ") for l in first_block), first_block)
        makefiles = ["Makefile"] + [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "*", "*.mk"))]
        targets = set()
        for mk in makefiles:
            targets |= set(re.findall(r"(?m)^([a-z][\w-]*)\s*:(?!=)", read(mk)))
        for target in ("demo", "test"):
            self.assertTrue(target in targets, "no make target %s for README's first commands" % target)

    def test_links_resolve(self):
        links = readme_links(read("README.md"))
        self.assertGreaterEqual(len(links), 5, links)
        for link in links:
            with self.subTest(link=link):
                self.assertTrue(os.path.exists(os.path.join(ROOT, link)), "README links to %s: no such file" % link)
        self.assertIn("docs/NOWHERE.md", [l for l in readme_links("see [x](docs/NOWHERE.md)")
                                          if not os.path.exists(os.path.join(ROOT, l))])


class Config(unittest.TestCase):
    def test_every_variable_has_a_line(self):
        names = config_variables()
        self.assertGreaterEqual(len(names), 15, names)  # the parser's table was found
        doc = read("docs/CONFIG.md")
        have = documented_variables(doc)
        for name in sorted(names):
            with self.subTest(variable=name):
                self.assertIn(name, have, "docs/CONFIG.md has no table row for %s" % name)
        # the check can fail: a doc without SYNCSPY_GPU's row misses it
        cut = "\n".join(l for l in doc.splitlines() if not l.startswith("| `SYNCSPY_GPU`"))
        self.assertNotIn("SYNCSPY_GPU", documented_variables(cut))

    def test_every_option_of_every_help(self):
        cmds = commands()
        self.assertGreaterEqual(len(cmds), 9, cmds)
        doc = read("docs/CONFIG.md")
        total = 0
        for cmd in cmds:
            opts = help_options(cmd)
            total += len(opts)
            with self.subTest(command=cmd):
                self.assertIn("--help", opts)
                self.assertEqual(missing_options(doc, cmd, opts), [],
                                 "docs/CONFIG.md's `### syncspy %s` lacks these options of its --help" % cmd)
        self.assertGreaterEqual(total, 40)
        # the check can fail: an option the doc does not have
        self.assertEqual(missing_options(doc, "top", ["--no-such-option"]), ["--no-such-option"])
        self.assertEqual(missing_options(doc, "no-such-command", ["--help"]), ["--help"])


class Outputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.run_ = run([prog("steps_fast"), "40"], env={"SYNCSPY_REPORT": "off"})

    def summary(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        [path] = glob.glob(os.path.join(self.run_.out_dir, "*", "summary.json"))
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def test_every_summary_key_is_documented(self):
        s = self.summary()
        keys = set(s)
        self.assertGreaterEqual(len(keys), 25, keys)
        site_keys = set().union(*(set(x) for x in s["sites"]))
        frame_keys = set().union(*(set(f) for x in s["sites"] for f in x.get("frames", [])))
        self.assertTrue(site_keys and frame_keys)
        fields = named_fields(read("docs/OUTPUTS.md"))
        for key in sorted(keys | site_keys | frame_keys):
            with self.subTest(key=key):
                self.assertTrue(key in fields, "summary.json's %r is not in docs/OUTPUTS.md" % key)
        self.assertNotIn("no_such_key", fields)

    def test_every_schema_field_is_documented(self):
        fields = named_fields(read("docs/OUTPUTS.md"))
        doc = read("docs/OUTPUTS.md")
        schemas = sorted(glob.glob(os.path.join(ROOT, "docs", "schemas", "*.schema.json")))
        self.assertEqual(len(schemas), 4, schemas)
        for path in schemas:
            name = os.path.basename(path)
            self.assertIn("(schemas/%s)" % name, doc, "docs/OUTPUTS.md does not link %s" % name)
            with open(path, encoding="utf-8") as f:
                props = schema_fields(json.load(f), set())
            self.assertGreater(len(props), 5)
            for key in sorted(props):
                with self.subTest(schema=name, field=key):
                    self.assertTrue(key in fields, "%s's %r is not in docs/OUTPUTS.md" % (name, key))


if __name__ == "__main__":
    unittest.main()
