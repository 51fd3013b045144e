"""Real PyTorch over the simulated device: a program that forks while threads train and sync
under the agent (issue 36 item 1): os.fork() children that throw a C++ exception through torch
(whose unwinding takes the loader's write lock, which glibc's fork does not reset), a
multiprocessing pool and DataLoader workers started with "fork" (progs/fork_threads.py). Exit
status and output are the program's own, run after run, and the training threads' syncs are
recorded."""
import unittest

import harness

PROG = harness.prog("fork_threads.py")
OUT = ("os.fork children: [10, 11, 12, 13, 14, 15]\n"
       "pool: [0, 1, 4, 9, 16, 25, 36, 49]\n"
       "loader: [[0, 1, 4, 9], [16, 25, 36, 49], [64, 81, 100, 121], [144, 169, 196, 225]]\n"
       "trainers joined\n")


class ForkWhileThreadsTrain(unittest.TestCase):
    def test_children_as_without_the_agent(self):
        plain = harness.run(PROG, preload=False, timeout=300)
        self.assertEqual((plain.returncode, plain.stdout), (0, OUT), plain.stderr[-3000:])
        for run in range(3):
            r = harness.run(PROG, timeout=300)
            self.assertEqual((r.returncode, r.stdout), (0, OUT), f"run {run}: {r.stderr[-3000:]}")
            self.assertIn("syncspy: pid", r.stderr)
            # the parent's folder (the children made no CUDA call: they write nothing)
            self.assertEqual(len(r.process_dirs()), 1, r.process_dirs())
            self.assertGreater(sum(x["count"] for x in r.summary()["sites"]), 9)


if __name__ == "__main__":
    unittest.main()
