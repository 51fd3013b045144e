#!/bin/sh
# scripts/torch-venv.sh PYTHON DIR [EXTRA]: makes DIR a virtual environment of PYTHON with the
# pinned real PyTorch of tests/torch/requirements.txt (or of the file TORCH_REQUIREMENTS names:
# tests/torch/requirements-2.8.txt for another torch), and the pins of the requirements file
# EXTRA when given (tests/torch/requirements-vision.txt: torchvision, timm); pip's cache makes
# every run after the first quick: no download. Prints pip's progress; ends with one line
# naming the torch it has. Does nothing when DIR already holds exactly these pins
# (DIR/.requirements, written last, is a copy of the files). Exits non-zero with one clear line
# when the wheels cannot be had (no network, no wheel for that Python). The CPython versions
# that torch has wheels for: the file's "# python: 3.9-3.13" line, else 3.11 to 3.14 (torch 2.15).
set -eu
py=$1
dir=$2
req=${TORCH_REQUIREMENTS:-$(dirname "$0")/../tests/torch/requirements.txt}
[ -f "$req" ] || { echo "torch-venv: no requirements file $req" >&2; exit 1; }
pys=$(sed -n 's/^# python: *\(3\.[0-9]*\)-\(3\.[0-9]*\) *$/\1 \2/p' "$req")
pys=${pys:-3.11 3.14}
lo=${pys% *}
hi=${pys#* }
case $dir in
    "" | */) echo "torch-venv: no folder for the venv (is $py a Python?)" >&2; exit 1 ;;
esac
extra=${3:-}
pins=$(mktemp); trap 'rm -f "$pins"' EXIT
# A file's pins with its "-r FILE" lines replaced by FILE's (named relative to it), so that
# DIR/.requirements holds every pin and a change in an included file makes a new venv.
expand() {
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in
            "-r "*) expand "$(dirname "$1")/${line#-r }" ;;
            *) printf '%s\n' "$line" ;;
        esac
    done < "$1"
}
{ expand "$req"; if [ -n "$extra" ]; then expand "$extra"; fi; } > "$pins"
if [ -f "$dir/.requirements" ] && cmp -s "$pins" "$dir/.requirements" && [ -x "$dir/bin/python" ]; then
    exit 0
fi
torch=$(sed -n 's/^torch==//p' "$req")
if ! "$py" -c "import sys; v = lambda s: tuple(map(int, s.split('.')))
sys.exit(not (v('$lo') <= sys.version_info[:2] <= v('$hi')))" 2>/dev/null; then
    echo "torch-venv: $py is not a CPython $lo to $hi (the versions torch $torch has wheels for)" >&2
    exit 1
fi
rm -rf "$dir"
"$py" -m venv "$dir"
echo "torch-venv: installing the pinned PyTorch into $dir (about 1.1 GB to download and 2.1 GB on disk the first time)" >&2
if ! "$dir/bin/python" -m pip install --disable-pip-version-check --no-deps \
        --only-binary=:all: --progress-bar on -r "$pins" >&2; then
    echo "torch-venv: could not install $req${extra:+ and $extra} for $py (no network or no wheel)" >&2
    exit 1
fi
cp "$pins" "$dir/.requirements"
sh "$(dirname "$0")/dedupe-venvs.sh"  # torch's files shared with the other venvs under build/
echo "torch-venv: $dir: torch $("$dir/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))')" >&2
