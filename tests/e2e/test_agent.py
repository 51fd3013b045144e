"""End-to-end: the agent preloaded into small C/C++ programs on the simulated device, with known
sync sites, counts and blocked times."""
import glob
import os
import re
import subprocess
import tempfile
import unittest

from util import LIB, MS, folder_host, frames_text, prog, run, site_by_function

# Blocked times: a sync can't return before the timeline drains (strict lower bound, minus a
# little for the time between the launch and the sync); the upper bound only guards against
# nonsense on a loaded machine.
def assert_blocked(tc, site, per_call_ms, count):
    tc.assertEqual(site["count"], count, frames_text(site))
    total = site["blocked_ns"]
    tc.assertGreaterEqual(total, count * (per_call_ms - 0.5) * MS, frames_text(site))
    tc.assertLessEqual(total, count * (per_call_ms * 3 + 20) * MS, frames_text(site))
    tc.assertGreaterEqual(site["max_ns"], (per_call_ms - 0.5) * MS)
    tc.assertLessEqual(site["max_ns"], total)


class BasicProgram(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain = run([prog("basic"), "5"], preload=False)
        cls.r = run([prog("basic"), "5"])
        cls.s = cls.r.summary()

    def test_program_output_and_exit_code_unchanged(self):
        self.assertEqual(self.plain.returncode, 3)
        self.assertEqual(self.r.returncode, 3)
        self.assertEqual(self.r.stdout, self.plain.stdout)
        self.assertEqual(self.r.stdout, "basic: 5 steps done\n")
        self.assertEqual(self.plain.stderr, "")

    def test_summary_header(self):
        s = self.s
        self.assertEqual(s["version"], 1)
        self.assertEqual(s["pid"], int(os.path.basename(self.r.process_dirs()[0])[3:]))
        self.assertIsNone(s["rank"])

    def test_pageable_memcpy_site(self):
        sites = site_by_function(self.s, "loss_fn", "cudaMemcpy")
        self.assertEqual(len(sites), 1, [frames_text(x) for x in self.s["sites"]])
        assert_blocked(self, sites[0], 20, 5)
        f0, f1 = sites[0]["frames"][0], sites[0]["frames"][1]
        self.assertTrue(f0["module"].endswith("/basic"), f0)
        self.assertFalse(f0["python"])
        self.assertEqual(f1["function"], "main")

    def test_device_synchronize_site(self):
        sites = site_by_function(self.s, "wait_all", "cudaDeviceSynchronize")
        self.assertEqual(len(sites), 1)
        assert_blocked(self, sites[0], 10, 5)

    def test_async_copies_pinned_is_not_a_sync_pageable_is(self):
        self.assertEqual(site_by_function(self.s, "copy_pinned"), [])
        sites = site_by_function(self.s, "copy_pageable", "cudaMemcpyAsync")
        self.assertEqual(len(sites), 1)
        assert_blocked(self, sites[0], 3, 5)

    def test_ptsz_variant(self):
        sites = site_by_function(self.s, "per_thread_sync", "cudaStreamSynchronize_ptsz")
        self.assertEqual(len(sites), 1)
        assert_blocked(self, sites[0], 3, 5)

    def test_frames_start_at_the_caller(self):
        for site in self.s["sites"]:
            for f in site["frames"]:
                self.assertNotIn("libsyncspy", f["module"], frames_text(site))
            self.assertNotIn("agent_", site["frames"][0]["function"])
            for f in site["frames"]:  # symbol versions (@@GLIBC_2.34) are not part of the name
                self.assertNotIn("@", f["function"], frames_text(site))

    def test_report_leaves_out_startup_frames(self):
        self.assertIn("main", self.r.stderr)
        self.assertNotIn("_start", self.r.stderr)
        self.assertNotIn("__libc_start", self.r.stderr)

    def test_free_after_last_step_is_a_partial_step(self):
        steps = self.s["steps"]
        self.assertEqual([st["step"] for st in steps], [0, 1, 2, 3, 4, 5])
        self.assertTrue(steps[-1]["partial"])
        self.assertEqual(steps[-1]["syncs"], 2)  # cudaFreeHost and cudaFree
        self.assertEqual(len(site_by_function(self.s, "main", "cudaFree")), 1)
        self.assertEqual(len(site_by_function(self.s, "main", "cudaFreeHost")), 1)

    def test_per_step_counts(self):
        for st in self.s["steps"][:-1]:
            self.assertFalse(st["partial"])
            self.assertEqual(st["syncs"], 5, st)
            self.assertEqual(st["launches"], 14, st)
            # 20 + 10 + 3 + 3 ms of kernels block the host every step
            self.assertGreaterEqual(st["blocked_ns"], 35 * MS, st)
            self.assertGreaterEqual(st["wall_ns"], st["blocked_ns"], st)

    def test_site_counts_match_step_counts(self):
        self.assertEqual(sum(s["count"] for s in self.s["sites"]), sum(st["syncs"] for st in self.s["steps"]))
        self.assertEqual(sum(s["blocked_ns"] for s in self.s["sites"]), sum(st["blocked_ns"] for st in self.s["steps"]))

    def test_report_names_the_sites(self):
        err = self.r.stderr
        for word in ("loss_fn", "wait_all", "copy_pageable", "per_thread_sync", "cudaMemcpy", "cudaDeviceSynchronize"):
            self.assertIn(word, err)
        self.assertNotIn("copy_pinned", err)
        # the heaviest line first
        self.assertLess(err.index("loss_fn"), err.index("wait_all"))
        self.assertIn("summary.json", err)


class Schedule(unittest.TestCase):
    def test_only_active_steps_are_recorded(self):
        r = run([prog("basic"), "6"], env={"SYNCSPY_SCHEDULE": "wait=1,warmup=1,active=2,repeat=1"})
        s = r.summary()
        self.assertEqual([st["step"] for st in s["steps"]], [2, 3])
        sites = site_by_function(s, "loss_fn", "cudaMemcpy")
        self.assertEqual(sites[0]["count"], 2)
        self.assertEqual(sum(x["count"] for x in s["sites"]), 10)
        self.assertEqual(r.returncode, 3)

    def test_bad_schedule_one_line_and_default(self):
        r = run([prog("basic"), "2"], env={"SYNCSPY_SCHEDULE": "active=banana"})
        lines = [l for l in r.stderr.splitlines() if "SYNCSPY_SCHEDULE" in l]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("every step", lines[0])
        self.assertEqual(r.returncode, 3)
        self.assertEqual(r.stdout, "basic: 2 steps done\n")
        self.assertEqual(len(r.summary()["steps"]), 3)


class Threads(unittest.TestCase):
    def test_syncs_from_worker_threads(self):
        r = run([prog("threads")])
        self.assertEqual(r.returncode, 0)
        s = r.summary()
        sites = site_by_function(s, "worker_sync", "cudaStreamSynchronize")
        self.assertEqual(len(sites), 1, [frames_text(x) for x in s["sites"]])
        assert_blocked(self, sites[0], 2, 20)
        self.assertEqual(sites[0]["frames"][1]["function"], "worker")
        self.assertEqual(sum(st["launches"] for st in s["steps"]), 4 * 105)

    def test_shares_of_threads_that_sync_at_once_stay_under_100_percent(self):
        # 8 workers block ~20 ms each in a ~20 ms step: summed, 800 % of the step
        r = run([prog("shares")])
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "shares: done\n")
        s = r.summary()
        workers = site_by_function(s, "worker_wait", "cudaStreamSynchronize")
        self.assertEqual(len(workers), 1)
        self.assertEqual(workers[0]["threads"], 8)
        main = site_by_function(s, "main_wait", "cudaStreamSynchronize")
        self.assertEqual(main[0]["threads"], 1)
        shares = [float(x) for x in re.findall(r"([0-9.]+)%", r.stderr)]
        rows = [float(x) for x in re.findall(r"^ +\d+ +\S+ \S+ +([0-9.]+)%", r.stderr, re.M)]
        self.assertGreaterEqual(len(rows), 2, r.stderr)
        self.assertGreaterEqual(len(shares), 3, r.stderr)
        self.assertTrue(all(x <= 100.0 for x in shares), r.stderr)
        # the header sums every thread's waits (8 workers: no share of one step's time), the
        # training thread's own wait (5 ms of ~20 ms) and share on a line of its own
        self.assertRegex(r.stderr, r"\| blocked [0-9.]+ ms/step \(all threads\) \|")
        own = re.search(r"the training thread, \S+ \(tid \d+\), waited ([0-9.]+) ms/step, ([0-9.]+)% of the step",
                        r.stderr)
        self.assertIsNotNone(own, r.stderr)
        self.assertLess(float(own.group(1)), 15.0, r.stderr)
        self.assertRegex(r.stderr, r"; \S+ \(tid \d+\) [0-9.]+ ms/step \([0-9.]+ syncs\)")
        row = re.search(r"^ +1 +.*cudaStreamSynchronize  \(8 threads\)$", r.stderr, re.M)
        self.assertIsNotNone(row, r.stderr)


