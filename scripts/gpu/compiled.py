"""scripts/gpu/compiled.py: a torch.compile'd model (mode default: Dynamo + Inductor, Triton kernels
launched through the driver API) in a training loop that reads the loss with loss.item() every step.
A compile failure (no Triton, no C compiler, ...) ends the run with the error in the metrics.

    python3 scripts/gpu/compiled.py [--mode plain|profiler|syncdebug] [--steps N]

TORCHINDUCTOR_COMPILE_THREADS=1 (compile in this process: no worker pool to start) unless set."""
import os

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import common  # noqa: E402

BATCH = 256
WIDTH = 512
NUM_CLASSES = 10


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.fc2 = nn.Linear(WIDTH, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, NUM_CLASSES)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        x = self.norm(x + F.gelu(self.fc2(x)))
        return self.head(x)


def main():
    args = common.parse_args(__doc__)
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = MLP().to(dev)
    cmodel = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    model.train()
    losses = []

    def step(_):
        inputs = torch.randn(BATCH, WIDTH, device=dev)
        labels = torch.randint(0, NUM_CLASSES, (BATCH,), device=dev)
        loss = F.cross_entropy(cmodel(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        losses.append(loss.item())  # sync: item
        optimizer.step()

    common.run(__file__, step, args, {
        "compile_threads": os.environ.get("TORCHINDUCTOR_COMPILE_THREADS"), "mode": "default"})


if __name__ == "__main__":
    main()
