"""tests/torch/progs/dataloader.py: a training loop fed by a DataLoader with worker processes and
pin_memory (the workers never touch CUDA; the pin-memory thread of the main process allocates
pinned memory). Each batch goes to the device with non_blocking=True, so only the loss read every
step syncs. Prints the number of batches seen."""
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Pixels(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 16, 16, generator=g), torch.randint(0, 10, (16, 16), generator=g)


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    dev = torch.device("cuda")
    weight = torch.nn.Parameter(torch.randn(10, 3, device=dev) * 0.1)
    opt = torch.optim.SGD([weight], lr=0.01)
    loader = DataLoader(Pixels(), batch_size=8, num_workers=workers, pin_memory=True)
    seen = 0
    for x, y in loader:
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        logits = (x[:, None] * weight[None, :, :, None, None]).sum(2)
        loss = torch.nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()  # sync: item
        seen += 1
    print(f"batches {seen}")


if __name__ == "__main__":
    main()
