"""tests/e2e/test_private_files.py: what syncspy writes is the user's alone. One rule for modes
(output/io.h OUTPUT_DIR_MODE 0700, OUTPUT_FILE_MODE 0600, less the umask) for the agent's folders,
summary.json, trace.bin and report file, and for the CLI's html, export --chrome and --folded
files and syncspy run --live's folder and run.log, under umask 022 and 0; a link planted where
the CLI makes its file is never followed. The output folder: a SYNCSPY_OUT others can write to
without the sticky bit, or another user's, is refused (one line, nothing recorded, the program
unchanged); a link planted as a process folder, or put in its place after the check, is never
followed."""
import glob
import json
import os
import stat
import subprocess
import tempfile
import time
import unittest

from util import CLI, agent_env, prog, run


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def with_umask(mask):
    return lambda: os.umask(mask)


class FileModes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-modes-")
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def agent_run(self, mask, root):
        report = os.path.join(self.d, f"report-{mask:o}.txt")
        env, _ = agent_env({"SYNCSPY_OUT": root, "SYNCSPY_REPORT": report})
        p = subprocess.run([prog("basic"), "1"], env=env, capture_output=True, text=True, timeout=60,
                           preexec_fn=with_umask(mask))
        self.assertEqual(p.returncode, 3, p.stderr)
        dirs = [os.path.join(root, x) for x in os.listdir(root)]
        self.assertEqual(len(dirs), 1, dirs)
        return dirs[0], report

    def test_agent_and_cli_files_are_private_under_any_umask(self):
        for mask in (0o022, 0o002, 0):
            with self.subTest(umask=oct(mask)):
                root = os.path.join(self.d, f"out-{mask:o}", "deeper")
                proc, report = self.agent_run(mask, root)
                self.assertEqual(mode(root), 0o700)
                self.assertEqual(mode(os.path.dirname(root)), 0o700)  # mkdir -p's folders too
                self.assertEqual(mode(proc), 0o700)
                for name in ("summary.json", "trace.bin"):
                    self.assertEqual(mode(os.path.join(proc, name)), 0o600, name)
                self.assertEqual(mode(report), 0o600)
                outs = {"page.html": ["html", proc, "-o"],
                        "trace.json": ["export", "--chrome"],
                        "stacks.txt": ["export", "--folded"]}
                for name, args in outs.items():
                    out = os.path.join(self.d, f"{mask:o}-{name}")
                    if name == "stacks.txt":  # a file there before, 0644: replaced by a private one
                        with open(out, "w") as f:
                            f.write("old\n")
                        os.chmod(out, 0o644)
                    argv = [CLI, *args, out] + ([] if args[0] == "html" else [proc])
                    p = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                                       preexec_fn=with_umask(mask))
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(mode(out), 0o600, name)
                    self.assertGreater(os.path.getsize(out), 100, name)
                    self.assertFalse(os.path.exists(out + ".tmp"))

    def test_a_link_planted_as_the_temporary_file_is_not_followed(self):
        proc, _ = self.agent_run(0o022, os.path.join(self.d, "out"))
        victim = os.path.join(self.d, "victim")
        with open(victim, "w") as f:
            f.write("mine\n")
        out = os.path.join(self.d, "page.html")
        os.symlink(victim, out + ".tmp")
        p = subprocess.run([CLI, "html", proc, "-o", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(victim) as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertTrue(stat.S_ISREG(os.lstat(out).st_mode))
        self.assertEqual(mode(out), 0o600)

    def test_run_top_log_is_private(self):
        root = os.path.join(self.d, "runroot")
        env, _ = agent_env(preload=False)
        for mask in (0o022, 0):
            with self.subTest(umask=oct(mask)):
                log = os.path.join(root, "run.log")
                if os.path.exists(log):
                    os.chmod(log, 0o644)  # an earlier run's log, readable by all: made new
                master, slave = os.openpty()  # the view needs a terminal: a pty stands in
                p = subprocess.Popen([CLI, "run", "--live", "--out", root, "--", prog("basic"), "1"],
                                     stdin=slave, stdout=slave, stderr=slave, env=env,
                                     preexec_fn=with_umask(mask))
                os.close(slave)
                deadline = time.time() + 60
                while time.time() < deadline:
                    try:
                        if not os.read(master, 65536):
                            break
                    except OSError:
                        break
                os.close(master)
                self.assertEqual(p.wait(timeout=60), 3)
                self.assertEqual(mode(root), 0o700)
                self.assertEqual(mode(log), 0o600)
                with open(log) as f:
                    self.assertIn("basic", f.read())


if __name__ == "__main__":
    unittest.main()


class OutputFolderLinks(unittest.TestCase):
    """SYNCSPY_OUT in a folder others can write to (/tmp): the agent writes only into a folder of
    its own that no link can redirect, or records nothing; the program is never harmed."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-links-")
        self.d = self.tmp.name
        self.victim = os.path.join(self.d, "victim")
        os.mkdir(self.victim)

    def tearDown(self):
        self.tmp.cleanup()

    def both(self, root, argv=None):
        argv = argv or [prog("basic"), "1"]
        plain = run(argv, env={"SYNCSPY_OUT": root}, preload=False)
        r = run(argv, env={"SYNCSPY_OUT": root})
        self.assertEqual((r.returncode, r.stdout), (plain.returncode, plain.stdout))
        return r

    def assert_refused(self, root, why):
        before = sorted(os.listdir(root))
        r = self.both(root)
        self.assertEqual(r.returncode, 3)
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)  # one line, no report: nothing was recorded
        self.assertIn(why, lines[0])
        self.assertIn(root, lines[0])
        self.assertIn("nothing is recorded in this process", lines[0])
        self.assertEqual(sorted(os.listdir(root)), before)  # no folder, no file

    def test_root_others_can_write_to_without_sticky_bit_is_refused(self):
        root = os.path.join(self.d, "shared")
        os.mkdir(root)
        os.chmod(root, 0o777)
        self.assert_refused(root, "(mode 0777, no sticky bit)")
        os.chmod(root, 0o1777)  # as /tmp: only an entry's owner may rename it
        r = self.both(root)
        self.assertIn("loss_fn", r.stderr)
        self.assertEqual(len(os.listdir(root)), 1)

    def test_root_of_another_user_or_group_is_refused(self):
        if os.geteuid() != 0:
            return  # chown to another user needs root (the tests run as root in CI)
        root = os.path.join(self.d, "theirs")
        os.mkdir(root, 0o755)
        os.chown(root, 65534, -1)
        self.assert_refused(root, "belongs to another user (uid 65534)")
        os.chown(root, 0, 65534)  # root's, writable by a group that is not ours
        os.chmod(root, 0o775)
        self.assert_refused(root, "(mode 0775, no sticky bit)")
        os.chown(root, 0, os.getegid())  # our own group: ours
        r = self.both(root)
        self.assertIn("loss_fn", r.stderr)

    def test_links_planted_as_process_folders_are_not_followed(self):
        root = os.path.join(self.d, "out")
        os.mkdir(root, 0o700)
        p = subprocess.Popen(["true"])
        p.wait()
        for pid in range(p.pid + 1, p.pid + 200):  # the agent's next folder names
            os.symlink(self.victim, os.path.join(root, f"pid{pid}"))
        r = self.both(root)
        self.assertEqual(os.listdir(self.victim), [])
        made = [d for d in glob.glob(os.path.join(root, "*")) if not os.path.islink(d)]
        self.assertEqual(len(made), 1, made)
        self.assertTrue(made[0].endswith(".2"), made)
        self.assertIn("loss_fn", r.stderr)

    def test_folder_swapped_for_a_link_after_the_check(self):
        root = os.path.join(self.d, "out")
        os.mkdir(root, 0o700)
        r = run([prog("host_harm"), "swap-folder", self.victim], env={"SYNCSPY_OUT": root})
        self.assertEqual((r.returncode, r.stdout), (0, "swapped\n"), r.stderr)
        self.assertEqual(os.listdir(self.victim), [])  # nothing through the link
        moved = os.path.join(root, "moved")
        self.assertEqual(sorted(os.listdir(moved)), ["summary.json", "trace.bin"])
        with open(os.path.join(moved, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(sum(x["count"] for x in s["sites"]
                             if any(f["function"] == "harm_sync" for f in x["frames"])), 6)
        rep = subprocess.run([CLI, "report", moved], capture_output=True, text=True, timeout=60)
        self.assertEqual(rep.returncode, 0, rep.stderr)
