"""tests/public/sync_debug_oracle.py OUT.json ROOT SCRIPT [ARGS...]: runs SCRIPT as `python SCRIPT
ARGS` would (as __main__, its folder first on sys.path, sys.argv as given) under torch's own sync
detector, torch.cuda.set_sync_debug_mode("warn"), and writes what it warned about to OUT.json:
{"warnings": [{"file", "line", "function", "count"}], "total": N, "outside": M}.

Each warning is placed at the innermost frame of the call stack that lies under ROOT (the
program's own code; torch's warning names the innermost Python frame, which for torch.save or
model.to() is torch's own file), counted once per call (the filter is "always"). `outside`
counts the warnings with no frame under ROOT. The program's stdout, stderr and exit status are
its own; the warnings are kept out of stderr. This is the oracle of tests/public/: nobody here
wrote what it says."""
import atexit
import json
import os
import runpy
import sys
import traceback
import warnings

MESSAGE = "called a synchronizing CUDA operation"


def main():
    out, root, script = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
    sys.argv = sys.argv[3:]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    counts, outside = {}, [0]
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if MESSAGE not in str(message):
            return shown(message, category, filename, lineno, file, line)
        where = None
        for fr in reversed(traceback.extract_stack()[:-1]):  # innermost first
            path = os.path.realpath(fr.filename)
            if path.startswith(root + os.sep):
                where = (path, fr.lineno, fr.name)
                break
        if where is None:
            outside[0] += 1
        else:
            counts[where] = counts.get(where, 0) + 1

    def write():
        rows = [{"file": f, "line": n, "function": fn, "count": c}
                for (f, n, fn), c in sorted(counts.items())]
        with open(out, "w") as fh:
            json.dump({"warnings": rows, "total": sum(counts.values()) + outside[0],
                       "outside": outside[0]}, fh, indent=1)

    atexit.register(write)
    warnings.showwarning = show
    warnings.filterwarnings("always", message=".*" + MESSAGE)
    import torch
    torch.cuda.set_sync_debug_mode("warn")
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
