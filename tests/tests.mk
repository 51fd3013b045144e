# tests/tests.mk: unit tests (cmocka, tests/unit/test_*.c, each linked with the CLI's readers, the
# entry layer's and the core's archives, never preloaded), target programs for end-to-end runs (tests/progs/),
# and the runner.

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_EXTRA_DEPS ?=

$(BUILD)/tests/test_%: tests/unit/test_%.c $(wildcard tests/unit/*.h) tests/fork_quiet.h $(CLI_A) $(ENTRY_A) $(CORE_A) $(UNIT_EXTRA_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=default -o $@ $< $(CLI_A) $(ENTRY_A) $(CORE_A) $(SANFLAGS) -lcmocka $(LDLIBS)

# Target programs: C and C++ programs linked against the simulated libcudart.so.13.
PROG_C_SRCS   := $(wildcard tests/progs/*.c)
PROG_CXX_SRCS := $(wildcard tests/progs/*.cpp)
PROG_BINS := $(PROG_C_SRCS:tests/progs/%.c=$(BUILD)/progs/%) $(PROG_CXX_SRCS:tests/progs/%.cpp=$(BUILD)/progs/%)
PROG_LDFLAGS = -L$(BUILD)/sim -Wl,-rpath-link,$(BUILD)/sim
PROG_EXTRA_DEPS ?=

$(BUILD)/progs/%: tests/progs/%.c tests/progs/common.h tests/fork_quiet.h $(SIM_LIB) $(PROG_EXTRA_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Isim -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $< $(PROG_LDFLAGS) -lcudart -lpthread -ldl

$(BUILD)/progs/%: tests/progs/%.cpp tests/progs/common.h tests/fork_quiet.h $(SIM_LIB) $(PROG_EXTRA_DEPS)
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -Isim -std=gnu++17 -O1 -g -fno-omit-frame-pointer $(WARN) -o $@ $< $(PROG_LDFLAGS) -lcudart -lpthread -ldl

test-build: all $(UNIT_BINS) $(PROG_BINS) $(FAULTS_LIB)

unit: test-build
	@BUILD=$(BUILD) sh tests/run.sh unit

e2e: test-build
	@BUILD=$(BUILD) sh tests/run.sh e2e

test: test-build
	@BUILD=$(BUILD) sh tests/run.sh all

.PHONY: test-build

# One end-to-end run and the CLI under valgrind memcheck (tests/memcheck.sh).
memcheck: test-build
	@BUILD=$(BUILD) sh tests/memcheck.sh

.PHONY: memcheck
