"""tests/torch/progs/inductor.py: a small model compiled with torch.compile's default backend
(Inductor: Triton kernels launched through the driver API, cuBLAS for the matmuls) trained
forward + backward + SGD for several steps on the simulated device, for tests/torch/test_inductor.py.
Each step ends with the optimizer step (the agent's step boundary); after it the program reads
the simulator's count of kernels queued (simcuda_kernel_count: runtime, driver and vendor
launches alike), and prints the kernels of each step, then the last loss, as JSON lines.

    inductor.py [--steps N] [--mode default|reduce-overhead] [--compile-step]"""
import argparse
import ctypes
import json

import torch


def kernels_queued():
    # the simulated libcudart.so.13 torch loaded (the harness puts build/sim first)
    lib = ctypes.CDLL("libcudart.so.13")
    lib.simcuda_kernel_count.restype = ctypes.c_ulonglong
    return lib.simcuda_kernel_count()


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
    per_step, last = [], kernels_queued()
    for _ in range(args.steps):
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        opt.zero_grad()
        loss.backward()
        step()
        now = kernels_queued()
        per_step.append(now - last)
        last = now
    print("kernels per step: " + json.dumps(per_step))
    print("loss: %.4f" % loss.item())
    print(f"steps: {args.steps}")


if __name__ == "__main__":
    main()
