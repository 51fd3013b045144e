"""tests/e2e/test_ranks.py: jobs larger than one process (issue 28). Each process's place in its
job from the launchers' variables (Slurm's, a real Open MPI mpirun, RANK alone, bad values: one
warning, ignored; the launcher itself silent), folders rank<R>-<host>-pid<P> with the host of each
"node" (its own UTS namespace), colliding pids of pid namespaces kept apart on one shared folder,
the identity in summary.json and trace.bin (also a trace.bin of format 1.2, without it), and the
per-rank section of `syncspy report ROOT`, `check` naming the ranks over budget, `diff` of merged
runs. Real torchrun over two "nodes": tests/torch/test_torch_ranks.py."""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import unittest

import util
from test_check_cli import frame, process, site
from test_cli import write

HOST = util.folder_host()
SLURM = {"SLURM_JOB_ID": "4242", "SLURM_NTASKS": "2", "SLURM_NODEID": "0"}


def load(path):
    with open(path, "rb" if path.endswith(".bin") else "r") as f:
        return f.read() if path.endswith(".bin") else json.load(f)


def cli(*args):
    p = subprocess.run([util.CLI, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode >= 0, f"syncspy {args} died of signal {-p.returncode}: {p.stderr}"
    return p


def folder_pattern(rank, host):
    return re.compile(rf"rank{rank}-{re.escape(host)}-pid\d+")


class LauncherTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="syncspy-ranks-")

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def basic(self, env, argv_head=()):
        e = {"SYNCSPY_OUT": self.root, "SYNCSPY_REPORT": "off", **env}
        return util.run([*argv_head, util.prog("basic")], env=e)

    def docs(self):
        return {d: load(os.path.join(self.root, d, "summary.json")) for d in sorted(os.listdir(self.root))}

    def test_slurm_variables_name_rank_node_job(self):
        for r in (0, 1):
            p = self.basic({**SLURM, "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r)})
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertNotIn("syncspy:", p.stderr)  # nothing to warn about
        docs = self.docs()
        self.assertEqual(len(docs), 2, docs.keys())
        for r, (name, d) in enumerate(docs.items()):
            self.assertRegex(name, folder_pattern(r, HOST))
            self.assertEqual((d["rank"], d["local_rank"], d["world_size"], d["node"], d["host"], d["job_id"],
                              d["launcher"]), (r, r, 2, 0, socket.gethostname(), "4242", "slurm"))
        rep = cli("report", self.root)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn(f"syncspy: rank 0 pid {docs[sorted(docs)[0]]['pid']} ({socket.gethostname()}):", rep.stdout)
        self.assertIn("  per rank: 2 processes on 1 host, job 4242", rep.stdout)
        self.assertRegex(rep.stdout, r"syncs/step\s+min 5\.00 \(rank 0 on .*\)  median 5\.00  max 5\.00")
        self.assertIn("lines on some ranks only: none", rep.stdout)
        chk = cli("check", self.root, "--max-syncs-per-step", "4")
        self.assertEqual(chk.returncode, 1, chk.stdout)
        self.assertIn(f"syncspy check: 2 of 2 processes over budget (--max-syncs-per-step 4): rank 0 on "
                      f"{socket.gethostname()}, rank 1 on {socket.gethostname()}\n", chk.stdout)

    def test_trace_carries_the_identity_and_old_traces_still_read(self):
        p = self.basic({**SLURM, "SLURM_PROCID": "1", "SLURM_LOCALID": "1", "SLURM_NODEID": "5"})
        self.assertEqual(p.returncode, 3, p.stderr)
        [name] = os.listdir(self.root)
        folder = os.path.join(self.root, name)
        os.unlink(os.path.join(folder, "summary.json"))  # as after kill -9: the trace alone
        trace = os.path.join(folder, "trace.bin")
        data = load(trace)
        major, minor, header_bytes, features = struct.unpack_from("<HHIQ", data, 8)
        # format 1.7 (1.3 brought the identity part, 1.4 the bound's records and STEP's
        # attributed, 1.5 STEP's optimizers, 1.6 FRAME_NAME, 1.7 SITE_TOTALS' pinned)
        self.assertEqual((major, minor, header_bytes, features & 8), (1, 7, 288, 8))
        local, world, node = struct.unpack_from("<iii", data, 112)
        self.assertEqual((local, world, node), (1, 2, 5))
        self.assertEqual(data[128:200].rstrip(b"\0").decode(), socket.gethostname())
        self.assertEqual(data[200:264].rstrip(b"\0").decode(), "4242")
        rep = cli("report", folder)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertRegex(rep.stdout, rf"syncspy: rank 1 pid \d+ \({re.escape(socket.gethostname())}\):")
        # the same file as format 1.2 wrote it: a 112-byte header, no identity part
        old = bytearray(data[:112]) + data[288:]
        struct.pack_into("<HHIQ", old, 8, 1, 2, 112, features & ~8)
        with open(trace, "wb") as f:
            f.write(old)
        rep2 = cli("report", folder)
        self.assertEqual(rep2.returncode, 0, rep2.stderr)
        self.assertRegex(rep2.stdout, r"syncspy: rank 1 pid \d+: ")
        self.assertEqual(rep.stdout.split("\n", 1)[1], rep2.stdout.split("\n", 1)[1])

    def test_real_mpirun(self):
        mpirun = shutil.which("mpirun")
        self.assertIsNotNone(mpirun, "mpirun (Debian's openmpi-bin, scripts/deps.sh installs it)")
        e, _ = util.agent_env({"SYNCSPY_OUT": self.root, "SYNCSPY_REPORT": "off"})
        pass_on = ["-x", "LD_PRELOAD", "-x", "LD_LIBRARY_PATH", "-x", "SYNCSPY_OUT", "-x", "SYNCSPY_REPORT"]
        # basic exits 3, and mpirun ends the job at a rank's non-zero exit: each rank's shell
        # (under the agent too, silent: it makes no CUDA call) waits for it and exits 0
        p = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3", *pass_on, "sh", "-c",
                            '"$0"; test $? = 3', util.prog("basic")], env=e, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("syncspy", p.stdout + p.stderr)  # mpirun itself (and its daemon) silent
        docs = self.docs()
        self.assertEqual(len(docs), 3, p.stderr)
        jobs = set()
        for r, (name, d) in enumerate(docs.items()):
            self.assertRegex(name, folder_pattern(r, HOST))
            self.assertEqual((d["rank"], d["local_rank"], d["world_size"], d["launcher"]), (r, r, 3, "openmpi"))
            jobs.add(d["job_id"])
        self.assertEqual(len(jobs), 1)
        self.assertIsNotNone(jobs.pop())  # PMIX_NAMESPACE
        rep = cli("report", self.root)
        self.assertIn("  per rank: 3 processes on 1 host, job ", rep.stdout)

    def test_bad_value_is_one_warning_and_ignored(self):
        p = self.basic({"RANK": "abc", "SLURM_JOB_ID": "x"})
        self.assertEqual(p.returncode, 3)
        lines = [x for x in p.stderr.splitlines() if x.startswith("syncspy:")]
        self.assertEqual(lines, ["syncspy: RANK='abc' is not an integer in 0..16777215; using none (ignored)"])
        [name] = os.listdir(self.root)
        self.assertRegex(name, r"^pid\d+$")
        # the same values in a process that never touches CUDA (a launcher): silent, no folder
        shutil.rmtree(self.root)
        e, _ = util.agent_env({"SYNCSPY_OUT": self.root, "RANK": "abc", "WORLD_SIZE": "-3"})
        q = subprocess.run(["python3", "-c", "print('launched')"], env=e, capture_output=True, text=True)
        self.assertEqual((q.returncode, q.stdout, q.stderr), (0, "launched\n", ""))
        self.assertFalse(os.path.exists(self.root))

    def test_each_node_its_own_host_name(self):
        for r, host in ((0, "node-a"), (1, "node-b.cluster")):
            p = self.basic({"RANK": str(r), "WORLD_SIZE": "2"},
                           argv_head=("unshare", "--uts", "sh", "-c", f"hostname {host} && exec \"$0\""))
            self.assertEqual(p.returncode, 3, p.stderr)
        names = sorted(os.listdir(self.root))
        self.assertRegex(names[0], folder_pattern(0, "node-a"))
        self.assertRegex(names[1], folder_pattern(1, "node-b.cluster"))
        rep = cli("report", self.root)
        self.assertIn("  per rank: 2 processes on 2 hosts", rep.stdout)
        self.assertIn("(rank 1 on node-b.cluster)", rep.stdout)

    def test_check_json_names_each_process_in_its_job(self):
        """Three Slurm ranks on two "nodes" (their own host names): rank 2 syncs 3 times a step,
        the others once; `check --json` carries each process's identity as summary.json does,
        and names the rank over budget with its host, as the text does."""
        for r, host, syncs in ((0, "node-a", "1"), (1, "node-a", "1"), (2, "node-b", "3")):
            env = {"SLURM_JOB_ID": "5151", "SLURM_NTASKS": "3", "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r % 2),
                   "SLURM_NODEID": str(r // 2)}
            p = util.run(["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$0" "$@"',
                          util.prog("rank_work"), "4", syncs, "1"],
                         env={"SYNCSPY_OUT": self.root, "SYNCSPY_REPORT": "off", **env})
            self.assertEqual(p.returncode, 0, p.stderr)
        docs = self.docs()
        self.assertEqual(len(docs), 3, docs.keys())
        chk = cli("check", "--json", "--max-syncs-per-step", "2", self.root)
        self.assertEqual(chk.returncode, 1, chk.stderr)
        out = json.loads(chk.stdout)
        fields = ("pid", "rank", "local_rank", "world_size", "node", "host", "job_id", "launcher")
        got = [{k: p[k] for k in fields} for p in out["processes"]]
        self.assertEqual(got, [{k: d[k] for k in fields} for d in docs.values()])
        self.assertEqual([(g["rank"], g["local_rank"], g["world_size"], g["node"], g["host"], g["job_id"])
                          for g in got], [(0, 0, 3, 0, "node-a", "5151"), (1, 1, 3, 0, "node-a", "5151"),
                                          (2, 0, 3, 1, "node-b", "5151")])
        self.assertEqual([p["ok"] for p in out["processes"]], [True, True, False])
        self.assertEqual(out["over_budget"], [{"name": "rank 2 on node-b", "pid": got[2]["pid"], "rank": 2,
                                               "host": "node-b"}])
        self.assertFalse(out["ok"])
        text = cli("check", "--max-syncs-per-step", "2", self.root).stdout
        self.assertIn(f"syncspy check: rank 2 pid {got[2]['pid']} (node-b): over budget: 3.00 syncs/step", text)
        self.assertIn(f"syncspy check: rank 0 pid {got[0]['pid']} (node-a): within budget", text)
        self.assertIn("syncspy check: 1 of 3 processes over budget (--max-syncs-per-step 2): rank 2 on node-b\n", text)
        # a process with no rank: nulls, named by its pid
        shutil.rmtree(self.root)
        p = util.run([util.prog("rank_work"), "2", "3", "1"], env={"SYNCSPY_OUT": self.root, "SYNCSPY_REPORT": "off"})
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(cli("check", "--json", "--max-syncs-per-step", "2", self.root).stdout)
        [proc] = out["processes"]
        self.assertEqual({k: proc[k] for k in fields[1:]}, {"rank": None, "local_rank": None, "world_size": None,
                                                            "node": None, "host": socket.gethostname(),
                                                            "job_id": None, "launcher": None})
        self.assertEqual(out["over_budget"], [{"name": f"pid {proc['pid']}", "pid": proc["pid"], "rank": None,
                                               "host": socket.gethostname()}])

    def test_colliding_pids_on_one_shared_folder_stay_apart(self):
        """Processes in pid namespaces of their own (containers, nodes) all run as pid 1: each
        makes a folder of its own (.2, .3, ...), every one read by the report."""
        e, _ = util.agent_env({"SYNCSPY_OUT": self.root, "SYNCSPY_REPORT": "off"})
        procs = []
        for env in [{}] * 3 + [{"RANK": "0"}] * 3:
            procs.append(subprocess.Popen(["unshare", "--pid", "--fork", util.prog("basic")], env={**e, **env},
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        for p in procs:
            _, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 3, err)
        names = sorted(os.listdir(self.root))
        self.assertEqual(names, sorted(["pid1", "pid1.2", "pid1.3", f"rank0-{HOST}-pid1",
                                        f"rank0-{HOST}-pid1.2", f"rank0-{HOST}-pid1.3"]))
        for d in names:
            doc = load(os.path.join(self.root, d, "summary.json"))
            self.assertEqual(doc["pid"], 1)
            self.assertEqual(doc["syncs"], 27)  # each folder one whole process's
        rep = cli("report", self.root)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("hotspots of all 6 processes", rep.stdout)


def rank_doc(rank, host, a_ns, extra=(), startup=True):
    train = "/job/train.py"
    sites = [site("cudaStreamSynchronize", [frame("loss", train, 10), frame("main", train, 50)], 4, a_ns),
             *extra]
    d = process(100 + rank, sites, rank=rank, startup=startup, partial=False)
    d.update({"host": host, "job_id": "77", "world_size": 5, "local_rank": rank % 2, "node": rank // 2})
    return d


class PerRankSectionTest(unittest.TestCase):
    """Five ranks of 4 training steps of 40 ms: each syncs once a step at train.py:10 for 4 ms
    (10 %), rank 3 for 20 ms (50 %: it waits most, a straggler); rank 1 also copies at
    train.py:20; rank 2 never marked a step."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="syncspy-ranks-")
        self.root = self.tmp.name
        copy = site("cudaMemcpy", [frame("fetch", "/job/train.py", 20), frame("main", "/job/train.py", 51)],
                    8, 4 * util.MS)
        for r in range(5):
            doc = rank_doc(r, f"n{r // 2}", (80 if r == 3 else 16) * util.MS, extra=[copy] if r == 1 else (),
                           startup=r != 2)
            write(os.path.join(self.root, f"rank{r}-n{r // 2}-pid{100 + r}", "summary.json"), doc)

    def tearDown(self):
        self.tmp.cleanup()

    def section(self):
        rep = cli("report", self.root)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        return rep.stdout[rep.stdout.index("  per rank:"):]

    def test_section(self):
        s = self.section()
        self.assertIn("  per rank: 5 processes on 3 hosts, job 77", s)
        self.assertIn("    no step mark (the whole run is one step): 1: rank 2 on n1\n", s)
        # rank 1: its copies (2 a step) too
        self.assertIn("    syncs/step     min 1.00 (rank 0 on n0)  median 1.00  max 3.00 (rank 1 on n0)\n", s)
        self.assertIn("max 50.0% (rank 3 on n1)", s)
        self.assertIn("median 10.0%", s)
        self.assertRegex(s, r"    waits most:    rank 3 on n1 50\.0%, ")
        self.assertIn("    stragglers:    rank 3 on n1 (blocked share 1.5x the median or more", s)
        self.assertIn("    lines on some ranks only (1):\n      cudaMemcpy at fetch  /job/train.py:20\n"
                      "        on 1 of 5: rank 1 on n0\n", s)

    def test_no_straggler_when_alike(self):
        for d in os.listdir(self.root):
            path = os.path.join(self.root, d, "summary.json")
            doc = load(path)
            doc["sites"][0]["blocked_ns"] = 16 * util.MS
            doc["sites"][0]["max_ns"] = min(doc["sites"][0]["max_ns"], 16 * util.MS)  # no contradiction
            doc["sites"] = doc["sites"][:1]
            write(path, doc)
        s = self.section()
        self.assertIn("    stragglers:    none", s)
        self.assertIn("    lines on some ranks only: none", s)

    def test_line_missing_on_few_ranks_named_by_its_absence(self):
        path = os.path.join(self.root, "rank4-n2-pid104", "summary.json")
        doc = load(path)
        doc["sites"] = []
        write(path, doc)
        s = self.section()
        self.assertIn("      cudaStreamSynchronize at loss  /job/train.py:10\n        not on 1 of 5: rank 4 on n2\n", s)

    def test_check_and_diff_of_merged_runs(self):
        chk = cli("check", self.root, "--max-blocked-share", "20")
        self.assertEqual(chk.returncode, 1, chk.stdout)
        self.assertIn("syncspy check: 1 of 5 processes over budget (--max-blocked-share 20%): rank 3 on n1\n",
                      chk.stdout)
        chk = cli("check", self.root, "--max-syncs-per-step", "0.5")
        self.assertIn("syncspy check: 5 of 5 processes over budget (--max-syncs-per-step 0.5): rank 0 on n0, "
                      "rank 1 on n0, rank 2 on n1, rank 3 on n1, rank 4 on n2\n", chk.stdout)
        other = os.path.join(self.root, "..", os.path.basename(self.root) + "-new")
        shutil.copytree(self.root, other)
        try:
            shutil.rmtree(os.path.join(other, "rank1-n0-pid101"))
            d = cli("diff", self.root, other)
            self.assertIn("(5 processes", d.stdout)
            self.assertIn("(4 processes", d.stdout)
            self.assertRegex(d.stdout, r"gone .*cudaMemcpy at fetch  /job/train.py:20")
        finally:
            shutil.rmtree(other)

    def test_many_ranks_headers_left_out(self):
        doc = rank_doc(0, "n0", 16 * util.MS)
        for r in range(5, 40):
            doc.update({"rank": r, "pid": 100 + r, "host": "n9"})
            write(os.path.join(self.root, f"rank{r}-n9-pid{100 + r}", "summary.json"), doc)
        rep = cli("report", self.root)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertNotRegex(rep.stdout, r"(?m)^syncspy: rank \d+ pid")
        self.assertIn("syncspy: 40 processes (each one's own header is left out past 16;", rep.stdout)
        self.assertIn("  per rank: 40 processes on 4 hosts, job 77", rep.stdout)


class FolderNameTest(unittest.TestCase):
    """Hosts with dashes, dots, even "-pid" in them: the folder is still read as one rank."""

    def test_names(self):
        with tempfile.TemporaryDirectory() as root:
            names = {"rank3-gpu-node-7-pid12": 3, "rank4-a-pid9-pid13.2": 4, "rank5-pid14": 5}
            for name, r in names.items():
                write(os.path.join(root, name, "summary.json"), rank_doc(r, "h", util.MS))
            write(os.path.join(root, "rank6-nopid", "summary.json"), rank_doc(6, "h", util.MS))
            rep = cli("report", root)
            self.assertIn("hotspots of all 3 processes", rep.stdout)


if __name__ == "__main__":
    unittest.main()
