#!/bin/sh
# scripts/user-venv.sh PYTHON DIR: makes DIR the virtual environment a user gets from a plain
# `pip install torch==2.15.0`: pip resolves torch's dependencies itself (its own CUDA wheels,
# triton, cuda-bindings), each pinned by tests/torch/requirements-user.txt. Then checks that the
# venv holds exactly those pins (pip freeze --all, less pip): a package torch pulls that the file
# does not pin fails here, naming it. About 3 GB to download and 5.3 GB on disk the first time,
# 3.8 GB once scripts/dedupe-venvs.sh has linked torch's files to torch-venv's (pip's cache keeps
# the download). Does nothing when DIR already holds exactly these pins (DIR/.requirements,
# written last, is a copy of the file). Exits non-zero with one clear line when the wheels cannot
# be had (no network, no wheel for that Python).
set -eu
py=$1
dir=$2
req=$(dirname "$0")/../tests/torch/requirements-user.txt
case $dir in
    "" | */) echo "user-venv: no folder for the venv" >&2; exit 1 ;;
esac
if [ -f "$dir/.requirements" ] && cmp -s "$req" "$dir/.requirements" && [ -x "$dir/bin/python" ]; then
    exit 0
fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    echo "user-venv: $py is not a CPython 3.11 (the pins of $req are those pip chose for 3.11)" >&2
    exit 1
fi
rm -rf "$dir"
"$py" -m venv "$dir"
echo "user-venv: pip install torch==2.15.0 with its CUDA wheels into $dir (about 3 GB to download and 5.3 GB on disk the first time)" >&2
if ! "$dir/bin/python" -m pip install --disable-pip-version-check --only-binary=:all: \
        --progress-bar off -r "$req" >&2; then
    echo "user-venv: could not install $req for $py (no network or no wheel)" >&2
    exit 1
fi
# PEP 503 names, lower case: what pip installed against what the file pins
normal() { awk -F'==' '{n = tolower($1); gsub(/[-_.]+/, "-", n); print n "==" $2}' | sort; }
got=$(mktemp); want=$(mktemp); trap 'rm -f "$got" "$want"' EXIT
"$dir/bin/python" -m pip freeze --all --disable-pip-version-check | grep -iv '^pip==' | normal > "$got"
grep -v '^#' "$req" | sed 's/ *#.*//; /^$/d' | normal > "$want"
if ! cmp -s "$got" "$want"; then
    echo "user-venv: $dir does not hold exactly the pins of $req; installed but not pinned, or pinned differently:" \
        "$(comm -23 "$got" "$want" | tr '\n' ' ')" >&2
    exit 1
fi
cp "$req" "$dir/.requirements"
sh "$(dirname "$0")/dedupe-venvs.sh"  # torch's files shared with the other venvs under build/
echo "user-venv: $dir: torch $("$dir/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))') with $(grep -c '^nvidia-' "$want") nvidia wheels" >&2
