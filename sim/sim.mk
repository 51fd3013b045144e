# sim/sim.mk: the simulated CUDA device, $(BUILD)/sim/libcudart.so.13 (SONAME libcudart.so.13,
# every export under the version node libcudart.so.13), with the link name libcudart.so next to
# it so -L$(BUILD)/sim -lcudart finds it; and its unit test $(BUILD)/tests/test_sim.
# Included by the top Makefile, which defines BUILD, CC, CPPFLAGS, CFLAGS and SANFLAGS.
#
# SIM_CUDA is the CUDA major version the device is built for: 13 (the default) into $(BUILD)/sim
# from CUDA_HOME's headers; 12 into $(BUILD)/sim12 (libcudart.so.12, libcupti.so.12,
# libcublas[Lt].so.12 and their own libcuda.so.1 and libcudnn.so.9), the same sources and rules
# run again by `make sim12` (sim/cuda12.mk) with CUDA_HOME at the CUDA 12 headers.

# CUPTI's headers (cupti.h, generated_cuda*_meta.h) are in include/ of CUDA 13 toolkits and in
# extras/CUPTI/include/ of some installs; the simulator and collectors/cupti*.c both include them.
CPPFLAGS += -I$(CUDA_HOME)/extras/CUPTI/include

# sim/*_api.c and sim/driver_ext.c are the export layers of libcuda.so.1 and libcupti.so.13
# (below), not libcudart's.
SIM_CUDA ?= 13
SIM_DIR := $(BUILD)/sim$(filter-out 13,$(SIM_CUDA))
# the suffix of the unit tests' programs built against this device: test_sim, test_sim_cuda12
SIM_TEST_SUFFIX := $(if $(filter-out 13,$(SIM_CUDA)),_cuda$(SIM_CUDA))
SIM_SRCS := $(filter-out sim/%_api.c sim/driver_ext.c,$(wildcard sim/*.c))
SIM_OBJS := $(SIM_SRCS:sim/%.c=$(SIM_DIR)/obj/%.o)
SIM_LIB  := $(SIM_DIR)/libcudart.so.$(SIM_CUDA)
SIM_LINK := $(SIM_DIR)/libcudart.so
# Sanitizer flags of the simulator itself: those of the build by default (SAN=asan/tsan check
# the simulator too); SIM_SANFLAGS= builds a plain one, which programs built without
# sanitizers can load without preloading the sanitizer runtime.
SIM_SANFLAGS ?= $(SANFLAGS)
SIM_CFLAGS = $(filter-out $(SANFLAGS),$(CFLAGS)) $(SIM_SANFLAGS)

$(SIM_DIR)/obj/%.o: sim/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SIM_CFLAGS) -MMD -MP -c $< -o $@

# The version scripts name the CUDA 13 nodes (libcudart.so.13 { ... }); a build for another
# version gets a copy with its own.
$(SIM_DIR)/gen/%.map: sim/%.map
	@mkdir -p $(@D)
	sed 's/\.so\.13\>/.so.$(SIM_CUDA)/g' $< > $@.tmp && mv $@.tmp $@

# The check after the link proves the rule of sim/cudart.c: no dynamic relocation names an
# exported symbol, i.e. the library never calls its own entry points through the PLT (an
# LD_PRELOADed shim would see those calls as the program's).
$(SIM_LIB): $(SIM_OBJS) $(SIM_DIR)/gen/libcudart.map
	$(CC) -shared -o $@ $(SIM_OBJS) -Wl,-soname,libcudart.so.$(SIM_CUDA) \
	      -Wl,--version-script=$(SIM_DIR)/gen/libcudart.map -Wl,--no-undefined $(SIM_SANFLAGS) -lpthread -ldl
	@if readelf -rW $@ | grep -Eq '[[:space:]](__)?(cuda|simcuda_)[A-Za-z0-9_]*(@|[[:space:]])'; then \
	    echo "sim: $@ calls its own exported symbols through the PLT:" >&2; \
	    readelf -rW $@ | grep -E '[[:space:]](__)?(cuda|simcuda_)' >&2; rm -f $@; exit 1; fi
	ln -sf libcudart.so.$(SIM_CUDA) $(SIM_LINK)

$(SIM_LINK): $(SIM_LIB)

# The simulated driver and CUPTI: build/sim/libcuda.so.1 (the driver API entry points) and
# build/sim/libcupti.so.13 (the CUPTI callback and activity API). Both reach the one simulated
# device inside libcudart.so.13 (.12 in build/sim12) through simcuda_private_ops()
# (sim/driver_ops.h), so they share its timelines; $ORIGIN finds it beside them. Neither calls
# its own exports through the PLT (a tool interposing cuptiSubscribe must see only the program's
# calls): checked like libcudart.
SIM_DRV_LIB := $(SIM_DIR)/libcuda.so.1
SIM_CUPTI_LIB := $(SIM_DIR)/libcupti.so.$(SIM_CUDA)

SIM_DRV_OBJS := $(SIM_DIR)/obj/driver_api.o $(SIM_DIR)/obj/driver_ext.o $(SIM_DIR)/obj/module_api.o
$(SIM_DRV_LIB): $(SIM_DRV_OBJS) sim/libcuda.map $(SIM_LIB)
	$(CC) -shared -o $@ $(SIM_DRV_OBJS) -Wl,-soname,libcuda.so.1 \
	      -Wl,--version-script=sim/libcuda.map -L$(SIM_DIR) -l:libcudart.so.$(SIM_CUDA) \
	      -Wl,-rpath,'$$ORIGIN' -Wl,--no-undefined $(SIM_SANFLAGS) -ldl
	@if readelf -rW $@ | grep -Eq '[[:space:]]cu[A-Z][A-Za-z0-9_]*(@|[[:space:]])'; then \
	    echo "sim: $@ calls its own exported symbols through the PLT" >&2; rm -f $@; exit 1; fi
	ln -sf libcuda.so.1 $(SIM_DIR)/libcuda.so

# cuptiGetCallbackName's tables: every CUPTI_{RUNTIME,DRIVER}_TRACE_CBID_<name> = <id> of the
# toolkit's headers, as C arrays indexed by id.
CUPTI_INC_DIR := $(firstword $(wildcard $(CUDA_HOME)/include/cupti_runtime_cbid.h $(CUDA_HOME)/extras/CUPTI/include/cupti_runtime_cbid.h))
$(SIM_DIR)/gen/cupti_cbid_names.inc: $(CUPTI_INC_DIR) sim/sim.mk
	@mkdir -p $(@D)
	{ for d in RUNTIME:runtime:cupti_runtime_cbid.h DRIVER:driver:cupti_driver_cbid.h; do \
	    up=$${d%%:*}; rest=$${d#*:}; low=$${rest%%:*}; hdr=$${rest#*:}; \
	    echo "static const char *const sim_$${low}_cbid_names[] = {"; \
	    sed -n "s/^ *CUPTI_$${up}_TRACE_CBID_\([A-Za-z0-9_]*\) *= *\([0-9][0-9]*\),.*/  [\2] = \"\1\",/p" \
	        $(dir $(CUPTI_INC_DIR))$$hdr | grep -v '"INVALID"\|"SIZE"'; \
	    echo "};"; done; } > $@.tmp && mv $@.tmp $@

$(SIM_DIR)/obj/cupti_api.o: $(SIM_DIR)/gen/cupti_cbid_names.inc
$(SIM_DIR)/obj/cupti_api.o: CPPFLAGS += -I$(SIM_DIR)/gen

$(SIM_CUPTI_LIB): $(SIM_DIR)/obj/cupti_api.o sim/libcupti.map $(SIM_LIB)
	$(CC) -shared -o $@ $(SIM_DIR)/obj/cupti_api.o -Wl,-soname,libcupti.so.$(SIM_CUDA) \
	      -Wl,--version-script=sim/libcupti.map -L$(SIM_DIR) -l:libcudart.so.$(SIM_CUDA) \
	      -Wl,-rpath,'$$ORIGIN' -Wl,--no-undefined $(SIM_SANFLAGS)
	@if readelf -rW $@ | grep -Eq '[[:space:]]cupti[A-Z][A-Za-z0-9_]*(@|[[:space:]])'; then \
	    echo "sim: $@ calls its own exported symbols through the PLT" >&2; rm -f $@; exit 1; fi
	ln -sf libcupti.so.$(SIM_CUDA) $(SIM_DIR)/libcupti.so

sim: $(SIM_LIB) $(SIM_LINK) $(SIM_DRV_LIB) $(SIM_CUPTI_LIB)

# More specific than tests.mk's pattern rule: the simulator's test links the simulator, not
# the agent's core archive.
$(BUILD)/tests/test_sim$(SIM_TEST_SUFFIX): tests/unit/test_sim.c sim/simcuda.h $(SIM_LIB) $(SIM_CUPTI_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=default -o $@ $< -L$(SIM_DIR) -lcupti -lcudart \
	      -Wl,-rpath,$(abspath $(SIM_DIR)) $(SANFLAGS) -lcmocka -lpthread -ldl

# The driver's modules and the calls Triton and Inductor make, linked like a driver-API program.
$(BUILD)/tests/test_sim_driver$(SIM_TEST_SUFFIX): tests/unit/test_sim_driver.c sim/simcuda.h $(SIM_LIB) $(SIM_DRV_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=default -o $@ $< -L$(SIM_DIR) -lcuda -lcudart \
	      -Wl,-rpath,$(abspath $(SIM_DIR)) $(SANFLAGS) -lcmocka -lpthread -ldl

-include $(SIM_OBJS:.o=.d) $(SIM_DIR)/obj/driver_api.d $(SIM_DIR)/obj/driver_ext.d $(SIM_DIR)/obj/module_api.d $(SIM_DIR)/obj/cupti_api.d
