"""Public training scripts, unmodified (tests/public/public.py: pinned commits of pytorch/examples'
word_language_model, dcgan, mnist_forward_forward, vae, mnist_rnn and siamese_network,
karpathy/nanoGPT's train.py, karpathy/minGPT's adder and chargpt, and huggingface/
pytorch-image-models' train.py with its timm, extracted from the fetched snapshots under
build/public/ at test time), on real torch over the simulated device. Each runs
three times in a fresh copy of its tree: plain, under the agent, and under torch's own sync detector
(sync_debug_oracle.py: torch.cuda.set_sync_debug_mode("warn"), each warning placed at the
innermost frame of the script's own code), the oracle nobody here wrote.

DCGAN steps two optimizers an iteration (each training step holds both); forward-forward one
optimizer per layer, one layer after the other (each step() a step).

What a user would see, asserted: with the agent the script's exit status, stdout, stderr (the
report goes to a file) and the files it writes are those of the plain run (wall-clock times
masked); every line torch warns at is a line of syncspy's report, with exactly as many
cudaStreamSynchronize as torch's warnings there, named by the operator expected at that line
(and that operator's hint, not the generic one); every sync beyond the oracle's is a wait
torch's mode does not watch (a copy from or to pageable memory, cudaFree, a device or event
synchronize), none a stream synchronize; the steps are the optimizer's; the per-step figure of
the training loop's own syncs is the one the loop makes.

Needs the snapshots (the session's fetch tool: github:pytorch/examples, github:karpathy/minGPT,
github:karpathy/nanoGPT, github:huggingface/pytorch-image-models) and the torch and vision venvs;
`make test-public` runs it. About 4 minutes."""
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "torch"))
import harness  # noqa: E402
import public  # noqa: E402

ORACLE = os.path.join(HERE, "sync_debug_oracle.py")
PYTHONS = {"torch": harness.PYTHON,
           "vision": os.environ.get("TORCH_VISION_PYTHON")
           or os.path.join(harness.BUILD, "vision-venv", "bin", "python")}
