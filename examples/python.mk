# examples/python.mk: the Python demo. $(BUILD)/examples/site-packages/torch/lib/libminitorch.so
# (where pip puts libtorch_cuda.so, so the report counts it as framework code) is the native half of
# the torch-shaped package under examples/site-packages (PyTorch's ops in miniature, on the
# simulated device); `make demo-py` runs examples/train.py under the agent, which prints its
# report at exit. Included by the top Makefile (BUILD, CXX, CPPFLAGS, WARN, LIB, CLI, SIM_LIB).

MINITORCH := $(BUILD)/examples/site-packages/torch/lib/libminitorch.so
MINITORCH_SRCS := $(wildcard examples/minitorch/*.cpp)
DEMO_PY_OUT := $(BUILD)/demo-out
# PYTHONPATH: the fake torch (under a folder named site-packages, so the report counts it as
# framework code) and the syncspy module.
DEMO_PY_PATH := $(CURDIR)/examples/site-packages:$(CURDIR)/python

# Frame pointers and -O1 as a framework build would have them; no sanitizers (the library is
# loaded into python3, which does not carry their runtimes). The run path finds the simulator
# next door, so plain `python3 examples/train.py` works too.
$(MINITORCH): $(MINITORCH_SRCS) $(wildcard examples/minitorch/*.h) sim/simcuda.h $(SIM_LIB)
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -Isim -std=gnu++17 -g -O1 -fno-omit-frame-pointer -fPIC $(WARN) -shared \
	      -o $@ $(MINITORCH_SRCS) -L$(BUILD)/sim -Wl,-rpath-link,$(BUILD)/sim \
	      -Wl,-rpath,'$$ORIGIN/../../../../sim' -Wl,--no-undefined -lcudart -lpthread -ldl

demo-py: $(LIB) $(CLI) $(MINITORCH)
	@rm -rf $(DEMO_PY_OUT)
	PYTHONPATH=$(DEMO_PY_PATH) LD_LIBRARY_PATH=$(BUILD)/sim SYNCSPY_OUT=$(DEMO_PY_OUT) \
	    LD_PRELOAD=$(abspath $(LIB)) python3 examples/train.py

test-build: $(MINITORCH)

.PHONY: demo-py
