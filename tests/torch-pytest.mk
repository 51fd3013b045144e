# tests/torch-pytest.mk: the virtual environment of the pytest plugin's tests on real torch
# (tests/torch/test_torch_budget.py): `make pytest-venv` installs tests/torch/requirements.txt and the
# pinned pytest of tests/torch/requirements-pytest.txt into $(BUILD)/pytest-venv/ for python3 (a
# CPython 3.11 to 3.14), then python/ as an editable package (scripts/dev-install.py: its
# pytest11 entry point registers the plugin, as a wheel's would). `make test-torch` makes it
# first. The tests find it there, or at PYTEST_PYTHON. Included by the top Makefile (BUILD;
# TORCH_MAIN_PY from tests/torch.mk).

PYTEST_VENV := $(BUILD)/pytest-venv

pytest-venv:
	@sh scripts/torch-venv.sh $(TORCH_MAIN_PY) $(PYTEST_VENV) tests/torch/requirements-pytest.txt
	@$(PYTEST_VENV)/bin/python scripts/dev-install.py

test-torch torch-installs: pytest-venv

.PHONY: pytest-venv
