#!/bin/sh
# tests/run.sh unit|e2e|all: runs the cmocka unit tests and the end-to-end tests of one build
# folder ($BUILD, default build) and closes with one line "tests: N passed, M failed".
set -u
BUILD=${BUILD:-build}
what=${1:-all}
passed=0; failed=0; failed_names=""
log=$(mktemp); trap 'rm -f "$log"' EXIT
# Sanitizer builds: leaks of the embedded CPython are not ours (tests/lsan.supp).
LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS
if [ "$what" = unit ] || [ "$what" = all ]; then
    for t in "$BUILD"/tests/test_* "$BUILD"/tests/pyversions/test_*; do
        [ -x "$t" ] || continue
        if "$t" >"$log" 2>&1; then rc=0; else rc=$?; fi
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        p=${p:-0}; f=${f:-0}
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed before cmocka's summary
        passed=$((passed + p)); failed=$((failed + f))
        if [ "$f" -ne 0 ]; then
            failed_names="$failed_names $(basename "$t")"
            cat "$log"
        fi
        echo "unit $(basename "$t"): $p passed, $f failed"
    done
fi
if [ "$what" = e2e ] || [ "$what" = all ]; then
    if BUILD="$BUILD" python3 tests/e2e/runner.py >"$log" 2>&1; then :; fi
    cat "$log"
    line=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed 's/^e2e: \([0-9]*\) passed.*/\1/')
        f=$(echo "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
    else
        p=0; f=1
    fi
    passed=$((passed + p)); failed=$((failed + f))
    [ "$f" -ne 0 ] && failed_names="$failed_names e2e"
fi
[ -n "$failed_names" ] && echo "failing:$failed_names"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
