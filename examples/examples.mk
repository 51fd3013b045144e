# examples/examples.mk: `make demo` builds the bundled training-loop imitation against the
# simulated device and runs it under the agent; the report is printed at its exit.

DEMO := $(BUILD)/examples/train_loop
DEMO_OUT := $(BUILD)/demo-out

$(DEMO): examples/train_loop.c $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Isim -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $< -L$(BUILD)/sim -lcudart -ldl

demo: $(LIB) $(CLI) $(DEMO)
	@rm -rf $(DEMO_OUT)
	LD_LIBRARY_PATH=$(BUILD)/sim SYNCSPY_OUT=$(DEMO_OUT) LD_PRELOAD=$(abspath $(LIB)) $(DEMO)
