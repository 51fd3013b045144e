"""scripts/gpu/dataloader.py: a training loop fed by a DataLoader with two worker processes (CPU only:
they never touch CUDA, so under syncspy they must stay silent: one process folder, the main
process's). Batches are copied to the device from pageable memory (pin_memory=False): each copy
waits for the device. Each worker appends its pid to $GPUCHECK_WORKER_PIDS.

    python3 scripts/gpu/dataloader.py [--mode plain|profiler|syncdebug] [--steps N]"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import common

BATCH = 64
NUM_CLASSES = 10


class RandomImages(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, index):
        return torch.randn(3, 32, 32), index % NUM_CLASSES


def note_worker(_):
    path = os.environ.get("GPUCHECK_WORKER_PIDS")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()}\n")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.head = nn.Linear(16 * 32 * 32, NUM_CLASSES)

    def forward(self, x):
        return self.head(F.relu(self.conv(x)).flatten(1))


def main():
    args = common.parse_args(__doc__)
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Net().to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    loader = DataLoader(RandomImages(), batch_size=BATCH, num_workers=2, pin_memory=False,
                        worker_init_fn=note_worker)
    batches = iter(loader)
    model.train()

    def step(_):
        inputs, labels = next(batches)
        inputs = inputs.to(dev)  # sync: h2d
        labels = labels.to(dev)  # sync: h2d
        loss = F.cross_entropy(model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    common.run(__file__, step, args, {"num_workers": 2, "pin_memory": False, "batch": BATCH})
    del batches  # the workers exit here


if __name__ == "__main__":
    main()
