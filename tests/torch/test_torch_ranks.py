"""Real PyTorch over the simulated device: a job of two "nodes" (issue 28). torchrun runs twice
on 127.0.0.1 (--nnodes 2, --node-rank 0 and 1, 2 workers each), each in a UTS namespace of its
own with its own host name (unshare --uts), the agent preloaded into the launchers and their
workers; the workers train a DistributedDataParallel model over gloo with CUDA tensors on the
simulated device (gloo's all-reduce of CUDA tensors runs there: it copies through the host).
Every worker gets rank<R>-<host>-pid<P>/ with its rank, local rank, world size, node, host and
torchrun's run id; the launchers print nothing of syncspy's; the merged report names both hosts
and counts each rank's loss.item()."""
import os
import re
import socket
import subprocess
import tempfile
import unittest

import harness
import util

PROG = harness.prog("ddp_gloo.py")
STEPS = 3
ITEM_LINE = next(i for i, t in enumerate(open(PROG), 1) if "loss.item()  # the sync" in t)
TORCHRUN = os.path.join(os.path.dirname(harness.PYTHON), "torchrun")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TorchrunTwoNodesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="syncspy-torch-ranks-")
        cls.out = os.path.join(cls.tmp.name, "out")
        e = harness.torch_env({"GLOO_SOCKET_IFNAME": "lo", "SYNCSPY_REPORT": "off"})
        lib = e.pop("LD_LIBRARY_PATH")
        e, _ = util.agent_env({**e, "SYNCSPY_OUT": cls.out})
        e["LD_LIBRARY_PATH"] = lib
        port = free_port()
        cls.nodes = []
        for n in (0, 1):
            argv = [TORCHRUN, "--nnodes", "2", "--nproc-per-node", "2", "--node-rank", str(n),
                    "--master-addr", "127.0.0.1", "--master-port", str(port), "--rdzv-id", "job77",
                    PROG, "--steps", str(STEPS)]
            cls.nodes.append(subprocess.Popen(["unshare", "--uts", "sh", "-c", f'hostname node{n} && exec "$@"', "sh",
                                               *argv], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True))
        cls.results = [(p.wait(timeout=480), *p.communicate()) for p in cls.nodes]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_both_nodes_ran_and_launchers_are_silent(self):
        lines = []
        for rc, out, err in self.results:
            self.assertEqual(rc, 0, err[-3000:])
            self.assertNotIn("syncspy", out + err)
            lines += out.splitlines()
        self.assertEqual(sorted(lines), [f"rank {r} of 4: {STEPS} steps (local rank {r % 2})" for r in range(4)])

    def test_each_worker_named_by_its_rank_and_node(self):
        names = sorted(os.listdir(self.out))
        self.assertEqual(len(names), 4, names)  # the workers; the launchers made no CUDA call
        docs = harness.util.process_summaries(self.out)
        for r, (name, d) in enumerate(sorted(zip(names, docs), key=lambda x: x[1]["rank"])):
            host = f"node{r // 2}"
            self.assertRegex(name, rf"^rank{r}-{host}-pid\d+$")
            self.assertEqual((d["rank"], d["local_rank"], d["world_size"], d["node"], d["host"], d["job_id"],
                              d["launcher"]), (r, r % 2, 4, r // 2, host, "job77", "torchrun"))
            self.assertEqual(util.count_at(d, PROG, ITEM_LINE), STEPS)

    def test_merged_report_per_rank(self):
        rep = subprocess.run([util.CLI, "report", self.out], capture_output=True, text=True, timeout=120)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("hotspots of all 4 processes", rep.stdout)
        self.assertIn("  per rank: 4 processes on 2 hosts, job job77", rep.stdout)
        self.assertEqual(len(re.findall(r"(?m)^syncspy: rank [0-3] pid \d+ \(node[01]\): ", rep.stdout)), 4)
        g = harness.group_at(rep.stdout, "ddp_gloo.py", ITEM_LINE)
        self.assertIsNotNone(g, rep.stdout)
        self.assertIn("in all 4 processes", "\n".join(g["lines"]))


if __name__ == "__main__":
    unittest.main()
