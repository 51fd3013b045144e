#!/usr/bin/env bash
# scripts/gpu-check.sh: proves syncspy on real PyTorch in one call of at most 8 minutes, on a machine
# with an NVIDIA GPU, PyTorch (with timm) and the CUDA toolkit, and no network:
#   1. the agent: $BUILD/libsyncspy.so as carried (with $BUILD/gpu-bundle's copies of the
#      libraries the machine lacks, from `make gpu-bundle`), else built there, else a clear failure;
#   2. the cases of scripts/gpu/ under LD_PRELOAD, each judged from its summary.json by
#      scripts/gpu/check.py (the lines marked "# sync:" named, syncs per step, about zero syncs for
#      the rewritten variants, one process folder with DataLoader workers);
#   3. step time with and without the agent (seg_loss --fixed, item_loop), and the same loops under
#      torch.profiler (with_stack) and torch.cuda.set_sync_debug_mode("warn"): which syncs they find;
#   4. $OUT/results.json (every figure, each case's summary.json and report) and a table, printed last.
# Without a GPU (no nvidia-smi, no torch, or torch.cuda.is_available() false) it says so in one line
# after the checks that need none: this script (bash -n, shellcheck), the case files (py_compile), the
# checker on its fixtures (scripts/gpu/fixtures), and that the agent build preloads.
#
# Environment (all optional):
#   OUT                 results folder (default ./gpu-check-out)
#   BUILD               the agent's build folder (default build)
#   PYTHON              the Python with torch (default: the first of python3, python that has it)
#   GPU_CHECK_OFFLINE=1 the offline checks only, even on a GPU machine
#   GPU_CHECK_BUDGET_S  seconds for the whole script (default 420); a run that would not fit is skipped
#   GPU_CHECK_BUILD     auto (default: build when the carried agent does not load, GPU mode only),
#                       force (always build, also offline), never
#   GPU_CHECK_AGENT, GPU_CHECK_BUNDLE   another libsyncspy.so / bundle folder (tests)
#   GPU_CHECK_SIMULATOR=DIR  run the cases on syncspy's simulated CUDA device (DIR: build/sim, put
#                       first on LD_LIBRARY_PATH) instead of a GPU: every case but those that need a
#                       real GPU (torch.compile's Triton kernels, the timings with and without the
#                       agent, torch.profiler's CUDA activity); tests/torch/test_gpu_cases.py does
# Exit status: 0 when every check passed (without a GPU: the offline ones), 1 otherwise.
set -u
start=$SECONDS
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || exit 1
OUT=${OUT:-./gpu-check-out}
if ! mkdir -p "$OUT" || ! OUT=$(cd "$OUT" && pwd); then
    echo "gpu-check: cannot create the results folder OUT=$OUT" >&2
    exit 1
fi
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
LIB=${GPU_CHECK_AGENT:-$BUILD/libsyncspy.so}
CLI=$(dirname "$LIB")/syncspy
BUNDLE=${GPU_CHECK_BUNDLE:-$BUILD/gpu-bundle}
BUDGET=${GPU_CHECK_BUDGET_S:-420}
BUILD_MODE=${GPU_CHECK_BUILD:-auto}
RESERVE=20      # seconds kept for the results
GPU=scripts/gpu
TRUE_BIN=/bin/true
[ -x "$TRUE_BIN" ] || TRUE_BIN=/usr/bin/true
unset SYNCSPY_OUT SYNCSPY_SCHEDULE SYNCSPY_STEP SYNCSPY_REPORT SYNCSPY_TOP SYNCSPY_LAUNCHES

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$TMPD"' EXIT
RUNLIB=$TMPD/lib    # links to the bundle's libraries that this machine lacks
mkdir -p "$RUNLIB"
rm -rf "$OUT/runs" "$OUT/results.json" "$OUT/offline.txt" "$OUT/env.json" "$OUT/nvidia-smi.txt" \
       "$OUT/agent-build.log"
mkdir -p "$OUT/runs"
failures=0
AGENT=""        # the libsyncspy.so the runs preload, once one loads
AGENT_WHY=""
AGENT_NOTE=""
BUNDLED=""

say() { printf '%s\n' "$*"; }
note() { printf '%s\n' "$*" >>"$OUT/offline.txt"; say "$*"; }
fail() { note "$*"; failures=$((failures + 1)); }
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }

# ---- the agent -------------------------------------------------------------------------------

