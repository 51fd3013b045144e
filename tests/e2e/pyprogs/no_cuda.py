"""tests/e2e/pyprogs/no_cuda.py: imports torch and syncspy, marks a step, never touches CUDA."""
import syncspy
import torch

syncspy.step()
print("no cuda:", torch.__version__, "agent loaded" if syncspy.enabled() else "no agent")
