# tests/torch.mk: the tests on the real PyTorch wheel over the simulated device (tests/torch/),
# and the virtual environments they run in. `make torch-venv` installs the pinned wheels
# (tests/torch/requirements.txt) into $(BUILD)/torch-venv/<X.Y>/ for python3 and for every other
# CPython that pyenv has here and torch 2.15 has wheels for (3.11 to 3.14; there is none for 3.10):
# the frame reader must hold on each. pip's cache makes
# reinstalls quick. `make test-torch` runs tests/torch/test_*.py on python3's venv, the tests that
# must hold on every CPython on each venv, and closes with "torch: N passed, M failed".
# `make test` never needs the download. Included by the top Makefile (BUILD).
#
# Another PyTorch: TORCH_VERSION=2.8 (or 2.8.0) makes the same targets use
# tests/torch/requirements-2.8.txt and $(BUILD)/torch-venv-2.8/<X.Y>/, for $(TORCH_MAIN_PY) only
# (TORCH_MAIN_PY=... picks another CPython), on build/sim12 when that torch is a CUDA 12 build
# (the file's "# torch's CUDA: 12" line: `make sim12` first): e.g.
# `make test-torch TORCH_VERSION=2.8 TORCH_TESTS=test_versions` (docs/COMPATIBILITY.md).

TORCH_VENVS := $(BUILD)/torch-venv
TORCH_MAIN_PY ?= python3
TORCH_MAIN_VER := $(shell $(TORCH_MAIN_PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYENV_ROOT ?= $(HOME)/.pyenv
# pyenv's newest patch release of each other minor version torch 2.15 has wheels for
TORCH_OTHER_PYS := $(foreach m,3.11 3.12 3.13 3.14,$(if $(filter $(m),$(TORCH_MAIN_VER)),,\
    $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/$(m).*/bin/python3)))))
