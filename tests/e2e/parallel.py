"""tests/e2e/parallel.py: runs test files `jobs` at a time, each in a runner of its own, and
prints their outputs whole in the files' order with one closing line "LABEL: N passed, M failed"
(tests/e2e/runner.py E2E_JOBS, tests/torch/runner.py TORCH_JOBS). A runner that dies without its
closing line counts one failure."""
import re
import subprocess
import sys
import tempfile
import time


def run_files(cmd, files, jobs, env, label):
    """cmd + [file name] runs one file's tests and ends with the closing line; returns the exit
    status of the whole: 0 when nothing failed and something passed."""
    running, results, passed, failed = [], {}, 0, 0
    pending = list(files)
    while pending or running:
        while pending and len(running) < jobs:
            name = pending.pop(0)
            log = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: nothing waits on a reader
            running.append((name, log, subprocess.Popen(cmd + [name], env=env, stdout=log,
                                                        stderr=subprocess.STDOUT, text=True)))
        done = [x for x in running if x[2].poll() is not None]
        if not done:
            time.sleep(0.2)
            continue
        for name, log, proc in done:
            running.remove((name, log, proc))
            log.seek(0)
            results[name] = (log.read(), proc.returncode)
            log.close()
    closing = re.compile(r"^%s: (\d+) passed, (\d+) failed$" % re.escape(label), re.M)
    for name in files:
        out, rc = results[name]
        m = closing.search(out)
        sys.stdout.write(out[:m.start()] + out[m.end() + 1:] if m else out)  # one closing line, ours
        passed += int(m.group(1)) if m else 0
        failed += int(m.group(2)) if m else 1
    print(f"{label}: {passed} passed, {failed} failed")
    sys.stdout.flush()
    return 0 if failed == 0 and passed > 0 else 1
