"""tests/torch/progs/ddp_gloo.py: a DistributedDataParallel loop over the gloo backend, started by
torchrun (env:// rendezvous). Per step: forward, backward (DDP's all-reduce of the gradients over
gloo), optimizer.step(), and one `loss.item()` (the sync test_torch_ranks.py counts).
--device cuda (default) keeps model and tensors on the simulated device; --device cpu keeps
them on the CPU and syncs once a step with torch.cuda.synchronize() instead.
Prints "rank R of W: N steps" and exits 0."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device(a.device)
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1).to(dev)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    x = torch.randn(16, 8, device=dev)
    y = torch.randn(16, 1, device=dev)
    for _ in range(a.steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        if dev.type == "cuda":
            loss.item()  # the sync per step
        else:
            torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} of {world}: {a.steps} steps (local rank {os.environ['LOCAL_RANK']})", flush=True)


if __name__ == "__main__":
    main()
