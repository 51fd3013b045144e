# tests/torch-vision.mk: the virtual environment of the vision-model tests on real torch
# (tests/torch/test_vendor.py: timm's VisionTransformer, torchvision's ResNet-34 over the
# simulated cuBLAS/cuDNN): `make torch-vision-venv` installs tests/torch/requirements.txt and
# tests/torch/requirements-vision.txt into $(BUILD)/vision-venv/ for python3 (a CPython 3.11 to
# 3.14); `make test-torch` makes it first. The tests find it there, or at TORCH_VISION_PYTHON.
# Included by the top Makefile (BUILD; TORCH_MAIN_PY from tests/torch.mk).

TORCH_VISION_VENV := $(BUILD)/vision-venv

torch-vision-venv:
	@sh scripts/torch-venv.sh $(TORCH_MAIN_PY) $(TORCH_VISION_VENV) tests/torch/requirements-vision.txt

test-torch torch-installs: torch-vision-venv

.PHONY: torch-vision-venv
