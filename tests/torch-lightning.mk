# tests/torch-lightning.mk: the virtual environment of the Lightning profiler's tests on real
# torch (tests/torch/test_lightning.py: syncspy.lightning.SyncSpyProfiler in a real
# lightning.pytorch Trainer with accelerator="gpu" over the simulated device): `make
# lightning-venv` installs tests/torch/requirements.txt and tests/torch/requirements-lightning.txt
# into $(BUILD)/lightning-venv/ for python3 (a CPython 3.11 to 3.14); `make test-torch` makes it
# first. The tests find it there, or at LIGHTNING_PYTHON. Included by the top Makefile (BUILD;
# TORCH_MAIN_PY from tests/torch.mk).

LIGHTNING_VENV := $(BUILD)/lightning-venv

lightning-venv:
	@sh scripts/torch-venv.sh $(TORCH_MAIN_PY) $(LIGHTNING_VENV) tests/torch/requirements-lightning.txt

test-torch torch-installs: lightning-venv

.PHONY: lightning-venv
