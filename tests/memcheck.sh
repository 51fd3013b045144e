#!/bin/sh
# tests/memcheck.sh: one end-to-end run under valgrind memcheck: the agent preloaded into
# build/progs/basic on the simulated device (invalid reads/writes, uses of uninitialised values
# and bad frees in the agent fail it; leaks are not checked: the program under test is not ours).
# Then the report CLI on the files it left, also under memcheck.
set -eu
BUILD=${BUILD:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
LD_LIBRARY_PATH=$BUILD/sim SYNCSPY_OUT=$out SYNCSPY_REPORT=off SYNCSPY_LAUNCHES=trace \
    LD_PRELOAD="$PWD/$BUILD/libsyncspy.so" \
    valgrind -q --error-exitcode=99 --leak-check=no --track-origins=yes --suppressions=tests/valgrind.supp \
    "$BUILD/progs/basic" 2 >"$out.stdout" 2>"$out.stderr" || rc=$?
rc=${rc:-0}
if [ "$rc" -ne 3 ] || [ ! -s "$out"/pid*/summary.json ] || [ ! -s "$out"/pid*/trace.bin ]; then
    cat "$out.stderr"
    echo "memcheck: the preloaded run exited $rc (want 3, the program's own status)"
    echo "memcheck: 0 passed, 1 failed"
    exit 1
fi
valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    "$BUILD/syncspy" report "$out" >/dev/null 2>"$out.cli" || {
    cat "$out.cli"
    echo "memcheck: 1 passed, 1 failed"
    exit 1
}
rm -f "$out.stdout" "$out.stderr" "$out.cli"
echo "memcheck: 2 passed, 0 failed"
