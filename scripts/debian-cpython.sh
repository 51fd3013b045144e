#!/bin/sh
# scripts/debian-cpython.sh X.Y DIR: lays Debian unstable's CPython X.Y (its own packages: the
# interpreter, libpython, the standard library, the headers) out under DIR, runnable here, for
# the frame reader's tests on a CPython that neither pyenv nor this Debian release has (3.14:
# docs/PYTHON_LAYOUTS.md). Debian unstable builds against a newer C library than this machine's,
# so DIR also gets unstable's libc6 (and the few libraries the standard library links), and the
# interpreter is pointed at them (patchelf: its own loader, an RPATH that reaches the extension
# modules too). Nothing outside DIR changes: apt runs with a sources list and lists of DIR's own,
# on the mirror this machine's apt already uses. Ends with one line naming the interpreter;
# exits non-zero with one clear line when the packages cannot be had.
#
#   DIR/usr/bin/pythonX.Y                   the interpreter (python -m venv --without-pip works)
#   DIR/usr/include/pythonX.Y               the headers (internal ones included)
#   DIR/usr/lib/x86_64-linux-gnu/            libpythonX.Y.so, and unstable's libc
# A program linked against DIR's libpython needs DIR's loader too: tests/pyframes.mk shows how.
set -eu
ver=$1
dir=$2
case $ver in 3.[0-9]|3.[0-9][0-9]) ;; *) echo "debian-cpython: '$ver' is not a CPython version (3.14)" >&2; exit 1 ;; esac
case $dir in "" | */) echo "debian-cpython: no folder" >&2; exit 1 ;; esac
if [ -x "$dir/usr/bin/python$ver" ] && "$dir/usr/bin/python$ver" -c 'import ssl, ctypes' 2>/dev/null; then
    echo "debian-cpython: $dir/usr/bin/python$ver" >&2
    exit 0
fi
command -v patchelf >/dev/null || apt-get install -y -q patchelf >&2
uris=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[ -n "$uris" ] || uris=$(sed -n 's/^deb \(http[^ ]*\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1)
[ -n "$uris" ] || { echo "debian-cpython: no Debian mirror in this machine's apt sources" >&2; exit 1; }
apt_dir=$(mktemp -d)
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uris unstable main" > "$apt_dir/sources.list"
apt_opts="-o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=$apt_dir/none \
 -o Dir::State::Lists=$apt_dir/lists -o Dir::Cache::Archives=$apt_dir/archives \
 -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root"
# shellcheck disable=SC2086
apt-get -q $apt_opts update >&2
pkgs="python$ver-minimal libpython$ver-minimal libpython$ver-stdlib libpython$ver libpython$ver-dev
      python$ver-dev libc6 libexpat1 zlib1g libffi8 libssl3t64"
# shellcheck disable=SC2086
if ! (cd "$apt_dir/debs" && apt-get -q $apt_opts download $pkgs >&2); then
    echo "debian-cpython: Debian unstable's CPython $ver packages could not be downloaded" >&2
    exit 1
fi
rm -rf "$dir"
mkdir -p "$dir"
for deb in "$apt_dir"/debs/*.deb; do
    dpkg-deb -x "$deb" "$dir"
done
lib=$(cd "$dir/usr/lib/x86_64-linux-gnu" && pwd)
# DT_RPATH (not RUNPATH): it also serves the extension modules' own libraries (_ssl: libssl)
patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$dir/usr/bin/python$ver"
"$dir/usr/bin/python$ver" -c 'import ssl, ctypes' >&2
echo "debian-cpython: $dir/usr/bin/python$ver: $("$dir/usr/bin/python$ver" -c 'import sys; print(sys.version.split()[0])')" >&2