class ForkAndLoading(unittest.TestCase):
    def test_forked_child_without_cuda_is_silent(self):
        r = run([prog("fork_child")])
        self.assertEqual(r.returncode, 0)
        self.assertIn("no cuda here", r.stdout)
        self.assertEqual(len(r.process_dirs()), 1, r.process_dirs())
        self.assertEqual(len(re.findall(r"summary\.json", r.stderr)), 1, r.stderr)
        s = r.summary()
        self.assertEqual(len(site_by_function(s, "parent_sync", "cudaDeviceSynchronize")), 1)

    def test_rtld_local_library(self):
        lib = os.path.join(os.path.dirname(prog("x")), "lib", "libdlcuda.so")
        r = run([prog("rtld_local"), lib])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "rtld_local: ok\n")
        s = r.summary()
        sites = site_by_function(s, "lib_sync", "cudaStreamSynchronize")
        self.assertEqual(len(sites), 1, [frames_text(x) for x in s["sites"]])
        assert_blocked(self, sites[0], 4, 3)
        self.assertTrue(sites[0]["frames"][0]["module"].endswith("libdlcuda.so"))

    def test_static_and_hidden_cxx_callers(self):
        r = run([prog("cxx_sites")])
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        hidden = [x for x in s["sites"] if x["frames"][0]["function"] == "trainer::Loss::reduce(int)"]
        self.assertEqual(len(hidden), 1, [frames_text(x) for x in s["sites"]])
        self.assertEqual(hidden[0]["api"], "cudaMemcpy")
        assert_blocked(self, hidden[0], 2, 3)
        static = [x for x in s["sites"]
                  if x["frames"][0]["function"] == "(anonymous namespace)::static_helper_sync(int)"]
        self.assertEqual(len(static), 1, [frames_text(x) for x in s["sites"]])
        self.assertEqual(static[0]["api"], "cudaDeviceSynchronize")
        assert_blocked(self, static[0], 2, 2)
        self.assertTrue(static[0]["frames"][0]["module"].endswith("libcxxsites.so"))
        self.assertEqual(static[0]["frames"][1]["function"], "run_cxx_sites")


