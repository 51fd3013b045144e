"""tests/e2e/test_run.py: `syncspy run [OPTIONS] -- CMD` (and `python -m syncspy run`) on the
native target programs: the same output, exit status and counts as the bare LD_PRELOAD way, the
options as the agent's variables (a bad one refused with the agent's own reason before CMD
starts), CMD's exit status and death by signal kept, signals sent to syncspy run passed on and
the terminal's not doubled, several processes (ranks) merged, LD_PRELOAD put in order, the
closing lines that say where the files are, and --sim[=13|12] (the simulated device of that CUDA
version preloaded after the agent, for CMD and every process it starts; a missing one or a version
without one refused in one line)."""
import os
import pty
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from util import CLI, LIB, PY_MODULES, ROOT, SANITIZER_PRELOAD, SIM, agent_env, folder_host, prog, run, sim_devices
from util import process_summaries as summaries

SIM_DEVICES = sim_devices()  # cli/run.c's table
SIM_LIBRARIES = SIM_DEVICES[0][4]  # plain --sim's
VARIABLES = re.findall(r'"(SYNCSPY_[A-Z_]+)"', open(os.path.join(ROOT, "output", "config.c")).read().split(
    "config_variables[] = {", 1)[1].split("};", 1)[0])


def srun(*args, env=None, out=None, timeout=60, cwd=None, cli=None, python_m=False):
    """`syncspy run --out OUT ARGS...` (OUT a fresh folder unless given) with the simulated device
    on the library path and nothing preloaded but a sanitizer runtime; returns (process, OUT)."""
    e, tmp = agent_env(env, preload=False)
    out = out or tmp
    head = [sys.executable, "-m", "syncspy"] if python_m else [cli or CLI]
    if python_m:
        e["PYTHONPATH"] = PY_MODULES
    p = subprocess.run([*head, "run", "--out", out, *args], env=e, capture_output=True, text=True,
                       timeout=timeout, cwd=cwd)
    return p, out


def program_folder(where, devices=()):
    """A copy of the syncspy program and its agent in the folder where, with the folder of each
    named simulated device (sim, sim12) beside them holding its libraries as empty files:
    syncspy run only looks for them (what CMD's loader makes of them is not the point)."""
    for f in (CLI, LIB):
        shutil.copy(f, where)
    for version, _, folder, _, libs in SIM_DEVICES:
        if folder in devices:
            os.makedirs(os.path.join(where, folder))
            for n in libs:
                open(os.path.join(where, folder, n), "w").close()
    return os.path.join(where, "syncspy")


def site_counts(doc):
    return sorted((s["api"], s["frames"][0]["function"] if s["frames"] else "", s["count"]) for s in doc["sites"])


