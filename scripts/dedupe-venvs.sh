#!/bin/sh
# scripts/dedupe-venvs.sh [ROOT]: the same wheel sits in many of the venvs under ROOT (build/ by
# default): torch's 1.2 GB in torch-venv/3.11, 3.12 and 3.13, lightning-venv, pytest-venv,
# vision-venv and user-venv. Each file of 256 KiB or more that equals, byte for byte and in mode
# and owner, a file of another venv there is made a hard link to it (util-linux's hardlink),
# which takes about 9 GB off a full build/ (7 s). pip replaces a file when it installs or removes
# one, it never writes into it, so a later install in one venv leaves the others as they were.
# Called by scripts/torch-venv.sh and scripts/user-venv.sh after each install. Prints one line
# (what it saved); without hardlink it says so and leaves the files alone (exit 0: the venvs
# work either way, they only take more room).
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
command -v hardlink >/dev/null 2>&1 || {
    echo "dedupe-venvs: no hardlink (Debian's util-linux) here: venvs under $root keep their own copies" >&2
    exit 0
}
venvs=$(find "$root" -maxdepth 3 -name pyvenv.cfg -exec dirname {} \; 2>/dev/null | sort)
[ -n "$venvs" ] || exit 0
# shellcheck disable=SC2086  # one argument per venv folder; build/ paths have no blanks
saved=$(hardlink -t -s 256K $venvs 2>/dev/null | sed -n 's/^Saved: *//p') || saved=
[ -z "$saved" ] || echo "dedupe-venvs: $saved saved by hard links between the venvs under $root" >&2