# preload_out LIB: what preloading LIB into /bin/true prints (nothing when it loads cleanly); a
# sanitizer build gets its runtime preloaded first, as the e2e tests do.
preload_out() {
    local lib=$1 san
    local -a envs=(SYNCSPY_OUT="$TMPD/trial-out")
    san=$(ldd "$lib" 2>/dev/null | awk '$1 ~ /^lib(a|t)san\.so/ && $3 ~ /^\// {print $3; exit}')
    if [ -n "$san" ]; then
        envs+=(LD_PRELOAD="$san $lib" ASAN_OPTIONS=detect_leaks=0)
    else
        envs+=(LD_PRELOAD="$lib")
    fi
    env "${envs[@]}" "$TRUE_BIN" 2>&1
}

# preload_value LIB: the LD_PRELOAD value for the runs
preload_value() {
    local san
    san=$(ldd "$1" 2>/dev/null | awk '$1 ~ /^lib(a|t)san\.so/ && $3 ~ /^\// {print $3; exit}')
    printf '%s\n' "${san:+$san }$1"
}

# agent_loads LIB: 0 when every library LIB needs resolves and LIB preloads cleanly; else AGENT_WHY
agent_loads() {
    local lib=$1 out missing
    if [ ! -f "$lib" ]; then
        AGENT_WHY="$lib is absent (make builds it)"
        return 1
    fi
    out=$(ldd "$lib" 2>&1)
    missing=$(printf '%s\n' "$out" | awk '$2 == "=>" && $3 == "not" {printf "%s ", $1}')
    if [ -n "$missing" ]; then
        AGENT_WHY="$lib needs libraries this machine lacks: $missing"
        return 1
    fi
    if printf '%s\n' "$out" | grep -q "version .* not found"; then
        AGENT_WHY="$lib: $(printf '%s\n' "$out" | grep -m 1 "version .* not found" | sed 's/^[[:space:]]*//')"
        return 1
    fi
    out=$(preload_out "$lib")
    if [ -n "$out" ]; then
        AGENT_WHY="$lib does not preload: $(printf '%s\n' "$out" | head -n 3 | tr '\n' ' ')"
        return 1
    fi
    return 0
}

# use_bundle LIB: links the bundle's copy of each library LIB lacks into $RUNLIB (on
# LD_LIBRARY_PATH); 0 when nothing is missing any more
use_bundle() {
    local lib=$1 m missing added bundle
    [ -d "$BUNDLE" ] || return 1
    bundle=$(cd "$BUNDLE" && pwd)
    for _ in 1 2 3 4; do
        missing=$(ldd "$lib" 2>/dev/null | awk '$2 == "=>" && $3 == "not" {print $1}')
        [ -n "$missing" ] || return 0
        added=0
        for m in $missing; do
            if [ -f "$bundle/$m" ] && [ ! -e "$RUNLIB/$m" ]; then
                ln -s "$bundle/$m" "$RUNLIB/$m" && added=1 && BUNDLED="$BUNDLED $m"
            fi
        done
        [ "$added" = 1 ] || return 1
    done
    return 1
}

find_cuda() {
    local c nvcc
    nvcc=$(command -v nvcc 2>/dev/null || true)
    for c in "${CUDA_HOME:-}" /usr/local/cuda ${nvcc:+"$(dirname "$(dirname "$nvcc")")"}; do
        if [ -n "$c" ] && [ -e "$c/include/cuda_runtime_api.h" ]; then
            printf '%s\n' "$c"
            return 0
        fi
    done
    printf '%s\n' "${CUDA_HOME:-/usr/local/cuda}"
}

# build_agent: builds libsyncspy.so and syncspy into $TMPD/build (never over the carried build;
# scripts/deps.sh is skipped: no network to install with), with the bundle's headers and
# libunwind when there is a bundle; sets NEWLIB
build_agent() {
    local tb=$TMPD/build cuda log=$OUT/agent-build.log bundle
    cuda=$(find_cuda)
    local cpp="-I. -I$cuda/include -I$cuda/extras/CUPTI/include -D_GNU_SOURCE"
    local libs="-lunwind -ldl -lpthread"
    if [ -d "$BUNDLE/include" ]; then
        bundle=$(cd "$BUNDLE" && pwd)
        cpp="$cpp -I$bundle/include"
        libs="-L$bundle -Wl,-rpath-link,$bundle $libs"
    fi
    say "gpu-check: building the agent into $tb (CUDA_HOME=$cuda; log in $log)"
    if timeout 240 make -j16 -o "$tb/.deps-ok" BUILD="$tb" WERROR= CUDA_HOME="$cuda" \
            CPPFLAGS="$cpp" LDLIBS="$libs" "$tb/libsyncspy.so" "$tb/syncspy" >"$log" 2>&1; then
        NEWLIB=$tb/libsyncspy.so
        return 0
    fi
    AGENT_WHY="$AGENT_WHY; the build failed: $(grep -m 3 -E 'error|Error' "$log" | tr '\n' ' ' | cut -c1-400)"
    return 1
}

