"""End-to-end: CUPTI (entry/cupti.c) on the simulated device, whose libcuda.so.1 and
libcupti.so.13 call the registered callbacks like the real ones. Syncs made through the driver API
by a library the shim cannot see are attributed to their caller; calls the shim records are not
counted again through CUPTI's runtime and driver callbacks; another CUPTI client (first or later)
keeps working; without CUPTI the shim carries on alone; SYNCSPY_GPU=1 reports the GPU idle time
after a sync."""
import os
import shutil
import tempfile
import unittest

import util
from util import MS, PYPROGS, ROOT, SIM, frames_text, prog, run, site_by_function, source_line

SIM_CUPTI = os.path.join(SIM, "libcupti.so.13")
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
CUDA_OBJECTS = ("libsyncspy", "libcupti", "libcuda.so", "libcudart")
DRIVER_SITES = {  # caller frame -> (api, ms each call blocks at least)
    "drvlib_stream_sync": ("cuStreamSynchronize", 4),
    "drvlib_ctx_sync": ("cuCtxSynchronize", 4),
    "drvlib_event_sync": ("cuEventSynchronize", 4),
    "drvlib_copy_dtoh": ("cuMemcpyDtoH_v2", 4),
    "drvlib_copy_async_pageable": ("cuMemcpyDtoHAsync_v2", 4),
    "drvlib_free": ("cuMemFree_v2", 4),
}
STEPS = 3


def assert_blocked(tc, site, per_call_ms, count):
    """As test_agent.py's: a strict lower bound, a loose upper one."""
    tc.assertEqual(site["count"], count, frames_text(site))
    total = site["blocked_ns"]
    tc.assertGreaterEqual(total, count * (per_call_ms - 0.5) * MS, frames_text(site))
    tc.assertLessEqual(total, count * (per_call_ms * 3 + 20) * MS, frames_text(site))
    tc.assertGreaterEqual(site["max_ns"], (per_call_ms - 0.5) * MS)


def cupti_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("syncspy:") and "CUPTI" in l]


def only_site(tc, summary, function, api=None):
    sites = site_by_function(summary, function, api)
    tc.assertEqual(len(sites), 1, [frames_text(s) for s in summary["sites"]])
    return sites[0]


