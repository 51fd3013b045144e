# tests/torch-pyspy.mk: the virtual environment of py-spy, one of syncspy's peers in
# bench/peers.py (`make bench`) and tests/torch/test_peers.py: `make pyspy-venv` installs the
# pinned wheel of tests/torch/requirements-pyspy.txt from PyPI into $(BUILD)/pyspy-venv/, a venv
# of its own (py-spy is a native program; it needs no torch). Nothing is done when the venv
# already holds exactly these pins ($(BUILD)/pyspy-venv/.requirements, written last). `make
# test-torch` makes it first. Included by the top Makefile (BUILD; TORCH_MAIN_PY from
# tests/torch.mk).

PYSPY_VENV := $(BUILD)/pyspy-venv
PYSPY_REQ  := tests/torch/requirements-pyspy.txt

pyspy-venv:
	@if cmp -s $(PYSPY_REQ) $(PYSPY_VENV)/.requirements && [ -x $(PYSPY_VENV)/bin/py-spy ]; then :; else \
	    rm -rf $(PYSPY_VENV) && $(TORCH_MAIN_PY) -m venv $(PYSPY_VENV) && \
	    $(PYSPY_VENV)/bin/python -m pip install --disable-pip-version-check --no-deps \
	        --only-binary=:all: -r $(PYSPY_REQ) >&2 && \
	    cp $(PYSPY_REQ) $(PYSPY_VENV)/.requirements || \
	    { echo "pyspy-venv: could not install $(PYSPY_REQ) (no network or no wheel)" >&2; exit 1; }; fi
	@echo "pyspy-venv: $$($(PYSPY_VENV)/bin/py-spy --version)" >&2

test-torch torch-installs: pyspy-venv

.PHONY: pyspy-venv
