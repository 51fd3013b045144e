"""End-to-end: scripts/gpu-check.sh (the one-call proof of syncspy on a GPU machine with real PyTorch)
as it runs on a machine without a GPU: it says so in one line and exits 0 after the checks that
need none (the script itself, the case files, the checker on its fixtures, the agent build).
Also the checker's judgment of fabricated runs (scripts/gpu/check.py results), and the use of the
gpu-bundle's copy of a library the machine lacks (make gpu-bundle, tests/gpu.mk)."""
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from util import BUILD, ROOT

SCRIPT = os.path.join(ROOT, "scripts", "gpu-check.sh")
CHECK = os.path.join(ROOT, "scripts", "gpu", "check.py")
FIXTURES = os.path.join(ROOT, "scripts", "gpu", "fixtures")


def run_check_script(env=None, timeout=25):
    out = tempfile.mkdtemp(prefix="syncspy-gpucheck-")
    e = dict(os.environ)
    e.update({"OUT": out, "BUILD": os.path.relpath(BUILD, ROOT) if BUILD.startswith(ROOT) else BUILD,
              "PYTHONDONTWRITEBYTECODE": "1"})
    for k in ("GPU_CHECK_AGENT", "GPU_CHECK_BUNDLE", "GPU_CHECK_BUILD", "LD_PRELOAD"):
        e.pop(k, None)
    if shutil.which("nvidia-smi") or importlib.util.find_spec("torch"):
        e["GPU_CHECK_OFFLINE"] = "1"  # maybe a GPU machine: the offline checks only (the full run takes minutes)
    if env:
        e.update(env)
    proc = subprocess.run(["bash", SCRIPT], env=e, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return proc, out


class NoGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.out = run_check_script()
        cls.text = cls.proc.stdout + cls.proc.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def test_exits_zero_with_the_no_gpu_line(self):
        self.assertEqual(self.proc.returncode, 0, self.text)
        lines = [ln for ln in self.proc.stdout.splitlines() if ln.startswith("gpu-check: no GPU here (")]
        self.assertEqual(len(lines), 1, self.text)
        self.assertIn("ran the offline checks only", lines[0])
        self.assertRegex(lines[0], r" 0 failed ")
        self.assertTrue(self.proc.stdout.rstrip().endswith(lines[0]), "the no-GPU line comes last")

    def test_offline_checks(self):
        for name in ("script", "case files", "checker", "agent"):
            self.assertRegex(self.proc.stdout, rf"(?m)^check {name}: ok", self.text)

    def test_checker_on_fixtures(self):
        self.assertRegex(self.proc.stdout, r"(?m)^\s+fixture summary_seg_loss_good\.json: accepted$", self.text)
        self.assertRegex(self.proc.stdout, r"(?m)^\s+fixture summary_seg_loss_bad\.json: rejected \(", self.text)
        self.assertRegex(self.proc.stdout, r"(?m)^\s+fixture summary_seg_loss_fixed_bad\.json: rejected \(")
        self.assertRegex(self.proc.stdout, r"(?m)^\s+fixture summary_vit_gather_good\.json: accepted$")
        self.assertNotIn("WRONG", self.proc.stdout)

    def test_results_json(self):
        with open(os.path.join(self.out, "results.json")) as f:
            doc = json.load(f)
        self.assertIs(doc["gpu"], False)
        self.assertIs(doc["ok"], True)
        self.assertTrue(any(c.startswith("check agent: ok") for c in doc["offline_checks"]), doc)


class BrokenFixtureFails(unittest.TestCase):
    def test_a_good_fixture_that_is_bad_fails_the_script(self):
        fixtures = tempfile.mkdtemp(prefix="syncspy-gpucheck-fx-")
        try:
            with open(os.path.join(FIXTURES, "summary_seg_loss_bad.json")) as f:
                bad = f.read()
            with open(os.path.join(fixtures, "summary_seg_loss_good.json"), "w") as f:
                f.write(bad)
            proc = subprocess.run(["python3", CHECK, "selftest", fixtures], capture_output=True,
                                  text=True, timeout=20, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertIn("summary_seg_loss_good.json: rejected", proc.stdout)
            self.assertIn("WRONG, expected accepted", proc.stdout)
        finally:
            shutil.rmtree(fixtures, ignore_errors=True)


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        doc = json.load(f)
    return doc


def resolve_markers(doc, case_file):
    """Replaces "@NAME" lines as check.py's selftest does (the fixtures follow the case files)."""
    marks = {}
    with open(os.path.join(ROOT, "scripts", "gpu", case_file)) as f:
        for n, line in enumerate(f, 1):
            if "# sync:" in line or "# call:" in line:
                marks.setdefault(line.split("#")[-1].split(":", 1)[1].strip(), n)
    for s in doc["sites"]:
        for fr in s["frames"]:
            if isinstance(fr["line"], str):
                fr["line"] = marks[fr["line"][1:]]
    return doc


def fake_run(out, name, summary=None, rc=0, pids=(), workers=(), metrics=None):
    d = os.path.join(out, "runs", name)
    os.makedirs(d)
    with open(os.path.join(d, "rc"), "w") as f:
        f.write(f"{rc}\n")
    with open(os.path.join(d, "elapsed_s"), "w") as f:
        f.write("3.2\n")
    with open(os.path.join(d, "stderr.txt"), "w") as f:
        f.write("" if rc == 0 else "Traceback ...\nRuntimeError: boom\n")
    m = {"pid": pids[0] if pids else 1, "median_step_ms": 10.0, "e2e_step_ms": 11.0}
    m.update(metrics or {})
    with open(os.path.join(d, "metrics.json"), "w") as f:
        json.dump(m, f)
    for pid in pids:
        p = os.path.join(d, "syncspy-out", f"pid{pid}")
        os.makedirs(p)
        if summary is not None:
            with open(os.path.join(p, "summary.json"), "w") as f:
                json.dump(summary, f)
    if workers:
        with open(os.path.join(d, "worker_pids.txt"), "w") as f:
            f.write("".join(f"{w}\n" for w in workers))


class Results(unittest.TestCase):
    """check.py results on fabricated runs: the table, the overhead ratio, the DataLoader rule."""

    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="syncspy-gpucheck-res-")

    def tearDown(self):
        shutil.rmtree(self.out, ignore_errors=True)

    def results(self):
        proc = subprocess.run(["python3", CHECK, "results", self.out], capture_output=True, text=True,
                              timeout=20, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        with open(os.path.join(self.out, "results.json")) as f:
            return proc, json.load(f)

    def test_good_runs(self):
        item = resolve_markers(fixture("summary_item_loop_good.json"), "item_loop.py")
        fake_run(self.out, "item_loop", item, pids=[101], metrics={"median_step_ms": 12.0})
        fake_run(self.out, "item_loop.plain", metrics={"median_step_ms": 10.0})
        fake_run(self.out, "item_loop.syncdebug", metrics={"syncdebug": {"markers_found": ["item"], "warnings": 3}})
        fake_run(self.out, "item_loop.profiler", rc=1)
        proc, doc = self.results()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTrue(doc["cases"]["item_loop"]["ok"], doc["cases"]["item_loop"]["reasons"])
        self.assertEqual(doc["overhead"]["item_loop"]["ratio"], 1.2)
        self.assertEqual(doc["tools"]["item_loop"]["profiler"]["found"], "failed")
        self.assertTrue(doc["tools"]["item_loop"]["syncdebug"]["found"].startswith("yes"))
        last = proc.stdout.rstrip().splitlines()[-1].split()
        self.assertEqual(last[:5], ["item_loop", "yes", "(1/1)", "1.00", "1.20"], proc.stdout)

    def test_a_compile_failure_is_recorded_not_held_against_syncspy(self):
        err = "BackendCompilerFailed: backend='inductor' raised: RuntimeError: Cannot find a working triton"
        fake_run(self.out, "compiled", rc=1, pids=[300], summary=fixture("summary_item_loop_bad.json"),
                 metrics={"error": err, "traceback": 'File "/x/torch/_dynamo/eval_frame.py", line 1\n' + err})
        proc, doc = self.results()
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(doc["cases"]["compiled"]["compile_error"], err)
        self.assertIn("compile failed (recorded)", proc.stdout.splitlines()[-1])

    def test_a_dataloader_worker_folder_and_a_failed_run_are_rejected(self):
        summary = fixture("summary_item_loop_good.json")  # any summary; the folders are the point
        fake_run(self.out, "dataloader", summary, pids=[200, 201], workers=[201, 202])
        fake_run(self.out, "seg_loss", rc=1, metrics={"error": "RuntimeError: boom"})
        proc, doc = self.results()
        self.assertEqual(proc.returncode, 1, proc.stdout)
        reasons = " ".join(doc["cases"]["dataloader"]["reasons"])
        self.assertIn("2 process folders", reasons)
        self.assertIn("workers wrote process folders: [201]", reasons)
        self.assertIn("RuntimeError: boom", " ".join(doc["cases"]["seg_loss"]["reasons"]))
        self.assertIn("dataloader", proc.stdout.splitlines()[-1] + proc.stdout)


def import_common():
    """scripts/gpu/common.py (it imports torch only inside its functions), without bytecode files."""
    import importlib
    import sys
    gpu = os.path.join(ROOT, "scripts", "gpu")
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        if gpu not in sys.path:
            sys.path.insert(0, gpu)
        return importlib.import_module("common")
    finally:
        sys.dont_write_bytecode = saved


class _Range:
    def __init__(self, start, end):
        self.start, self.end = start, end


class _Event:
    """The FunctionEvent fields common.analyze_profiler reads."""

    def __init__(self, name, start, end, device="DeviceType.CPU", stack=None, parent=None):
        self.name = self.key = name
        self.time_range = _Range(start, end)
        self.device_type = device
        self.stack = stack or []
        self.cpu_parent = parent
        self.count, self.cpu_time_total = 1, 1.0


class Harness(unittest.TestCase):
    """The case harness's readers of the profiler's events and of sync-debug-mode's warnings,
    on stand-ins for torch's objects (no torch here)."""

    @classmethod
    def setUpClass(cls):
        cls.common = import_common()
        cls.case = os.path.join(ROOT, "scripts", "gpu", "seg_loss.py")
        with open(cls.case) as f:
            lines = f.read().splitlines()
        cls.line = {m: next(i + 1 for i, t in enumerate(lines) if f"# sync: {m}" in t)
                    for m in ("nonzero", "unique")}

    def test_profiler_events(self):
        case, nz, un = self.case, self.line["nonzero"], self.line["unique"]
        step = _Event(f"{case}(200): step", 0, 100)
        py = _Event(f"{case}({nz}): nonzero", 10, 20, parent=step)
        op = _Event("aten::nonzero", 11, 19, stack=[f"{case}({nz}): ignore_background"], parent=py)
        sync = _Event("cudaStreamSynchronize", 12, 18, parent=op)
        kernel = _Event("void nonzero_kernel", 12, 13, device="DeviceType.CUDA")
        op2 = _Event("aten::_unique2", 30, 40, stack=["/t/torch/functional.py(9): _unique_impl",
                                                       f"{case}({un}): forward"])
        copy = _Event("cudaMemcpyAsync", 31, 39)        # no cpu_parent: placed by time
        back = _Event("GatherBackward0", 50, 60)
        sync2 = _Event("cudaStreamSynchronize", 52, 58)
        launch = _Event("cudaLaunchKernel", 53, 54)

        class Prof:
            def events(self):
                return [step, py, op, sync, kernel, op2, copy, back, sync2, launch]

            def key_averages(self, group_by_stack_n=0):
                return [sync, copy, launch]

        res = self.common.analyze_profiler(Prof(), case, 2)
        self.assertEqual(res["sync_events"], {"cudaStreamSynchronize": 2, "cudaMemcpyAsync": 1})
        self.assertEqual(res["markers_found"], ["nonzero", "unique"])
        self.assertEqual(res["placed_by_time"], 2)
        ops = [g["ops"] for g in res["groups"] if not g["markers"]]
        self.assertEqual(ops, [["GatherBackward0"]])
        self.assertEqual([r["name"] for r in res["key_averages"]], ["cudaStreamSynchronize", "cudaMemcpyAsync"])

    def test_sync_debug_warnings(self):
        import sys
        import types
        import warnings
        modes = []
        fake = types.ModuleType("torch")
        fake.cuda = types.SimpleNamespace(set_sync_debug_mode=modes.append)
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake
        try:
            cap = self.common.SyncDebugCapture(self.case)
            cap.start()
            namespace = {"warnings": warnings}
            # a warning issued from the case file's "unique" line, twice (the filter is "always")
            code = "\n" * (self.line["unique"] - 1) + \
                "for _ in range(2): warnings.warn('called a synchronizing CUDA operation')"
            exec(compile(code, self.case, "exec"), namespace)
            warnings.warn("something else")
            cap.stop()
        finally:
            if saved is None:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = saved
        res = cap.result(2)
        self.assertEqual(modes, ["warn", "default"])
        self.assertEqual((res["warnings"], res["sync_warnings"], res["per_step"]), (3, 2, 1.0))
        self.assertEqual(res["markers_found"], ["unique"])
        self.assertEqual(res["groups"][0]["case_line"], self.line["unique"])


class Bundle(unittest.TestCase):
    """A library the agent needs and this machine lacks comes from the bundle folder."""

    def test_missing_library_from_the_bundle(self):
        if not shutil.which("gcc"):
            self.fail("gcc is needed to build the stand-in libraries")
        tmp = tempfile.mkdtemp(prefix="syncspy-gpucheck-bundle-")
        try:
            bundle, lib = os.path.join(tmp, "bundle"), os.path.join(tmp, "lib")
            os.makedirs(bundle)
            os.makedirs(lib)
            with open(os.path.join(tmp, "dep.c"), "w") as f:
                f.write("int dep(void) { return 1; }\n")
            with open(os.path.join(tmp, "agent.c"), "w") as f:
                f.write("int dep(void);\nint agent(void) { return dep(); }\n")
            subprocess.run(["gcc", "-shared", "-fPIC", "-o", os.path.join(bundle, "libgpucheckdep.so.8"),
                            "-Wl,-soname,libgpucheckdep.so.8", os.path.join(tmp, "dep.c")], check=True)
            agent = os.path.join(lib, "libsyncspy.so")
            subprocess.run(["gcc", "-shared", "-fPIC", "-o", agent, os.path.join(tmp, "agent.c"),
                            os.path.join(bundle, "libgpucheckdep.so.8")], check=True)
            with open(os.path.join(lib, "syncspy"), "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(os.path.join(lib, "syncspy"), 0o755)
            proc, out = run_check_script({"GPU_CHECK_AGENT": agent, "GPU_CHECK_BUNDLE": bundle})
            shutil.rmtree(out, ignore_errors=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertRegex(proc.stdout, r"check agent: ok \(.*libsyncspy\.so loads with the copies in "
                                          r".*bundle of: libgpucheckdep\.so\.8\)")
            proc, out = run_check_script({"GPU_CHECK_AGENT": agent, "GPU_CHECK_BUNDLE": os.path.join(tmp, "none")})
            shutil.rmtree(out, ignore_errors=True)
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertIn("needs libraries this machine lacks: libgpucheckdep.so.8", proc.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
