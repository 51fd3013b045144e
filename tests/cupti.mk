# tests/cupti.mk: the target programs of tests/e2e/test_cupti.py: libsimdriver.so (a library that
# uses only the driver API of the simulated libcuda.so.1, as one with a static runtime does),
# cupti_driver (its syncs next to the shim's) and cupti_client (a CUPTI client of its own).

SIMDRIVER_LIB := $(BUILD)/progs/lib/libsimdriver.so
CUPTI_PROG_FLAGS = $(CPPFLAGS) -Isim -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN)

# -fno-optimize-sibling-calls: each drvlib_* function stays the caller frame of its CUDA call.
$(SIMDRIVER_LIB): tests/progs/lib/simdriver.c $(SIM_DRV_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUPTI_PROG_FLAGS) -fPIC -fno-optimize-sibling-calls -fvisibility=hidden -shared -o $@ $< \
	      $(PROG_LDFLAGS) -lcuda -lcudart

$(BUILD)/progs/cupti_driver: tests/progs/cupti_driver.c $(SIMDRIVER_LIB) $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUPTI_PROG_FLAGS) -fno-optimize-sibling-calls -o $@ $< -L$(BUILD)/progs/lib -lsimdriver \
	      -Wl,-rpath,'$$ORIGIN/lib' $(PROG_LDFLAGS) -lcudart -lpthread -ldl

$(BUILD)/progs/cupti_client: tests/progs/cupti_client.c $(SIMDRIVER_LIB) $(SIM_CUPTI_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUPTI_PROG_FLAGS) -fno-optimize-sibling-calls -o $@ $< -L$(BUILD)/progs/lib -lsimdriver \
	      -Wl,-rpath,'$$ORIGIN/lib' $(PROG_LDFLAGS) -lcupti -lcudart -lpthread -ldl

$(BUILD)/progs/driver_only: tests/progs/driver_only.c $(SIMDRIVER_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUPTI_PROG_FLAGS) -o $@ $< -L$(BUILD)/progs/lib -lsimdriver -Wl,-rpath,'$$ORIGIN/lib' $(PROG_LDFLAGS)

test-build: $(SIMDRIVER_LIB) $(BUILD)/progs/cupti_driver $(BUILD)/progs/cupti_client $(BUILD)/progs/driver_only

$(BUILD)/progs/cupti_fork: tests/progs/cupti_fork.c $(SIMDRIVER_LIB) $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUPTI_PROG_FLAGS) -fno-optimize-sibling-calls -o $@ $< -L$(BUILD)/progs/lib -lsimdriver \
	      -Wl,-rpath,'$$ORIGIN/lib' $(PROG_LDFLAGS) -lcudart -lpthread -ldl

test-build: $(BUILD)/progs/cupti_fork