# select_agent build|no-build: sets AGENT (and CLI) to a libsyncspy.so that loads, or AGENT_WHY
select_agent() {
    local may_build=$1 why
    export LD_LIBRARY_PATH="$RUNLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ "$BUILD_MODE" != force ]; then
        if agent_loads "$LIB"; then
            AGENT=$LIB
            AGENT_NOTE="$LIB loads"
            return 0
        fi
        why=$AGENT_WHY
        if use_bundle "$LIB" && agent_loads "$LIB"; then
            AGENT=$LIB
            AGENT_NOTE="$LIB loads with the copies in $BUNDLE of:$BUNDLED"
            return 0
        fi
        AGENT_WHY=$why
        [ "$BUILD_MODE" = auto ] && [ "$may_build" = build ] || return 1
    fi
    NEWLIB=""
    if build_agent && { agent_loads "$NEWLIB" || { use_bundle "$NEWLIB" && agent_loads "$NEWLIB"; }; }; then
        AGENT=$NEWLIB
        CLI=$(dirname "$NEWLIB")/syncspy
        AGENT_NOTE="built here: $NEWLIB"
        [ -z "$BUNDLED" ] || AGENT_NOTE="$AGENT_NOTE (with the copies in $BUNDLE of:$BUNDLED)"
        return 0
    fi
    return 1
}

check_cli() {
    if [ -x "$CLI" ] && "$CLI" --help >/dev/null 2>&1; then
        note "check cli: ok ($CLI --help)"
    else
        fail "check cli: FAILED ($CLI --help)"
    fi
}

# ---- the checks that need no GPU ------------------------------------------------------------

