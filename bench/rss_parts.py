"""bench/rss_parts.py: where the agent's added RSS is, on the seed-003 loop (examples/seg_loss.py,
real torch over the simulated device): one process without the agent and one with it, each
stopped (SIGSTOP) at the end of its loop (the program's --end-stamp line, before the interpreter's
exit and the agent's exit report), and the two compared mapping by mapping from /proc/PID/smaps;
for the file-backed mappings of torch's libraries, page by page (/proc/PID/pagemap, as root) by
ELF section: the pages the agent's process has mapped and the other has not. Peak RSS (ru_maxrss)
of both is printed too. Issue 36 item 2 (docs/PERFORMANCE.md "Memory by run length").

    python3 bench/rss_parts.py [--build build] [--agent SO] [--steps 1000] [--env NAME=VALUE ...]

Anonymous memory has no name here (this kernel names no anonymous mapping): its total is the
agent's rings, tables, symbolizer indexes and malloc'ed memory together."""
import argparse
import collections
import os
import signal
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.sysconf("SC_PAGE_SIZE")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--agent", default="", help="this libsyncspy.so instead of BUILD's")
    p.add_argument("--python", default="", help="default: BUILD/torch-venv/<this python>/bin/python")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable for the run with the agent")
    a = p.parse_args()
    a.build = os.path.abspath(os.path.join(ROOT, a.build))
    a.agent = os.path.abspath(a.agent) if a.agent else os.path.join(a.build, "libsyncspy.so")
    if not a.python:
        a.python = os.path.join(a.build, "torch-venv", "%d.%d" % sys.version_info[:2], "bin", "python")
    return a


def sections(path):
    """[(name, file offset, size)] of an ELF64 file's sections; [] when it is not one."""
    try:
        with open(path, "rb") as f:
            h = f.read(64)
            if h[:4] != b"\x7fELF" or h[4] != 2:
                return []
            shoff, = struct.unpack_from("<Q", h, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", h, 0x3a)
            f.seek(shoff)
            raw = f.read(shentsize * shnum)
            sh = [struct.unpack_from("<IIQQQQIIQQ", raw, i * shentsize) for i in range(shnum)]
            f.seek(sh[shstrndx][4])
            names = f.read(sh[shstrndx][5])
    except (OSError, struct.error, IndexError):
        return []
    out = []
    for name, typ, _, _, off, size, *_ in sh:
        if typ != 8 and size:  # SHT_NOBITS occupies no file bytes
            out.append((names[name:names.index(b"\0", name)].decode(), off, size))
    return out


def snapshot(pid):
    """{mapping name: Rss KiB}, anonymous KiB, {file path: set of file page numbers mapped}."""
    rss, anon, pages = collections.Counter(), 0, collections.defaultdict(set)
    files = []
    name = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            w = line.split()
            if len(w) >= 5 and "-" in w[0] and not w[0].endswith(":"):
                name = w[5] if len(w) > 5 else "[anon]"
                lo, hi = (int(x, 16) for x in w[0].split("-"))
                if name.startswith("/"):
                    files.append((name, lo, hi, int(w[2], 16)))
            elif w and w[0] == "Rss:":
                rss[name] += int(w[1])
            elif w and w[0] == "Anonymous:":
                anon += int(w[1])
    try:
        with open("/proc/%d/pagemap" % pid, "rb") as pm:
            for name, lo, hi, off in files:
                pm.seek(lo // PAGE * 8)
                data = pm.read((hi - lo) // PAGE * 8)
                for i in range(len(data) // 8):
                    if struct.unpack_from("<Q", data, i * 8)[0] >> 63:
                        pages[name].add(off // PAGE + i)
    except OSError:
        pages = {}
    return rss, anon, pages


def run(args, agent):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SYNCSPY_", "SIMCUDA_")) and k != "LD_PRELOAD"}
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    env["LD_LIBRARY_PATH"] = os.path.join(args.build, "sim") + ":" + os.path.join(cuda, "lib64")
    env["SYNCSPY_OUT"] = os.path.join(args.build, "bench", "rss-parts-out")
    env["SYNCSPY_REPORT"] = os.path.join(env["SYNCSPY_OUT"], "report.txt")
    if agent:
        env["LD_PRELOAD"] = args.agent
        env.update(dict(kv.split("=", 1) for kv in args.env))
    cmd = [args.python, os.path.join(ROOT, "examples", "seg_loss.py"), "--steps", str(args.steps),
           "--log-every", "1000000", "--end-stamp"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    snap = None
    for line in p.stdout:
        if line.startswith("end ") and snap is None:
            os.kill(p.pid, signal.SIGSTOP)
            try:
                snap = snapshot(p.pid)
            finally:
                os.kill(p.pid, signal.SIGCONT)
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or snap is None:
        sys.exit("rss_parts: %s failed (status %d)" % (" ".join(cmd), status))
    return snap, usage.ru_maxrss


def main():
    args = parse_args()
    (rss0, anon0, pages0), peak0 = run(args, False)
    (rss1, anon1, pages1), peak1 = run(args, True)
    added = sum(rss1.values()) - sum(rss0.values())
    print("%d steps: peak RSS %.1f MiB without, %.1f MiB with (%+.1f MiB); at the loop's end "
          "%+.1f MiB, of which anonymous %+.1f MiB" % (
              args.steps, peak0 / 1024, peak1 / 1024, (peak1 - peak0) / 1024, added / 1024,
              (anon1 - anon0) / 1024))
    print("by mapping (KiB, at least 128):")
    for name in sorted(set(rss0) | set(rss1), key=lambda n: rss0[n] - rss1[n]):
        if abs(rss1[name] - rss0[name]) >= 128:
            print("  %+8d  %s" % (rss1[name] - rss0[name], name))
    if not pages1:
        print("(no /proc/PID/pagemap: the file pages by section need root)")
        return
    print("file pages mapped with the agent only, by section (KiB, at least 64):")
    total = collections.Counter()
    for path in sorted(pages1):
        extra = pages1[path] - pages0.get(path, set())
        if len(extra) * PAGE < 64 << 10:
            continue
        secs = sections(path)
        by = collections.Counter()
        for pg in extra:
            at = pg * PAGE
            by[next((n for n, off, size in secs if off <= at < off + size), "(no section)")] += PAGE
        for sec, b in by.most_common():
            if b >= 64 << 10:
                print("  %+8d  %s %s" % (b >> 10, os.path.basename(path), sec))
            total[sec] += b
    print("  all files: " + ", ".join("%s %+d" % (s, b >> 10) for s, b in total.most_common(6)))


if __name__ == "__main__":
    main()
