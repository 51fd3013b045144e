"""tests/e2e/tracegen.py: an independent writer of trace.bin files (output/trace_format.h) for the
CLI's tests and the fuzz corpus: explicit little-endian layouts, sizes checked against the C
structs. `python3 tracegen.py corpus DIR` writes the seed corpus of tests/fuzz/."""
import os
import struct
import sys

MAGIC = b"SYNCSPY\x01"
VERSION_MAJOR, VERSION_MINOR = 1, 0
FEATURE_PYTHON, FEATURE_LAUNCHES = 1 << 0, 1 << 1
MAX_RECORD_BYTES, MAX_STRING_BYTES, MAX_FRAMES = 1 << 20, 4096, 512

STRING, FRAME, STACK, SYNC, LAUNCH, STEP, SITE_TOTALS, THREAD, DROPS, END = range(1, 11)
STEP_RUN, BOUND = 13, 14  # 1.4: SYNCSPY_TRACE_MB
DIR_NONE, DIR_H2D, DIR_D2H, DIR_D2D, DIR_H2H = range(5)
FRAME_BACKWARD, FRAME_CALLER = 2, 3  # trace_frame_kind: a backward sync's section markers

# Each layout includes the 8-byte record header (type, bytes).
HEADER = struct.Struct("<8sHHIQiiQQ64s")   # trace_file_header
REC = struct.Struct("<II")                  # trace_record_header
L_STRING = struct.Struct("<IIII")           # + bytes, padded
L_FRAME = struct.Struct("<IIIIIIIIQ")
L_STACK = struct.Struct("<IIII")            # + uint32 frame ids, padded
L_SYNC = struct.Struct("<IIQQQQQIIII")
L_LAUNCH = struct.Struct("<IIQQQIIII")
L_STEP = struct.Struct("<IIQQQQQQII")
L_SITE_TOTALS = struct.Struct("<IIIIIIQQQ")
L_THREAD = struct.Struct("<IIII")
L_DROPS = struct.Struct("<IIIIQQ")
L_END = struct.Struct("<IIQQ")
L_STEP_RUN = struct.Struct("<II10Q")
L_BOUND = struct.Struct("<II5Q")

# The C sizes (trace_format.h's _Static_asserts).
for layout, size in [(HEADER, 112), (L_STRING, 16), (L_FRAME, 40), (L_STACK, 16), (L_SYNC, 64),
                     (L_LAUNCH, 48), (L_STEP, 64), (L_SITE_TOTALS, 48), (L_THREAD, 16),
                     (L_DROPS, 32), (L_END, 24), (L_STEP_RUN, 88), (L_BOUND, 48)]:
    assert layout.size == size, (layout.format, layout.size, size)


def pad8(b):
    return b + b"\0" * (-len(b) % 8)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


