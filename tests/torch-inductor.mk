# tests/torch-inductor.mk: the virtual environment of the Inductor tests on real torch
# (tests/torch/test_inductor.py: torch.compile's default backend, Triton's kernels loaded and
# launched through the simulated driver): `make torch-inductor-venv` installs
# tests/torch/requirements.txt and tests/torch/requirements-inductor.txt (triton) into
# $(BUILD)/inductor-venv/ for python3 (a CPython 3.11 to 3.14); `make test-torch` makes it first.
# The tests find it there, or at TORCH_INDUCTOR_PYTHON (any interpreter with that torch and
# triton: an existing venv is reused as it is). Included by the top Makefile (BUILD;
# TORCH_MAIN_PY from tests/torch.mk).

TORCH_INDUCTOR_VENV := $(BUILD)/inductor-venv

torch-inductor-venv:
	@sh scripts/torch-venv.sh $(TORCH_MAIN_PY) $(TORCH_INDUCTOR_VENV) tests/torch/requirements-inductor.txt

ifeq ($(TORCH_INDUCTOR_PYTHON),)
test-torch torch-installs: torch-inductor-venv
endif

.PHONY: torch-inductor-venv
