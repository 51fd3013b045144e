"""tests/e2e/test_trace_cli.py: the `syncspy` command on trace.bin files written by tracegen.py
(an independent writer of output/trace_format.h): the report from exact SITE_TOTALS counts, a
trace cut at every byte offset (a flagged report, or a clear error when the header is cut),
corruption in the middle (exit 1, a sentence naming the file, the problem and its offset), the
Chrome and folded exports, and a SYNCSPY_OUT root mixing trace.bin and summary.json."""
import concurrent.futures
import json
import os
import re
import struct
import subprocess
import tempfile
import time
import unittest

import tracegen
from tracegen import MS, Trace

CLI = os.path.join(os.environ.get("BUILD", "build"), "syncspy")


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, timeout=60)
    # a signal (a crash) shows as a negative return code
    assert p.returncode >= 0, f"syncspy {args} died of signal {-p.returncode}: {p.stderr}"
    p.stdout = p.stdout.decode("utf-8")  # strict: the CLI writes only UTF-8
    p.stderr = p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in p.stderr
    return p


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def frame_json(function, module="", file="", line=0, python=False, offset=0):
    return {"function": function, "module": module, "file": file, "line": line,
            "python": python, "offset": offset}


def sample_summary(pid):
    """The summary.json the sample trace's process would have left: the same sites."""
    nz = frame_json("at::_ops::nonzero::call(at::Tensor const&)", module=tracegen.TORCH,
                    offset=0x1234)
    ib = frame_json("MaskedLoss.ignore_background", file="/home/u/proj/train.py", line=61,
                    python=True)
    fw = frame_json("MaskedLoss.forward", file="/home/u/proj/train.py", line=70, python=True)
    lf = frame_json("loss_fn(float*, int)", module="/home/u/train", file="train.cpp", line=42,
                    offset=0x1100)
    mn = frame_json("main", module="/home/u/train", file="train.cpp", line=120, offset=0x1300)
    steps = [{"step": s, "wall_ns": 40 * MS, "syncs": 3, "blocked_ns": 12 * MS,
              "launches": 200, "partial": False} for s in (1, 2, 3)]
    return {"version": 1, "pid": pid, "rank": None, "schedule": "wait=1,active=3",
            # step 0 (inactive: wait=1) ended by a mark: start-up, as the trace's STEP 0 says
            "startup": {"step": 0, "wall_ns": 10 * MS, "syncs": 0, "blocked_ns": 0, "launches": 5},
            "steps": steps, "sites": [
                {"api": "cudaStreamSynchronize", "count": 6, "blocked_ns": 30 * MS,
                 "max_ns": 6 * MS, "frames": [nz, ib, fw]},
                {"api": "cudaMemcpy", "count": 3, "blocked_ns": 6 * MS, "max_ns": 3 * MS,
                 "frames": [lf, mn]}]}


class TraceCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-trace-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    # ---- report --------------------------------------------------------------------------

    def test_report_exact_counts_from_site_totals(self):
        # 3 SYNC records per site, but SITE_TOTALS say 6 and 3: the counts come from the latter
        tracegen.sample().write(self.path("pid4242", "trace.bin"))
        p = run("report", self.path("pid4242"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        out = p.stdout
        self.assertIn("syncspy: pid 4242: 4 step marks (schedule: wait=1,active=3)\n  3 steps counted (the schedule records 3 of 4)\n", out)
        self.assertIn("step 40.0 ms median (mean 40.0 ms, sd 0 ns) | 3.00 syncs/step | blocked 12.0 ms/step (30.0%) | "
                      "200 launches/step", out)
        self.assertNotIn("ends early", out)
        self.assertIn("3 sync and 0 launch events found the trace buffers full", out)
        self.assertIn("before the first step (start-up, not in the rates): 10.0 ms, 0 syncs, blocked 0 ns", out)
        rows = [l for l in out.splitlines() if re.match(r"^\s+\d+\s+\S+ [mu]?s\s", l)]
        self.assertEqual(len(rows), 2, out)
        # blocked/step, share, syncs/step, mean, max
        self.assertRegex(rows[0], r"^\s+1\s+10\.0 ms\s+25\.0%\s+2\.00\s+5\.00 ms\s+6\.00 ms\s+"
                                  r"cudaStreamSynchronize$")
        self.assertRegex(rows[1], r"^\s+2\s+2\.00 ms\s+5\.0%\s+1\.00\s+2\.00 ms\s+3\.00 ms\s+"
                                  r"cudaMemcpy$")
        self.assertLess(out.index("MaskedLoss.ignore_background"), out.index("loss_fn"))
        self.assertIn("/home/u/proj/train.py:61", out)
        self.assertIn("[matched: aten::nonzero]", out)
        # the trace.bin file itself, and the same answer as the equivalent summary.json
        p2 = run("report", self.path("pid4242", "trace.bin"))
        self.assertEqual(p2.stdout, out)
        write(self.path("s", "pid4242", "summary.json"), json.dumps(sample_summary(4242)))
        p3 = run("report", self.path("s", "pid4242"))
        self.assertEqual(p3.returncode, 0, p3.stderr)
        self.assertEqual(p3.stdout, out.replace(
            "  3 sync and 0 launch events found the trace buffers full: counts stay exact, the "
            "timeline misses them (SYNCSPY_BUFFER_MB gives more room)\n", ""))

    def test_report_per_step_numbers(self):
        t = Trace(pid=9, rank=2, schedule=b"wait=1,active=3")
        t.step(0, 0, 100 * MS, syncs=50, blocked_ns=90 * MS, launches=9, active=False)
        for s, blocked in ((1, 10), (2, 20), (3, 30)):
            t.step(s, s * 100 * MS, (s + 1) * 100 * MS, syncs=s, blocked_ns=blocked * MS,
                   launches=10 * s)
        t.step(4, 400 * MS, 450 * MS, syncs=70, blocked_ns=45 * MS, active=False, partial=True)
        t.end(450 * MS)
        t.write(self.path("rank2-pid9", "trace.bin"))
        p = run("report", self.path("rank2-pid9"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("syncspy: rank 2 pid 9: 4 step marks (schedule: wait=1,active=3)\n"
                      "  3 steps counted (the schedule records 3 of 5)\n", p.stdout)
        # over active steps only: 60 ms blocked of 300 ms, 6 syncs, 60 launches
        self.assertIn("step 100 ms median (mean 100 ms, sd 0 ns) | 2.00 syncs/step | blocked 20.0 ms/step (20.0%) | "
                      "20.0 launches/step", p.stdout)
        self.assertIn("no sync site was recorded with its stack", p.stdout)

    def test_killed_process(self):
        # no END record (killed at a record boundary), and no summary.json
        tracegen.sample(end=False).write(self.path("pid1", "trace.bin"))
        p = run("report", self.path("pid1"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("trace ends early (the process was killed?): up to the last flush\n",
                      p.stdout)
        self.assertIn("cudaStreamSynchronize", p.stdout)

    def test_cut_at_every_byte_offset(self):
        data = tracegen.sample().data()
        header = tracegen.HEADER.size

        def one(n):
            folder = self.path("cut", f"pid{n + 1}")
            write(os.path.join(folder, "trace.bin"), data[:n])
            return n, folder, run("report", folder)

        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            for n, folder, p in pool.map(one, range(len(data) + 1)):
                with self.subTest(n=n):
                    if n < header:
                        self.assertEqual(p.returncode, 2)
                        self.assertEqual(p.stdout, "")
                        self.assertIn(os.path.join(folder, "trace.bin"), p.stderr)
                        self.assertIn("is empty" if n == 0 else
                                      f"ends at byte {n}, inside its 112-byte header", p.stderr)
                        continue
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(p.stderr, "")
                    self.assertIn("syncspy: pid 4242:", p.stdout)
                    self.assertEqual("trace ends early" in p.stdout, n < len(data), p.stdout)

    # ---- corruption ----------------------------------------------------------------------

    def expect_refusal(self, name, data, *fragments):
        folder = self.path(name)
        trace = write(os.path.join(folder, "trace.bin"), data)
        p = run("report", folder)
        self.assertEqual(p.returncode, 2, p.stdout)  # nothing else to read: bad input
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn(trace, p.stderr)
        for f in fragments:
            self.assertIn(f, p.stderr)
        return p

    def test_corruption_in_the_middle(self):
        # a length that cannot be (13: not a multiple of 8), with good records after it
        t = tracegen.sample()
        at = t.offsets[10]
        data = bytearray(t.data())
        struct.pack_into("<I", data, at + 4, 13)
        self.expect_refusal("bad_length", bytes(data), f"is corrupt at byte {at}",
                            "says it is 13 bytes long")
        # longer than any record may be
        struct.pack_into("<I", data, at + 4, (1 << 20) + 8)
        self.expect_refusal("huge_length", bytes(data), f"is corrupt at byte {at}",
                            "more than 1048576")

        t = Trace()
        t.frame("f")
        at = len(t.buf)
        t.stack([1, 99])
        t.thread(1, "main")
        self.expect_refusal("unknown_frame", t.data(), f"is corrupt at byte {at}",
                            "stack 1 lists frame 99, which no earlier record defines")

        t = Trace()
        t.string("a", id=5)
        at = len(t.buf)
        t.string("b", id=5)
        self.expect_refusal("duplicate_id", t.data(), f"is corrupt at byte {at}",
                            "string 5 is defined twice")

        t = Trace()
        f = t.frame("f")
        t.stack([f], nframes=0xFFFFFFFF)
        self.expect_refusal("huge_nframes", t.data(), "has 4294967295 frames, more than 512")

        t = Trace()
        t.string("abc", length=100)
        self.expect_refusal("long_string", t.data(),
                            "string 1 is 100 bytes long, more than its 24-byte record holds")

        t = Trace()
        t.sync("cudaMemcpy", 0, 10, stack=42)
        self.expect_refusal("unknown_stack", t.data(), "refers to stack 42")

    def test_bad_headers(self):
        self.expect_refusal("newer", Trace(major=2).data(),
                            "trace.bin format 2 is newer than this syncspy understands (1)")
        self.expect_refusal("magic", Trace(magic=b"NOTATRCE").data(), "is not a syncspy trace")
        self.expect_refusal("empty", b"", "is empty")
        self.expect_refusal("header_bytes", Trace(header_bytes=12).data()[:112],
                            "bad header: it says it is 12 bytes long")
        self.expect_refusal("required_feature", Trace(features=1 << 33).data(),
                            "needs features this syncspy does not know")

    def test_sparse_tail_of_a_tebibyte_is_not_read(self):
        """A trace.bin extended to 1 TiB with holes (a file system's preallocation, a copy
        gone wrong): the holes are skipped, not read (it took 14 minutes)."""
        tracegen.sample().write(self.path("pid4242", "trace.bin"))
        with open(self.path("pid4242", "trace.bin"), "r+b") as f:
            f.truncate(1 << 40)
        t = time.monotonic()
        p = run("report", self.path("pid4242"))
        self.assertLess(time.monotonic() - t, 20)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("syncspy: pid 4242: 4 step marks (schedule: wait=1,active=3)\n  3 steps counted (the schedule records 3 of 4)\n", p.stdout)
        self.assertIn("its last record was cut", p.stdout)  # the zeros: a tail never filled

    def test_fifo_does_not_hang(self):
        for name in ("trace.bin", "summary.json"):
            folder = self.path(name.split(".")[0])
            os.makedirs(folder)
            os.mkfifo(os.path.join(folder, name))
            p = run("report", folder)
            self.assertEqual(p.returncode, 2)
            self.assertIn(os.path.join(folder, name) + " is not a regular file", p.stderr)

    def test_unknown_record_types_are_skipped(self):
        t = Trace(header_bytes=136)  # a later minor's longer header too
        t.record(77, b"\xff" * 40)
        t.record(0xFFFFFFFF, b"")
        f = t.frame("g", file="x.py", line=3, python=True)
        t.site_totals("cudaDeviceSynchronize", t.stack([f]), 4, 8 * MS, 3 * MS)
        t.step(0, 0, 10 * MS, syncs=4, blocked_ns=8 * MS)
        t.end(10 * MS)
        t.write(self.path("pid5", "trace.bin"))
        p = run("report", self.path("pid5"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"\n\s+1\s+8\.00 ms\s+80\.0%\s+4\.00\s+2\.00 ms\s+3\.00 ms\s+"
                                   r"cudaDeviceSynchronize\n")
        self.assertIn("x.py:3", p.stdout)

    def test_bad_trace_falls_back_to_summary(self):
        data = bytearray(tracegen.sample().data())
        struct.pack_into("<I", data, tracegen.HEADER.size + 4, 3)
        write(self.path("pid4242", "trace.bin"), bytes(data))
        write(self.path("pid4242", "summary.json"), json.dumps(sample_summary(4242)))
        p = run("report", self.path("pid4242"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("trace.bin is corrupt at byte 112", p.stderr)
        self.assertIn("reading " + self.path("pid4242", "summary.json") + " instead", p.stderr)
        self.assertIn("syncspy: pid 4242: 4 step marks (schedule: wait=1,active=3)\n  3 steps counted (the schedule records 3 of 4)\n", p.stdout)

    # ---- exports -------------------------------------------------------------------------

    def chrome(self, folder):
        out = self.path("trace.json")
        p = run("export", "--chrome", out, folder)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
        self.assertEqual(doc["displayTimeUnit"], "ms")
        events = doc["traceEvents"]
        last = {}
        for e in events:
            for key in ("ph", "ts", "pid", "tid", "name"):
                self.assertIn(key, e, e)
            if e["ph"] == "X":
                self.assertGreaterEqual(e["dur"], 0, e)
            self.assertGreaterEqual(e["ts"], 0, e)
            if e["ph"] in ("X", "i"):  # time order on each track
                track = (e["pid"], e["tid"])
                self.assertGreaterEqual(e["ts"], last.get(track, 0), e)
                last[track] = e["ts"]
        return doc, events

    def test_export_chrome(self):
        tracegen.sample().write(self.path("pid4242", "trace.bin"))
        doc, events = self.chrome(self.path("pid4242"))
        meta = {(e["name"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
        self.assertEqual(meta[("process_name", 0)], {"name": "pid 4242"})
        self.assertEqual(meta[("thread_name", 0)], {"name": "steps"})
        self.assertEqual(meta[("thread_name", 100)], {"name": "python"})
        self.assertEqual(meta[("thread_name", 101)], {"name": "pt_autograd_0"})

        steps = [e for e in events if e["ph"] == "X" and e.get("cat") == "step"]
        self.assertEqual([e["name"] for e in steps], ["step 0", "step 1", "step 2", "step 3"])
        self.assertTrue(all(e["tid"] == 0 for e in steps))
        self.assertEqual([e["ts"] for e in steps], [0, 0, 40000, 80000])
        self.assertEqual([e["dur"] for e in steps], [10000, 40000, 40000, 40000])
        self.assertEqual([e["args"]["active"] for e in steps], [False, True, True, True])
        self.assertEqual(steps[1]["args"], {"step": 1, "syncs": 3, "blocked_ns": 12 * MS,
                                            "launches": 200, "active": True, "partial": False})

        syncs = [e for e in events if e["ph"] == "X" and e.get("cat") == "sync"]
        self.assertEqual(len(syncs), 6)  # the SYNC records (the counts say 9: drops)
        first = syncs[0]
        self.assertEqual((first["name"], first["tid"], first["ts"], first["dur"]),
                         ("cudaStreamSynchronize", 100, 12000, 5000))
        self.assertEqual(first["args"]["frames"], [
            "at::_ops::nonzero::call (libtorch_cuda.so+0x1234)",
            "MaskedLoss.ignore_background (/home/u/proj/train.py:61)",
            "MaskedLoss.forward (/home/u/proj/train.py:70)"])
        self.assertEqual(first["args"]["step"], 1)
        self.assertEqual(first["args"]["stream"], "0x7")
        memcpy = [e for e in syncs if e["name"] == "cudaMemcpy"]
        self.assertEqual(len(memcpy), 3)
        self.assertEqual((memcpy[0]["tid"], memcpy[0]["dur"], memcpy[0]["args"]["bytes"],
                          memcpy[0]["args"]["dir"]), (101, 2000, 4096, "D2H"))
        self.assertEqual(memcpy[0]["args"]["frames"][0], "loss_fn (train.cpp:42)")

        launches = [e for e in events if e["ph"] == "i"]
        self.assertEqual(len(launches), 6)
        self.assertTrue(all(e["s"] == "t" for e in launches))
        self.assertEqual({(e["name"], e["tid"]) for e in launches},
                         {("nonzero_kernel", 100), ("cudaLaunchKernelExC", 101)})
        self.assertEqual(doc["otherData"]["sync_events_dropped"], 3)

    def test_export_to_a_pipe_writes_in_place(self):
        """OUT that is not a regular file (a pipe, /dev/null) is written, never replaced."""
        t = Trace(pid=21)
        t.sync("cudaFree", MS, MS, tid=21)
        folder = self.path("pipe-case", "pid21")
        t.write(os.path.join(folder, "trace.bin"))
        fifo = self.path("out.fifo")
        os.mkfifo(fifo)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            reader = pool.submit(lambda: open(fifo, "rb").read())
            p = run("export", "--chrome", fifo, folder)
            data = reader.result(timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        import stat
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
        self.assertFalse(os.path.exists(fifo + ".tmp"))
        doc = json.loads(data.decode("utf-8"))
        self.assertTrue(any(e["name"] == "cudaFree" for e in doc["traceEvents"]))

    def test_export_chrome_several_processes_and_order(self):
        # two processes one second apart, one thread's records out of time order; rank 1 runs on
        # another host: its monotonic clock is unrelated, its wall-clock start places it
        a = Trace(pid=10, rank=0, start_mono_ns=5_000_000_000, start_real_ns=1_700_000_000_000_000_000)
        a.sync("cudaFree", 9 * MS, MS, tid=10)
        a.sync("cudaFree", 1 * MS, MS, tid=10)
        a.launch(5 * MS, kernel="k\xff", tid=10)
        a.string(b"bad \xff\xfe utf-8", id=500)
        a.thread(10, b"bad \xff\xfe utf-8")
        a.write(self.path("root", "rank0-pid10", "trace.bin"))
        b = Trace(pid=11, rank=1, start_mono_ns=77_000_000_000, start_real_ns=1_700_000_001_000_000_000)
        b.step(0, 0, 2 * MS)
        b.write(self.path("root", "rank1-pid11", "trace.bin"))
        doc, events = self.chrome(self.path("root"))
        names = [e["args"]["name"] for e in events if e["name"] == "process_name"]
        self.assertEqual(names, ["rank 0 pid 10", "rank 1 pid 11"])
        a_syncs = [e["ts"] for e in events if e["pid"] == 10 and e["ph"] == "X"]
        self.assertEqual(a_syncs, [1000, 9000])
        step = [e for e in events if e["pid"] == 11 and e["ph"] == "X"][0]
        self.assertEqual((step["ts"], step["dur"]), (1_000_000, 2000))
        thread = [e for e in events if e["name"] == "thread_name" and e["tid"] == 10][0]
        self.assertEqual(thread["args"]["name"], "bad \ufffd\ufffd utf-8")

        # the same pid on two hosts: two processes in the viewer all the same
        c = Trace(pid=10, rank=8, start_mono_ns=5_000_000_000)
        c.sync("cudaFree", 3 * MS, MS, tid=10)
        c.write(self.path("root", "rank8-pid10", "trace.bin"))
        doc, events = self.chrome(self.path("root"))
        procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
        self.assertEqual(sorted(procs.values()), ["rank 0 pid 10", "rank 1 pid 11",
                                                  "rank 8 pid 10"])
        rank8 = [pid for pid, name in procs.items() if name == "rank 8 pid 10"][0]
        self.assertNotEqual(rank8, 10)
        self.assertEqual([e["ts"] for e in events if e["pid"] == rank8 and e["ph"] == "X"],
                         [3000])

    def test_export_folded_weights_are_site_totals(self):
        tracegen.sample().write(self.path("pid4242", "trace.bin"))
        p = run("export", "--folded", "-", self.path("pid4242"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines(), [
            "MaskedLoss.forward (/home/u/proj/train.py:70);"
            "MaskedLoss.ignore_background (/home/u/proj/train.py:61);"
            "at::_ops::nonzero::call;cudaStreamSynchronize 30000000",
            "main;loss_fn;cudaMemcpy 6000000",
        ])
        # the same as the export of the equivalent summary.json
        write(self.path("s", "pid4242", "summary.json"), json.dumps(sample_summary(4242)))
        q = run("export", "--folded", "-", self.path("s", "pid4242"))
        self.assertEqual(q.stdout, p.stdout)

    # ---- a SYNCSPY_OUT root mixing both kinds --------------------------------------------

    def test_root_with_trace_only_and_summary_only(self):
        tracegen.sample(pid=100, rank=0, end=False).write(
            self.path("out", "rank0-pid100", "trace.bin"))
        write(self.path("out", "rank1-pid101", "summary.json"),
              json.dumps(dict(sample_summary(101), rank=1)))
        p = run("report", self.path("out"))
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        self.assertLess(out.index("syncspy: rank 0 pid 100:"),
                        out.index("syncspy: rank 1 pid 101:"))
        self.assertEqual(out.count("trace ends early"), 1)
        self.assertIn("hotspots of all 2 processes", out)
        self.assertIn("in all 2 processes", out)
        # 60 ms of cudaStreamSynchronize over 6 process-steps
        self.assertRegex(out, r"\n\s+1\s+10\.0 ms\s+25\.0%\s+2\.00\s")

        p = run("export", "--folded", "-", self.path("out"))
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 4)
        self.assertTrue(lines[0].startswith("rank0-pid100;MaskedLoss.forward"))
        self.assertTrue(lines[3].startswith("rank1-pid101;main;loss_fn;cudaMemcpy 6000000"))

        doc, events = self.chrome(self.path("out"))
        syncs = {e["pid"] for e in events if e.get("cat") == "sync"}
        self.assertEqual(syncs, {100})
        steps = [e for e in events if e.get("cat") == "step" and e["pid"] == 101]
        self.assertEqual([e["ts"] for e in steps], [0, 40000, 80000])  # laid end to end
        self.assertIn("1 process read from summary.json alone", doc["otherData"]["note"])


if __name__ == "__main__":
    unittest.main()
