"""tests/torch/progs/no_cuda.py: imports torch and syncspy, asks whether CUDA is there, computes on
the CPU, marks a step, never runs anything on the device."""
import syncspy
import torch

x = torch.randn(64, 64)
y = (x @ x).sum()
syncspy.step()
print("no cuda:", torch.__version__, torch.cuda.is_available(), round(float(y), 2) == round(float(y), 2),
      "agent loaded" if syncspy.enabled() else "no agent")