class Silence(unittest.TestCase):
    def test_process_without_cuda_prints_and_writes_nothing(self):
        for argv in (["sh", "-c", "echo hi"], ["true"], [prog("rtld_local")]):
            r = run(argv, env={"SYNCSPY_TOP": "garbage"})
            self.assertEqual(r.stderr, "", argv)
            self.assertEqual(r.process_dirs(), [], argv)
        self.assertEqual(run(["sh", "-c", "echo hi"]).stdout, "hi\n")

    def test_bad_variable_warned_once_when_cuda_is_used(self):
        r = run([prog("basic"), "1"], env={"SYNCSPY_TOP": "-4"})
        lines = [l for l in r.stderr.splitlines() if "SYNCSPY_TOP" in l]
        self.assertEqual(lines, ["syncspy: SYNCSPY_TOP='-4' is not an integer in 1..1000; using 10"])
        self.assertEqual(r.returncode, 3)


class ReportDestinations(unittest.TestCase):
    def test_off(self):
        r = run([prog("basic"), "1"], env={"SYNCSPY_REPORT": "off"})
        self.assertEqual(r.stderr, "")
        self.assertGreater(len(r.summary()["sites"]), 0)

    def test_stdout_after_program_output(self):
        r = run([prog("basic"), "1"], env={"SYNCSPY_REPORT": "stdout"})
        self.assertTrue(r.stdout.startswith("basic: 1 steps done\n"), r.stdout[:200])
        self.assertIn("loss_fn", r.stdout)
        self.assertNotIn("loss_fn", r.stderr)

    def test_file(self):
        import tempfile
        path = os.path.join(tempfile.mkdtemp(), "report.txt")
        r = run([prog("basic"), "1"], env={"SYNCSPY_REPORT": path})
        self.assertEqual(r.stderr, "")
        with open(path) as f:
            self.assertIn("loss_fn", f.read())

    def test_rank_folder(self):
        r = run([prog("basic"), "1"], env={"RANK": "3"})
        d = os.path.basename(r.process_dirs()[0])
        self.assertRegex(d, rf"^rank3-{re.escape(folder_host())}-pid\d+$")
        self.assertEqual(r.summary()["rank"], 3)

    def test_top_limits_the_report(self):
        r = run([prog("basic"), "1"], env={"SYNCSPY_TOP": "1"})
        table = r.stderr.split("#  blocked/step")[1]
        self.assertEqual(len(re.findall(r"^\s+\d+\s+\S+ [mun]?s\s", table, re.M)), 1, r.stderr)
        self.assertIn("(1 more site", table)
        self.assertNotIn("per_thread_sync", r.stderr)

    def test_output_folders_are_private(self):
        r = run([prog("basic"), "1"])
        d = r.process_dirs()[0]
        self.assertEqual(os.stat(d).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(os.path.join(d, "summary.json")).st_mode & 0o777, 0o600)