class DriverSyncs(unittest.TestCase):
    """cupti_driver: libsimdriver.so's driver-API syncs next to a runtime sync through the shim."""

    @classmethod
    def setUpClass(cls):
        cls.r = run([prog("cupti_driver"), str(STEPS)])
        cls.s = cls.r.summary()

    def test_program_unchanged_and_quiet(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        self.assertEqual(self.r.stdout, f"cupti_driver: {STEPS} steps done\n")
        self.assertEqual(cupti_lines(self.r.stderr), [])  # CUPTI found beside libcudart

    def test_driver_syncs_are_attributed_to_their_caller(self):
        for function, (api, ms) in DRIVER_SITES.items():
            site = only_site(self, self.s, function, api)
            assert_blocked(self, site, ms, STEPS)
            self.assertTrue(site["frames"][0]["module"].endswith("/libsimdriver.so"), frames_text(site))
            self.assertEqual(site["frames"][1]["function"], "main", frames_text(site))

    def test_no_frame_inside_cuda_or_the_agent(self):
        for site in self.s["sites"]:
            for f in site["frames"]:
                for obj in CUDA_OBJECTS:
                    self.assertNotIn(obj, os.path.basename(f["module"]), frames_text(site))

    def test_no_syncs_are_no_sites(self):
        for function in ("drvlib_copy_async_pinned", "drvlib_copy_dtod"):
            self.assertEqual(site_by_function(self.s, function), [])

    def test_shim_call_counted_once(self):
        """cudaStreamSynchronize through the shim also calls CUPTI's runtime and driver callbacks:
        one sync, under the shim's API name."""
        sites = site_by_function(self.s, "via_shim_sync")
        self.assertEqual(len(sites), 1, [frames_text(s) for s in sites])
        self.assertEqual(sites[0]["api"], "cudaStreamSynchronize")
        assert_blocked(self, sites[0], 3, STEPS)

    def test_runtime_call_cupti_records_counted_once(self):
        """cudaStreamSynchronize reached past the shim (as from a static runtime): CUPTI's runtime
        callback records it; its nested cuStreamSynchronize callback is not counted again."""
        sites = site_by_function(self.s, "static_runtime_sync")
        self.assertEqual(len(sites), 1, [frames_text(s) for s in sites])
        self.assertEqual(sites[0]["api"], "cudaStreamSynchronize")
        assert_blocked(self, sites[0], 3, STEPS)
        self.assertEqual(sites[0]["frames"][1]["function"], "main", frames_text(sites[0]))

    def test_each_launch_counted_once(self):
        """A step's launches: six kernels through the driver API (CUPTI's driver domain), one
        through the shim (its driver launch inside is not counted again) and one through
        libcudart's own handle, as a static runtime launches (counted by the driver launch inside
        it); the first step adds the program's first launch."""
        launches = [st["launches"] for st in self.s["steps"][:-1]]
        self.assertEqual(launches, [9] + [8] * (STEPS - 1), self.s["steps"])
        self.assertEqual(self.s["launches"], 8 * STEPS + 1)

    def test_step_counts_match_site_counts(self):
        steps = self.s["steps"]
        for st in steps[:-1]:
            self.assertEqual(st["syncs"], len(DRIVER_SITES) + 2, st)
        self.assertEqual(sum(s["count"] for s in self.s["sites"]), sum(st["syncs"] for st in steps))

    def test_no_gpu_fields_without_syncspy_gpu(self):
        for site in self.s["sites"]:
            self.assertNotIn("gpu_idle_ns", site)

    def test_found_beside_a_runtime_loaded_by_relative_path(self):
        """LD_LIBRARY_PATH=build/sim: the loader names libcudart relatively; the search uses
        where it really is (/proc/self/maps), never a relative folder."""
        r = run([prog("cupti_driver"), "1"], cwd=ROOT,
                env={"LD_LIBRARY_PATH": os.path.relpath(SIM, ROOT)})
        self.assertEqual(cupti_lines(r.stderr), [], r.stderr)
        only_site(self, r.summary(), "drvlib_copy_dtoh", "cuMemcpyDtoH_v2")

    def test_explicit_path(self):
        r = run([prog("cupti_driver"), "1"], env={"SYNCSPY_CUPTI": SIM_CUPTI})
        self.assertEqual(cupti_lines(r.stderr), [])
        only_site(self, r.summary(), "drvlib_copy_dtoh", "cuMemcpyDtoH_v2")


class WithoutCupti(unittest.TestCase):
    def check_shim_alone(self, value, words):
        r = run([prog("cupti_driver"), str(STEPS)], env={"SYNCSPY_CUPTI": value})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"cupti_driver: {STEPS} steps done\n")
        lines = cupti_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        for w in words:
            self.assertIn(w, lines[0])
        s = r.summary()
        for function in DRIVER_SITES:
            self.assertEqual(site_by_function(s, function), [])
        assert_blocked(self, only_site(self, s, "via_shim_sync", "cudaStreamSynchronize"), 3, STEPS)
        self.assertEqual(site_by_function(s, "static_runtime_sync"), [])  # past the shim: unseen
        self.assertEqual(sum(x["count"] for x in s["sites"]), STEPS)

    def test_off(self):
        self.check_shim_alone("off", ["SYNCSPY_CUPTI=off", "runtime shim alone"])

    def test_missing_library(self):
        self.check_shim_alone("/nonexistent/libcupti.so", ["/nonexistent/libcupti.so", "runtime shim alone"])

    def test_not_a_cupti_library(self):
        self.check_shim_alone(os.path.join(SIM, "libcudart.so.13"), ["not a CUPTI library"])

    def test_gpu_without_cupti_says_so(self):
        r = run([prog("cupti_driver"), "1"], env={"SYNCSPY_CUPTI": "off", "SYNCSPY_GPU": "1"})
        self.assertIn("SYNCSPY_GPU=1 needs CUPTI", r.stderr)
        for site in r.summary()["sites"]:
            self.assertNotIn("gpu_idle_ns", site)

    def test_same_shim_counts_as_with_cupti(self):
        """The runtime-only program's sites are the same with and without CUPTI."""
        def counts(env):
            s = run([prog("basic"), "2"], env=env).summary()
            return sorted((x["api"], x["frames"][0]["function"], x["count"]) for x in s["sites"])
        self.assertEqual(counts({}), counts({"SYNCSPY_CUPTI": "off"}))


