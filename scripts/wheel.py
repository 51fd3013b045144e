#!/usr/bin/env python3
"""scripts/wheel.py: builds the syncspy wheel (`make wheel`) from the build's libsyncspy.so and
syncspy program and the Python module python/syncspy/, with the standard library only.

    python3 scripts/wheel.py --lib build/libsyncspy.so --cli build/syncspy --sim build/sim \
        --sim12 build/sim12 --out dist --work build/wheel

The wheel holds the package syncspy/ (its Python files, and _native/ with the agent, the program
and what they load that a target machine may lack; with --sim, _native/sim/ with the simulated
CUDA 13 device's libraries, which `syncspy run --sim` preloads, and with --sim12, _native/sim12/
with the CUDA 12 device's, for `syncspy run --sim=12`: every lib*.so.N file of that folder,
under its soname, never a link name, since pip would write a link name as a second copy that
the loader maps as a second device) and the `syncspy` console script
(syncspy.__main__:main, which execs _native/syncspy). The native files are checked the way
auditwheel checks them: each may need only the libraries every manylinux system has (glibc's,
libgcc_s, libstdc++) or another file of _native/. A library they load that is not one of those
(libunwind.so.8, which the agent dlopens, and its liblzma.so.5) is copied in under a name and a
soname of its own (libunwind-syncspy.so.8: patchelf --set-soname, --replace-needed, --set-rpath
$ORIGIN), so that it can never stand in for a library of the same name the program loads. The
platform tag is manylinux_<X>_<Y> for the newest glibc symbol version any of them needs: the
wheel installs on every Linux with that glibc or a newer one. Files are written in a fixed order
with a fixed date, so the same inputs give the same wheel."""
import argparse
import base64
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile

NAME = "syncspy"
# What every manylinux system provides (PEP 600: the manylinux2014 policy's list, x86_64).
SYSTEM_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
               "libgcc_s.so.1", "libstdc++.so.6", "ld-linux-x86-64.so.2", "libresolv.so.2"}
# Loaded by the agent with dlopen (collectors/native_stack.h: NATIVE_UNWIND_SYSTEM/_BUNDLED).
DLOPENED = {"libunwind.so.8": "libunwind-syncspy.so.8"}
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def fail(msg):
    sys.stderr.write(f"wheel: {msg}\n")
    sys.exit(1)


def tool(*argv):
    try:
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        fail(f"{argv[0]} is not installed (scripts/deps.sh installs it as root)")
    except subprocess.CalledProcessError as e:
        fail(f"{' '.join(argv)}: {e.stderr.strip()}")


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", tool("readelf", "-d", path))


def glibc_versions(path):
    """The GLIBC_X.Y symbol versions path needs, as (X, Y) pairs."""
    return {(int(a), int(b)) for a, b in re.findall(r"\bGLIBC_(\d+)\.(\d+)\b", tool("objdump", "-p", path))}


def resolved(path):
    """{soname: path} of path's dependencies as the loader finds them here."""
    out = {}
    for line in tool("ldd", path).splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def own_name(soname):
    """libfoo.so.5 -> libfoo-syncspy.so.5"""
    stem, _, rest = soname.partition(".so")
    return f"{stem}-{NAME}.so{rest}"


def bundle(native, lib, cli, cc):
    """Copies the agent, the program and the libraries they load into native/; returns the
    paths of the ELF files there."""
    shutil.copy(lib, os.path.join(native, "libsyncspy.so"))
    shutil.copy(cli, os.path.join(native, "syncspy"))
    files = [os.path.join(native, "libsyncspy.so"), os.path.join(native, "syncspy")]
    for f in files:
        tool("strip", "--strip-debug", f)
    todo = []
    for soname, name in DLOPENED.items():
        src = tool(cc, f"-print-file-name={soname}").strip()
        if not os.path.isabs(src) or not os.path.exists(src):
            fail(f"{cc} finds no {soname} (the Debian package libunwind-dev brings it)")
        todo.append((src, name))
    done = {}
    while todo:
        src, name = todo.pop(0)
        if name in done:
            continue
        dst = os.path.join(native, name)
        shutil.copy(os.path.realpath(src), dst)
        os.chmod(dst, 0o755)
        tool("patchelf", "--set-soname", name, dst)
        deps = resolved(src)
        for dep in needed(dst):
            if dep in SYSTEM_LIBS:
                continue
            if dep not in deps:
                fail(f"{src} needs {dep}, which the loader does not find here")
            tool("patchelf", "--replace-needed", dep, own_name(dep), dst)
            todo.append((deps[dep], own_name(dep)))
        tool("patchelf", "--set-rpath", "$ORIGIN", dst)
        done[name] = dst
        files.append(dst)
    return files


SIM_LIBRARY = re.compile(r"lib[A-Za-z]+\.so\.\d+")
# The simulated devices (cli/run.c sim_devices): the folder of _native/ each goes to (the one
# `syncspy run --sim[=N]` looks for beside the program), the runtime it must hold, and the make
# target that builds it.
SIM_DEVICES = {"sim": ("libcudart.so.13", "make sim"), "sim12": ("libcudart.so.12", "make sim12")}


