# examples/examples.mk: `make demo` runs the Python training loop (examples/train.py, see
# examples/python.mk) under the agent; `make demo-native` the C one (examples/train_loop.c).
# Both run on the simulated device; the report is printed at exit.

DEMO := $(BUILD)/examples/train_loop
DEMO_OUT := $(BUILD)/demo-out

$(DEMO): examples/train_loop.c $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Isim -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $< -L$(BUILD)/sim -lcudart -ldl

demo: demo-py

demo-native: $(LIB) $(CLI) $(DEMO)
	@rm -rf $(DEMO_OUT)
	LD_LIBRARY_PATH=$(BUILD)/sim SYNCSPY_OUT=$(DEMO_OUT) LD_PRELOAD=$(abspath $(LIB)) $(DEMO)

.PHONY: demo-native
