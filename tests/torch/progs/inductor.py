"""tests/torch/progs/inductor.py: a small model compiled with torch.compile's default backend
(Inductor: Triton kernels launched through the driver API, cuBLAS for the matmuls) trained
forward + backward + SGD for several steps on the simulated device, for tests/torch/test_inductor.py.
Each step ends with the optimizer step (the agent's step boundary); after it the program reads
the simulator's counts of launch calls (simcuda_launch_count: each kernel launched by itself,
through the runtime, the driver or a vendor library, captured or run, and each CUDA graph
launch once) and of
kernels queued (simcuda_kernel_count: a graph's kernels too), and prints each step's, then the
last loss and Dynamo's counters (frames, graph breaks, recompiles, unimplemented). --mode reduce-overhead: Inductor's CUDA graphs (captured and replayed).

    inductor.py [--steps N] [--mode default|reduce-overhead] [--compile-step]"""
import argparse
import ctypes
import json

import torch


def device_counts():
    """(launches made, kernels queued) so far, from the simulated libcudart.so.13 torch loaded
    (the harness puts build/sim first)."""
    lib = ctypes.CDLL("libcudart.so.13")
    lib.simcuda_launch_count.restype = ctypes.c_ulonglong
    lib.simcuda_kernel_count.restype = ctypes.c_ulonglong
    return lib.simcuda_launch_count(), lib.simcuda_kernel_count()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)) * 0.5 + 1.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--mode", default="default")
    parser.add_argument("--compile-step", action="store_true", help="torch.compile(opt.step) too")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    compiled = torch.compile(model, mode=None if args.mode == "default" else args.mode)
    step = torch.compile(opt.step) if args.compile_step else opt.step
    x = torch.randn(16, 32, device="cuda")
    target = torch.randn(16, 8, device="cuda")
    launches, kernels, last = [], [], device_counts()
    for _ in range(args.steps):
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        opt.zero_grad()
        loss.backward()
        step()
        now = device_counts()
        launches.append(now[0] - last[0])
        kernels.append(now[1] - last[1])
        last = now
    print("launches per step: " + json.dumps(launches))
    print("kernels per step: " + json.dumps(kernels))
    print("loss: %.4f" % loss.item())
    print(f"steps: {args.steps}")
    from torch._dynamo.utils import counters  # what Dynamo did: the same with the agent or without
    print("dynamo: " + json.dumps({k: dict(sorted(counters[k].items()))
                                   for k in ("frames", "graph_break", "recompiles", "unimplemented")}))


if __name__ == "__main__":
    main()
