# tests/torch-nvidia.mk: NVIDIA's CUDA runtime and CUPTI wheels as pip installs them beside torch
# (tests/torch/requirements-nvidia.txt), into $(BUILD)/nvidia-wheels/ (`make nvidia-wheels`; the
# target folder's .requirements is a copy of the pins, written last); `make test-torch` makes it
# first, for tests/torch/test_driver_gate.py. Included by the top Makefile (BUILD).

NVIDIA_WHEELS := $(BUILD)/nvidia-wheels
NVIDIA_PINS := tests/torch/requirements-nvidia.txt

$(NVIDIA_WHEELS)/.requirements: $(NVIDIA_PINS)
	@rm -rf $(NVIDIA_WHEELS)
	python3 -m pip install --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all: \
	    --target $(NVIDIA_WHEELS) -q -r $(NVIDIA_PINS)
	@cp $(NVIDIA_PINS) $@

nvidia-wheels: $(NVIDIA_WHEELS)/.requirements
test-torch torch-installs: nvidia-wheels

.PHONY: nvidia-wheels
