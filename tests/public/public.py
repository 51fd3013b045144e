"""tests/public/public.py: the public training scripts syncspy is tested on, unmodified, and how
to get them: each is a pinned commit of a public repository, read from the snapshot the
session's `fetch` tool left under PUBLIC_MIRROR (default /work/.mirror/OWNER+NAME/repo, a bare git
directory) and extracted with `git archive` under BUILD/public/ at test time. None of their code
is in this repository. A missing snapshot or commit is an error that says what to fetch, never a
skip.

    python3 tests/public/public.py extract [NAME...]    # into BUILD/public/NAME/
    python3 tests/public/public.py check                # exit 1 naming each missing snapshot

Each entry: the repository and commit, the paths taken from it, the data it needs made from
what it carries (wikitext-2's train.txt is over the snapshot's 4 MiB file limit: a small corpus
is cut from its valid and test sets and given to the script's own --data flag), the folder the
script runs in, its arguments, what in its output is a wall-clock time (masked before the runs
with and without the agent are compared), the files it writes, and its venv (torch: the torch
venv; vision: the one with torchvision and timm, `make torch-vision-venv`; timm's train.py runs
the timm of its own commit, which its tree holds)."""
import array
import os
import pickle
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("BUILD") or os.path.join(ROOT, "build"))
MIRROR = os.environ.get("PUBLIC_MIRROR") or "/work/.mirror"


def _wt2_small(root):
    """A small wikitext-2 for word_language_model's --data: 600 lines of the validation set to
    train on, the next 200 to validate, 200 of the test set."""
    src = os.path.join(root, "word_language_model", "data", "wikitext-2")
    out = os.path.join(root, "data", "wt2-small")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(src, "valid.txt"), encoding="utf-8") as f:
        valid = f.readlines()
    with open(os.path.join(src, "test.txt"), encoding="utf-8") as f:
        test = f.readlines()
    for name, lines in (("train.txt", valid[:600]), ("valid.txt", valid[600:800]),
                        ("test.txt", test[:200])):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.writelines(lines)


