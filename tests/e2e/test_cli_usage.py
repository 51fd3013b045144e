"""tests/e2e/test_cli_usage.py: the command line as a user meets it, all made from one table
(cli/commands.c): each command's --help and -h (its usage, options and exit status, on stdout,
exit 0), its usage errors (one line naming the problem, then its own usage, on stderr: exit 2,
run 125), --color on the commands that colour, a file that is not a run's (`report train.py`),
run's --top N and --live, the bash completion script (sourced in bash, its COMPREPLY read), the
zsh one (loaded by compinit in a zsh on a pseudo-terminal, a Tab pressed), and the manual page
(mandoc -T lint, groff), each checked against the options --help lists."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import tracegen
from util import BUILD, CLI

COMMANDS = ["run", "report", "export", "check", "diff", "html", "top", "start", "stop", "completion", "help"]
SGR = re.compile(r"\x1b\[[0-9;]*m")


def cli(*args, **kw):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60, **kw)


def options_of(help_text):
    """The long options of a command's --help, from its Options section."""
    section = help_text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  (?:-\w, )?(--[\w-]+)", section, re.M)


def bash_complete(words, script):
    """COMPREPLY of syncspy's bash completion for the command line words (the last one being
    completed), sourced from script in a bash of its own."""
    line = " ".join("''" if not w else "'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (f"source {script}\nCOMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
            "_syncspy; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return sorted(w for w in p.stdout.split("\n") if w)


class Help(unittest.TestCase):
    def test_every_command_answers_help_and_h(self):
        for cmd in COMMANDS:
            for flag in ("--help", "-h"):
                with self.subTest(cmd=cmd, flag=flag):
                    p = cli(cmd, flag)
                    self.assertEqual((p.returncode, p.stderr), (0, ""))
                    self.assertTrue(p.stdout.startswith(f"usage: syncspy {cmd} "), p.stdout)
                    self.assertIn("\nOptions:\n", p.stdout)
                    self.assertIn("  -h, --help ", p.stdout)
                    self.assertIn("\nExit status:\n", p.stdout)
                    for other in COMMANDS:  # its own usage, no other command's
                        if other != cmd:
                            self.assertNotIn(f"usage: syncspy {other} ", p.stdout)
                    self.assertLessEqual(max(len(line) for line in p.stdout.split("\n")), 100)

    def test_top_help_is_more_than_its_usage(self):
        p = cli("top", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(options_of(p.stdout), ["--interval", "--once", "--help"])
        self.assertIn("  --interval SECONDS      seconds between two screens", p.stdout)
        self.assertIn("Keys: q quits", p.stdout)

    def test_help_command_and_program_help(self):
        self.assertEqual(cli("help", "top").stdout, cli("top", "--help").stdout)
        p = cli("--help")
        self.assertEqual(p.returncode, 0)
        for cmd in COMMANDS:
            self.assertRegex(p.stdout, rf"\n  {cmd} +\S")  # the list of commands
        p = cli("help", "frobnicate")
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.startswith("syncspy help: no command 'frobnicate'\nusage: syncspy help "))


class UsageErrors(unittest.TestCase):
    def expect_usage_error(self, args, message, status=2):
        p = cli(*args)
        cmd = args[0]
        self.assertEqual((p.returncode, p.stdout), (status, ""), p.stderr)
        lines = p.stderr.split("\n")
        self.assertEqual(lines[0], f"syncspy {cmd}: {message}")
        self.assertTrue(lines[1].startswith(f"usage: syncspy {cmd} "), p.stderr)
        self.assertEqual(lines[-2], f"Try 'syncspy {cmd} --help' for its options.")
        for other in COMMANDS:  # not the whole list
            if other != cmd:
                self.assertNotIn(f"syncspy {other} ", p.stderr)

    def test_unknown_option(self):
        for cmd in COMMANDS:
            with self.subTest(cmd=cmd):
                self.expect_usage_error([cmd, "--bogus", "x"], "unknown option '--bogus'",
                                        125 if cmd == "run" else 2)
        self.expect_usage_error(["top", "-x", "d"], "unknown option '-x'")
        self.expect_usage_error(["report", "--bogus=\x1b[31m", "d"], "unknown option '--bogus'")

    def test_missing_value(self):
        for args, message in ((["report", "d", "--top"], "--top needs a value (N)"),
                              (["report", "d", "--color"], "--color needs a value (WHEN)"),
                              (["html", "d", "-o"], "-o needs a value (FILE)"),
                              (["html", "d", "--output"], "--output needs a value (FILE)"),
                              (["top", "--interval"], "--interval needs a value (SECONDS)"),
                              (["check", "d", "--allow"], "--allow needs a value (FILE:LINE)"),
                              (["export", "--chrome"], "--chrome needs a value (OUT)"),
                              (["report", "--top", "--", "d"], "--top needs a value (N)")):
            with self.subTest(args=args):
                self.expect_usage_error(args, message)
        self.expect_usage_error(["run", "--out"], "--out needs a value (DIR)", 125)

    def test_operands(self):
        self.expect_usage_error(["report"], "missing DIR (a process folder or the SYNCSPY_OUT root)")
        self.expect_usage_error(["report", "a", "b"], "takes one DIR; 'b' is one more")
        self.expect_usage_error(["top", "a", "b"], "takes one DIR; 'b' is one more")
        self.expect_usage_error(["completion"], "missing shell (bash or zsh)")
        self.expect_usage_error(["completion", "fish"], "no script for the shell 'fish' (bash or zsh)")
        self.expect_usage_error(["run", "--top", "3"], "no command to run", 125)

    def test_options_after_operands_and_double_dash(self):
        tmp = tempfile.mkdtemp(prefix="syncspy-usage-")
        try:
            with open(os.path.join(tmp, "-odd.json"), "w") as f:
                f.write("{")
            # "--" ends the options: a DIR that starts with '-' is read, not taken for one
            p = cli("report", "--top", "3", "--", os.path.join(tmp, "-odd.json"))
            self.assertEqual(p.returncode, 2)
            self.assertIn("-odd.json ends early at byte 1", p.stderr)
        finally:
            shutil.rmtree(tmp)


class Color(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="syncspy-color-")
        os.makedirs(os.path.join(cls.tmp, "pid4242"))
        with open(os.path.join(cls.tmp, "pid4242", "trace.bin"), "wb") as f:
            f.write(tracegen.sample().data())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_report_color(self):
        env = dict(os.environ, SYNCSPY_COLOR="never")
        env.pop("NO_COLOR", None)
        plain = cli("report", self.tmp, env=env)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertNotRegex(plain.stdout, SGR)
        always = cli("report", "--color", "always", self.tmp, env=env)  # the option wins
        self.assertEqual(always.returncode, 0, always.stderr)
        self.assertRegex(always.stdout, SGR)
        self.assertEqual(SGR.sub("", always.stdout), plain.stdout)
        never = cli("report", "--color=never", self.tmp, env=dict(env, SYNCSPY_COLOR="always"))
        self.assertEqual(never.stdout, plain.stdout)
        self.assertEqual(cli("report", "--color", "auto", self.tmp, env=env).stdout, plain.stdout)  # a pipe

    def test_bad_color_is_a_usage_error(self):
        p = cli("report", "--color", "rainbow", self.tmp)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertRegex(p.stderr, r"^syncspy report: --color 'rainbow' is not .*\nusage: syncspy report ")

    def test_every_colouring_command_has_color(self):
        # report colours its stdout; run the agent's exit report (SYNCSPY_COLOR)
        for cmd in ("report", "run"):
            with self.subTest(cmd=cmd):
                self.assertIn("--color", options_of(cli(cmd, "--help").stdout))


class NotARunFolder(unittest.TestCase):
    def test_a_program_is_not_a_run_folder(self):
        tmp = tempfile.mkdtemp(prefix="syncspy-notrun-")
        try:
            train = os.path.join(tmp, "train.py")
            notes = os.path.join(tmp, "notes.txt")
            with open(train, "w") as f:
                f.write("import torch\nprint(torch.ones(1).item())\n")
            with open(notes, "w") as f:
                f.write("hello\n")
            for args in (["report", train], ["check", "--max-syncs-per-step", "1", train],
                         ["diff", train, train], ["html", "-o", os.path.join(tmp, "p.html"), train],
                         ["export", "--folded", "-", train]):
                with self.subTest(args=args[0]):
                    p = cli(*args)
                    self.assertEqual((p.returncode, p.stdout), (2, ""))
                    self.assertIn(f"syncspy: {train} is not a run folder: not a process folder or "
                                  "SYNCSPY_OUT root, nor a trace.bin or summary.json (to record the "
                                  "program: syncspy run -- python ...)\n", p.stderr)
                    self.assertNotIn("summary.json at byte", p.stderr)
            p = cli("report", notes)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"{notes} is not a run folder", p.stderr)
            self.assertNotIn("syncspy run --", p.stderr)  # the hint is for a Python file
        finally:
            shutil.rmtree(tmp)


