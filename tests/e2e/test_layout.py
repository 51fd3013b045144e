"""tests/e2e/test_layout.py: the layout is the architecture, and the arrows point one way. Each
folder's sources include only the folders below it: entry/ -> agent/ -> output/, collectors/
called by the agent and including nothing above them, common/ under every in-process layer, and
the CLI (cli/) on output/'s renderers and shared formats only. Every source file opens with a
comment naming itself."""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# folder -> the folders its sources may include from (besides itself)
ALLOWED = {
    "common": set(),
    "collectors": {"common"},
    "output": {"common"},
    "agent": {"common", "collectors", "output"},
    "entry": {"common", "agent", "output"},  # output/config.h: the variables CUPTI's loading reads
    "cli": {"output"},
}
# Nothing of the agent reaches the CLI: what the two share on purpose lives in output/ (the one
# parser of the SYNCSPY_* variables, output/config.c, with which `syncspy run` checks its
# options; the schedule; the phase counter `syncspy top` splits a thread's records with), and
# test_agent.Library checks the symbols.
ALLOWED_HEADERS = {}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(([^"/]+)/[^"]+)"', re.M)


def sources(folder):
    d = os.path.join(ROOT, folder)
    return sorted(os.path.join(folder, f) for f in os.listdir(d) if f.endswith((".c", ".h")))


class Layout(unittest.TestCase):
    def test_includes_point_down(self):
        for folder, allowed in ALLOWED.items():
            for path in sources(folder):
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    text = f.read()
                for header, used in INCLUDE.findall(text):
                    if header in ALLOWED_HEADERS.get(folder, ()):
                        continue
                    with self.subTest(path=path, includes=used):
                        self.assertIn(used, allowed | {folder},
                                      f"{path} includes from {used}/, above it")

    def test_every_file_says_what_it_is(self):
        for folder in ALLOWED:
            for path in sources(folder):
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    first = f.readline()
                with self.subTest(path=path):
                    self.assertTrue(first.startswith(f"/* {path}:"), f"{path} opens with {first!r}")


if __name__ == "__main__":
    unittest.main()
