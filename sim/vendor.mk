# sim/vendor.mk: the simulated vendor libraries (sim/vendor/, sim/README.md "cuBLAS, cuBLASLt,
# cuDNN"): $(BUILD)/sim/libcublas.so.13, libcublasLt.so.13 and libcudnn.so.9, with the real
# libraries' SONAMEs and version nodes and their link names next to them, part of `make sim`;
# and their unit test $(BUILD)/tests/test_sim_vendor. Each library reaches the one simulated
# device inside libcudart.so.13 through simcuda_private_ops() ($ORIGIN finds it beside them).
# Included by the top Makefile after sim/sim.mk (SIM_CUDA, SIM_DIR, SIM_LIB, SIM_CFLAGS,
# SIM_SANFLAGS); with SIM_CUDA=12 the same into $(BUILD)/sim12: libcublas.so.12, libcublasLt.so.12
# and a libcudnn.so.9 of its own, linked to that folder's libcudart.so.12.

VENDOR_OBJ := $(SIM_DIR)/obj/vendor
CUBLAS_LIB := $(SIM_DIR)/libcublas.so.$(SIM_CUDA)
CUBLASLT_LIB := $(SIM_DIR)/libcublasLt.so.$(SIM_CUDA)
CUDNN_LIB := $(SIM_DIR)/libcudnn.so.9
VENDOR_LIBS := $(CUBLAS_LIB) $(CUBLASLT_LIB) $(CUDNN_LIB)

CUBLAS_OBJS := $(addprefix $(VENDOR_OBJ)/,vendor.o blas.o cublas.o cublas_l12.o cublas_stubs.o)
CUBLASLT_OBJS := $(addprefix $(VENDOR_OBJ)/,vendor.o blas.o cublaslt.o cublasLt_stubs.o)
CUDNN_OBJS := $(addprefix $(VENDOR_OBJ)/,vendor.o $(patsubst sim/vendor/%.c,%.o,$(wildcard sim/vendor/cudnn*.c)) cudnn_stubs.o)

# The rest of each library's API (sim/vendor/stubs.awk): a weak definition of every function of
# the toolkit header, answering NOT_SUPPORTED where the export files define no real one.
VENDOR_GEN := $(SIM_DIR)/gen/vendor
# cublas_v2.h defines CUBLASAPI before it includes cublas_api.h; CUDA 12's cublas_api.h refuses
# to be included without it (CUDA 13's does not use it).
$(VENDOR_OBJ)/%.o $(VENDOR_GEN)/%.c: CPPFLAGS += -DCUBLASAPI=
define vendor_stubs
$(VENDOR_GEN)/$(1)_stubs.c: $(CUDA_HOME)/include/$(2) sim/vendor/stubs.awk
	@mkdir -p $$(@D)
	echo '#include <$(2)>' | $(CC) $$(CPPFLAGS) -E -P - | \
	    awk -v prefix=$(1) -v status=$(3) -v header=$(2) -f sim/vendor/stubs.awk > $$@.tmp && mv $$@.tmp $$@
endef
$(eval $(call vendor_stubs,cublas,cublas_api.h,CUBLAS_STATUS_NOT_SUPPORTED))
$(eval $(call vendor_stubs,cublasLt,cublasLt.h,CUBLAS_STATUS_NOT_SUPPORTED))
$(eval $(call vendor_stubs,cudnn,cudnn.h,CUDNN_STATUS_NOT_SUPPORTED))

$(VENDOR_OBJ)/%_stubs.o: $(VENDOR_GEN)/%_stubs.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SIM_CFLAGS) -c $< -o $@

# One library: objects, SONAME (= version node), version script. The check after the link
# proves the rule of the export files: no dynamic relocation names one of the library's own
# exports (prefix $(4)), i.e. it never calls them through the PLT, where an LD_PRELOADed tool
# would see them as the program's calls.
define vendor_link
	$(CC) -shared -o $@ $(1) -Wl,-soname,$(2) -Wl,--version-script=$(3) -L$(SIM_DIR) \
	      -l:libcudart.so.$(SIM_CUDA) -Wl,-rpath,'$$ORIGIN' -Wl,--no-undefined $(SIM_SANFLAGS) -lm
	@if readelf -rW $@ | grep -Eq '[[:space:]]$(4)[A-Z][A-Za-z0-9_]*(@|[[:space:]])'; then \
	    echo "sim: $@ calls its own exported symbols through the PLT:" >&2; \
	    readelf -rW $@ | grep -E '[[:space:]]$(4)[A-Z]' >&2; rm -f $@; exit 1; fi
	ln -sf $(2) $(basename $@)
endef

$(CUBLAS_LIB): $(CUBLAS_OBJS) $(SIM_DIR)/gen/vendor/libcublas.map $(SIM_LIB)
	$(call vendor_link,$(CUBLAS_OBJS),libcublas.so.$(SIM_CUDA),$(SIM_DIR)/gen/vendor/libcublas.map,cublas)

$(CUBLASLT_LIB): $(CUBLASLT_OBJS) $(SIM_DIR)/gen/vendor/libcublasLt.map $(SIM_LIB)
	$(call vendor_link,$(CUBLASLT_OBJS),libcublasLt.so.$(SIM_CUDA),$(SIM_DIR)/gen/vendor/libcublasLt.map,cublasLt)

$(CUDNN_LIB): $(CUDNN_OBJS) sim/vendor/libcudnn.map $(SIM_LIB)
	$(call vendor_link,$(CUDNN_OBJS),libcudnn.so.9,sim/vendor/libcudnn.map,cudnn)

sim: $(VENDOR_LIBS)

# More specific than tests.mk's pattern rule: links the simulator, its CUPTI and the vendor
# libraries, not the agent's core archive.
$(BUILD)/tests/test_sim_vendor$(SIM_TEST_SUFFIX): tests/unit/test_sim_vendor.c sim/simcuda.h $(SIM_LIB) $(SIM_CUPTI_LIB) $(VENDOR_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=default -o $@ $< -L$(SIM_DIR) -lcublas -lcublasLt \
	      -lcudnn -lcupti -lcudart -Wl,-rpath,$(abspath $(SIM_DIR)) $(SANFLAGS) -lcmocka -lpthread -ldl -lm

-include $(CUBLAS_OBJS:.o=.d) $(CUBLASLT_OBJS:.o=.d) $(CUDNN_OBJS:.o=.d)