def _chars_corpus(root):
    """nanoGPT's character-level data (data/shakespeare_char/{train,val}.bin, meta.pkl, what its
    prepare.py writes) made from the repository's own text, since prepare.py downloads tiny
    Shakespeare: uint16 character ids, 90 % to train on."""
    text = ""
    for rel in ("README.md", "model.py", "train.py", "configurator.py"):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text += f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = array.array("H", (stoi[c] for c in text))
    if sys.byteorder != "little":
        ids.byteswap()
    out = os.path.join(root, "data", "shakespeare_char")
    os.makedirs(out, exist_ok=True)
    n = len(ids) * 9 // 10
    with open(os.path.join(out, "train.bin"), "wb") as f:
        f.write(ids[:n].tobytes())
    with open(os.path.join(out, "val.bin"), "wb") as f:
        f.write(ids[n:].tobytes())
    with open(os.path.join(out, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


def _mnist_small(root, folder="mnist_forward_forward/data"):
    """MNIST as torchvision reads it (FOLDER/MNIST/raw/*-ubyte, IDX files, FOLDER relative to
    the tree: the script's datasets.MNIST root), made up, since the script downloads the real
    one: 200 training and 200 test images of 28x28 random bytes and their labels, seeded."""
    import random
    import struct
    rng = random.Random(1)
    out = os.path.join(root, folder, "MNIST", "raw")
    os.makedirs(out, exist_ok=True)
    for prefix in ("train", "t10k"):
        n = 200
        with open(os.path.join(out, prefix + "-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, 28, 28))
            f.write(bytes(rng.randrange(256) for _ in range(n * 28 * 28)))
        with open(os.path.join(out, prefix + "-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, n))
            f.write(bytes(rng.randrange(10) for _ in range(n)))


def _mnist_small_above(root):
    """_mnist_small where vae, mnist_rnn and siamese_network read it: '../data' from their own
    folder, data/ at the tree's top."""
    _mnist_small(root, "data")


def _chargpt_input(root):
    """chargpt's input.txt (it reads the file from its working folder; its readme has one
    download tiny Shakespeare), made from the repository's own text: its README and the
    mingpt package's sources."""
    text = ""
    for rel in ("README.md", "mingpt/model.py", "mingpt/trainer.py", "mingpt/utils.py"):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text += f.read()
    with open(os.path.join(root, "input.txt"), "w", encoding="utf-8") as f:
        f.write(text)


def _png(path, width, height, pixels):
    """An 8-bit RGB PNG of rows of bytes (pixels: width * height * 3 of them), written with zlib,
    since the test's own Python has no imaging library."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    rows = b"".join(b"\0" + pixels[y * width * 3:(y + 1) * width * 3] for y in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows)))
        f.write(chunk(b"IEND", b""))


def _image_folder(root):
    """A tiny image folder for timm's train.py (its folder dataset: data/train/CLASS/*.png and
    data/validation/CLASS/*.png), made up: 4 classes of 32x32 images of random bytes, seeded,
    16 an class to train on and 4 to validate."""
    import random
    rng = random.Random(1)
    for split, n in (("train", 16), ("validation", 4)):
        for c in range(4):
            out = os.path.join(root, "data", split, "class%d" % c)
            os.makedirs(out, exist_ok=True)
            for i in range(n):
                _png(os.path.join(out, "%02d.png" % i), 32, 32,
                     bytes(rng.randrange(256) for _ in range(32 * 32 * 3)))


SCRIPTS = {
    # pytorch/examples' word-level language model: an LSTM over wikitext-2 with AdamW (so
    # torch.optim's steps mark the steps), loss.item() every batch, evaluation with .item() per
    # batch after each epoch, torch.save of the best model, torch.load of it at the end
    "word_language_model": {
        "repo": "pytorch/examples",
        "commit": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "paths": ["word_language_model/main.py", "word_language_model/model.py",
                  "word_language_model/data.py", "word_language_model/data/wikitext-2/valid.txt",
                  "word_language_model/data/wikitext-2/test.txt"],
        "prepare": _wt2_small,
        "cwd": "word_language_model",
        "argv": ["main.py", "--accel", "--use-optimizer", "--epochs", "2", "--data",
                 "../data/wt2-small", "--log-interval", "20", "--save", "model.pt"],
        "pythonpath": None,
        "times": [r"ms/batch +[0-9.]+", r"time: +[0-9.]+s"],
        "files": ["model.pt"],
        "venv": "torch",
    },
    # pytorch/examples' DCGAN on torchvision's FakeData: two optimizers (the discriminator's,
    # then the generator's) each iteration, cudnn.benchmark = True, five .item() an iteration,
    # save_image of the first batch, torch.save of both models after the epoch
    "dcgan": {
        "repo": "pytorch/examples",
        "commit": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "paths": ["dcgan/main.py"],
        "prepare": None,
        "cwd": "dcgan",
        "argv": ["main.py", "--dataset", "fake", "--accel", "--manualSeed", "1", "--niter", "1",
                 "--workers", "2", "--outf", "out"],
        "pythonpath": None,
        "times": [],
        "files": ["out/netG_epoch_0.pth", "out/netD_epoch_0.pth", "out/real_samples.png",
                  "out/fake_samples_epoch_000.png"],
        "venv": "vision",
    },
    # pytorch/examples' forward-forward training on MNIST (made up: _mnist_small): each of two
    # layers has its own Adam, made with the layer, and is trained alone for --epochs steps, one
    # layer after the other; per-sample .item() in get_y_neg, a range index in overlay_y_on_x,
    # loss.item() every --log-interval steps, .item() of the error rates
    "forward_forward": {
        "repo": "pytorch/examples",
        "commit": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "paths": ["mnist_forward_forward/main.py"],
        "prepare": _mnist_small,
        "cwd": "mnist_forward_forward",
        "argv": ["main.py", "--epochs", "20", "--train_size", "100", "--test_size", "100",
                 "--log-interval", "5", "--save_model"],
        "pythonpath": None,
        "times": [],
        "files": ["mnist_ff.pt"],
        "venv": "vision",
    },
    # karpathy/nanoGPT's train.py with its shakespeare_char config, made small: a 2-layer GPT,
    # get_batch's pinned non_blocking copies, fused AdamW with torch.amp (float16: GradScaler),
    # loss.item() every 10 iterations, estimate_loss's .item() per batch every 20
    "nanogpt": {
        "repo": "karpathy/nanoGPT",
        "commit": "3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
        "paths": ["train.py", "model.py", "configurator.py", "config/train_shakespeare_char.py",
                  "README.md"],
        "prepare": _chars_corpus,
        "cwd": ".",
        "argv": ["train.py", "config/train_shakespeare_char.py", "--device=cuda", "--compile=False",
                 "--dtype=float16", "--max_iters=60", "--eval_interval=20", "--eval_iters=5",
                 "--log_interval=10", "--batch_size=8", "--block_size=64", "--n_layer=2",
                 "--n_head=2", "--n_embd=64"],
        "pythonpath": None,
        "times": [r"time [0-9.]+ms, mfu -?[0-9.]+%"],
        "files": [],
        "venv": "torch",
    },
    # karpathy/minGPT's adder project: a GPT-nano trained on 2-digit additions it generates,
    # minGPT's Trainer (DataLoader with 2 worker processes and pin_memory=True, batches moved
    # with .to(device)), loss.item() every 10 iterations, an evaluation at iterations 0 and 500
    "mingpt_adder": {
        "repo": "karpathy/minGPT",
        "commit": "37baab71b9abea1b76ab957409a1cc2fbfba8a26",
        "paths": ["mingpt", "projects/adder"],
        "prepare": None,
        "cwd": ".",
        "argv": ["projects/adder/adder.py", "--trainer.max_iters=501", "--trainer.num_workers=2"],
        "pythonpath": ".",
        "times": [r"iter_dt [0-9.]+ms"],
        "files": ["out/adder/args.txt", "out/adder/config.json"],
        "venv": "torch",
    },
    # pytorch/examples' variational autoencoder on MNIST (made up: _mnist_small_above): Adam,
    # a DataLoader with a worker and pin_memory=True, loss.item() every batch and once more
    # every --log-interval batches, the test set's loss .item() per batch, save_image of a
    # reconstruction and of 64 samples decoded after the epoch
    "vae": {
        "repo": "pytorch/examples",
        "commit": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "paths": ["vae"],
        "prepare": _mnist_small_above,
        "cwd": "vae",
        "argv": ["main.py", "--epochs", "1", "--batch-size", "16", "--log-interval", "5"],
        "pythonpath": None,
        "times": [],
        "files": ["results/reconstruction_1.png", "results/sample_1.png"],
        "venv": "vision",
    },
    # pytorch/examples' LSTM classifier on MNIST's rows (made up: _mnist_small_above): Adadelta
    # with StepLR, loss.item() every --log-interval batches, the test set's loss and correct
    # count .item() per batch, torch.save of the model
    "mnist_rnn": {
        "repo": "pytorch/examples",
        "commit": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "paths": ["mnist_rnn/main.py"],
        "prepare": _mnist_small_above,
        "cwd": "mnist_rnn",
        "argv": ["main.py", "--accel", "--epochs", "1", "--batch-size", "16",
                 "--test-batch-size", "50", "--log-interval", "5", "--save-model"],
        "pythonpath": None,
        "times": [],
        "files": ["mnist_rnn.pt"],
        "venv": "vision",
    },
    # pytorch/examples' siamese network (made up MNIST: _mnist_small_above): pairs of images
    # drawn in a DataLoader worker, torchvision's ResNet-18 run on each image of a pair,
    # Adadelta with StepLR, loss.item() every --log-interval batches, the test set's loss and
    # correct count .item() per batch, torch.save of the model
    "siamese_network": {
        "repo": "pytorch/examples",
        "commit": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "paths": ["siamese_network/main.py"],
        "prepare": _mnist_small_above,
        "cwd": "siamese_network",
        "argv": ["main.py", "--epochs", "1", "--batch-size", "16", "--test-batch-size", "50",
                 "--log-interval", "5", "--save-model"],
        "pythonpath": None,
        "times": [],
        "files": ["siamese_network.pt"],
        "venv": "vision",
    },
    # karpathy/minGPT's chargpt project on input.txt made from the repository's own text
    # (_chargpt_input), a GPT-nano: minGPT's Trainer as for the adder, loss.item() every 10
    # iterations, at iteration 0 a 500-character sample (top-k's boolean-mask assignment per
    # character, int() of each) and torch.save of the model
    "mingpt_chargpt": {
        "repo": "karpathy/minGPT",
        "commit": "37baab71b9abea1b76ab957409a1cc2fbfba8a26",
        "paths": ["mingpt", "projects/chargpt", "README.md"],
        "prepare": _chargpt_input,
        "cwd": ".",
        "argv": ["projects/chargpt/chargpt.py", "--trainer.max_iters=30",
                 "--trainer.num_workers=2", "--trainer.batch_size=16",
                 "--model.model_type=gpt-nano", "--data.block_size=32"],
        "pythonpath": ".",
        "times": [r"iter_dt [0-9.]+ms"],
        "files": ["out/chargpt/args.txt", "out/chargpt/config.json", "out/chargpt/model.pt"],
        "venv": "torch",
    },
    # huggingface/pytorch-image-models' train.py with the timm package of the same commit (on
    # sys.path first: the script's folder), a tiny ResNet (test_resnet) on a made-up image
    # folder (_image_folder): timm's loader with its CUDA prefetcher and 2 workers, Mixup and
    # CutMix, torch.amp float16 with timm's NativeScaler, a model EMA, SGD with a cosine
    # schedule, loss.item() every batch, validation's .item() per batch after each epoch,
    # CheckpointSaver's torch.save of the model, its EMA and the optimizer
    "timm_train": {
        "repo": "huggingface/pytorch-image-models",
        "commit": "aa4b5850c1543fa488abf260f18390eda46cf85d",
        "paths": ["train.py", "timm"],
        "prepare": _image_folder,
        "cwd": ".",
        "argv": ["train.py", "--data-dir", "data", "--model", "test_resnet", "--num-classes", "4",
                 "--input-size", "3", "32", "32", "--batch-size", "8", "--validation-batch-size",
                 "8", "--epochs", "2", "--warmup-epochs", "0", "--workers", "2", "--amp",
                 "--model-ema", "--mixup", "0.2", "--cutmix", "0.2", "--log-interval", "4",
                 "--checkpoint-hist", "1", "--output", "out", "--experiment", "tiny"],
        "pythonpath": None,
        "times": [r"Time: +[0-9.]+s?, +[0-9.]+/s +\( *[0-9.]+s?, +[0-9.]+/s\)",
                  r"Time: +[0-9.]+ \( *[0-9.]+\)", r"Data: +[0-9.]+ \( *[0-9.]+\)",
                  r"W[0-9]{4} [0-9:.]+ +[0-9]+ "],  # torch's log line: date, time, pid
        "files": ["out/tiny/args.yaml", "out/tiny/summary.csv", "out/tiny/last.pth.tar",
                  "out/tiny/model_best.pth.tar"],
        "venv": "vision",
    },
}


def git_dir(repo):
    return os.path.join(MIRROR, repo.replace("/", "+"), "repo")


def missing(name):
    """Why the script's pinned commit cannot be read here (a sentence saying what to fetch), or
    None when it can."""
    s = SCRIPTS[name]
    g = git_dir(s["repo"])
    if not os.path.isdir(g):
        return ("no snapshot of %s at %s: fetch github:%s first (the session's fetch tool; "
                "PUBLIC_MIRROR names another place)" % (s["repo"], g, s["repo"]))
    have = subprocess.run(["git", "--git-dir", g, "cat-file", "-e", s["commit"] + "^{commit}"],
                          capture_output=True)
    if have.returncode != 0:
        return ("the snapshot of %s at %s lacks the pinned commit %s: fetch it again, or pin its "
                "newest commit in tests/public/public.py" % (s["repo"], g, s["commit"]))
    return None


def extract(name, dest=None):
    """The script's tree under dest (default BUILD/public/NAME), extracted afresh from the
    snapshot; returns dest. Raises RuntimeError saying what to fetch when it cannot."""
    s = SCRIPTS[name]
    why = missing(name)
    if why:
        raise RuntimeError(why)
    g = git_dir(s["repo"])
    dest = dest or os.path.join(BUILD, "public", name)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    archive = subprocess.Popen(["git", "--git-dir", g, "archive", s["commit"], "--", *s["paths"]],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout, capture_output=True)
    archive.stdout.close()
    err = archive.stderr.read().decode(errors="replace")
    if archive.wait() != 0 or tar.returncode != 0:
        raise RuntimeError("git archive of %s %s failed: %s%s" % (s["repo"], s["commit"], err,
                                                                  tar.stderr.decode(errors="replace")))
    if s["prepare"]:
        s["prepare"](dest)
    return dest


def main(argv):
    if argv == ["check"]:
        why = [w for w in map(missing, SCRIPTS) if w]
        for w in why:
            print("public.py: " + w, file=sys.stderr)
        sys.exit(1 if why else 0)
    if len(argv) < 1 or argv[0] != "extract" or not set(argv[1:]) <= set(SCRIPTS):
        sys.exit("usage: public.py extract [%s] | check" % " ".join(SCRIPTS))
    for name in argv[1:] or SCRIPTS:
        try:
            print(extract(name))
        except RuntimeError as e:
            sys.exit("public.py: %s" % e)


if __name__ == "__main__":
    main(sys.argv[1:])