class RunsWithTheAgent(unittest.TestCase):
    def test_same_as_ld_preload(self):
        """Output, exit status (basic exits 3) and the counts per site are those of the bare way;
        the closing line names the process folder."""
        bare = run([prog("basic"), "3"])
        p, out = srun("--", prog("basic"), "3")
        self.assertEqual(p.returncode, bare.returncode)
        self.assertEqual(p.returncode, 3)
        self.assertEqual(p.stdout, bare.stdout)
        self.assertIn("at loss_fn", p.stderr)
        [doc] = summaries(out)
        self.assertEqual(site_counts(doc), site_counts(bare.summary()))
        folder = os.path.join(out, f"pid{doc['pid']}")
        self.assertIn(f"syncspy run: files in {folder}/ (summary.json, trace.bin); the report again: "
                      f"syncspy report {folder}\n", p.stderr)
        self.assertTrue(p.stderr.endswith(f"syncspy report {folder}\n"), p.stderr[-300:])

    def test_without_dashes_and_with_equals(self):
        p, out = srun("--top=1", prog("basic"), "1")
        self.assertEqual(p.returncode, 3)
        self.assertNotIn("per_thread_sync", p.stderr)  # --top 1: one group shown
        self.assertEqual(len(summaries(out)), 1)

    def test_python_m_syncspy_run(self):
        p, out = srun("--top", "2", "--", prog("basic"), "1", python_m=True)
        self.assertEqual(p.returncode, 3)
        self.assertIn("at loss_fn", p.stderr)
        self.assertEqual(len(summaries(out)), 1)

    def test_python_m_syncspy_restores_ignored_signals(self):
        """CPython ignores SIGPIPE and SIGXFSZ; `python -m syncspy run` does not hand that on."""
        direct = subprocess.run(["grep", "SigIgn", "/proc/self/status"], capture_output=True, text=True)
        p, _ = srun("--", "grep", "SigIgn", "/proc/self/status", python_m=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, direct.stdout)

    def test_the_options_are_the_variables(self):
        """--schedule, --report PATH (relative: from the current folder), --step, --launches."""
        with tempfile.TemporaryDirectory(prefix="syncspy-run-cwd-") as cwd:
            p, out = srun("--schedule", "skip_first=1,active=1", "--report", "report.txt", "--step", "manual",
                          "--launches", "trace", "--", prog("basic"), "3", cwd=cwd)
            self.assertEqual(p.returncode, 3, p.stderr)
            with open(os.path.join(cwd, "report.txt")) as f:
                report = f.read()
        self.assertIn("(schedule: skip_first=1,active=1)", report)
        self.assertNotIn("syncspy: pid", p.stderr)  # the report went to the file
        [doc] = summaries(out)
        self.assertEqual(sorted(st["step"] for st in doc["steps"]), [1, 2, 3])  # step 0 skipped

    def test_every_variable_is_an_option(self):
        p = subprocess.run([CLI, "run", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertGreater(len(VARIABLES), 10)
        for var in VARIABLES:
            opt = "--" + var[len("SYNCSPY_"):].lower().replace("_", "-")
            with self.subTest(var=var):
                self.assertRegex(p.stdout, rf"{re.escape(opt)} .*{var}")
                q, _ = srun(opt + "=", "--", "true")  # an empty value: the agent's reason, or accepted
                self.assertIn(q.returncode, (0, 125), q.stderr)

    def test_a_program_that_is_not_python_nor_cuda(self):
        p, out = srun("--", "sh", "-c", "echo hi; exit 4")
        self.assertEqual((p.returncode, p.stdout), (4, "hi\n"))
        self.assertIn(f"syncspy run: nothing recorded: no process made a CUDA call the agent saw "
                      f"(output folder {out})", p.stderr)
        self.assertEqual(os.listdir(out), [])
        # with the simulated device on the library path a driver answers: no word of one missing
        self.assertNotIn("CUDA driver", p.stderr)

    def test_nothing_recorded_on_a_machine_without_a_driver_says_why(self):
        # no libcuda.so.1 on the library path (this machine has no driver): the closing lines say
        # why a CUDA program recorded nothing, and how to try it on the simulated device
        e, out = agent_env(None, preload=False)
        e.pop("LD_LIBRARY_PATH", None)
        p = subprocess.run([CLI, "run", "--out", out, "--", "sh", "-c", "exit 3"], env=e,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("syncspy run: this machine has no CUDA driver (libcuda.so.1 cannot be loaded), so torch "
                      "and other CUDA programs run without the GPU and make no CUDA call", p.stderr)
        self.assertIn("to try syncspy without a GPU, run it on the simulated device: syncspy run --sim -- ...",
                      p.stderr)


    def test_the_hint_names_the_simulated_devices_beside_the_program(self):
        """Without a driver, the closing line names the devices the program has beside it: plain
        --sim for CUDA 13's, --sim=12 with the programs it is for; none, no hint."""
        no_driver = ("syncspy run: this machine has no CUDA driver (libcuda.so.1 cannot be loaded), so torch "
                     "and other CUDA programs run without the GPU and make no CUDA call")
        try_it = "; to try syncspy without a GPU, run it on the simulated device: syncspy run "
        for devices, hint in [((), ""), (("sim",), try_it + "--sim -- ..."),
                              (("sim12",), try_it + "--sim=12 -- ... (CUDA 12 programs: PyPI's torch 2.10 and "
                                                    "earlier)"),
                              (("sim", "sim12"), try_it + "--sim -- ... (--sim=12 for CUDA 12 programs: PyPI's "
                                                          "torch 2.10 and earlier)")]:
            with self.subTest(devices=devices), tempfile.TemporaryDirectory(prefix="syncspy-run-") as d:
                e, out = agent_env(None, preload=False)
                e.pop("LD_LIBRARY_PATH", None)
                p = subprocess.run([program_folder(d, devices), "run", "--out", out, "--", "sh", "-c", "exit 3"],
                                   env=e, capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertEqual(p.stderr.splitlines()[-1], no_driver + hint)


class RefusedBeforeTheProgram(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-run-")
        self.marker = os.path.join(self.tmp.name, "ran")
        self.cmd = ["sh", "-c", f"touch {self.marker}"]

    def tearDown(self):
        self.tmp.cleanup()

    def refused(self, *opts):
        p, _ = srun(*opts, "--", *self.cmd)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertFalse(os.path.exists(self.marker), "the program ran")
        return p.stderr

    def test_bad_values_get_the_agents_reason(self):
        """The reason is the agent's own (output/config.c): the same words as its warning for
        the variable."""
        for opt, value, var in [("--top", "0", "SYNCSPY_TOP"), ("--schedule", "active=0", "SYNCSPY_SCHEDULE"),
                                ("--step", "sometimes", "SYNCSPY_STEP"), ("--gpu", "2", "SYNCSPY_GPU"),
                                ("--cupti", "relative/libcupti.so", "SYNCSPY_CUPTI"),
                                ("--color", "rainbow", "SYNCSPY_COLOR"), ("--buffer-mb", "0x10", "SYNCSPY_BUFFER_MB")]:
            with self.subTest(opt=opt):
                err = self.refused(opt, value)
                warned = run([prog("basic"), "1"], env={var: value}).stderr
                reason = re.search(rf"syncspy: {var}='[^']*' (.*); using", warned).group(1)
                self.assertEqual(err, f"syncspy run: {opt} '{value}' {reason}\n")

    def test_unknown_option_and_missing_value_and_command(self):
        self.assertIn("unknown option '--frobnicate'", self.refused("--frobnicate", "1"))
        self.assertIn("unknown option '-x'", self.refused("-x"))
        # --top N is SYNCSPY_TOP, always with its N (as report --top N); --live is the live view
        for args in (["--top"], ["--top", "--", "true"]):
            p = subprocess.run([CLI, "run", *args], capture_output=True, text=True)
            self.assertEqual(p.returncode, 125)
            self.assertTrue(p.stderr.startswith("syncspy run: --top needs a value (N)\nusage: syncspy run "),
                            p.stderr)
        p = subprocess.run([CLI, "run", "--live", "--", "true"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        self.assertEqual((p.returncode, p.stderr), (125, "syncspy run: --live shows the live view on a terminal; "
                                                         "stdin and stdout are not one\n"))
        p = subprocess.run([CLI, "run", "--top", "3"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 125)
        self.assertIn("no command to run", p.stderr)

    def test_command_not_found_or_not_executable(self):
        p, _ = srun("--", os.path.join(self.tmp.name, "nothing-here"))
        self.assertEqual(p.returncode, 127)
        self.assertIn("nothing-here: command not found", p.stderr)
        plain = os.path.join(self.tmp.name, "not-executable")
        with open(plain, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(plain, 0o644)
        p, _ = srun("--", plain)
        self.assertEqual(p.returncode, 126)
        self.assertIn("not-executable: Permission denied", p.stderr)

    def test_sim_without_a_simulator_beside_the_program(self):
        """--sim where the program has no sim/ beside it (its agent alone): one line, 125."""
        for f in (CLI, LIB):
            shutil.copy(f, self.tmp.name)
        p, _ = srun("--sim", "--", *self.cmd, cli=os.path.join(self.tmp.name, "syncspy"))
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertEqual(p.stderr, f"syncspy run: --sim: no simulated device beside this program "
                                   f"({self.tmp.name}/sim/libcudart.so.13: No such file or directory): a source "
                                   "build makes it with `make sim`, the wheel of `make wheel` carries it\n")
        self.assertFalse(os.path.exists(self.marker), "the program ran")

    def test_sim_of_each_version_without_its_simulator(self):
        """--sim=12 needs sim12/ beside the program (the CUDA 13 device never stands in for it),
        --sim=13 and plain --sim need sim/: each missing one refused in one line, 125, naming
        its make target."""
        cli = program_folder(self.tmp.name)
        for opts, shown, folder, target, runtime in [(("--sim=12",), "--sim=12", "sim12", "sim12", "libcudart.so.12"),
                                                     (("--sim", "12"), "--sim=12", "sim12", "sim12", "libcudart.so.12"),
                                                     (("--sim=13",), "--sim=13", "sim", "sim", "libcudart.so.13")]:
            with self.subTest(opts=opts):
                p, _ = srun(*opts, "--", *self.cmd, cli=cli)
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertEqual(p.stderr, f"syncspy run: {shown}: no simulated device beside this program "
                                           f"({self.tmp.name}/{folder}/{runtime}: No such file or directory): a "
                                           f"source build makes it with `make {target}`, the wheel of `make wheel` "
                                           "carries it\n")
                self.assertFalse(os.path.exists(self.marker), "the program ran")
        # the CUDA 13 device beside it: --sim runs, --sim=12 is still refused
        os.symlink(os.path.realpath(SIM), os.path.join(self.tmp.name, "sim"))
        p, _ = srun("--sim=12", "--", *self.cmd, cli=cli)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn("/sim12/libcudart.so.12: No such file or directory", p.stderr)
        self.assertFalse(os.path.exists(self.marker), "the program ran")
        p, _ = srun("--sim", "--", *self.cmd, cli=cli)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(self.marker), p.stderr)

    def test_sim_version_without_a_device(self):
        """A version no simulated device has, or none after =: one line naming those there are,
        125, before the program starts."""
        self.assertEqual([row[0] for row in SIM_DEVICES], ["13", "12"])
        for opts, shown in [(("--sim=11",), "11"), (("--sim=x",), "x"), (("--sim=",), ""), (("--sim", "14"), "14"),
                            (("--sim=12.8",), "12.8"), (("--sim=012",), "012")]:
            with self.subTest(opts=opts):
                self.assertEqual(self.refused(*opts),
                                 f"syncspy run: --sim '{shown}' is not the CUDA version of a simulated device: "
                                 "--sim=13 (plain --sim; PyPI's torch 2.12 and later) or --sim=12 (PyPI's torch "
                                 "2.10 and earlier)\n")

    def test_no_agent_beside_the_program(self):
        lone = os.path.join(self.tmp.name, "syncspy")
        shutil.copy(CLI, lone)
        p, _ = srun("--", *self.cmd, cli=lone)
        self.assertEqual(p.returncode, 125)
        self.assertIn(f"no agent at {self.tmp.name}/libsyncspy.so", p.stderr)
        self.assertFalse(os.path.exists(self.marker))


class OnTheSimulatedDevice(unittest.TestCase):
    """--sim: a program linked to the toolkit's real libcudart (its RUNPATH names
    /usr/local/cuda/lib64, as torch's RPATH names its own CUDA wheels), with nothing on the
    library path: without --sim it finds no driver (every call fails: 35,
    cudaErrorInsufficientDriver); with it, it and every process it starts run on the simulated
    device beside the syncspy program, and are recorded."""

    def env(self):
        e, out = agent_env(preload=False)
        e.pop("LD_LIBRARY_PATH")
        return e, out

    def test_a_real_runtime_program_runs_on_the_simulator(self):
        e, out = self.env()
        plain = subprocess.run([prog("real_runtime")], env=e, capture_output=True, text=True)
        self.assertEqual((plain.returncode, plain.stdout), (7, "malloc: 35\nsync: 35\nmemcpy: 35\n"))
        p = subprocess.run([CLI, "run", "--sim", "--out", out, "--", prog("real_runtime")], env=e,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (7, "malloc: 0\nsync: 0\nmemcpy: 0\n"), p.stderr)
        [doc] = summaries(out)
        self.assertEqual(sorted((s["api"], s["count"]) for s in doc["sites"]),
                         [("cudaDeviceSynchronize", 1), ("cudaMemcpy", 1)])
        self.assertIn("syncspy run: files in", p.stderr)

    def test_every_process_it_starts_too(self):
        e, out = self.env()
        p = subprocess.run([CLI, "run", "--sim", "--out", out, "--", "sh", "-c",
                            f"{prog('real_runtime')}; {prog('real_runtime')}; exit 4"], env=e,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (4, "malloc: 0\nsync: 0\nmemcpy: 0\n" * 2), p.stderr)
        docs = summaries(out)
        self.assertEqual([sum(s["count"] for s in d["sites"]) for d in docs], [2, 2])

    def test_nothing_recorded_names_no_driver(self):
        """With --sim a driver answers: a program that made no CUDA call is just that (the
        program has no other simulated device beside it here)."""
        with tempfile.TemporaryDirectory(prefix="syncspy-run-") as d:
            cli = program_folder(d)
            os.symlink(os.path.realpath(SIM), os.path.join(d, "sim"))
            e, out = self.env()
            p = subprocess.run([cli, "run", "--sim", "--out", out, "--", "sh", "-c", "exit 3"], env=e,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(p.stderr, f"syncspy run: nothing recorded: no process made a CUDA call the agent saw "
                                   f"(output folder {out})\n")

    def test_nothing_recorded_names_the_other_device(self):
        """A program built for the other CUDA version finds no device on this one (torch 2.6
        under plain --sim): with nothing recorded, the closing lines name the other device beside
        the program and what it is for."""
        with tempfile.TemporaryDirectory(prefix="syncspy-run-") as d:
            cli = program_folder(d, ("sim12",))  # placeholders: CMD's loader ignores them
            os.symlink(os.path.realpath(SIM), os.path.join(d, "sim"))
            for opt, line in [("--sim", "syncspy run: this was the CUDA 13 simulated device; a CUDA 12 program "
                                        "(PyPI's torch 2.10 and earlier) finds no device on it: --sim=12 runs it "
                                        "on the CUDA 12 one"),
                              ("--sim=12", "syncspy run: this was the CUDA 12 simulated device; a CUDA 13 program "
                                           "(PyPI's torch 2.12 and later) finds no device on it: --sim runs it on "
                                           "the CUDA 13 one")]:
                with self.subTest(opt=opt):
                    e, out = self.env()
                    p = subprocess.run([cli, "run", opt, "--out", out, "--", "sh", "-c", "exit 3"], env=e,
                                       capture_output=True, text=True, timeout=60)
                    self.assertEqual(p.returncode, 3, p.stderr)
                    self.assertTrue(p.stderr.endswith(
                        f"syncspy run: nothing recorded: no process made a CUDA call the agent saw (output folder "
                        f"{out})\n{line}\n"), p.stderr)

    def test_help(self):
        """--help says which --sim serves which torch, for every device of the table."""
        p = subprocess.run([CLI, "run", "--help"], capture_output=True, text=True)
        text = " ".join(p.stdout.split())
        self.assertIn("--sim[=13|12] runs CMD on the simulated CUDA device shipped with syncspy", text)
        self.assertIn("--live the live view of `syncspy top`", text)
        self.assertIn("--top N SYNCSPY_TOP: groups (lines) in the exit report", text)
        self.assertIn("--sim (or --sim=13) for CUDA 13 programs (PyPI's torch 2.12 and later), --sim=12 for "
                      "CUDA 12 ones (PyPI's torch 2.10 and earlier); a torch's own is its torch.version.cuda", text)
        for version, programs, folder, _, _ in SIM_DEVICES:
            with self.subTest(version=version):
                self.assertIn(f"--sim={version}", text)
                self.assertIn(f"({programs})", text)
                self.assertIn(f"{folder}/", text)


class ExitAndSignals(unittest.TestCase):
    def test_exit_status_is_the_programs(self):
        for code in (0, 1, 2, 7, 125, 255):
            p, _ = srun("--", "sh", "-c", f"exit {code}")
            self.assertEqual(p.returncode, code)

    def test_death_by_signal_is_the_same_death(self):
        """A program killed by a signal kills syncspy run with that signal: a shell sees 128+N,
        Python's subprocess -N, as without syncspy run; no core file of syncspy's own."""
        def cores_allowed():
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT):
            cmd = ["sh", "-c", f"ulimit -c 0; kill -{sig.name[3:]} $$"]  # no core of the program's
            bare = subprocess.run(cmd, capture_output=True)
            with self.subTest(sig=sig.name), tempfile.TemporaryDirectory() as cwd:
                e = agent_env(preload=False)[0]
                if SANITIZER_PRELOAD:  # an ASan build of syncspy: ASan's own SIGSEGV handler
                    # would catch the SIGSEGV syncspy run raises on itself to die the same death
                    e["ASAN_OPTIONS"] = ":".join(filter(None, [e.get("ASAN_OPTIONS"), "handle_segv=0"]))
                p = subprocess.run([CLI, "run", "--", *cmd], env=e, cwd=cwd, capture_output=True,
                                   preexec_fn=cores_allowed)
                self.assertEqual(p.returncode, bare.returncode)
                self.assertEqual(p.returncode, -sig)
                self.assertEqual(os.listdir(cwd), [])
                shell = subprocess.run(["sh", "-c", '"$@"; echo "status $?"', "sh", CLI, "run", "--", *cmd],
                                       capture_output=True, text=True, env=e)
                self.assertIn(f"status {128 + sig}", shell.stdout)

    def test_sigterm_to_syncspy_run_reaches_the_program(self):
        """kill PID of syncspy run: the program gets it, writes its report, dies of it."""
        e, out = agent_env(preload=False)
        p = subprocess.Popen([CLI, "run", "--", prog("loop"), "default", "3"], env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline(), "ready\n")
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assertIn("at step_sync", err)  # the program's report
        self.assertIn("syncspy run: files in ", err)
        [doc] = summaries(out)
        self.assertGreater(len(doc["steps"]), 2)

    def test_sigint_from_the_terminal_reaches_the_program_once(self):
        """Ctrl-C at a terminal goes to the whole foreground process group: syncspy run does
        not pass on a second copy (the agent and Python take a second Ctrl-C as 'now'); a
        SIGINT sent to syncspy run alone is passed on."""
        code = ("import signal, time\n"
                "n = 0\n"
                "def h(s, f):\n"
                "    global n\n"
                "    n += 1\n"
                "signal.signal(signal.SIGINT, h)\n"
                "print('ready', flush=True)\n"
                "end = time.time() + 20\n"
                "while n == 0 and time.time() < end:\n"
                "    time.sleep(0.01)\n"
                "time.sleep(0.5)\n"
                "print('got', n, flush=True)\n")
        for how in ("terminal", "kill"):
            with self.subTest(how=how):
                pid, fd = pty.fork()
                if pid == 0:
                    e = agent_env(preload=False)[0]
                    os.execve(CLI, [CLI, "run", "--", sys.executable, "-c", code], e)
                text = self.read_until(fd, "ready")
                if how == "terminal":
                    os.write(fd, b"\x03")
                else:
                    os.kill(pid, signal.SIGINT)
                text += self.read_until(fd, "got")
                text += self.read_until(fd, "\n")
                _, status = os.waitpid(pid, 0)
                os.close(fd)
                self.assertIn("got 1", text)
                self.assertEqual(os.waitstatus_to_exitcode(status), 0, text)

    @staticmethod
    def read_until(fd, what, timeout=30):
        buf, end = "", time.time() + timeout
        while what not in buf and time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk.decode(errors="replace")
        return buf


class ProcessesAndPreload(unittest.TestCase):
    def test_several_ranks_are_merged(self):
        """Two processes with RANK set (as torchrun starts them): both recorded, the closing line
        names them and the merged report of the root; a second run into the same folder says
        that folder holds the first run's too."""
        cmd = ["sh", "-c", f'RANK=0 {prog("basic")} 1 & RANK=1 {prog("basic")} 2 & wait']
        p, out = srun("--", *cmd)
        self.assertEqual(p.returncode, 0, p.stderr)
        names = sorted(os.listdir(out))
        host = folder_host()
        self.assertEqual([re.sub(r"\d+$", "", n) for n in names], [f"rank0-{host}-pid", f"rank1-{host}-pid"])
        self.assertIn(f"syncspy run: 2 processes recorded under {out}/: {names[0]}, {names[1]}; merged: "
                      f"syncspy report {out}\n", p.stderr)
        merged = subprocess.run([CLI, "report", out], capture_output=True, text=True)
        self.assertEqual(merged.returncode, 0, merged.stderr)
        self.assertIn("hotspots of all 2 processes", merged.stdout)
        again, _ = srun("--", *cmd, out=out)
        self.assertIn("(that folder also holds 2 process folders of earlier runs", again.stderr)

    def test_agent_first_in_ld_preload(self):
        """The agent goes first, after a sanitizer runtime wherever it was (ASan's must come
        first); another copy of the agent is dropped; the rest keeps its order."""
        other = "/nonexistent/libother.so"
        env = {"LD_PRELOAD": f"{other}:/old/libsyncspy.so {SANITIZER_PRELOAD}".strip()}
        e, out = agent_env(preload=False)
        e.update(env)
        p = subprocess.run([CLI, "run", "--out", out, "--", "sh", "-c", 'echo "$LD_PRELOAD"'], env=e,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        want = (f"{SANITIZER_PRELOAD} " if SANITIZER_PRELOAD else "") + f"{os.path.realpath(LIB)} {other}"
        self.assertEqual(p.stdout, want + "\n")
        if SANITIZER_PRELOAD:
            e["LD_PRELOAD"] = SANITIZER_PRELOAD
            p = subprocess.run([CLI, "run", "--out", out, "--", "sh", "-c", 'echo "$LD_PRELOAD"'], env=e,
                               capture_output=True, text=True)
            self.assertEqual(p.stdout, f"{SANITIZER_PRELOAD} {os.path.realpath(LIB)}\n")

    def test_sim_libraries_after_the_agent_and_their_folder_first(self):
        """--sim: the simulated device's libraries right after the agent, in its row's order,
        before what was preloaded (a copy of one of them already there dropped); their folder
        first on LD_LIBRARY_PATH."""
        e, out = agent_env(preload=False)
        sim = os.path.realpath(SIM)
        libs = [f"{sim}/{n}" for n in SIM_LIBRARIES]
        e["LD_PRELOAD"] = f"{SANITIZER_PRELOAD} /nonexistent/libother.so {libs[1]}".strip()
        e["LD_LIBRARY_PATH"] = "/old/lib"
        p = subprocess.run([CLI, "run", "--sim", "--out", out, "--", "sh", "-c",
                            'echo "$LD_PRELOAD"; echo "$LD_LIBRARY_PATH"'], env=e, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        want = [SANITIZER_PRELOAD] if SANITIZER_PRELOAD else []
        want += [os.path.realpath(LIB), *libs, "/nonexistent/libother.so"]
        self.assertEqual(p.stdout, " ".join(want) + f"\n{sim}:/old/lib\n")

    def test_each_sim_version_its_folder_and_libraries(self):
        """--sim=N (or --sim N) preloads the libraries of N's row of the table from its folder
        beside the program, right after the agent and in the table's order, and puts that folder
        first on LD_LIBRARY_PATH; plain --sim (also before a command without --) is the first
        row's."""
        with tempfile.TemporaryDirectory(prefix="syncspy-run-") as d:
            cli = program_folder(d, ("sim", "sim12"))
            show = ["sh", "-c", 'echo "$LD_PRELOAD"; echo "$LD_LIBRARY_PATH"']
            first = SIM_DEVICES[0][0]
            for opts, version in [(("--sim=12",), "12"), (("--sim", "12", "--"), "12"), (("--sim=13",), "13"),
                                  (("--sim", "--"), first), (("--sim",), first)]:
                with self.subTest(opts=opts):
                    [(folder, libs)] = [(r[2], r[4]) for r in SIM_DEVICES if r[0] == version]
                    e, out = agent_env(preload=False)
                    e["LD_LIBRARY_PATH"] = "/old/lib"
                    p = subprocess.run([cli, "run", "--out", out, *opts, *show], env=e, capture_output=True,
                                       text=True)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    want = [SANITIZER_PRELOAD] if SANITIZER_PRELOAD else []
                    want += [f"{d}/libsyncspy.so", *(f"{d}/{folder}/{n}" for n in libs)]
                    self.assertEqual(p.stdout, " ".join(want) + f"\n{d}/{folder}:/old/lib\n")

    def test_the_table_is_what_make_sim_builds(self):
        """The CUDA 13 row's libraries are every library `make sim` puts in build/sim (under its
        soname; the link names aside)."""
        built = sorted(n for n in os.listdir(SIM) if re.fullmatch(r"lib\w+\.so\.\d+", n)
                       and not os.path.islink(os.path.join(SIM, n)))
        self.assertEqual(sorted(SIM_LIBRARIES), built)

    def test_out_is_made_absolute(self):
        """A relative --out is the folder under the current one, for every process and for the
        closing lines, even when the program changes folder."""
        with tempfile.TemporaryDirectory(prefix="syncspy-run-cwd-") as cwd:
            e = agent_env(preload=False)[0]
            p = subprocess.run([CLI, "run", "--out", "rel/out", "--", "sh", "-c", f"cd / && {prog('basic')} 1"],
                               env=e, capture_output=True, text=True, cwd=cwd)
            self.assertEqual(p.returncode, 3, p.stderr)
            [d] = os.listdir(os.path.join(cwd, "rel", "out"))
            self.assertIn(f"files in {os.path.realpath(cwd)}/rel/out/{d}/", p.stderr)


if __name__ == "__main__":
    unittest.main()
