# examples/examples.mk: `make demo` runs the seed-003 training loop (examples/seg_loss.py) on the
# real PyTorch wheel under the agent: on the simulated device when this machine has no GPU
# (nvidia-smi lists none), on the GPU otherwise. The wheel is installed on first use into the main
# venv of tests/torch.mk (pip shows its progress); when it cannot be had, the demo says so and runs
# the imitation demo instead (`make demo-py`: examples/train.py on the torch-shaped package of
# examples/site-packages). `make demo-native` runs the C loop (examples/train_loop.c). The report
# is printed at exit.

DEMO := $(BUILD)/examples/train_loop
DEMO_OUT := $(BUILD)/demo-out

$(DEMO): examples/train_loop.c $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Isim -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $< -L$(BUILD)/sim -lcudart -ldl

# On a machine with a GPU the simulator stays off the library path.
DEMO_LIBRARY_PATH = $$(nvidia-smi -L >/dev/null 2>&1 || printf '%s:' $(abspath $(BUILD)/sim))$(CUDA_HOME)/lib64

demo: $(LIB) $(CLI) sim
	@if sh scripts/torch-venv.sh $(TORCH_MAIN_PY) $(TORCH_VENVS)/$(TORCH_MAIN_VER); then \
	    rm -rf $(DEMO_OUT); \
	    echo "make demo: examples/seg_loss.py on torch $$($(TORCH_PYTHON) -c 'import importlib.metadata as m; print(m.version("torch"))') under syncspy$$(nvidia-smi -L >/dev/null 2>&1 || echo ', on the simulated CUDA device (no GPU here)')"; \
	    LD_LIBRARY_PATH=$(DEMO_LIBRARY_PATH) SYNCSPY_OUT=$(DEMO_OUT) PYTHONPATH=$(CURDIR)/python \
	        LD_PRELOAD=$(abspath $(LIB)) $(TORCH_PYTHON) examples/seg_loss.py; \
	else \
	    echo "make demo: the PyTorch wheel could not be installed (above), so this demo runs on the bundled"; \
	    echo "make demo: IMITATION of torch (examples/site-packages), not on real PyTorch"; \
	    $(MAKE) --no-print-directory demo-py; \
	fi

demo-native: $(LIB) $(CLI) $(DEMO)
	@rm -rf $(DEMO_OUT)
	LD_LIBRARY_PATH=$(BUILD)/sim SYNCSPY_OUT=$(DEMO_OUT) LD_PRELOAD=$(abspath $(LIB)) $(DEMO)

.PHONY: demo-native