offline_checks() {
    local out n
    if ! out=$(bash -n scripts/gpu-check.sh 2>&1); then
        fail "check script: FAILED (bash -n: $out)"
    elif command -v shellcheck >/dev/null 2>&1; then
        if out=$(shellcheck -S warning scripts/gpu-check.sh 2>&1); then
            note "check script: ok (bash -n, shellcheck -S warning)"
        else
            fail "check script: FAILED (shellcheck -S warning)"
            printf '%s\n' "$out" | head -n 40
        fi
    else
        note "check script: ok (bash -n; shellcheck not installed)"
    fi

    n=$(find "$GPU" -maxdepth 1 -name '*.py' | wc -l)
    if out=$(PYTHONPYCACHEPREFIX="$TMPD/pycache" python3 -m py_compile "$GPU"/*.py 2>&1); then
        note "check case files: ok (py_compile, $n files)"
    else
        fail "check case files: FAILED (py_compile: $(printf '%s' "$out" | tail -n 3 | tr '\n' ' '))"
    fi

    if out=$(PYTHONDONTWRITEBYTECODE=1 python3 "$GPU/check.py" selftest "$GPU/fixtures" 2>&1); then
        note "check checker: ok ($(printf '%s\n' "$out" | tail -n 1 | sed 's/^check selftest: //'))"
    else
        fail "check checker: FAILED on its fixtures"
    fi
    printf '%s\n' "$out" | sed '$d' | sed 's/^/    /'
}

# ---- one run of a case ----------------------------------------------------------------------

# run_one NAME LIMIT_S agent|plain CASE.py ARGS...: runs the case (with the agent preloaded or
# not) under a timeout into $OUT/runs/NAME: stdout, stderr, rc, elapsed_s, metrics.json and, with
# the agent, syncspy-out/ (SYNCSPY_OUT), report.txt (SYNCSPY_REPORT) and cli-report.txt
run_one() {
    local name=$1 limit=$2 kind=$3
    shift 3
    local dir=$OUT/runs/$name left t0 t1 rc el last
    mkdir -p "$dir"
    left=$((BUDGET - (SECONDS - start) - RESERVE))
    if [ "$kind" = agent ] && [ -z "$AGENT" ]; then
        printf 'no loadable agent: %s\n' "$AGENT_WHY" >"$dir/skipped"
        say "  $(printf '%-20s' "$name") skipped (no loadable agent)"
        return 0
    fi
    if [ "$left" -lt 20 ]; then
        printf 'the time budget (%s s) is spent\n' "$BUDGET" >"$dir/skipped"
        say "  $(printf '%-20s' "$name") skipped (time budget spent)"
        return 0
    fi
    [ "$limit" -le "$left" ] || limit=$left
    local -a envs=(SYNCSPY_OUT="$dir/syncspy-out" SYNCSPY_REPORT="$dir/report.txt" SYNCSPY_TOP=20 SYNCSPY_DEBUG=1
                   GPUCHECK_METRICS="$dir/metrics.json" GPUCHECK_WORKER_PIDS="$dir/worker_pids.txt"
                   PYTHONDONTWRITEBYTECODE=1)
    # shellcheck disable=SC2206  # RUN_ENV: NAME=VALUE words for this run only
    [ -n "${RUN_ENV:-}" ] && envs+=($RUN_ENV)
    if [ "$kind" = agent ]; then
        envs+=(LD_PRELOAD="$(preload_value "$AGENT")")
    fi
    printf '%s %s %s\n' "${envs[*]}" "$PY" "$*" >"$dir/cmd.txt"
    t0=$(date +%s.%N)
    timeout -k 10 "$limit" env -u LD_PRELOAD "${envs[@]}" "$PY" "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
    rc=$?
    # A run without the agent (a baseline, or torch's own tools) that died of a signal is run
    # once more, and the first death is kept beside it (first-try.txt): on the simulator, 1 in
    # ~20 plain runs of vit_gather --mode syncdebug once died of "terminate called without an
    # active exception" at start-up, not reproduced in 20 more; the agent's runs never retry.
    if [ "$kind" = plain ] && [ "$rc" -gt 128 ] && [ "$rc" != 137 ]; then
        { printf 'rc=%s\n' "$rc"; tail -n 20 "$dir/stderr.txt"; } >"$dir/first-try.txt"
        timeout -k 10 "$limit" env -u LD_PRELOAD "${envs[@]}" "$PY" "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
        rc=$?
    fi
    t1=$(date +%s.%N)
    el=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
    printf '%s\n' "$rc" >"$dir/rc"
    printf '%s\n' "$el" >"$dir/elapsed_s"
    if [ "$kind" = agent ] && [ -d "$dir/syncspy-out" ] && [ -x "$CLI" ]; then
        timeout 30 "$CLI" report "$dir/syncspy-out" >"$dir/cli-report.txt" 2>&1
        printf '%s\n' "$?" >"$dir/cli-report.rc"
    fi
    # a large trace.bin would not come back from the device: keep summary.json and the reports
    find "$dir" -name trace.bin -size +8M -exec sh -c 'rm -f "$1" && echo "removed: over 8 MiB" >"$1.removed"' _ {} \;
    last=""
    if [ "$rc" != 0 ]; then
        [ "$rc" = 124 ] || [ "$rc" = 137 ] && last="  timed out after ${limit}s"
        last="$last  stderr: $(grep -v '^[[:space:]]*$' "$dir/stderr.txt" | tail -n 1 | cut -c1-160)"
    fi
    say "  $(printf '%-20s' "$name") rc=$rc  ${el}s$last"
    results >/dev/null 2>&1     # results.json stays current, should the script be cut short
}

# results: OUT/results.json from the runs so far; the table on stdout; 0 when every case passed
results() {
    PYTHONDONTWRITEBYTECODE=1 "$CHECKER" "$GPU/check.py" results "$OUT"
}

# ---- main -----------------------------------------------------------------------------------

say "gpu-check: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n); results in $OUT"
offline_checks

# A GPU: torch sees a CUDA device (nvidia-smi is asked first, for the record; a container may
# lack it while torch works)
gpu_reason=""
PY=""
SIMULATOR=${GPU_CHECK_SIMULATOR:-}
if [ -n "$SIMULATOR" ]; then
    if [ ! -e "$SIMULATOR/libcudart.so.13" ]; then
        echo "gpu-check: GPU_CHECK_SIMULATOR=$SIMULATOR has no libcudart.so.13 (make sim builds it)" >&2
        exit 1
    fi
    SIMULATOR=$(cd "$SIMULATOR" && pwd)
    export LD_LIBRARY_PATH="$SIMULATOR:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ "${GPU_CHECK_OFFLINE:-0}" = 1 ]; then
    gpu_reason="GPU_CHECK_OFFLINE=1"
else
    if [ -n "$SIMULATOR" ]; then
        echo "syncspy's simulated CUDA device ($SIMULATOR)" >"$OUT/nvidia-smi.txt"
    elif ! command -v nvidia-smi >/dev/null 2>&1; then
        gpu_reason="no nvidia-smi"
    elif ! timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
            >"$OUT/nvidia-smi.txt" 2>&1 || [ ! -s "$OUT/nvidia-smi.txt" ]; then
        gpu_reason="nvidia-smi lists no GPU: $(head -n 1 "$OUT/nvidia-smi.txt" 2>/dev/null)"
    fi
    pythons=()
    [ -n "${PYTHON:-}" ] && pythons+=("$PYTHON")
    pythons+=(python3 python)
    torch_reason="no python with torch"
    for p in "${pythons[@]}"; do
        command -v "$p" >/dev/null 2>&1 || continue
        timeout 120 "$p" "$GPU/envinfo.py" "$OUT/env.json" >/dev/null 2>"$TMPD/envinfo.err"
        case $? in
            0) PY=$(command -v "$p"); break ;;
            3) torch_reason="torch.cuda.is_available() is false ($p)" ;;
        esac
    done
    if [ -n "$PY" ]; then
        gpu_reason=""
    else
        gpu_reason="${gpu_reason:+$gpu_reason, }$torch_reason"
    fi
fi

if [ -n "$gpu_reason" ]; then
    if select_agent no-build; then
        note "check agent: ok ($AGENT_NOTE)"
        check_cli
    else
        fail "check agent: FAILED ($AGENT_WHY)"
    fi
    python3 - "$OUT" "$gpu_reason" "$failures" <<'EOF'
import json, os, sys
out, reason, failures = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(os.path.join(out, "offline.txt")) as f:
    lines = f.read().splitlines()
env = {}
try:
    with open(os.path.join(out, "env.json")) as f:
        env = json.load(f)
except (OSError, ValueError):
    pass
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump({"version": 1, "gpu": False, "reason": reason, "env": env, "offline_checks": lines,
               "ok": failures == 0}, f, indent=1)
EOF
    total=$(grep -c '^check ' "$OUT/offline.txt")
    say "gpu-check: no GPU here ($gpu_reason): ran the offline checks only: $((total - failures)) passed, $failures failed ($((SECONDS - start))s)"
    [ "$failures" = 0 ]
    exit
fi

say "gpu-check: GPU: $(head -n 1 "$OUT/nvidia-smi.txt" 2>/dev/null || echo "no nvidia-smi"); python: $PY"
CHECKER=python3
command -v python3 >/dev/null 2>&1 || CHECKER=$PY
if select_agent build; then
    note "check agent: ok ($AGENT_NOTE)"
    check_cli
else
    fail "check agent: FAILED, the agent cases are skipped ($AGENT_WHY)"
fi

say "gpu-check: runs (budget ${BUDGET}s, $((SECONDS - start))s spent)"
# gpu_only NAME ARGS...: run_one, except on the simulator (a real GPU's timings, Triton, CUDA
# activity records)
gpu_only() {
    [ -z "$SIMULATOR" ] || return 0
    run_one "$@"
}

# syncspy's cases first, each overhead pair back to back, compile late, the other tools last.
# seg_loss names every backward sync's forward line (SYNCSPY_BACKWARD=all: a short run); the
# overhead runs keep the default (auto).
RUN_ENV="SYNCSPY_BACKWARD=all" run_one seg_loss 120 agent "$GPU/seg_loss.py"
run_one seg_loss_fixed 120 agent "$GPU/seg_loss.py" --fixed --steps 50
gpu_only seg_loss_fixed.plain 120 plain "$GPU/seg_loss.py" --fixed --steps 50
run_one item_loop 120 agent "$GPU/item_loop.py" --steps 50
gpu_only item_loop.plain 120 plain "$GPU/item_loop.py" --steps 50
run_one vit_gather 150 agent "$GPU/vit_gather.py"
run_one vit_indexing 150 agent "$GPU/vit_gather.py" --indexing
run_one dataloader 120 agent "$GPU/dataloader.py"
gpu_only compiled 200 agent "$GPU/compiled.py"
gpu_only seg_loss.profiler 120 plain "$GPU/seg_loss.py" --mode profiler
run_one seg_loss.syncdebug 120 plain "$GPU/seg_loss.py" --mode syncdebug
gpu_only item_loop.profiler 120 plain "$GPU/item_loop.py" --steps 50 --mode profiler
run_one item_loop.syncdebug 120 plain "$GPU/item_loop.py" --steps 50 --mode syncdebug
gpu_only vit_gather.profiler 150 plain "$GPU/vit_gather.py" --mode profiler
run_one vit_gather.syncdebug 150 plain "$GPU/vit_gather.py" --mode syncdebug

say "gpu-check: runs done in $((SECONDS - start))s; results in $OUT/results.json"
results
rc=$?
[ "$failures" = 0 ] && [ "$rc" = 0 ]
