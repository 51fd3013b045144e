"""tests/torch/progs/lightning_fit.py: a real lightning.pytorch Trainer (accelerator="gpu", one
device: the simulated one) fitting a per-pixel classifier whose loss indexes with a boolean mask
twice (pred[mask] and target[mask]: a cudaStreamSynchronize each, in training_step) and whose
masked prediction's backward (IndexBackward0) syncs once in autograd's engine thread, with
profiler=syncspy.lightning.SyncSpyProfiler(). The batches are made on the device, so moving them
makes no copy. Prints, as its last line, "stats " and the profiler's stats() as JSON.

    python lightning_fit.py STEPS [--file DIR]   (--file: the summary into DIR/fit-syncspy.txt)"""
import json
import sys

import torch
import torch.nn.functional as F
import lightning.pytorch as L
from torch.utils.data import DataLoader, Dataset

from syncspy.lightning import SyncSpyProfiler

CLASSES, SIZE, BATCH = 4, 8, 2


class Pixels(Dataset):
    """Images and labels (-1: ignored) made on the device."""

    def __len__(self):
        return 1000

    def __getitem__(self, i):
        g = torch.Generator(device="cuda").manual_seed(i)
        x = torch.randn(3, SIZE, SIZE, device="cuda", generator=g)
        y = torch.randint(-1, CLASSES, (SIZE, SIZE), device="cuda", generator=g)
        return x, y


class Seg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(CLASSES, 3) * 0.1)

    def forward(self, x):
        return torch.einsum("kc,bchw->bkhw", self.weight, x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x).permute(0, 2, 3, 1).reshape(-1, CLASSES)
        target = y.reshape(-1)
        mask = target >= 0
        return F.cross_entropy(logits[mask], target[mask])  # sync: masks

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    steps = int(sys.argv[1])
    to_file = "--file" in sys.argv
    profiler = SyncSpyProfiler(dirpath=sys.argv[sys.argv.index("--file") + 1], filename="syncspy") if to_file \
        else SyncSpyProfiler()
    trainer = L.Trainer(accelerator="gpu", devices=1, max_steps=steps, profiler=profiler, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Seg(), DataLoader(Pixels(), batch_size=BATCH))
    print("stats " + json.dumps(profiler.stats()), flush=True)


if __name__ == "__main__":
    main()
