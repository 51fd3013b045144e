"""Training loops with several optimizers on real torch (tests/torch/progs/optimizers.py): a GAN's
discriminator and generator, three optimizers in turn, a WGAN-style critic stepping twice per
generator step, one optimizer made anew every 5 iterations (its predecessor freed, or kept), A
every iteration with B every 4th, StyleGAN2's lazy regularization (D twice every 4th iteration),
forward-forward training (one layer's optimizer after another), nine threads with an optimizer
each. A training step ends at the optimizer that closes the first one's cycle (agent/step/pyhook.c),
so the step counts are the iterations and the per-step rates those of an iteration; the
generator's forward before
the discriminator's step and its backward after it fall in one step, so the backward's sync is
attributed to its forward line. What the user sees is asserted: the report's header in the exit
report and in `syncspy report` rebuilt from trace.bin, summary.json's "optimizers", the rows'
syncs per step, and the program's own output, the same with and without the agent."""
import json
import re
import unittest

import harness
from harness import marked_lines

PROG = harness.prog("optimizers.py")
MARKS = marked_lines(PROG)
ITERS = 12


def header(text):
    """The report's first two lines (the steps), or "" when it has none."""
    m = re.search(r"^syncspy: pid \d+: .*\n.*\n", text, re.M)
    return m.group(0) if m else ""


class Case:
    def __init__(self, case):
        self.run = harness.run(PROG, case, ITERS)
        self.plain = harness.run(PROG, case, ITERS, preload=False)
        self.summary = self.run.summary()
        self.rebuilt = harness.cli("report", self.run.process_dirs()[0]).stdout


class SeveralOptimizers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cases = {c: Case(c) for c in ("gan", "three", "critic", "renew", "renew_kept",
                                          "every4", "lazy_reg", "sequential", "threads")}

    def each(self):
        for name, c in self.cases.items():
            with self.subTest(case=name):
                self.assertEqual(c.run.returncode, 0, c.run.stderr[-3000:])
                yield name, c

    def test_program_output_unchanged(self):
        for name, c in self.each():
            self.assertEqual(c.plain.returncode, 0, c.plain.stderr[-2000:])
            self.assertEqual(c.run.stdout, c.plain.stdout)
            self.assertEqual(json.loads(c.run.stdout)["iters"], ITERS)

    def test_a_step_is_an_iteration(self):
        every = "(%d optimizers step in each: a step ends at the last one's step())"
        some = "(up to %d optimizers step in one: a step ends at each step() of the first one)"
        want = {  # (marks, the header's note on optimizers or None, "optimizers", "optimizers_max")
            "gan": (ITERS, every % 2, 2, 2),
            "three": (ITERS, every % 3, 3, 3),
            # the critic steps first, twice per generator step: it is the loop the steps follow
            # (as A's below, beside B every 4th), its steps with and without the generator's
            "critic": (2 * ITERS, some % 2, 1, 2),
            # a new optimizer whose predecessor is gone starts over at its first step
            "renew": (ITERS, None, 1, 1),
            # one whose predecessor lives on, at its second step in a row: its first one is a
            # step's end too (a cut kept at it)
            "renew_kept": (ITERS, None, 1, 1),
            "every4": (ITERS, some % 2, 1, 2),
            # D's second step (every 4th iteration) is not a cycle of its own
            "lazy_reg": (ITERS, every % 2, 2, 2),
            "sequential": (ITERS, None, 1, 1),
            # the other threads' optimizers are loops of their own: the first one's thread's
            "threads": (ITERS, None, 1, 1),
        }
        for name, c in self.each():
            marks, note, optimizers, most = want[name]
            unit = "training steps" if note else "optimizer steps"
            first = header(c.run.stderr).splitlines()[0]
            self.assertRegex(first, r": %d %s\b" % (marks, unit), first)
            if note:
                self.assertIn(note, first)
            else:
                self.assertNotIn("optimizers step in", first)
            self.assertEqual(harness.util.report_steps(c.run.stderr), (marks, marks - 1))
            self.assertEqual((c.summary["optimizers"], c.summary["optimizers_max"]),
                             (optimizers, most))
            self.assertEqual(c.summary["step_source"], "optimizer.step()")
            # the same from trace.bin
            self.assertEqual(header(c.rebuilt), header(c.run.stderr))

    def test_per_step_rates_are_an_iterations(self):
        # one .item() an iteration, after its last step(); the critic's: 11 .item() calls in the
        # 23 counted steps (the 12th is after the last step)
        want = {"gan": "1.00", "three": "1.00", "critic": "%.2f" % (11 / 23), "renew": "1.00",
                "renew_kept": "1.00", "every4": "1.00", "lazy_reg": "1.00", "sequential": "1.00"}
        for name, c in self.each():
            if name not in want:
                continue
            g = harness.group_at(c.run.stderr, "optimizers.py",
                                 MARKS["item_" + {"lazy_reg": "lazy"}.get(name, name.split("_")[0])])
            self.assertIsNotNone(g, c.run.stderr[-3000:])
            self.assertEqual(g["head"].split()[4], want[name], g["head"])

    def test_gan_backward_attributed_across_the_discriminators_step(self):
        c = self.cases["gan"]
        line = MARKS["g_forward"]
        forward = harness.group_at(c.run.stderr, "optimizers.py", line)
        backward = harness.group_at(c.run.stderr, "optimizers.py", line, backward=True)
        self.assertIsNotNone(backward, c.run.stderr[-3000:])
        self.assertEqual(forward["head"].split()[4], "1.00", forward["head"])
        # start-up ends at D's first step, after G's first forward and before its backward: the
        # first iteration's backward sync, named now (issue 35 item 5), falls in the first
        # counted step, so the 11 counted steps hold 12 of them (the step rule's, agent/step/pyhook.c)
        self.assertEqual(backward["head"].split()[4], "%.2f" % (ITERS / (ITERS - 1)), backward["head"])
        self.assertTrue(backward["at"].endswith("op: backward of x[bool_mask]"), backward["at"])
        # every iteration's, the first one's too, whose node was made in start-up, before the
        # first step (issue 35 item 5: start-up's node creation is watched as well)
        attributed = [s for s in harness.backward_sites(c.summary, "IndexBackward0")
                      if harness.sections(s)[1] == "IndexBackward0"]
        self.assertEqual(sum(s["count"] for s in attributed), ITERS)
        unseen = [s for s in c.summary["sites"] if s.get("unseen_cause")]
        self.assertEqual(sum(s["count"] for s in unseen), 0, [s.get("unseen_cause") for s in unseen])


if __name__ == "__main__":
    unittest.main()
