"""Real PyTorch over the simulated device: the native frames of the seed-003 loop's sites are
named as their libraries' symbol tables name them. The symbolizer keeps an index of each
table and reads a name from the file when it is first asked for, never the tables themselves
(issue 16: libtorch_cpu.so's and libtorch_cuda.so's string tables are 78 and 73 MB), so a name
read at the wrong offset, cut short or from a file that changed would show here. The oracle is
nm (binutils), which reads .symtab on its own, and libstdc++'s __cxa_demangle, which the agent
also uses: for every native frame in these libraries, the function is the demangled name of a
function symbol that covers the frame's offset, and a frame such a symbol covers always has a
name. file:line of the libpython frames: from its DWARF, as libdw would give them (the unit
test test_symbolize compares the two at every address of its fixtures)."""
import bisect
import ctypes
import os
import shutil
import subprocess
import unittest

import harness

STEPS = 6
LIBS = ("libtorch_cpu.so", "libtorch_cuda.so", "libtorch_python.so", "libc10.so")
FUNC_TYPES = set("TtWwi")  # nm's letters for code: global, local, weak, indirect


def demangler():
    lib = ctypes.CDLL("libstdc++.so.6")
    libc = ctypes.CDLL(None)
    fn = lib.__cxa_demangle
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    libc.free.argtypes = [ctypes.c_void_p]

    def demangle(name):
        if name.startswith("_Z"):
            status = ctypes.c_int(-1)
            p = fn(name.encode(), None, None, ctypes.byref(status))
            if p:
                text = ctypes.string_at(p).decode()
                libc.free(p)
                if status.value == 0:
                    return text
        at = name.find("@")
        return name[:at] if at > 0 else name
    return demangle


def function_symbols(path):
    """[(start, end or None, mangled name)] of .symtab's code symbols, sorted by start."""
    out = subprocess.run(["nm", "--defined-only", "-S", "-P", path], capture_output=True,
                         text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] not in FUNC_TYPES:
            continue
        start = int(parts[2], 16)
        size = int(parts[3], 16) if len(parts) > 3 else 0
        if start:
            syms.append((start, start + size if size else None, parts[0]))
    syms.sort(key=lambda s: s[0])
    return syms


def candidates(syms, starts, offset):
    """The names that may name offset: sized symbols that cover it (nested ones included) and
    unsized ones at the nearest start at or before it (they run to the next symbol)."""
    names = set()
    i = bisect.bisect_right(starts, offset)
    for start, end, name in syms[max(0, i - 64):i]:
        if (end is not None and offset < end) or (end is None and start == starts[i - 1]):
            names.add(name)
    return names


@unittest.skipUnless(shutil.which("nm"), "nm (binutils) is needed as the oracle")
class NativeNames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = harness.run(harness.DEMO, "--steps", STEPS, "--log-every", 0)
        cls.s = cls.r.summary()

    def frames(self):
        for site in self.s["sites"]:
            for f in site["frames"]:
                if not f["python"]:
                    yield f

    def test_torch_frames_named_as_their_symbol_tables(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        demangle = demangler()
        by_lib = {}
        for f in self.frames():
            base = os.path.basename(f["module"])
            if base in LIBS:
                by_lib.setdefault(f["module"], []).append(f)
        self.assertIn("libtorch_cpu.so", {os.path.basename(m) for m in by_lib}, by_lib.keys())
        self.assertIn("libtorch_cuda.so", {os.path.basename(m) for m in by_lib}, by_lib.keys())
        checked = 0
        for module, frames in by_lib.items():
            syms = function_symbols(module)
            starts = [s[0] for s in syms]
            for f in frames:
                names = {demangle(n) for n in candidates(syms, starts, f["offset"])}
                where = "%s+%#x" % (os.path.basename(module), f["offset"])
                if names:
                    self.assertIn(f["function"], names, where)
                    checked += 1
                else:
                    self.assertIsNone(f["function"], where + ": named, but no symbol covers it")
        self.assertGreater(checked, 20)

    def test_libpython_frames_have_lines(self):
        py = [f for f in self.frames() if "libpython" in os.path.basename(f["module"])]
        with_line = [f for f in py if f.get("file") and f.get("line")]
        self.assertEqual(bool(with_line), bool(py), py[:3])  # none: a static interpreter
        for f in with_line:
            self.assertTrue(f["file"].endswith((".c", ".h")), f)
            self.assertGreater(f["line"], 0, f)


if __name__ == "__main__":
    unittest.main()
