"""tests/e2e/runner.py [FILE...]: runs every tests/e2e/test_*.py (unittest; FILE: those files
alone, named without .py) and closes with one line "e2e: N passed, M failed". BUILD (env) names
the build folder, default build. E2E_JOBS=N (default 1) runs N files at a time, each in a runner
of its own, their outputs printed whole in the files' order (tests/e2e/parallel.py)."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    sys.path.insert(0, HERE)
    names = sys.argv[1:]
    jobs = int(os.environ.get("E2E_JOBS", "1") or 1)
    if jobs > 1 and not names:
        from parallel import run_files
        files = sorted(f[:-3] for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))
        env = dict(os.environ, E2E_JOBS="1")
        return run_files([sys.executable, os.path.abspath(__file__)], files, jobs, env, "e2e")
    if names:
        suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    else:
        suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    # A skipped check is a defect here: count it as a failure.
    failed += skipped
    print(f"e2e: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
