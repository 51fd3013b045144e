"""tests/e2e/test_schemas.py: the JSON syncspy writes and prints, validated against the JSON Schemas
in docs/schemas/ (issue 38 item 2): summary.json as the agent writes it, `check --json`, `diff
--json` and the data `syncspy html` embeds in its page, from real runs of the agent on test
programs (one process and a SYNCSPY_OUT root of several), each with its version. The same on real
torch: tests/torch/test_html_demo.py. jsonschema is the validator (Debian's python3-jsonschema,
or the interpreter's own: scripts/deps.sh); without it this fails saying so."""
import glob
import json
import os
import re
import subprocess
import unittest

from util import CLI, ROOT, prog, run

SCHEMAS = os.path.join(ROOT, "docs", "schemas")

try:
    import jsonschema
except ImportError:  # Debian's python3 and its python3-jsonschema (scripts/deps.sh) do it
    jsonschema = None
DEBIAN_PYTHON = "/usr/bin/python3"
# run by Debian's python3: validates stdin's document against argv[1], prints the first error
VALIDATOR = """
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(json.load(sys.stdin)),
                key=lambda e: list(e.path))
if errors:
    print("%s at %s (%d errors)" % (errors[0].message, list(errors[0].path), len(errors)))
"""


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


def validate(doc, name):
    """Raises with the first error's path when doc does not follow docs/schemas/NAME.schema.json."""
    path = os.path.join(SCHEMAS, name + ".schema.json")
    if jsonschema is None:
        p = subprocess.run([DEBIAN_PYTHON, "-c", VALIDATOR, path], input=json.dumps(doc),
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError("no jsonschema here nor in %s (scripts/deps.sh installs "
                               "python3-jsonschema): %s" % (DEBIAN_PYTHON, p.stderr[-500:]))
        if p.stdout.strip():
            raise AssertionError("%s: %s" % (name, p.stdout.strip()))
        return
    with open(path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        raise AssertionError("%s: %s at %s (%d errors)" % (name, e.message, list(e.path), len(errors)))


def html_data(path):
    with open(path, encoding="utf-8") as f:
        page = f.read()
    m = re.search(r'<script id="syncspy-data" type="application/json">(.*?)</script>', page, re.S)
    assert m, "no data block in " + path
    return json.loads(m.group(1))


def validate_outputs(test, folder, other=None, tmp=None):
    """summary.json of each process under folder, check --json, diff --json (folder against
    other, or itself) and html's data, each against its schema with its version."""
    summaries = glob.glob(os.path.join(folder, "**", "summary.json"), recursive=True) or \
        [os.path.join(folder, "summary.json")]
    for path in summaries:
        with open(path) as f:
            doc = json.load(f)
        test.assertEqual(doc["version"], 1)
        validate(doc, "summary")
    c = cli("check", "--json", "--max-syncs-per-step", "1000", folder)
    test.assertIn(c.returncode, (0, 1), c.stderr)
    doc = json.loads(c.stdout)
    test.assertEqual(doc["version"], 1)
    validate(doc, "check")
    d = cli("diff", "--json", folder, other or folder)
    test.assertEqual(d.returncode, 0, d.stderr)
    doc = json.loads(d.stdout)
    test.assertEqual(doc["version"], 1)
    validate(doc, "diff")
    page = os.path.join(tmp or folder, "schema-page.html")
    h = cli("html", "-o", page, folder)
    test.assertEqual(h.returncode, 0, h.stderr)
    doc = html_data(page)
    test.assertEqual(doc["version"], 1)
    validate(doc, "html-data")
    os.unlink(page)


class Schemas(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.a = run([prog("steps_fast"), "40"], env={"SYNCSPY_REPORT": "off"})
        cls.b = run([prog("shares")], env={"SYNCSPY_REPORT": "off"})

    def folder(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        [d] = [os.path.join(r.out_dir, x) for x in os.listdir(r.out_dir)]
        return d

    def test_one_process_follows_the_schemas(self):
        validate_outputs(self, self.folder(self.a), self.folder(self.b), tmp=self.a.out_dir)

    def test_a_root_of_several_follows_the_schemas(self):
        root = run([prog("fork_cuda")], env={"SYNCSPY_REPORT": "off"})
        self.assertEqual(root.returncode, 0, root.stderr)
        self.assertGreaterEqual(len(os.listdir(root.out_dir)), 2)
        validate_outputs(self, root.out_dir, self.folder(self.a), tmp=self.a.out_dir)

    def test_the_schemas_refuse_what_they_must(self):
        # a validator that passes everything would pass the tests above: these must fail
        with open(os.path.join(self.folder(self.a), "summary.json")) as f:
            doc = json.load(f)
        bad = dict(doc, version=2)
        with self.assertRaises(AssertionError):
            validate(bad, "summary")
        bad = dict(doc, sites=[dict(doc["sites"][0], count=-1)])
        with self.assertRaises(AssertionError):
            validate(bad, "summary")
        c = json.loads(cli("check", "--json", "--max-syncs-per-step", "9", self.folder(self.a)).stdout)
        del c["processes"][0]["sites"]
        with self.assertRaises(AssertionError):
            validate(c, "check")


if __name__ == "__main__":
    unittest.main()