# the waits torch's sync-debug mode does not watch (tests/torch/test_op_hints.py's SILENT_WAITS)
SILENT_WAITS = {"cudaMemcpyAsync", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaFree"}
GENERIC_HINT = "synchronizes (the wait is in"  # output/hints.c's words for an operator it lacks

# Per script: the operator syncspy must name at each line torch warns at (file relative to the
# tree, line of the pinned commit), the steps it must count, and the training loop's own lines
# with the syncs per training step the report must show for them.
EXPECT = {
    "word_language_model": {
        "ops": {("word_language_model/main.py", 92): "Tensor.to",          # batchify's .to(device)
                ("word_language_model/main.py", 107): "Module.to",         # model.to(device)
                ("word_language_model/main.py", 159): "Tensor.item",       # evaluate's .item()
                ("word_language_model/main.py", 196): "Tensor.item",       # total_loss += loss.item()
                ("word_language_model/main.py", 237): "torch.save",       # the best model saved
                ("word_language_model/main.py", 274): "torch.load",       # and loaded back
                ("word_language_model/model.py", 50): "cuDNN RNN dropout state"},  # the first LSTM forward
        "marks": 86,  # 2 epochs of 43 batches, each an AdamW step
        "per_step": {("word_language_model/main.py", 196): "1.00"},
    },
    "dcgan": {
        "ops": {("dcgan/main.py", 162): "Module.to",                       # netG.to(device)
                ("dcgan/main.py", 203): "Module.to",                       # netD.to(device)
                ("dcgan/main.py", 229): "Tensor.to",                       # the batch, pageable
                ("dcgan/main.py", 237): "Tensor.item",                     # D_x
                ("dcgan/main.py", 246): "Tensor.item",                     # D_G_z1
                ("dcgan/main.py", 258): "Tensor.item",                     # D_G_z2
                ("dcgan/main.py", 263): "Tensor.item",                     # errD.item(), errG.item()
                ("dcgan/main.py", 265): "torchvision.utils.save_image",    # real samples
                ("dcgan/main.py", 269): "torchvision.utils.save_image",    # fake samples
                ("dcgan/main.py", 276): "torch.save",                      # netG's state
                ("dcgan/main.py", 277): "torch.save"},                     # netD's state
        "marks": 16,  # 1000 fake images in batches of 64, each iteration D's step then G's
        "per_step": {("dcgan/main.py", 263): "2.00", ("dcgan/main.py", 246): "1.00"},
    },
    "forward_forward": {
        "ops": {("mnist_forward_forward/main.py", 18): "Tensor.item",     # y_samp.item() per sample
                ("mnist_forward_forward/main.py", 28): "x[list index]",   # x_[range(n), y] = x.max()
                ("mnist_forward_forward/main.py", 38): "Module.to",       # Layer(...).to(device)
                ("mnist_forward_forward/main.py", 84): "Tensor.item",     # loss.item() every 5 steps
                ("mnist_forward_forward/main.py", 164): "Tensor.to",      # the batch
                ("mnist_forward_forward/main.py", 169): "Tensor.item",    # the train error
                ("mnist_forward_forward/main.py", 171): "Tensor.to",      # the test batch
                ("mnist_forward_forward/main.py", 174): "Tensor.item"},   # the test error
        # 2 layers of 20 steps each, each layer's own Adam (both made with the net), one after
        # the other: each step() a step
        "marks": 40,
        "per_step": {("mnist_forward_forward/main.py", 84): "%.2f" % (8 / 39)},
    },
    "nanogpt": {
        "ops": {("train.py", 193): "Module.to",                            # model.to(device)
                ("train.py", 225): "Tensor.item",                          # estimate_loss
                ("train.py", 323): "Tensor.item"},                         # lossf = loss.item()
        "marks": 61,  # iterations 0 to 60, each a fused AdamW step through the GradScaler
        "per_step": {("train.py", 323): "0.10"},
    },
    "mingpt_adder": {
        "ops": {("mingpt/trainer.py", 43): "Module.to",                    # self.model.to(device)
                ("mingpt/trainer.py", 89): "Tensor.to",                    # the batch, pinned
                ("projects/adder/adder.py", 150): "Tensor.to",             # eval's factors .to(device)
                ("projects/adder/adder.py", 153): "Tensor.to",             # eval batches .to(device)
                ("projects/adder/adder.py", 167): "Tensor.cpu",            # (d3i_pred == d3i_gt).cpu()
                ("projects/adder/adder.py", 172): "Tensor.__int__",        # "%d" % d1i[i]
                ("projects/adder/adder.py", 185): "Tensor.item"},          # trainer.loss.item() every 10
        "marks": 501,
        "per_step": {("mingpt/trainer.py", 89): "2.00", ("projects/adder/adder.py", 185): "0.10"},
    },
    "vae": {
        "ops": {("vae/main.py", 75): "Module.to",                          # VAE().to(device)
                ("vae/main.py", 96): "Tensor.to",                          # the batch, pinned
                ("vae/main.py", 101): "Tensor.item",                       # train_loss += .item()
                ("vae/main.py", 107): "Tensor.item",                       # loss.item() every 5
                ("vae/main.py", 118): "Tensor.to",                         # the test batch
                ("vae/main.py", 120): "Tensor.item",                       # test_loss += ....item()
                ("vae/main.py", 125): "Tensor.cpu",                        # comparison.cpu()
                ("vae/main.py", 136): "Tensor.to",                         # randn(64, 20).to()
                ("vae/main.py", 137): "Tensor.cpu"},                       # decode(sample).cpu()
        "marks": 13,  # 200 images in batches of 16, each an Adam step
        "per_step": {("vae/main.py", 101): "1.00", ("vae/main.py", 107): "0.25"},
    },
    "mnist_rnn": {
        "ops": {("mnist_rnn/main.py", 46): "Tensor.to",                    # data and target, pinned
                ("mnist_rnn/main.py", 55): "Tensor.item",                  # loss.item() every 5
                ("mnist_rnn/main.py", 66): "Tensor.to",                    # the test batch
                ("mnist_rnn/main.py", 68): "Tensor.item",                  # test_loss += ....item()
                ("mnist_rnn/main.py", 70): "Tensor.item",                  # correct += ....item()
                ("mnist_rnn/main.py", 128): "Module.to",                   # Net().to(device)
                ("mnist_rnn/main.py", 138): "torch.save"},                 # the model's state
        "marks": 13,  # 200 images in batches of 16, each an Adadelta step
        "per_step": {("mnist_rnn/main.py", 46): "2.00", ("mnist_rnn/main.py", 55): "0.25"},
    },
    "siamese_network": {
        "ops": {("siamese_network/main.py", 197): "Tensor.to",             # both images and targets
                ("siamese_network/main.py", 206): "Tensor.item",           # loss.item() every 5
                ("siamese_network/main.py", 221): "Tensor.to",             # the test batch
                ("siamese_network/main.py", 223): "Tensor.item",           # test_loss += ....item()
                ("siamese_network/main.py", 225): "Tensor.item",           # correct += ....item()
                ("siamese_network/main.py", 288): "Module.to",             # SiameseNetwork().to()
                ("siamese_network/main.py", 298): "torch.save"},           # the model's state
        "marks": 13,  # 200 pairs in batches of 16, each an Adadelta step
        "per_step": {("siamese_network/main.py", 197): "3.00",
                     ("siamese_network/main.py", 206): "0.25"},
    },
    "mingpt_chargpt": {
        "ops": {("mingpt/trainer.py", 43): "Module.to",                    # self.model.to(device)
                ("mingpt/trainer.py", 89): "Tensor.to",                    # the batch, pinned
                # generate's v[:, [-1]], per character (its boolean-mask fill does not wait)
                ("mingpt/model.py", 299): "x[list index]",
                ("projects/chargpt/chargpt.py", 111): "Tensor.item",       # loss.item() every 10
                ("projects/chargpt/chargpt.py", 119): "Tensor.to",         # the context .to(device)
                ("projects/chargpt/chargpt.py", 121): "Tensor.__int__",    # int(i) per character
                ("projects/chargpt/chargpt.py", 126): "torch.save"},       # at iteration 0
        "marks": 30,
        "per_step": {("mingpt/trainer.py", 89): "2.00",
                     ("projects/chargpt/chargpt.py", 111): "0.10"},
    },
    "timm_train": {
        # the timm package of the script's commit is in its tree: its lines are the script's
        "ops": {("timm/data/loader.py", 107): "torch.tensor(host data, device)",  # the mean
                ("timm/data/loader.py", 109): "torch.tensor(host data, device)",  # and std
                ("timm/utils/checkpoint_saver.py", 110): "torch.save",   # after each epoch
                ("timm/utils/cuda.py", 71): "GradScaler.step",           # NativeScaler's step
                ("timm/utils/cuda.py", 75): "GradScaler.state_dict",     # in each checkpoint
                ("train.py", 601): "Module.to",                          # model.to(device)
                ("train.py", 1384): "Tensor.item",                       # loss.item() every batch
                ("train.py", 1511): "Tensor.item",                       # validate's loss,
                ("train.py", 1512): "Tensor.item",                       # top-1
                ("train.py", 1513): "Tensor.item"},                      # and top-5, per batch
        "marks": 16,  # 2 epochs of 8 batches, each an SGD step through the NativeScaler
        "per_step": {("train.py", 1384): "1.00", ("timm/utils/cuda.py", 71): "1.00"},
    },
}


def masked(text, patterns):
    for p in patterns:
        text = re.sub(p, "<time>", text)
    return text


def user_line(site, root):
    """(path relative to root, line) of the site's innermost frame in the script's own code,
    among its own frames (a backward sync's forward section is not its own), or None."""
    own = harness.sections(site)[0]
    for f in own:
        if f["python"] and f["file"].startswith(root + os.sep):
            return os.path.relpath(f["file"], root), f["line"]
    return None


class Script:
    """The three runs of one script, each in its own copy of the tree."""

    def __init__(self, name):
        self.name = name
        self.spec = public.SCRIPTS[name]
        self.tree = public.extract(name)
        self.work = tempfile.mkdtemp(prefix="syncspy-public-")
        self.dirs, self.runs = {}, {}
        for arm in ("plain", "agent", "oracle"):
            d = os.path.join(self.work, arm)
            shutil.copytree(self.tree, d, symlinks=True)
            self.dirs[arm] = d
            self.runs[arm] = self.run(arm, d)
        with open(os.path.join(self.work, "oracle.json")) as f:
            self.oracle = json.load(f)
        self.report = ""
        if os.path.exists(os.path.join(self.work, "report.txt")):
            with open(os.path.join(self.work, "report.txt")) as f:
                self.report = f.read()

    def run(self, arm, d):
        # every line in the report's table (which rows make the default 10 depends on timing)
        env = {"SYNCSPY_REPORT": os.path.join(self.work, "report.txt"),
               "SYNCSPY_TOP": "100"} if arm == "agent" else {}
        if self.spec["pythonpath"]:
            env["PYTHONPATH"] = os.path.join(d, self.spec["pythonpath"])
        cwd = os.path.join(d, self.spec["cwd"])
        script, args = self.spec["argv"][0], self.spec["argv"][1:]
        if arm == "oracle":
            args = [os.path.join(self.work, "oracle.json"), d, os.path.join(cwd, script)] + args
            script = ORACLE
        else:
            script = os.path.join(cwd, script)
        return harness.run(script, *args, env=env, preload=arm == "agent", cwd=cwd, timeout=600,
                           python=PYTHONS[self.spec["venv"]])

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def root(self, arm="agent"):
        return os.path.realpath(self.dirs[arm])

    def stream_syncs(self):
        """{(file, line): cudaStreamSynchronize count} of the agent's run, by user line."""
        out = {}
        for s in self.runs["agent"].summary()["sites"]:
            if s["api"] == "cudaStreamSynchronize":
                at = user_line(s, self.root())
                out[at] = out.get(at, 0) + s["count"]
        return out

    def warned(self):
        """{(file, line): count} of torch's warnings, the oracle run's tree made relative."""
        root = self.root("oracle")
        return {(os.path.relpath(w["file"], root), w["line"]): w["count"]
                for w in self.oracle["warnings"]}


class PublicScripts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # PUBLIC_ONLY="a b": those scripts only (a developer's run; CI runs every one)
        only = os.environ.get("PUBLIC_ONLY", "").split()
        unknown = set(only) - set(public.SCRIPTS)
        if unknown:
            raise AssertionError("PUBLIC_ONLY names no script: %s" % " ".join(sorted(unknown)))
        cls.scripts = {name: Script(name) for name in only or public.SCRIPTS}

    @classmethod
    def tearDownClass(cls):
        for s in cls.scripts.values():
            s.close()

    def each(self):
        for name, s in self.scripts.items():
            with self.subTest(script=name):
                for arm, r in s.runs.items():
                    self.assertEqual(r.returncode, 0, (arm, r.stderr[-3000:]))
                yield name, s

    def test_same_output_status_and_files_with_the_agent(self):
        for name, s in self.each():
            plain, agent = s.runs["plain"], s.runs["agent"]
            times = s.spec["times"]
            # each run's own copy of the tree is the one path that may differ (minGPT writes
            # sys.argv into args.txt)
            here = {arm: os.fsencode(s.dirs[arm]) for arm in ("plain", "agent")}
            for stream in ("stdout", "stderr"):
                got = masked(getattr(agent, stream).replace(s.dirs["agent"], "<tree>"), times)
                want = masked(getattr(plain, stream).replace(s.dirs["plain"], "<tree>"), times)
                self.assertEqual(got, want, stream)
            self.assertGreater(len(plain.stdout), 0)
            for rel in s.spec["files"]:
                with self.subTest(file=rel):
                    cwd = s.spec["cwd"]
                    with open(os.path.join(s.dirs["plain"], cwd, rel), "rb") as f:
                        want = f.read().replace(here["plain"], b"<tree>")
                    with open(os.path.join(s.dirs["agent"], cwd, rel), "rb") as f:
                        got = f.read().replace(here["agent"], b"<tree>")
                    self.assertGreater(len(want), 0)
                    self.assertEqual(got, want)

    def test_the_oracle_saw_what_the_script_does(self):
        for name, s in self.each():
            # every warning placed in the script's own code, at the lines this test expects
            self.assertEqual(s.oracle["outside"], 0, s.oracle)
            self.assertEqual(sorted(s.warned()), sorted(EXPECT[name]["ops"]), s.oracle)

    def test_every_warned_line_has_as_many_stream_syncs(self):
        for name, s in self.each():
            got = s.stream_syncs()
            for at, count in s.warned().items():
                with self.subTest(line=at):
                    self.assertEqual(got.get(at, 0), count, got)
            # and no stream synchronize the oracle did not warn of
            self.assertEqual(sum(got.values()), s.oracle["total"], got)

    def test_beyond_the_oracle_only_waits_it_does_not_watch(self):
        for name, s in self.each():
            warned = s.warned()
            for site in s.runs["agent"].summary()["sites"]:
                at = user_line(site, s.root())
                if site["api"] == "cudaStreamSynchronize":
                    self.assertIn(at, warned, harness.frames_text(site))
                else:
                    self.assertIn(site["api"], SILENT_WAITS, harness.frames_text(site))
                    # at a line of the script's, or in a backward pass (cuDNN's benchmark)
                    in_backward = site in harness.backward_sites(s.runs["agent"].summary())
                    self.assertTrue(at is not None or in_backward, harness.frames_text(site))

    def test_each_warned_line_its_op_and_hint(self):
        for name, s in self.each():
            summary = s.runs["agent"].summary()
            for at, op in EXPECT[name]["ops"].items():
                with self.subTest(line=at):
                    sites = [x for x in summary["sites"] if user_line(x, s.root()) == at]
                    self.assertTrue(sites, at)
                    for x in sites:
                        self.assertEqual(x["op"], op, harness.frames_text(x))
                        self.assertTrue(x["hint"] and GENERIC_HINT not in x["hint"], x["hint"])
                    # in the report text too, when the line syncs in the training steps (a
                    # line of start-up or after the last step only is on those lines instead)
                    g = harness.group_at(s.report, os.path.basename(at[0]), at[1])
                    in_steps = any(x["count"] > x["startup_count"] + x["partial_count"] for x in sites)
                    self.assertEqual(g is not None, in_steps, s.report[-3000:])
                    if g is not None:
                        self.assertTrue(g["at"].endswith("op: " + op), g["at"])
                        self.assertTrue(g["hint"].startswith(sites[0]["hint"]), g["hint"])

    def test_steps_and_the_loops_rates(self):
        for name, s in self.each():
            marks, counted = harness.util.report_steps(s.report)
            self.assertEqual(marks, EXPECT[name]["marks"], s.report[:600])
            self.assertEqual(counted, marks - 1)
            for (rel, line), rate in EXPECT[name]["per_step"].items():
                with self.subTest(line=(rel, line)):
                    g = harness.group_at(s.report, os.path.basename(rel), line)
                    self.assertIsNotNone(g, s.report[-3000:])
                    self.assertEqual(g["head"].split()[4], rate, g["head"])  # "1  508 us  9.2%  1.00 ..."


if __name__ == "__main__":
    unittest.main()