class RunTopAndLive(unittest.TestCase):
    def test_one_meaning(self):
        text = cli("run", "--help").stdout
        self.assertIn("  --top N                 SYNCSPY_TOP: groups (lines) in the exit report", text)
        self.assertIn("  --live                  the live view of `syncspy top`", text)
        p = cli("run", "--top", "--", "true")  # no longer the live view
        self.assertEqual(p.returncode, 125)
        self.assertTrue(p.stderr.startswith("syncspy run: --top needs a value (N)\n"), p.stderr)


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="syncspy-completion-")
        cls.bash = os.path.join(cls.tmp, "syncspy.bash")
        with open(cls.bash, "w") as f:
            p = cli("completion", "bash")
            assert p.returncode == 0, p.stderr
            f.write(p.stdout)
        os.makedirs(os.path.join(cls.tmp, "runs", "a"))
        open(os.path.join(cls.tmp, "runs", "summary.json"), "w").close()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_the_build_writes_the_same_scripts(self):
        with open(self.bash) as f, open(os.path.join(BUILD, "completion", "syncspy.bash")) as g:
            self.assertEqual(f.read(), g.read())
        with open(os.path.join(BUILD, "completion", "_syncspy")) as g:
            self.assertEqual(cli("completion", "zsh").stdout, g.read())

    def test_bash_commands_and_options(self):
        self.assertEqual(bash_complete(["syncspy", ""], self.bash),
                         sorted(COMMANDS + ["--help", "--version"]))
        self.assertEqual(bash_complete(["syncspy", "re"], self.bash), ["report"])
        for cmd in COMMANDS:  # every option of its --help, and only those
            with self.subTest(cmd=cmd):
                want = options_of(cli(cmd, "--help").stdout)
                got = [w for w in bash_complete(["syncspy", cmd, "--"], self.bash)]
                self.assertEqual(got, sorted(want))
        self.assertEqual(bash_complete(["syncspy", "run", "--st"], self.bash), ["--stack-cache", "--step"])
        self.assertEqual(bash_complete(["syncspy", "html", "-"], self.bash),
                         ["--help", "--output", "--top", "-h", "-o"])

    def test_bash_values_and_operands(self):
        runs = os.path.join(self.tmp, "runs")
        for words, want in ((["syncspy", "report", "--color", ""], ["always", "auto", "never"]),
                            (["syncspy", "report", "--color", "=", "al"], ["always"]),
                            (["syncspy", "run", "--launches", ""], ["count", "trace"]),
                            (["syncspy", "run", "--backward", "s"], ["sampled"]),
                            (["syncspy", "run", "--out", runs + "/"], [runs + "/a"]),
                            (["syncspy", "report", runs + "/"], [runs + "/a", runs + "/summary.json"]),
                            (["syncspy", "report", "--top", ""], []),
                            (["syncspy", "completion", ""], ["bash", "zsh"]),
                            (["syncspy", "help", "ch"], ["check"]),
                            # after run's CMD, CMD's own words: files, not run's options
                            (["syncspy", "run", "--top", "3", "--", "true", runs + "/"],
                             [runs + "/a", runs + "/summary.json"]),
                            (["syncspy", "run", "--out", "x", "sh", "--"], [])):
            with self.subTest(words=words):
                self.assertEqual(bash_complete(words, self.bash), want)
        self.assertIn("bash", bash_complete(["syncspy", "run", "--", "bas"], self.bash))  # a command

    @unittest.skipUnless(shutil.which("zsh"), "zsh is not installed (scripts/deps.sh installs it)")
    def test_zsh_completes_in_a_real_zsh(self):
        """compinit finds _syncspy in $fpath; Tab after `report --co` gives --color=, a second Tab
        its values (the terminal's text read through zpty)."""
        fdir = os.path.join(self.tmp, "zfunc")
        os.makedirs(fdir, exist_ok=True)
        with open(os.path.join(fdir, "_syncspy"), "w") as f:
            f.write(cli("completion", "zsh").stdout)
        p = subprocess.run(["zsh", "-n", os.path.join(fdir, "_syncspy")], capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        driver = os.path.join(self.tmp, "drive.zsh")
        with open(driver, "w") as f:
            f.write(f"""zmodload zsh/zpty
zpty z 'PS1="> " HOME={self.tmp} zsh -f -i'
zpty -w z 'fpath=({fdir} $fpath); autoload -Uz compinit; compinit -u -d {self.tmp}/zcd'
zpty -w -n z $'syncspy report --co\\t'
sleep 1
zpty -w -n z $'\\t'
sleep 1
zpty -w -n z $'\\x15syncspy to\\t'
sleep 1
zpty -r -t z out '*top*'
zpty -d z
print -r -- "$out"
""")
        p = subprocess.run(["zsh", "-f", driver], capture_output=True, text=True, timeout=60)
        screen = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]|[\x07\x08\r]", "", p.stdout)
        self.assertIn("syncspy report --color=", screen)
        self.assertRegex(screen, r"always +auto +never")
        self.assertIn("syncspy top", screen)


class ManPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(BUILD, "syncspy.1")) as f:
            cls.page = f.read()

    def test_the_build_writes_help_man(self):
        self.assertEqual(cli("help", "--man").stdout, self.page)
        self.assertTrue(self.page.startswith(".\\\" syncspy(1)"))

    @unittest.skipUnless(shutil.which("mandoc"), "mandoc is not installed (scripts/deps.sh installs it)")
    def test_mandoc_lint(self):
        p = subprocess.run(["mandoc", "-T", "lint", "-W", "style", os.path.join(BUILD, "syncspy.1")],
                           capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))

    @unittest.skipUnless(shutil.which("groff"), "groff is not installed (scripts/deps.sh installs it)")
    def test_groff_renders_every_command_and_option(self):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", os.path.join(BUILD, "syncspy.1")],
                           capture_output=True, text=True, env=dict(os.environ, GROFF_NO_SGR="1"))
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        text = re.sub(r".\x08", "", p.stdout).replace("\u2010", "-").replace("\u2212", "-")
        text = re.sub(r"-\n\s+", "-", text)
        for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "ENVIRONMENT"):
            self.assertRegex(text, rf"\n{heading}\n")
        for cmd in COMMANDS:
            with self.subTest(cmd=cmd):
                self.assertRegex(text, rf"\n   {cmd}\n")
                self.assertIn(f"syncspy {cmd} ", text)
                for opt in options_of(cli(cmd, "--help").stdout):
                    self.assertIn(opt, text)


if __name__ == "__main__":
    unittest.main()
