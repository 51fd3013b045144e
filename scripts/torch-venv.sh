#!/bin/sh
# scripts/torch-venv.sh PYTHON DIR [EXTRA]: makes DIR a virtual environment of PYTHON with the
# pinned real PyTorch of tests/torch/requirements.txt, and the pins of the requirements file
# EXTRA when given (tests/torch/requirements-vision.txt: torchvision, timm); pip's cache makes
# every run after the first quick: no download. Prints pip's progress; ends with one line
# naming the torch it has. Does nothing when DIR already holds exactly these pins
# (DIR/.requirements, written last, is a copy of the files). Exits non-zero with one clear line
# when the wheels cannot be had (no network, no wheel for that Python).
set -eu
py=$1
dir=$2
req=$(dirname "$0")/../tests/torch/requirements.txt
case $dir in
    "" | */) echo "torch-venv: no folder for the venv (is $py a Python?)" >&2; exit 1 ;;
esac
extra=${3:-}
pins=$(mktemp); trap 'rm -f "$pins"' EXIT
cat "$req" ${extra:+"$extra"} > "$pins"
if [ -f "$dir/.requirements" ] && cmp -s "$pins" "$dir/.requirements" && [ -x "$dir/bin/python" ]; then
    exit 0
fi
if ! "$py" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] <= (3, 14)))' 2>/dev/null; then
    echo "torch-venv: $py is not a CPython 3.11 to 3.14 (the versions torch 2.15 has wheels for)" >&2
    exit 1
fi
rm -rf "$dir"
"$py" -m venv "$dir"
echo "torch-venv: installing the pinned PyTorch into $dir (about 1.1 GB to download and 2.1 GB on disk the first time)" >&2
if ! "$dir/bin/python" -m pip install --disable-pip-version-check --no-deps \
        --only-binary=:all: --progress-bar on -r "$pins" >&2; then
    echo "torch-venv: could not install tests/torch/requirements.txt${extra:+ and $extra} for $py (no network or no wheel)" >&2
    exit 1
fi
cp "$pins" "$dir/.requirements"
echo "torch-venv: $dir: torch $("$dir/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))')" >&2