class OtherCuptiClient(unittest.TestCase):
    """cupti_client subscribes to CUPTI itself: before syncspy (error 39 for syncspy) or after
    (syncspy steps aside). Its subscription and callbacks work as without syncspy."""

    def check(self, mode):
        plain = run([prog("cupti_client"), mode, str(STEPS)], preload=False)
        r = run([prog("cupti_client"), mode, str(STEPS)])
        expected = STEPS * (2 if mode == "late" else 1)  # client_sync calls
        out = f"cupti_client: subscribe CUPTI_SUCCESS, {STEPS} callbacks\n"  # while subscribed
        self.assertEqual(plain.stdout, out, plain.stderr)
        self.assertEqual(r.stdout, out, r.stderr)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = r.summary()
        client = site_by_function(s, "client_sync", "cudaDeviceSynchronize")
        self.assertEqual(sum(x["count"] for x in client), expected, [frames_text(x) for x in s["sites"]])
        for site in client:
            self.assertGreaterEqual(site["blocked_ns"], site["count"] * 1.5 * MS)
        return r, s

    def test_client_subscribed_first(self):
        r, s = self.check("first")
        lines = cupti_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("in use by another tool", lines[0])
        self.assertEqual(site_by_function(s, "drvlib_stream_sync"), [])  # CUPTI was not ours

    def test_client_subscribes_later(self):
        r, s = self.check("late")
        lines = cupti_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("hands CUPTI over", lines[0])
        # the driver syncs were seen until the handover, none after it
        self.assertEqual(sum(x["count"] for x in site_by_function(s, "drvlib_stream_sync")), STEPS)


