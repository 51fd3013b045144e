# tests/bench.mk: `make bench` measures what the agent costs (bench/, docs/PERFORMANCE.md): the
# bench programs, a null CUDA runtime (the agent's own cost without the simulator's), the trace
# generator and reader of the CLI benchmark; bench/run.py runs everything (about 6 min on 2
# cores, 4 of them the real-torch headline, bench/torch_loop.py, which needs `make torch-venv`)
# and ends with a table (target, measured, ok/MISSED); then syncspy against its peers on the same
# loop (bench/peers.py: torch.profiler, set_sync_debug_mode, py-spy from `make pyspy-venv`, which
# `make bench` makes first; 15 min at a load of 13 on 2 cores). Not part of `make test`.
# BENCH_ARGS passes options to bench/run.py (e.g. BENCH_ARGS=--quick, --only launch,sync).
# Included by the top Makefile (BUILD, CC, CPPFLAGS, WARN, LIB, CLI, SIM_LIB).

BENCH_DIR    := $(BUILD)/bench
BENCH_CUDA   := $(BENCH_DIR)/bench_cuda
BENCH_NULLRT := $(BENCH_DIR)/null/libcudart.so.13
BENCH_PYLIB  := $(BENCH_DIR)/libbenchlib.so
BENCH_CGWIN  := $(BENCH_DIR)/libcgwindow.so
BENCH_TOOLS  := $(BENCH_DIR)/gentrace $(BENCH_DIR)/tracestat $(BENCH_DIR)/peakrss
BENCH_ARGS   ?=
BENCH_CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer $(WARN)

$(BENCH_CUDA): bench/bench_cuda.c $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Isim $(BENCH_CFLAGS) -o $@ $< -L$(BUILD)/sim -Wl,-rpath-link,$(BUILD)/sim -lcudart -lpthread -ldl

# The simulator's SONAME and version node, so the bench programs load either one
# (LD_LIBRARY_PATH picks).
$(BENCH_NULLRT): bench/nullcudart.c sim/libcudart.map
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ $< \
	      -Wl,-soname,libcudart.so.13 -Wl,--version-script=sim/libcudart.map

$(BENCH_PYLIB): bench/benchlib.c $(SIM_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ $< \
	      -L$(BUILD)/sim -Wl,-rpath-link,$(BUILD)/sim -lcudart -ldl

# bench/step_end.py's instruction window (valgrind's client requests; nothing outside valgrind).
$(BENCH_CGWIN): bench/callgrind_window.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ $<

$(BENCH_DIR)/%: bench/%.c output/trace_format.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(BENCH_CFLAGS) -o $@ $<

bench-build: $(LIB) $(CLI) $(SIM_LIB) $(BENCH_CUDA) $(BENCH_NULLRT) $(BENCH_PYLIB) $(BENCH_CGWIN) $(BENCH_TOOLS)

bench: bench-build pyspy-venv
	python3 bench/run.py --build $(BUILD) $(BENCH_ARGS)

.PHONY: bench bench-build