TORCH_REQUIREMENTS :=
TORCH_SIM_TARGET := sim
ifneq ($(TORCH_VERSION),)
TORCH_SERIES := $(shell echo '$(TORCH_VERSION)' | cut -d. -f1,2)
TORCH_REQUIREMENTS := tests/torch/requirements-$(TORCH_SERIES).txt
ifeq ($(wildcard $(TORCH_REQUIREMENTS)),)
TORCH_SERIES_KNOWN := $(patsubst tests/torch/requirements-%.txt,%,$(wildcard tests/torch/requirements-[0-9]*.txt))
$(error TORCH_VERSION=$(TORCH_VERSION): no $(TORCH_REQUIREMENTS) (those with one: $(TORCH_SERIES_KNOWN)))
endif
TORCH_VENVS := $(BUILD)/torch-venv-$(TORCH_SERIES)
TORCH_OTHER_PYS :=
TORCH_SIM_TARGET := $(if $(shell grep -x "\# torch's CUDA: 12" $(TORCH_REQUIREMENTS)),sim12,sim)
endif
TORCH_PYTHON := $(abspath $(TORCH_VENVS))/$(TORCH_MAIN_VER)/bin/python
TORCH_PYTHONS := $(TORCH_PYTHON) $(foreach p,$(TORCH_OTHER_PYS),\
    $(abspath $(TORCH_VENVS))/$(shell $(p) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/bin/python)

torch-venv: $(TORCH_SIM_TARGET)
	@TORCH_REQUIREMENTS=$(TORCH_REQUIREMENTS) sh scripts/torch-venv.sh $(TORCH_MAIN_PY) $(TORCH_VENVS)/$(TORCH_MAIN_VER)
	@for p in $(TORCH_OTHER_PYS); do \
	    v=$$($$p -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	    sh scripts/torch-venv.sh $$p $(TORCH_VENVS)/$$v || exit 1; done

test-torch: test-build torch-venv
	@BUILD=$(BUILD) TORCH_PYTHON=$(TORCH_PYTHON) TORCH_PYTHONS="$(TORCH_PYTHONS)" \
	    python3 tests/torch/runner.py $(TORCH_TESTS)

# every download test-torch needs, and nothing built: .ci/installs makes them in the background
# while the tests that need no torch run (the other tests/torch-*.mk add their venvs to it)
torch-installs: torch-venv

# The demo on every other torch that has a requirements file (test_versions.py on each; its
# venv is made when missing: 2 to 4.4 GB and 1 to 3 minutes each), one line per version.
TORCH_SERIES_ALL := $(shell ls tests/torch/requirements-[0-9]*.txt | sed 's/.*requirements-\(.*\)\.txt/\1/' | sort -V)
test-torch-versions:
	@failed=""; for v in $(TORCH_SERIES_ALL); do \
	    $(MAKE) --no-print-directory test-torch TORCH_VERSION=$$v TORCH_TESTS=test_versions \
	        >$(BUILD)/test-torch-$$v.log 2>&1 || failed="$$failed $$v"; \
	    echo "torch $$v: $$(grep -E '^torch: ' $(BUILD)/test-torch-$$v.log || echo 'no result') ($(BUILD)/test-torch-$$v.log)"; \
	done; [ -z "$$failed" ] || { echo "failing:$$failed"; exit 1; }

# CI's version matrix (issue 33): the oldest torch supported, 2.6 (a CUDA 12 build, on
# build/sim12), on CPython 3.10, and the newest, 2.15 (CUDA 13), on CPython 3.13 alone: the demo
# (test_versions), every operator's hint against torch's own sync-debug mode (test_op_hints) and
# the demo under `syncspy run --sim=12` / `--sim=13` with nothing else set (test_sim_run) on each. `make test-torch` covers 2.15 on 3.11 to 3.13 besides; test-torch-versions the demo on
# every torch with a requirements file. Needs pyenv's 3.10 and 3.13 (a missing one fails).
MATRIX_TESTS := test_versions test_op_hints test_sim_run
MATRIX_PY310 := $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.10.*/bin/python3)))
MATRIX_PY313 := $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.13.*/bin/python3)))
MATRIX_CELLS := 2.6:$(MATRIX_PY310) :$(MATRIX_PY313)
test-torch-matrix: test-build
	@[ -n "$(MATRIX_PY310)" ] && [ -n "$(MATRIX_PY313)" ] || \
	    { echo "test-torch-matrix: pyenv's CPython 3.10 and 3.13 are needed ($(PYENV_ROOT)/versions)" >&2; exit 1; }
	@failed=""; for cell in $(MATRIX_CELLS); do v=$${cell%%:*}; py=$${cell#*:}; \
	    for t in $(MATRIX_TESTS); do log=$(BUILD)/test-matrix-$${v:-main}-$$(basename $$(dirname $$(dirname $$py)))-$$t.log; \
	        $(MAKE) --no-print-directory test-torch TORCH_VERSION=$$v TORCH_MAIN_PY=$$py TORCH_OTHER_PYS= \
	            TORCH_TESTS=$$t >$$log 2>&1 || failed="$$failed $${v:-2.15}/$$t"; \
	        echo "torch $${v:-2.15} on $$($$py -V): $$t: $$(grep -E '^torch: ' $$log || echo 'no result') ($$log)"; \
	    done; done; [ -z "$$failed" ] || { echo "failing:$$failed"; exit 1; }

# the matrix's venvs alone (.ci/run makes them in the background; test-torch-matrix makes any
# that is missing)
matrix-venvs:
	@for cell in $(MATRIX_CELLS); do v=$${cell%%:*}; py=$${cell#*:}; \
	    $(MAKE) --no-print-directory torch-venv TORCH_VERSION=$$v TORCH_MAIN_PY=$$py TORCH_OTHER_PYS= \
	        || exit 1; done

.PHONY: torch-venv torch-installs test-torch test-torch-versions test-torch-matrix matrix-venvs
