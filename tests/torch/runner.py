"""tests/torch/runner.py [--dir DIR] [PATTERN]: runs tests/torch/test_*.py (or DIR's: tests/public
for `make test-public`) (unittest; PATTERN narrows the files, e.g. test_seed003) on real PyTorch
over the simulated device and closes with one line "torch: N passed, M failed". TORCH_PYTHON
names the venv's interpreter (tests/torch.mk). TORCH_JOBS=N (default 1) runs N test files at a
time, each in a runner of its own, their outputs printed whole in the files' order."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    args = sys.argv[1:]
    where = HERE
    if args[:1] == ["--dir"] and len(args) >= 2:
        where, args = os.path.abspath(args[1]), args[2:]
    # harness.py puts tests/e2e on sys.path for util.py: a module named in both folders would be
    # imported from the wrong one, so a clash stops the run before any test does.
    e2e = os.path.join(os.path.dirname(HERE), "e2e")
    names = set(os.listdir(HERE)) | set(os.listdir(where))
    clash = sorted(set(n for n in names if n.startswith("test_") and n.endswith(".py"))
                   & set(os.listdir(e2e)))
    if clash:
        print("tests/torch and tests/e2e both hold " + ", ".join(clash) + ": rename one",
              file=sys.stderr)
        return 2
    sys.path.insert(0, HERE)
    pattern = (args[0] if args else "test_") + "*.py"
    if not pattern.startswith("test_"):
        pattern = "test_" + pattern
    jobs = int(os.environ.get("TORCH_JOBS", "1") or 1)
    if jobs > 1:
        return run_parallel(where, pattern, jobs)
    suite = unittest.defaultTestLoader.discover(where, pattern=pattern, top_level_dir=where)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = max(0, result.testsRun - failed - skipped)  # a class set-up's error runs no test
    failed += skipped  # a skipped check is a defect: counted as a failure
    print(f"torch: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


def run_parallel(where, pattern, jobs):
    """Each file matching pattern in a runner of its own (TORCH_JOBS=1 there), `jobs` at a time;
    the totals of their closing lines (tests/e2e/parallel.py)."""
    import fnmatch
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
    from parallel import run_files
    files = sorted(f[:-3] for f in os.listdir(where) if fnmatch.fnmatch(f, pattern))
    env = dict(os.environ, TORCH_JOBS="1")
    return run_files([sys.executable, os.path.abspath(__file__), "--dir", where], files, jobs, env,
                     "torch")


if __name__ == "__main__":
    sys.exit(main())