class Library(unittest.TestCase):
    def test_exports_only_cuda_entry_points_and_public_api(self):
        out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True).stdout
        names = [l.split()[-1] for l in out.splitlines() if l.strip()]
        self.assertIn("cudaMemcpy", names)
        self.assertIn("__cudaLaunchKernel_ptsz", names)
        self.assertIn("syncspy_step", names)
        for n in names:
            # the CUDA entry points, the public API, _exit/_Exit (entry/exit.c), sigaction and the signal() family
            # (entry/signals.c answers the program as if the default action were still there
            # where the agent's handler stands in for it), dlclose and dlopen (entry/dlclose.c, dlopen.c) and the
            # CUPTI calls of another tool, for which syncspy steps aside (entry/cupti.c), and torch's
            # at::sequence_number::get_and_increment (entry/torch_seq.c: node creation watched)
            self.assertRegex(n, r"^(cuda[A-Z]\w*|__cuda\w+|syncspy_\w+|_exit|_Exit|sigaction|signal|bsd_signal|"
                                r"sysv_signal|__sysv_signal|sigset|dlclose|dlopen|"
                                r"cuptiSubscribe|cuptiSubscribe_v2|cuptiActivityRegisterCallbacks|"
                                r"_ZN2at15sequence_number17get_and_incrementEv)$")
            self.assertNotIn("@", n)

    def test_holds_no_reader_of_the_cli(self):
        """The CLI's readers (cli/) never run in a target process, so they are not in the
        preloaded library at all, not even as local symbols; and the CLI has none of the
        agent's code."""
        def symbols(path):
            out = subprocess.run(["nm", path], capture_output=True, text=True).stdout
            return set(l.split()[-1] for l in out.splitlines() if len(l.split()) >= 2)
        lib = symbols(LIB)
        self.assertIn("report_render_text", lib)  # nm reads the local symbols too
        for name in lib:
            self.assertNotRegex(name, r"^(trace_read\w*|trace_free|trace_looks_like|summary_read_json|"
                                      r"summary_free|json_\w+|chunks_\w+|array_doubled|array_realloc|"
                                      r"cli_\w+)$")
        from util import CLI
        cli = symbols(CLI)
        self.assertIn("trace_read_with", cli)
        for name in cli:
            self.assertNotRegex(name, r"^(agent_\w+|sites_\w+|symbolizer_\w+|native_stack_\w+|"
                                      r"pyframes_\w+|tw_\w+|summary_write_\w+)$")

    def test_unwinder_stays_private(self):
        """libunwind is dlopen'ed with RTLD_LOCAL, never a dependency of the preloaded library:
        it also exports the C++ exception ABI (_Unwind_RaiseException, _Unwind_Resume, ...), and
        a preloaded library's dependencies join the global scope ahead of libgcc_s, so every
        exception the program throws would be unwound by libunwind instead. A C++ program that
        throws under the agent binds nothing of its own to libunwind, prints what it prints
        without the agent, and its syncs still have their native frames."""
        out = subprocess.run(["readelf", "-d", LIB], capture_output=True, text=True).stdout
        self.assertNotIn("libunwind", out)
        with tempfile.TemporaryDirectory(prefix="syncspy-ldd-") as d:
            log = os.path.join(d, "bindings")
            r = run([prog("cxx_throw")], env={"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": log})
            text = "".join(open(p, errors="replace").read() for p in glob.glob(log + ".*"))
        plain = run([prog("cxx_throw")], preload=False)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
        self.assertEqual(r.stdout, "caught 3\n")
        into_unwind = [l for l in text.splitlines() if re.search(r" to \S*libunwind[^ ]*", l)
                       and not re.search(r"binding file \S*libunwind", l)]
        self.assertEqual(into_unwind, [])
        self.assertIn("_Unwind_RaiseException", text)  # the program's throws were bound (to libgcc_s)
        [site] = [s for s in r.summary()["sites"] if s["api"] == "cudaDeviceSynchronize"]
        self.assertEqual(site["count"], 3)
        self.assertIn("sync_then_throw", site["frames"][0]["function"])

    def test_never_links_libcudart(self):
        out = subprocess.run(["readelf", "-d", LIB], capture_output=True, text=True).stdout
        self.assertNotIn("libcudart", out)

    def test_every_real_twin_is_interposed(self):
        """Every _ptsz/_ptds twin of an interposed entry point that the simulated libcudart
        (which mirrors the real export list) exports is exported by the agent too."""
        from util import SIM
        ours = set(l.split()[-1] for l in subprocess.run(["nm", "-D", "--defined-only", LIB],
                   capture_output=True, text=True).stdout.splitlines() if l.strip())
        sim = set(l.split()[-1].split("@")[0] for l in subprocess.run(
            ["nm", "-D", "--defined-only", os.path.join(SIM, "libcudart.so.13")],
            capture_output=True, text=True).stdout.splitlines() if l.strip())
        for name in ours:
            if not name.startswith(("cuda", "__cuda")):
                continue
            base = re.sub(r"_(ptsz|ptds)$", "", name)
            for twin in (base + "_ptsz", base + "_ptds"):
                if twin in sim:
                    self.assertIn(twin, ours)


if __name__ == "__main__":
    unittest.main()
