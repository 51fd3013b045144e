#!/usr/bin/env python3
"""tests/unit/golden.py BINARY TESTFILE: runs a golden test (BINARY) with GOLDEN_DUMP=1 and writes
the texts it prints (=== NAME ... === end) into TESTFILE's /* GOLDENS... */ block as
static const char NAME[] literals. For a deliberate change of a golden text only: read the diff."""
import os
import re
import subprocess
import sys

binary, path = sys.argv[1], sys.argv[2]
r = subprocess.run([binary], env=dict(os.environ, GOLDEN_DUMP="1"), capture_output=True, text=True)
blocks = re.findall(r'=== (golden_\w+)\n(.*?)=== end\n', r.stderr, re.S)
WIDTH = 92
def esc(x):
    return x.replace('\\', '\\\\').replace('"', '\\"').replace('\x1b', '\\x1b').replace('\n', '\\n')
def chunks(line):
    # a line of the text as literals of at most WIDTH columns, cut after a space
    out, cur = [], ''
    for word in re.findall(r'\S*\s*', line):
        if not word:
            continue
        if cur and len(esc(cur + word)) > WIDTH:
            out.append(cur)
            cur = ''
        cur += word
    if cur:
        out.append(cur)
    return out
out = []
for name, body in blocks:
    lines = body.split('\n')
    parts = [l + '\n' for l in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    lits = ['    "%s"' % esc(c) for p in parts for c in chunks(p)]
    out.append('static const char %s[] =\n' % name + '\n'.join(lits) + ';')
s = open(path).read()
m = re.search(r'(/\* GOLDENS[^\n]*\n)((?:static const char golden_\w+\[\] =\n(?:    .*\n)*)+)', s)
assert m, "no GOLDENS block"
s = s[:m.start(2)] + '\n'.join(out) + '\n' + s[m.end(2):]
open(path, 'w').write(s)
print(len(blocks), "goldens")
