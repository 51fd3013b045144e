#!/bin/sh
# scripts/deps.sh: checks the build's Debian packages; installs the missing ones when run as
# root, otherwise stops with the exact apt-get command. Called once per build folder by make.
set -u
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
triplet=$(${CC:-cc} -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
missing=""
need() { # need PACKAGE FILE...: PACKAGE is missing when none of the files exists
    pkg=$1; shift
    for f in "$@"; do [ -e "$f" ] && return 0; done
    missing="$missing $pkg"
}
need libunwind-dev /usr/include/libunwind.h "/usr/include/$triplet/libunwind.h"
need uthash-dev /usr/include/uthash.h
need zlib1g-dev /usr/include/zlib.h
need libcmocka-dev /usr/include/cmocka.h
need python3 /usr/bin/python3
need python3-dev /usr/include/python3.11/Python.h /usr/include/python3.12/Python.h /usr/include/python3.13/Python.h
# make test-torch makes virtual environments; Debian's python3 needs its venv package for that
need python3-venv /usr/lib/python3*/ensurepip/__init__.py
need valgrind /usr/bin/valgrind
need binutils /usr/bin/readelf
# make wheel: the libunwind it carries gets a soname of its own (scripts/wheel.py)
need patchelf /usr/bin/patchelf
# the tests of `syncspy html` open its page in a real browser, headless (tests/browser/probe.py):
# Debian's chromium, driven by selenium through chromium-driver; never a browser download
need chromium /usr/bin/chromium
need chromium-driver /usr/bin/chromedriver
need python3-selenium /usr/lib/python3/dist-packages/selenium/__init__.py
# the JSON outputs are validated against docs/schemas/ (tests/e2e/test_schemas.py) by jsonschema,
# Debian's when the tests' interpreter has none of its own
need python3-jsonschema /usr/lib/python3/dist-packages/jsonschema/__init__.py
# tests/e2e/test_ranks.py launches ranks with a real mpirun (Open MPI; about 25 s to install)
need openmpi-bin /usr/bin/mpirun
# the CLI's tests: its zsh completion script is loaded in a real zsh, its manual page (make man)
# linted by mandoc and rendered by groff (tests/e2e/test_cli_usage.py)
need zsh /usr/bin/zsh
need mandoc /usr/bin/mandoc
need groff /usr/bin/groff
# make lint (scripts/lint.mk): clang-format 14 for the C (.clang-format), js-beautify and eslint
# for the page's script (cli/html/page.js); ruff comes from PyPI into build/lint-venv
need clang-format /usr/bin/clang-format
need node-js-beautify /usr/bin/js-beautify-js
need eslint /usr/bin/eslint
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "syncspy build: installing Debian packages:$missing" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >&2 || {
            echo "syncspy build: apt-get install$missing failed" >&2; exit 1; }
    else
        echo "syncspy build: missing Debian packages. Run:" >&2
        echo "    sudo apt-get install -y$missing" >&2
        exit 1
    fi
fi
if [ ! -e "$CUDA_HOME/include/cuda_runtime_api.h" ]; then
    echo "syncspy build: no CUDA headers at $CUDA_HOME/include (set CUDA_HOME to the CUDA toolkit)" >&2
    exit 1
fi
exit 0
