"""tests/e2e/test_layout.py: the layout is the architecture, and the arrows point one way. Each
folder's sources include only the folders below it: entry/ -> agent/ -> output/, collectors/
called by the agent and including nothing above them, common/ under every in-process layer, and
the CLI (cli/) on output/'s renderers and shared formats only. Inside agent/ the layers are
folders, each including only the layers below it: record/ (the hot path of a CUDA call) <- step/
(per step) <- background/ (the flusher thread, the files, exit) <- process/ (the lifecycle and the
step calls of the public API); a lower layer asks a higher one only through agent/record/
upcalls.h's table, never by name. Inside a folder or a layer, too, the files include one another
one way: no two modules (a .c with its .h) include each other, directly or round a loop. Every
source file opens with a comment naming itself."""
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

# agent/'s layers, lowest first: each may include its own and those before it (agent/README.md).
# agent/syncspy.h, the public C API, is a contract every layer may include; no other file lies
# in agent/ itself.
AGENT_LAYERS = ["record", "step", "background", "process"]
AGENT_PUBLIC = {"agent/syncspy.h"}
AGENT_INCLUDE = re.compile(r'^\s*#\s*include\s+"(agent/[^"]+)"', re.M)


def sources(folder):
    d = os.path.join(ROOT, folder)
    return sorted(os.path.relpath(os.path.join(dirpath, f), ROOT)
                  for dirpath, _, files in os.walk(d) for f in files if f.endswith((".c", ".h")))


def agent_layer(path):
    """The layer of an agent/ file (its index in AGENT_LAYERS), None for the public header."""
    if path in AGENT_PUBLIC:
        return None
    parts = path.split("/")
    return AGENT_LAYERS.index(parts[1]) if len(parts) == 3 and parts[1] in AGENT_LAYERS else -1


def strongly_connected(graph):
    """Tarjan's components of graph (node -> set of nodes), iteratively."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(comp)
    return out


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

    def test_agent_layers(self):
        for path in sources("agent"):
            with self.subTest(path=path):
                self.assertNotEqual(agent_layer(path), -1,
                                    f"{path} is in no layer of agent/ ({', '.join(AGENT_LAYERS)})")

    def test_agent_includes_point_down(self):
        for path in sources("agent"):
            mine = agent_layer(path)
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                text = f.read()
            for header in AGENT_INCLUDE.findall(text):
                theirs = agent_layer(header)
                if theirs is None:
                    continue
                with self.subTest(path=path, includes=header):
                    self.assertIsNotNone(mine, f"{path} (the public API) includes {header}")
                    self.assertNotEqual(theirs, -1, f"{path} includes {header}, in no layer")
                    self.assertLessEqual(theirs, mine,
                                         f"{path} ({AGENT_LAYERS[mine]}/) includes {header}, "
                                         f"a layer above it: ask through agent/record/upcalls.h")

    def test_no_include_loops(self):
        """A module is a .c with its .h; module A uses B when a file of A includes a header of
        B. No loop of uses anywhere in the in-process layers or the CLI: each is a strongly
        connected component of one module."""
        uses = {}
        for folder in ALLOWED:
            for path in sources(folder):
                mine = path[:-2]
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    text = f.read()
                deps = uses.setdefault(mine, set())
                for header, _ in INCLUDE.findall(text):
                    if header[:-2] != mine and os.path.exists(os.path.join(ROOT, header)):
                        deps.add(header[:-2])
        for loop in strongly_connected(uses):
            with self.subTest(loop=loop):
                self.assertEqual(len(loop), 1, "these modules include one another round a loop: "
                                 + ", ".join(sorted(loop)))

    def test_every_file_says_what_it_is(self):
        for folder in ALLOWED:
            for path in sources(folder):
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    first = f.readline()
                with self.subTest(path=path):
                    self.assertTrue(first.startswith(f"/* {path}:"), f"{path} opens with {first!r}")


if __name__ == "__main__":
    unittest.main()
