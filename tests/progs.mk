# tests/progs.mk: libraries the end-to-end target programs use (CUDA-using shared libraries,
# loaded at link time or with dlopen(RTLD_LOCAL)).

PROG_LIBS := $(BUILD)/progs/lib/libdlcuda.so $(BUILD)/progs/lib/libcxxsites.so $(BUILD)/progs/lib/libctorcuda.so

$(BUILD)/progs/lib/libdlcuda.so $(BUILD)/progs/lib/libctorcuda.so: $(BUILD)/progs/lib/lib%.so: tests/progs/lib/%.c $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Isim -std=gnu11 -O1 -g -fPIC -fno-omit-frame-pointer $(WARN) -shared -o $@ $< $(PROG_LDFLAGS) -lcudart

$(BUILD)/progs/lib/libcxxsites.so: tests/progs/lib/cxxsites.cpp $(SIM_LIB)
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -Isim -std=gnu++17 -O1 -g -fPIC -fno-omit-frame-pointer $(WARN) -shared -o $@ $< $(PROG_LDFLAGS) -lcudart

$(BUILD)/progs/cxx_sites: tests/progs/cxx_sites.cpp $(BUILD)/progs/lib/libcxxsites.so
	@mkdir -p $(@D)
	$(CXX) -std=gnu++17 -O1 -g $(WARN) -o $@ $< -L$(BUILD)/progs/lib -lcxxsites -Wl,-rpath,'$$ORIGIN/lib' $(PROG_LDFLAGS)

# rtld_local and dlclose_lib must not link libcudart: they reach CUDA only through a dlopen'ed
# library.
$(BUILD)/progs/rtld_local $(BUILD)/progs/dlclose_lib: $(BUILD)/progs/%: tests/progs/%.c $(BUILD)/progs/lib/libdlcuda.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -g $(WARN) -o $@ $< -ldl

# The same program with a DT_RUNPATH of $ORIGIN/lib, given the bare name libdlcuda.so: only
# its own RUNPATH finds the library (dlopen searches its caller's: entry/dlopen.c keeps it).
$(BUILD)/progs/rtld_local_runpath: tests/progs/rtld_local.c $(BUILD)/progs/lib/libdlcuda.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -g $(WARN) -o $@ $< -ldl -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/lib'

test-build: $(PROG_LIBS) $(BUILD)/progs/rtld_local_runpath

# Linked against the toolkit's real runtime: the agent in front of the real libcudart.
$(BUILD)/progs/real_runtime: tests/progs/real_runtime.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 -O1 -g $(WARN) -o $@ $< -L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64

test-build: $(BUILD)/progs/real_runtime

# Built with -std=c99 and no _GNU_SOURCE, where <signal.h> makes signal() __sysv_signal.
$(BUILD)/progs/c99_signal: tests/progs/c99_signal.c $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) -I$(CUDA_HOME)/include -std=c99 -O1 -g $(WARN) -o $@ $< $(PROG_LDFLAGS) -lcudart

# A libdw.so.1 that lacks the dwfl API (tests/e2e/test_host_harm.py puts its folder first).
$(BUILD)/progs/fakedw/libdw.so.1: tests/progs/lib/fakedw.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -fPIC $(WARN) -shared -Wl,-soname,libdw.so.1 -o $@ $<

test-build: $(BUILD)/progs/fakedw/libdw.so.1

# A libcupti.so.13 that aborts when subscribed before the driver is initialized, or asked for a
# result string (NVIDIA's without a usable driver): tests/e2e/test_cupti.py DriverGate.
$(BUILD)/progs/strictcupti/libcupti.so.13: tests/progs/lib/strictcupti.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 -O1 -g -fPIC -fvisibility=hidden $(WARN) -shared \
	      -Wl,-soname,libcupti.so.13 -o $@ $< -ldl

test-build: $(BUILD)/progs/strictcupti/libcupti.so.13
