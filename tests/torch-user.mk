# tests/torch-user.mk: syncspy in the venv a user makes (tests/torch-user/): `make user-venv`
# installs a plain `pip install torch==2.15.0`, torch's own CUDA wheels included, every package
# pinned by tests/torch/requirements-user.txt, into $(BUILD)/user-venv/ for CPython 3.11 (python3
# when it is one, else pyenv's): about 3 GB to download (under 3 min here), 5.3 GB on disk, kept
# until the pins change. `make test-torch-user` pip-installs this build's wheel (with the simulated
# device) into it and runs `syncspy run --sim` there against the tests' --no-deps venv
# (torch-venv); closes with "torch: N passed, M failed". About 1 min after the venvs exist. Not
# part of `make test-torch` (the download). Included by the top Makefile (BUILD; TORCH_MAIN_PY,
# TORCH_MAIN_VER, TORCH_PYTHON and PYENV_ROOT from tests/torch.mk).

USER_VENV := $(BUILD)/user-venv
USER_VENV_PY ?= $(if $(filter 3.11,$(TORCH_MAIN_VER)),$(TORCH_MAIN_PY),\
    $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.11.*/bin/python3))))

user-venv:
	@sh scripts/user-venv.sh "$(USER_VENV_PY)" $(USER_VENV)

test-torch-user: $(LIB) $(CLI) sim torch-venv user-venv
	@BUILD=$(BUILD) TORCH_PYTHON=$(TORCH_PYTHON) USER_VENV=$(abspath $(USER_VENV)) \
	    python3 tests/torch/runner.py --dir tests/torch-user

.PHONY: user-venv test-torch-user
