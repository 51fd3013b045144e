"""scripts/gpu/item_loop.py: a training loop that reads the loss with loss.item() every step: one
device-to-host copy and a stream synchronize per step (at::_local_scalar_dense in the native frames).

    python3 scripts/gpu/item_loop.py [--mode plain|profiler|syncdebug] [--steps N]"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import common

BATCH = 256
WIDTH = 1024
NUM_CLASSES = 10


def main():
    args = common.parse_args(__doc__)
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                          nn.Linear(WIDTH, NUM_CLASSES)).to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    model.train()
    losses = []

    def step(_):
        inputs = torch.randn(BATCH, WIDTH, device=dev)
        labels = torch.randint(0, NUM_CLASSES, (BATCH,), device=dev)
        loss = F.cross_entropy(model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        losses.append(loss.item())  # sync: item
        optimizer.step()

    common.run(__file__, step, args, {"batch": BATCH, "width": WIDTH})


if __name__ == "__main__":
    main()