class Trace:
    """Builds a trace in memory, record by record. Ids are handed out from 1 unless given."""

    def __init__(self, pid=1234, rank=-1, start_mono_ns=1_000_000_000, start_real_ns=0,
                 schedule=b"all steps", features=FEATURE_LAUNCHES, major=VERSION_MAJOR,
                 minor=VERSION_MINOR, header_bytes=HEADER.size, magic=MAGIC):
        self.start = start_mono_ns
        head = HEADER.pack(magic, major, minor, header_bytes, features, pid, rank, start_mono_ns,
                           start_real_ns, schedule)
        self.buf = bytearray(head + b"\0" * max(0, header_bytes - len(head)))
        self.offsets = []  # byte offset of each record
        self.next_id = {"string": 1, "frame": 1, "stack": 1, "site": 1}
        self.names = {}

    def _id(self, kind, wanted):
        if wanted is not None:
            return wanted
        i = self.next_id[kind]
        self.next_id[kind] += 1
        return i

    def raw(self, data):
        """Appends bytes as they are (a record, or anything)."""
        self.offsets.append(len(self.buf))
        self.buf += data
        return self

    def record(self, rtype, payload, bytes_=None):
        body = pad8(payload)
        n = REC.size + len(body) if bytes_ is None else bytes_
        return self.raw(REC.pack(rtype, n) + body)

    def string(self, text, id=None, length=None):
        """A string id (the same text gets the same id unless id is given)."""
        data = text.encode() if isinstance(text, str) else text
        if id is None and data in self.names:
            return self.names[data]
        sid = self._id("string", id)
        self.names.setdefault(data, sid)
        n = len(data) if length is None else length
        self.raw(pad8(L_STRING.pack(STRING, 0, sid, n) + data))
        self._fix_length()
        return sid

    def _fix_length(self):
        start = self.offsets[-1]
        struct.pack_into("<I", self.buf, start + 4, len(self.buf) - start)

    def s(self, text):
        return 0 if text is None else self.string(text)

    def frame(self, function, file=None, line=0, module=None, python=False, offset=0, id=None,
              kind=None):
        """kind: a frame_kind (BACKWARD, CALLER: a backward sync's section markers); else
        native or python."""
        fn, mod, fl = self.s(function), self.s(module), self.s(file)
        fid = self._id("frame", id)
        kind = kind if kind is not None else 1 if python else 0
        self.raw(L_FRAME.pack(FRAME, L_FRAME.size, fid, kind, fn, mod, fl, line, offset))
        return fid

    def stack(self, frame_ids, id=None, nframes=None):
        sid = self._id("stack", id)
        n = len(frame_ids) if nframes is None else nframes
        self.raw(pad8(L_STACK.pack(STACK, 0, sid, n) +
                      b"".join(struct.pack("<I", f) for f in frame_ids)))
        self._fix_length()
        return sid

    def sync(self, api, start_ns, dur_ns, tid=100, stack=0, step=0, stream=0, nbytes=0,
             dir=DIR_NONE):
        a = self.s(api)
        return self.raw(L_SYNC.pack(SYNC, L_SYNC.size, self.start + start_ns,
                                    self.start + start_ns + dur_ns, stream, nbytes, step, tid,
                                    stack, dir, a))

    def launch(self, time_ns, api="cudaLaunchKernel", kernel=None, tid=100, step=0, stream=0):
        a, k = self.s(api), self.s(kernel)
        return self.raw(L_LAUNCH.pack(LAUNCH, L_LAUNCH.size, self.start + time_ns, stream, step,
                                      tid, a, k, 0))

    def step(self, step, start_ns, end_ns, syncs=0, blocked_ns=0, launches=0, active=True,
             partial=False):
        return self.raw(L_STEP.pack(STEP, L_STEP.size, step, self.start + start_ns,
                                    self.start + end_ns, syncs, blocked_ns, launches,
                                    1 if active else 0, 1 if partial else 0))

    def site_totals(self, api, stack, count, blocked_ns, max_ns, site_id=None):
        a = self.s(api)
        sid = self._id("site", site_id)
        self.raw(L_SITE_TOTALS.pack(SITE_TOTALS, L_SITE_TOTALS.size, sid, stack, a, 0, count,
                                    blocked_ns, max_ns))
        return sid

    def thread(self, tid, name):
        n = self.s(name)
        return self.raw(L_THREAD.pack(THREAD, L_THREAD.size, tid, n))

    def drops(self, tid, syncs, launches):
        return self.raw(L_DROPS.pack(DROPS, L_DROPS.size, tid, 0, syncs, launches))

    def step_run(self, first, last, steps, active, syncs_min, syncs_max, syncs, blocked_ns=0,
                 launches=0, wall_ns=0, counts=None):
        """counts: the active steps' (repeat, syncs, launches) groups, written after the record as
        LEB128 varints (1.4's per-step counts)."""
        tail = b"".join(varint(v) for group in counts or () for v in group)
        tail = pad8(tail) if tail else b""
        return self.raw(L_STEP_RUN.pack(STEP_RUN, L_STEP_RUN.size + len(tail), first, last, steps,
                                        active, syncs_min, syncs_max, syncs, blocked_ns, launches,
                                        wall_ns) + tail)

    def bound(self, bound_bytes, sampled_from, detail_steps, steps_seen, steps_folded):
        return self.raw(L_BOUND.pack(BOUND, L_BOUND.size, bound_bytes, sampled_from, detail_steps,
                                     steps_seen, steps_folded))

    def end(self, end_ns, unattributed=0):
        return self.raw(L_END.pack(END, L_END.size, self.start + end_ns, unattributed))

    def data(self):
        return bytes(self.buf)

    def write(self, path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(self.buf)
        return path


MS = 1_000_000
TORCH = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"


def sample(pid=4242, rank=-1, end=True, syncs=True):
    """A small complete trace with known answers: two sites whose exact counts (SITE_TOTALS)
    differ from the SYNC records present (as when a ring drops events), four steps (step 0
    inactive), two threads, launches with and without kernel names, an unknown record type."""
    t = Trace(pid=pid, rank=rank, schedule=b"wait=1,active=3",
              features=FEATURE_LAUNCHES | FEATURE_PYTHON)
    t.thread(100, "python")
    t.thread(101, "pt_autograd_0")
    nz = t.frame("at::_ops::nonzero::call(at::Tensor const&)", module=TORCH, offset=0x1234)
    ib = t.frame("MaskedLoss.ignore_background", file="/home/u/proj/train.py", line=61,
                 python=True)
    fw = t.frame("MaskedLoss.forward", file="/home/u/proj/train.py", line=70, python=True)
    s1 = t.stack([nz, ib, fw])
    lf = t.frame("loss_fn(float*, int)", module="/home/u/train", file="train.cpp", line=42,
                 offset=0x1100)
    mn = t.frame("main", module="/home/u/train", file="train.cpp", line=120, offset=0x1300)
    s2 = t.stack([lf, mn])
    t.step(0, 0, 10 * MS, syncs=1, blocked_ns=1 * MS, launches=5, active=False)
    t.raw(struct.pack("<II", 99, 24) + b"future!!" * 2)  # an unknown record type: skipped
    for step in (1, 2, 3):
        base = step * 40 * MS - 30 * MS
        t.launch(base + 1 * MS, kernel="nonzero_kernel", step=step, stream=7)
        if syncs:
            t.sync("cudaStreamSynchronize", base + 2 * MS, 5 * MS, tid=100, stack=s1, step=step,
                   stream=7)
            t.sync("cudaMemcpy", base + 10 * MS, 2 * MS, tid=101, stack=s2, step=step,
                   nbytes=4096, dir=DIR_D2H)
        t.launch(base + 12 * MS, api="cudaLaunchKernelExC", tid=101, step=step)
        t.site_totals("cudaStreamSynchronize", s1, 2 * step, 10 * MS * step, 6 * MS, site_id=1)
        t.site_totals("cudaMemcpy", s2, step, 2 * MS * step, 3 * MS, site_id=2)
        t.step(step, base - 10 * MS, base + 30 * MS, syncs=3, blocked_ns=12 * MS, launches=200)
    t.drops(100, 3, 0)
    if end:
        t.end(120 * MS, unattributed=0)
    return t


def one_process(folder):
    """folder/pid4242: the sample; returns the process folder."""
    sample().write(os.path.join(folder, "pid4242", "trace.bin"))
    return os.path.join(folder, "pid4242")


def root_of_two(folder):
    """folder as a SYNCSPY_OUT root: the sample (ended) and rank 1 (pid 1, still running)."""
    sample().write(os.path.join(folder, "pid4242", "trace.bin"))
    sample(pid=1, rank=1, end=False).write(os.path.join(folder, "pid1", "trace.bin"))
    return folder


def first_screen(pid=5151, launches=False, slow_step=16, slow_ms=200):
    """The html page's first screen (issue 35): 31 training steps of 4 ms, one of them (slow_step)
    slow_ms long (a DataLoader restarting its workers), start-up apart; two lines whose stacks
    run from the program's `<module>` down to torch, under CPython's and libc's frames (_start,
    Py_RunMain, _PyEval_EvalFrameDefault, runpy's): train.py:61's torch.nonzero (1 ms a step),
    called from main through two runtime frames (torch's Module._call_impl, the interpreter's),
    and train.py:88's .item() (0.5 ms a step). Launches traced, with a tick each step, or not."""
    t = Trace(pid=pid, schedule=b"all steps",
              features=FEATURE_PYTHON | (FEATURE_LAUNCHES if launches else 0))
    t.thread(100, "python")
    py = "/usr/bin/python3.11"
    outer = [t.frame("_run_code", file="/usr/lib/python3.11/runpy.py", line=86, python=True),
             t.frame("_run_module_as_main", file="/usr/lib/python3.11/runpy.py", line=196, python=True),
             t.frame("_PyEval_EvalFrameDefault", module=py, offset=0x2000),
             t.frame("PyEval_EvalCode", module=py, offset=0x2100),
             t.frame("run_mod", module=py, offset=0x2200),
             t.frame("Py_RunMain", module=py, offset=0x2300),
             t.frame("Py_BytesMain", module=py, offset=0x2400),
             t.frame("__libc_start_main", module="/usr/lib/x86_64-linux-gnu/libc.so.6", offset=0x100),
             t.frame("_start", module=py, offset=0x10)]
    mod = t.frame("<module>", file="/home/u/proj/train.py", line=120, python=True)
    main = t.frame("main", file="/home/u/proj/train.py", line=100, python=True)
    nz = t.frame("at::_ops::nonzero::call(at::Tensor const&)", module=TORCH, offset=0x1234)
    ib = t.frame("ignore_background", file="/home/u/proj/train.py", line=61, python=True)
    it = t.frame("at::_ops::_local_scalar_dense::call(at::Tensor const&)", module=TORCH, offset=0x2234)
    item = t.frame("Tensor.item", file="/venv/lib/python3.11/site-packages/torch/_tensor.py", line=1000, python=True)
    lg = t.frame("log_loss", file="/home/u/proj/train.py", line=88, python=True)
    ci = t.frame("Module._call_impl", file="/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
                 line=1798, python=True)
    ev = t.frame("_PyEval_EvalFrameDefault", module=py, offset=0x2000)
    s1 = t.stack([nz, ib, ci, ev, main, mod] + outer)
    s2 = t.stack([it, item, lg, main, mod] + outer)
    t.step(0, 0, 10 * MS, syncs=0, blocked_ns=0, launches=1, active=False)
    at = 10 * MS
    for step in range(1, 32):
        wall = (slow_ms if step == slow_step else 4) * MS
        if launches:
            t.launch(at + MS // 10, kernel="nonzero_kernel", step=step)
        t.sync("cudaStreamSynchronize", at + MS // 2, MS, stack=s1, step=step)
        t.sync("cudaMemcpy", at + 2 * MS, MS // 2, stack=s2, step=step, nbytes=4, dir=DIR_D2H)
        t.step(step, at, at + wall, syncs=2, blocked_ns=MS + MS // 2, launches=1 if launches else 0)
        at += wall
    t.site_totals("cudaStreamSynchronize", s1, 31, 31 * MS, MS, site_id=1)
    t.site_totals("cudaMemcpy", s2, 31, 31 * MS // 2, MS // 2, site_id=2)
    t.end(at)
    return t


def write_corpus(folder):
    """Small valid and edge-case traces: the fuzzer's seeds."""
    os.makedirs(folder, exist_ok=True)
    full = sample()
    cases = {
        "complete.bin": full.data(),
        "killed.bin": sample(end=False).data(),
        "cut_mid_record.bin": full.data()[:-13],
        "header_only.bin": Trace().data(),
        "no_syncs.bin": sample(syncs=False, rank=3).data(),
        "newer_major.bin": Trace(major=2).data(),
    }
    t = Trace(header_bytes=160)  # a later minor version's longer header: skipped to
    t.thread(1, "main")
    cases["long_header.bin"] = t.data()
    t = Trace()
    f = t.frame("f", file="a.py", line=1, python=True, id=0xFFFFFFFF)
    t.stack([f] * 8, id=0xFFFFFFFE)
    t.site_totals("cudaFree", 0xFFFFFFFE, 1, 1, 1, site_id=0xFFFFFFFF)
    t.string(b"bad utf8 \xff\xfe\xc0\x80 and \x01 control")
    cases["big_ids.bin"] = t.data()
    t = Trace()
    t.stack([7])  # a frame id nothing defines
    cases["undefined_frame.bin"] = t.data()
    t = sample(end=False)  # 1.4: steps 4..1003 folded past the bound, then the exit's
    t.step_run(4, 1003, 1000, 1000, 3, 3, 3000, 12 * MS * 1000, 200 * 1000, 40 * MS * 1000)
    t.bound(1 << 20, 3, 3, 1004, 1000)
    t.end(120 * MS)
    cases["bounded.bin"] = t.data()
    # found by the fuzzer, once fixed: times of a step and of its sync 2^63 ns or more apart
    # (the html timeline's offset overflowed), and a step numbered 2^64 - 2 (the estimate of
    # the active ones among the steps with no record overflowed its conversion from double)
    t = Trace(start_mono_ns=0)
    t.step(1, (1 << 64) - (3 << 61), (1 << 64) - 1, syncs=1, blocked_ns=5)
    t.sync("cudaStreamSynchronize", 3 << 61, 5, step=1)
    t.end(1)
    cases["far_times.bin"] = t.data()
    t = Trace()
    t.step(1, 0, 10)
    t.step((1 << 64) - 2, 200 * MS, 240 * MS)
    cases["last_step_number.bin"] = t.data()
    for name, data in cases.items():
        with open(os.path.join(folder, name), "wb") as fh:
            fh.write(data)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "corpus":
        write_corpus(sys.argv[2])
    else:
        sys.exit("usage: tracegen.py corpus DIR")
