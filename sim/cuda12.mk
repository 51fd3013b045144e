# sim/cuda12.mk: the simulated device for CUDA 12 programs (PyTorch's CUDA 12 wheels, 2.4 to
# 2.10): `make sim12` builds $(BUILD)/sim12/ (libcudart.so.12, libcupti.so.12, libcublas.so.12,
# libcublasLt.so.12, libcuda.so.1, libcudnn.so.9) and the simulator's unit tests against it
# ($(BUILD)/tests/test_sim_cuda12, test_sim_vendor_cuda12, test_sim_driver_cuda12), by running sim/sim.mk and
# sim/vendor.mk again with SIM_CUDA=12 and CUDA_HOME at the CUDA 12 headers of the pinned NVIDIA
# wheels (sim/cuda12-headers.txt; scripts/cuda12-headers.sh puts them in $(BUILD)/cuda12, never
# committed). `make test-sim12` also runs those tests. Not part of `make`: it needs the download.
# Included by the top Makefile (BUILD, CUDA_HOME).

CUDA12_HOME := $(BUILD)/cuda12
CUDA12_STAMP := $(CUDA12_HOME)/.headers
SIM12_TESTS := $(BUILD)/tests/test_sim_cuda12 $(BUILD)/tests/test_sim_vendor_cuda12 \
    $(BUILD)/tests/test_sim_driver_cuda12

$(CUDA12_STAMP): sim/cuda12-headers.txt scripts/cuda12-headers.sh
	@sh scripts/cuda12-headers.sh sim/cuda12-headers.txt $(CUDA12_HOME) $(CUDA_HOME)

sim12: $(CUDA12_STAMP)
	@$(MAKE) --no-print-directory SIM_CUDA=12 CUDA_HOME=$(abspath $(CUDA12_HOME)) sim $(SIM12_TESTS)

test-sim12: sim12
	@for t in $(SIM12_TESTS); do $$t || exit 1; done

.PHONY: sim12 test-sim12