class GpuIdle(unittest.TestCase):
    """SYNCSPY_GPU=1: after idle_after_sync and the driver sync the host works 5 ms before the
    next kernel; after busy_after_sync a 30 ms kernel on another stream keeps the GPU busy."""

    @classmethod
    def setUpClass(cls):
        cls.r = run([prog("cupti_driver"), "4", "idle"], env={"SYNCSPY_GPU": "1"})
        cls.s = cls.r.summary()

    def test_idle_after_sync(self):
        for function in ("idle_after_sync", "drvlib_stream_sync"):
            site = only_site(self, self.s, function)
            self.assertEqual(site["gpu_idle_syncs"], 4, site)
            per_sync = site["gpu_idle_ns"] / site["gpu_idle_syncs"]
            self.assertGreaterEqual(per_sync, 4.9 * MS, site)
            self.assertLessEqual(per_sync, 5 * MS + 30 * MS, site)
            self.assertTrue(site["gpu_next_work"].startswith("kernel@"), site)

    def test_busy_after_sync(self):
        site = only_site(self, self.s, "busy_after_sync")
        self.assertEqual(site["gpu_idle_syncs"], 4, site)
        self.assertEqual(site["gpu_idle_ns"], 0, site)

    def test_report_shows_it(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        self.assertIn("gpu then idle:", self.r.stderr)
        self.assertEqual(cupti_lines(self.r.stderr), [])



class ShimNeverSeesACall(unittest.TestCase):
    """A program whose every CUDA call bypasses the shim (libcudart_static, driver API only)."""

    def test_auto_never_subscribes_and_stays_silent(self):
        r = run([prog("driver_only"), "3"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "driver_only: done\n")
        self.assertEqual(r.process_dirs(), [])  # the documented limit of SYNCSPY_CUPTI=auto

    def test_eager_subscribes_at_load(self):
        r = run([prog("driver_only"), "3"], env={"SYNCSPY_CUPTI": "eager"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "driver_only: done\n")
        s = r.summary()
        sites = [x for x in s["sites"] if x["frames"] and x["frames"][0]["function"] == "drvlib_stream_sync"]
        self.assertEqual(sum(x["count"] for x in sites), 3, s["sites"])
        self.assertTrue(all(x["api"].startswith("cuStreamSynchronize") for x in sites))
        self.assertGreaterEqual(sum(x["blocked_ns"] for x in sites), 3 * 3.5e6)
        # its 3 kernels, launched with cuLaunchKernel (no interposed symbol sees them): counted
        # through CUPTI's driver domain
        self.assertEqual(s["launches"], 3, s["steps"])

    def test_longjmp_out_of_a_call_seen_through_cupti_only(self):
        """A watchdog siglongjmps out of a driver call CUPTI records (its EXIT never comes):
        the calls after it are recorded (the open call's ENTER was no higher on the stack)."""
        r = run([prog("driver_only"), "3", "longjmp"], env={"SYNCSPY_CUPTI": "eager"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "driver_only: done\n")
        s = r.summary()
        sites = [x for x in s["sites"] if x["frames"] and x["frames"][0]["function"] == "drvlib_stream_sync"]
        self.assertEqual(sum(x["count"] for x in sites), 3, s["sites"])


class ForkedChild(unittest.TestCase):
    """cupti_fork: a child forked after its parent initialized CUDA and subscribed to CUPTI
    makes driver-API syncs only CUPTI sees, a runtime sync through libcudart's own handle and
    one through the shim. CUPTI's state (the simulator's; NVIDIA's does not support such a
    child) is the child's copy: each process's summary.json counts exactly its own syncs at
    their callers, the shim's once, none of the other process's."""

    PARENT = {("cuStreamSynchronize", "parent_sync"): 2,
              ("cuStreamSynchronize", "parent_after_sync"): 1}
    CHILD = {("cuStreamSynchronize", "child_stream_sync"): 3,
             ("cuCtxSynchronize", "child_ctx_sync"): 2,
             ("cudaStreamSynchronize", "child_static_sync"): 1,
             ("cudaStreamSynchronize", "child_shim_sync"): 1}

    @staticmethod
    def by_caller(summary):
        """(api, the first frame outside libsimdriver) -> syncs, the teardown's left out."""
        got = {}
        for x in summary["sites"]:
            callers = [f["function"] for f in x["frames"] if not f["function"].startswith("drvlib_")]
            if x["frames"] and x["frames"][0]["function"] == "drvlib_teardown":
                continue
            key = (x["api"], callers[0] if callers else "?")
            got[key] = got.get(key, 0) + x["count"]
        return got

    def check(self, *args, parent_extra=None, env=None):
        r = run([prog("cupti_fork"), *args], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "child: done\nparent: child 0\n")
        self.assertEqual(cupti_lines(r.stderr), [])
        dirs = r.process_dirs()
        self.assertEqual(len(dirs), 2, r.stderr)
        # the child's summary.json is written at its _exit, before the parent's waitpid returns
        dirs.sort(key=lambda d: os.stat(os.path.join(d, "summary.json")).st_mtime_ns)
        child, parent = (r.summary(r.process_dirs().index(d)) for d in dirs)
        self.assertNotEqual(parent["pid"], child["pid"])
        self.assertEqual(self.by_caller(child), self.CHILD, [frames_text(x) for x in child["sites"]])
        want = {**self.PARENT, **(parent_extra or {})}
        self.assertEqual(self.by_caller(parent), want, [frames_text(x) for x in parent["sites"]])
        for x in child["sites"]:  # frames start at the caller of the CUDA API, in the child too
            self.assertFalse(any(obj in os.path.basename(f["module"]) for f in x["frames"]
                                 for obj in CUDA_OBJECTS), frames_text(x))
        return parent, child

    def test_each_process_counts_its_own_driver_syncs(self):
        self.check()

    def test_fork_while_a_thread_syncs_through_cupti(self):
        # the parent's thread is inside CUPTI-recorded calls as the main thread forks: none of
        # its 20 is lost to the parent or counted in the child
        # Under ASan the thread parks between its syncs at the fork: GCC 12's libasan keeps no
        # allocator lock across fork, and a child forked while another thread frees may hang in
        # its first malloc, with the agent or without (tests/progs/common.h fork_quiet_*)
        env = {"HARM_FORK_QUIESCE": "1"} if util.SANITIZER_PRELOAD else None
        self.check("thread", parent_extra={("cudaStreamSynchronize", "thread_sync"): 20}, env=env)


class LoadedWithDlopen(unittest.TestCase):
    """A program that loads libcudart itself and calls it through the handle (ctypes.CDLL):
    none of its calls reaches the shim, so CUPTI subscribes as that libcudart is loaded
    (entry/dlopen.c). dlopen itself behaves as without the agent."""

    CTYPES = os.path.join(PYPROGS, "ctypes_cudart.py")

    def test_ctypes_cudart_recorded_under_auto(self):
        r = run(["python3", self.CTYPES, "3"])
        plain = run(["python3", self.CTYPES, "3"], preload=False)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout), r.stderr)
        self.assertEqual(r.stdout, "ctypes_cudart: 3 rounds\n")
        self.assertEqual(cupti_lines(r.stderr), [])
        s = r.summary()
        for api, marker in (("cudaMemcpy", "device to host"), ("cudaDeviceSynchronize", "cudaDeviceSynchronize() == 0")):
            line = source_line(self.CTYPES, marker)
            sites = [x for x in s["sites"] if x["api"] == api and any(
                f.get("python") and f["file"] == self.CTYPES and f["line"] == line for f in x["frames"])]
            self.assertEqual(sum(x["count"] for x in sites), 3, (api, [frames_text(x) for x in s["sites"]]))

    def test_dlopen_searches_its_callers_runpath(self):
        # only the program's own DT_RUNPATH ($ORIGIN/lib) finds the bare name: dlopen must see
        # the program as its caller, not the agent
        argv = [prog("rtld_local_runpath"), "libdlcuda.so"]
        r, plain = run(argv), run(argv, preload=False)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout), r.stderr)
        if util.SANITIZER_PRELOAD:
            # ASan's own dlopen interceptor (preloaded in both runs) searches its RUNPATH, not
            # the program's: the bare name is not found, with the agent or without
            self.assertEqual(plain.returncode, 2, plain.stderr)
            return
        self.assertEqual((r.returncode, r.stdout), (0, "rtld_local: ok\n"), r.stderr)
        self.assertEqual(sum(x["count"] for x in r.summary()["sites"]), 3)

    def test_eager_says_why_not_once_per_process_tree(self):
        # a wrapper chain of shells under SYNCSPY_CUPTI=eager where no libcupti can be found: an
        # empty CUDA_HOME, nothing on LD_LIBRARY_PATH, and the loader's cache hidden (this
        # machine's lists the toolkit's) in a mount namespace of the chain's own: one line, not
        # one per process
        unshare = shutil.which("unshare")
        self.assertIsNotNone(unshare, "unshare(1) (util-linux) is needed")
        with tempfile.TemporaryDirectory() as empty:
            chain = [unshare, "--user", "--map-root-user", "--mount", "sh", "-c",
                     'mount --bind /dev/null /etc/ld.so.cache && exec "$@"', "sh",
                     "bash", "-c", "bash -c 'bash -c \"python3 -c pass\"; echo one'; echo two"]
            env = {"SYNCSPY_CUPTI": "eager", "CUDA_HOME": empty, "LD_LIBRARY_PATH": ""}
            r, plain = run(chain, env=env), run(chain, env=env, preload=False)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout), plain.stderr)
        self.assertEqual(r.stdout, "one\ntwo\n")
        lines = [l for l in r.stderr.splitlines() if l.startswith("syncspy: no CUPTI")]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("no libcupti found", lines[0])
        self.assertNotIn("SYNCSPY_CUPTI_SAID", plain.stderr)