def bundle_sim(native, sim, folder):
    """Copies a simulated device's libraries (the files lib*.so.N of sim: `make sim`'s or `make
    sim12`'s) into native/<folder>/; returns their paths there. They find each other by $ORIGIN
    (sim/sim.mk)."""
    runtime, target = SIM_DEVICES[folder]
    if not os.path.isdir(sim):
        fail(f"no folder {sim} ({target} builds that simulated device)")
    names = sorted(n for n in os.listdir(sim)
                   if SIM_LIBRARY.fullmatch(n) and os.path.isfile(os.path.join(sim, n))
                   and not os.path.islink(os.path.join(sim, n)))
    if runtime not in names:
        fail(f"{sim} holds no {runtime} ({target} builds that simulated device)")
    os.makedirs(os.path.join(native, folder))
    files = []
    for n in names:
        dst = os.path.join(native, folder, n)
        shutil.copy(os.path.join(sim, n), dst)
        tool("strip", "--strip-debug", dst)
        files.append(dst)
    return files


def check(files):
    """Each file needs only system libraries or files beside it (in its own folder); returns the
    newest glibc."""
    newest = (2, 17)
    for f in files:
        here = {os.path.basename(g) for g in files if os.path.dirname(g) == os.path.dirname(f)}
        for dep in needed(f):
            if dep not in SYSTEM_LIBS and dep not in here:
                fail(f"{os.path.basename(f)} needs {dep}, which is neither on every manylinux system nor in the wheel")
        newest = max([newest, *glibc_versions(f)])
    return newest


def version():
    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli", "version.h")).read()
    return re.search(r'#define SYNCSPY_VERSION "([^"]+)"', text).group(1)


def metadata(ver):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {ver}\n"
            "Summary: Finds the host-device synchronizations that stall a CUDA training job "
            "(PyTorch), with no code change\n"
            "Requires-Python: >=3.9\n"
            "Classifier: Programming Language :: Python :: 3\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Description-Content-Type: text/markdown\n\n"
            "# syncspy\n\n"
            "    pip install syncspy-*.whl\n"
            "    syncspy run -- python train.py\n"
            "    syncspy run --sim -- python train.py   # no GPU: on syncspy's simulated CUDA device\n"
            "    syncspy run --sim=12 -- python train.py   # the same for a CUDA 12 torch (2.10 and earlier)\n\n"
            "At exit it prints which lines of the program make the host wait for the GPU, how "
            "often per training step and for how long, and writes summary.json and trace.bin "
            "(syncspy report, syncspy export). Lightning: "
            "`Trainer(profiler=syncspy.lightning.SyncSpyProfiler())`.\n")


def record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def write_wheel(path, entries):
    """entries: (archive name, bytes, executable) in order; RECORD last."""
    records = []
    with zipfile.ZipFile(path + ".tmp", "w", compression=zipfile.ZIP_DEFLATED) as z:
        for arc, data, executable in entries:
            info = zipfile.ZipInfo(arc, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
            z.writestr(info, data)
            records.append(record_line(arc, data))
        dist_info = [a for a, _, _ in entries if a.endswith(".dist-info/METADATA")][0].rsplit("/", 1)[0]
        records.append(f"{dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", ZIP_DATE)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o644 | stat.S_IFREG) << 16
        z.writestr(info, "\n".join(records) + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--sim", help="the simulated CUDA 13 device's folder (build/sim), shipped as _native/sim/")
    ap.add_argument("--sim12", help="the simulated CUDA 12 device's folder (build/sim12), shipped as _native/sim12/")
    ap.add_argument("--python", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", NAME))
    ap.add_argument("--out", default="dist")
    ap.add_argument("--work", default="build/wheel")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = ap.parse_args()
    ver = version()
    native = os.path.join(a.work, "_native")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(native)
    files = bundle(native, a.lib, a.cli, a.cc)
    for folder in SIM_DEVICES:
        if getattr(a, folder):
            files += bundle_sim(native, getattr(a, folder), folder)
    glibc = check(files)
    arch = os.uname().machine
    tag = f"py3-none-manylinux_{glibc[0]}_{glibc[1]}_{arch}"
    dist_info = f"{NAME}-{ver}.dist-info"
    entries = []
    for root, dirs, names in os.walk(a.python):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".py") or n == "py.typed":  # py.typed: the package's type hints count
                rel = os.path.relpath(os.path.join(root, n), a.python)
                entries.append((f"{NAME}/{rel}", open(os.path.join(root, n), "rb").read(), False))
    for f in sorted(files):
        entries.append((f"{NAME}/_native/{os.path.relpath(f, native)}", open(f, "rb").read(), True))
    entries += [
        (f"{dist_info}/METADATA", metadata(ver).encode(), False),
        (f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: syncspy scripts/wheel.py\n"
                                f"Root-Is-Purelib: false\nTag: {tag}\n").encode(), False),
        (f"{dist_info}/entry_points.txt", b"[console_scripts]\nsyncspy = syncspy.__main__:main\n", False),
        (f"{dist_info}/top_level.txt", f"{NAME}\n".encode(), False),
    ]
    os.makedirs(a.out, exist_ok=True)
    for old in os.listdir(a.out):  # one wheel: pip install dist/syncspy-*.whl takes exactly one
        if old.startswith(f"{NAME}-") and old.endswith(".whl"):
            os.unlink(os.path.join(a.out, old))
    path = os.path.join(a.out, f"{NAME}-{ver}-{tag}.whl")
    write_wheel(path, entries)
    print(f"wheel: {path} ({os.path.getsize(path) // 1024} KiB; glibc {glibc[0]}.{glibc[1]} or newer; "
          f"{', '.join(sorted(os.path.relpath(f, native) for f in files))})")


if __name__ == "__main__":
    main()