STRICT_CUPTI = os.path.join(util.BUILD, "progs", "strictcupti", "libcupti.so.13")
STRICT_SAYS = "strictcupti: subscribed after the driver's initialization"


class DriverGate(unittest.TestCase):
    """NVIDIA's libcupti crashes the process when it is subscribed without a driver it can start
    (CUDA 13.2's wheel recurses until the stack ends, through cuptiGetResultString): the agent
    subscribes only once the program's driver is initialized with a device (or before that where
    the kernel driver reports a GPU, or to the simulator's CUPTI, which needs no driver), and
    never asks CUPTI for words. strictcupti (tests/progs/lib/strictcupti.c) aborts in either
    case, as NVIDIA's does."""

    def test_real_runtime_without_a_driver_never_reaches_cupti(self):
        # the toolkit's libcudart and no driver: every call fails, CUPTI is loaded and waits
        env = {"LD_LIBRARY_PATH": "", "SYNCSPY_CUPTI": STRICT_CUPTI}
        plain = run([prog("real_runtime")], preload=False, env=env)
        r = run([prog("real_runtime")], env=env)
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout), r.stderr)
        self.assertEqual(r.returncode, 7)
        if "sync: 0" not in plain.stdout:  # no GPU: nothing recorded, nothing said, no crash
            self.assertEqual(r.stderr, "")
            self.assertEqual(r.process_dirs(), [])

    def test_ctypes_runtime_without_a_driver_never_reaches_cupti(self):
        # dlopen of a libcudart before any CUDA call (torch's way: ctypes.CDLL): the early
        # subscription waits too
        code = ("import ctypes, sys; rt = ctypes.CDLL(sys.argv[1]); p = ctypes.c_void_p(); "
                "print(rt.cudaMalloc(ctypes.byref(p), 16), rt.cudaDeviceSynchronize())")
        argv = ["python3", "-c", code, os.path.join(CUDA_HOME, "lib64", "libcudart.so.13")]
        for cupti in (STRICT_CUPTI, "auto"):
            env = {"LD_LIBRARY_PATH": "", "SYNCSPY_CUPTI": cupti}
            plain, r = run(argv, preload=False, env=env), run(argv, env=env)
            self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout), r.stderr)
            if plain.stdout.startswith("0 "):
                continue  # a GPU: the calls succeed
            self.assertEqual(r.stderr, "", cupti)
            self.assertEqual(r.process_dirs(), [])

    def test_subscribed_after_the_programs_first_call_initialized_the_driver(self):
        # first_sync's first CUDA call is an interposed sync made before the driver is up: CUPTI
        # waits through it and subscribes after it returned (the simulator's runtime initialized
        # its driver); every sync is still counted once
        r = run([prog("first_sync"), "3"], env={"SYNCSPY_CUPTI": STRICT_CUPTI})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "first_sync: 3 copies\n")
        self.assertEqual(r.stderr.count(STRICT_SAYS), 1, r.stderr)
        self.assertEqual(cupti_lines(r.stderr), [])
        s = r.summary()
        self.assertEqual(sum(x["count"] for x in site_by_function(s, "main", "cudaMemcpy")), 3)
        self.assertEqual(sum(x["count"] for x in site_by_function(s, "main", "cudaDeviceSynchronize")), 1)

    def test_a_refusing_cupti_is_named_by_its_code_never_asked_for_words(self):
        r = run([prog("first_sync"), "2"], env={"SYNCSPY_CUPTI": STRICT_CUPTI, "STRICTCUPTI_REFUSE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "first_sync: 2 copies\n")
        lines = cupti_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("refused a subscriber: CUPTI_ERROR_NOT_INITIALIZED", lines[0])
        self.assertEqual(sum(x["count"] for x in site_by_function(r.summary(), "main", "cudaMemcpy")), 2)

    def test_the_simulators_cupti_is_subscribed_before_the_driver(self):
        # the simulator's libcupti needs no driver: a program that loads libcudart with dlopen
        # and calls it through the handle is recorded from its first call (LoadedWithDlopen)
        r = run(["python3", os.path.join(PYPROGS, "ctypes_cudart.py"), "2"], env={"SYNCSPY_CUPTI": SIM_CUPTI})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(cupti_lines(r.stderr), [])
        api_counts = {}
        for x in r.summary()["sites"]:
            api_counts[x["api"]] = api_counts.get(x["api"], 0) + x["count"]
        self.assertEqual(api_counts.get("cudaMemcpy"), 2, api_counts)
        self.assertEqual(api_counts.get("cudaDeviceSynchronize"), 2, api_counts)


if __name__ == "__main__":
    unittest.main()
