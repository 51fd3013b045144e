# syncspy: `make` builds build/libsyncspy.so and build/syncspy; `make test` runs every test;
# `make demo` runs the bundled example on the simulated CUDA device and prints its report.
# SAN=asan (ASan+UBSan) or SAN=tsan builds everything into build-asan/ or build-tsan/.

CUDA_HOME ?= /usr/local/cuda
SAN ?=
BUILD ?= build$(if $(SAN),-$(SAN))
CC ?= gcc
CXX ?= g++
WERROR ?= -Werror
OPT ?= -O2

ifeq ($(SAN),asan)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SAN),tsan)
SANFLAGS := -fsanitize=thread
else ifneq ($(SAN),)
$(error SAN must be asan or tsan, not '$(SAN)')
endif

UNWIND_INC := /usr/include/$(shell $(CC) -dumpmachine)
CPPFLAGS := -I. -I$(CUDA_HOME)/include -D_GNU_SOURCE
WARN := -Wall -Wextra $(WERROR) -Wshadow -Wno-missing-field-initializers
CFLAGS := -std=gnu11 $(OPT) -g -fPIC -fvisibility=hidden $(WARN) $(SANFLAGS)
CXXFLAGS := -std=gnu++17 $(OPT) -g -fPIC $(WARN) $(SANFLAGS)
# The agent dlopens libunwind (collectors/native_stack.c says why): only the tests link it.
LIB_LDLIBS := -ldl -lpthread -lm
LDLIBS := -lunwind $(LIB_LDLIBS)

# --- the layers ----------------------------------------------------------------------------
# Inside the target process: entry/ (every symbol the loader binds) -> agent/ (the core) ->
# output/ (in-process writers), collectors/ called by the agent, common/ under all of them. The
# CLI (cli/) is a program of its own that reads files and links only output/'s renderers.
CORE_SRCS := $(wildcard common/*.c) $(wildcard agent/*/*.c) $(wildcard collectors/*.c) \
             $(wildcard output/*.c)
OUTPUT_SRCS := $(wildcard output/*.c)
ENTRY_SRCS := $(wildcard entry/*.c)
CLI_SRCS  := $(filter-out cli/main.c,$(wildcard cli/*.c))

CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
OUTPUT_OBJS := $(OUTPUT_SRCS:%.c=$(BUILD)/obj/%.o)
ENTRY_OBJS := $(ENTRY_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_MAIN_OBJ := $(BUILD)/obj/cli/main.o

LIB   := $(BUILD)/libsyncspy.so
CORE_A := $(BUILD)/libsyncspy_core.a
ENTRY_A := $(BUILD)/libsyncspy_entry.a
OUTPUT_A := $(BUILD)/libsyncspy_output.a
CLI_A := $(BUILD)/libsyncspy_cli.a
CLI   := $(BUILD)/syncspy
DEPS_STAMP := $(BUILD)/.deps-ok

all: $(LIB) $(CLI) sim man completion

$(DEPS_STAMP): scripts/deps.sh
	@CUDA_HOME=$(CUDA_HOME) sh scripts/deps.sh
	@mkdir -p $(@D) && touch $@

$(BUILD)/obj/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# A file as the lines of a C string literal (backslashes and quotes escaped, each line closed by \n).
EMBED_AS_C_STRING = sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/'

# The agent's own Python (agent/step/autograd_attr.py, agent/step/dynamo_hide.py), embedded in the library
# as C strings.
PY_EMBED := $(BUILD)/gen/autograd_attr.inc $(BUILD)/gen/dynamo_hide.inc
$(BUILD)/gen/%.inc: agent/step/%.py
	@mkdir -p $(@D)
	$(EMBED_AS_C_STRING) $< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/agent/step/pyhook.o $(BUILD)/obj-faults/agent/step/pyhook.o: $(PY_EMBED)
$(BUILD)/obj/agent/step/pyhook.o $(BUILD)/obj-faults/agent/step/pyhook.o: CPPFLAGS += -I$(BUILD)/gen

# CUPTI's result names for entry/cupti.c's notices, from the toolkit's cupti_result.h (every
# `CUPTI_<NAME> = <code>,` line but the enum's FORCE_INT end): CUPTI itself is never asked.
CUPTI_RESULT_H := $(firstword $(wildcard $(CUDA_HOME)/include/cupti_result.h $(CUDA_HOME)/extras/CUPTI/include/cupti_result.h))
CUPTI_NAMES := $(BUILD)/gen/cupti_result_names.inc
$(CUPTI_NAMES): $(CUPTI_RESULT_H)
	@mkdir -p $(@D)
	sed -n 's/^ *\(CUPTI_[A-Z0-9_]*\) *= *\([0-9][0-9]*\),.*/    {\2, "\1"},/p' $< | \
	    grep -v FORCE_INT > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/entry/cupti.o $(BUILD)/obj-faults/entry/cupti.o: $(CUPTI_NAMES)
$(BUILD)/obj/entry/cupti.o $(BUILD)/obj-faults/entry/cupti.o: CPPFLAGS += -I$(BUILD)/gen

# The page of `syncspy html` (cli/html/page.css, page.js), embedded in the program the same way.
HTML_EMBED := $(BUILD)/gen/html_page.css.inc $(BUILD)/gen/html_page.js.inc
$(BUILD)/gen/html_%.inc: cli/html/%
	@mkdir -p $(@D)
	$(EMBED_AS_C_STRING) $< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/cli/html.o: $(HTML_EMBED)
$(BUILD)/obj/cli/html.o: CPPFLAGS += -I$(BUILD)/gen

$(CORE_A): $(CORE_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(ENTRY_A): $(ENTRY_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(OUTPUT_A): $(OUTPUT_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(CLI_A): $(CLI_OBJS)
	@rm -f $@
	ar rcs $@ $^

# Only the CUDA entry points and the public API are exported (-fvisibility=hidden plus
# SYNCSPY_EXPORT); no symbol version on them (the loader would skip them); libcudart is never
# linked: the real functions are found at run time.
$(LIB): $(ENTRY_OBJS) $(CORE_A)
	$(CC) -shared -o $@ $(ENTRY_OBJS) -Wl,--whole-archive $(CORE_A) -Wl,--no-whole-archive \
	      -Wl,--no-undefined -Wl,-z,nodelete -Wl,-z,now $(SANFLAGS) $(LIB_LDLIBS)

# The fault-injection build of the agent for the reliability tests (output/faults.c; see
# output/io.h): the same sources with -DSYNCSPY_FAULTS.
FAULTS_LIB := $(BUILD)/libsyncspy-faults.so
FAULTS_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj-faults/%.o) $(ENTRY_SRCS:%.c=$(BUILD)/obj-faults/%.o)

$(BUILD)/obj-faults/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -DSYNCSPY_FAULTS $(CFLAGS) -MMD -MP -c $< -o $@

$(FAULTS_LIB): $(FAULTS_OBJS)
	$(CC) -shared -o $@ $(FAULTS_OBJS) -Wl,--no-undefined -Wl,-z,nodelete -Wl,-z,now $(SANFLAGS) $(LIB_LDLIBS)

# The CLI: its own objects, output/'s renderers, and of the agent only its pure parser of the
# SYNCSPY_* variables (output/config.c, with the schedule's: `syncspy run` checks its options
# with the very code the agent checks the environment with).
$(CLI): $(CLI_MAIN_OBJ) $(CLI_A) $(OUTPUT_A)
	$(CC) -o $@ $(CLI_MAIN_OBJ) $(CLI_A) $(OUTPUT_A) $(SANFLAGS) -ldl -lm

# The manual page and the shell completion scripts, printed by the program from the one table of
# its commands and options (cli/commands.c), as its --help is: `man -l build/syncspy.1`.
MAN_PAGE := $(BUILD)/syncspy.1
COMPLETIONS := $(BUILD)/completion/syncspy.bash $(BUILD)/completion/_syncspy
$(MAN_PAGE): $(CLI)
	$(CLI) help --man > $@.tmp && mv $@.tmp $@
$(BUILD)/completion/syncspy.bash: $(CLI)
	@mkdir -p $(@D)
	$(CLI) completion bash > $@.tmp && mv $@.tmp $@
$(BUILD)/completion/_syncspy: $(CLI)
	@mkdir -p $(@D)
	$(CLI) completion zsh > $@.tmp && mv $@.tmp $@
man: $(MAN_PAGE)
completion: $(COMPLETIONS)

# The wheel (scripts/wheel.py): the agent, the program, the Python module and the libunwind the
# agent loads, under their own names, and the simulated devices: CUDA 13's (`make sim`, for
# `syncspy run --sim`) and CUDA 12's (`make sim12`, for `--sim=12`: PyPI's torch 2.10 and
# earlier), which `make wheel` builds too, downloading its headers the first time (about 600 MB,
# sim/cuda12.mk); WHEEL_SIM12=no packs a wheel without it where that cannot be had (offline:
# its `--sim=12` then says the device is missing). `pip install dist/syncspy-*.whl`. From the
# plain build only.
WHEEL_DIR ?= dist
WHEEL_SIM12 ?= yes
wheel: $(LIB) $(CLI) sim
	$(if $(SAN),$(error make wheel packs the plain build, not SAN=$(SAN)))
	$(if $(filter-out yes no,$(WHEEL_SIM12)),$(error WHEEL_SIM12=$(WHEEL_SIM12): yes (the default) or no))
	@$(if $(filter yes,$(WHEEL_SIM12)),$(MAKE) --no-print-directory sim12 || { echo "wheel: the CUDA 12 \
	    simulated device could not be built (above); make wheel WHEEL_SIM12=no packs one without it" >&2; exit 1; })
	@python3 scripts/wheel.py --lib $(LIB) --cli $(CLI) --sim $(BUILD)/sim \
	    $(if $(filter yes,$(WHEEL_SIM12)),--sim12 $(BUILD)/sim12) --python python/syncspy \
	    --out $(WHEEL_DIR) --work $(BUILD)/wheel --cc $(CC)

-include $(wildcard sim/*.mk)
-include $(wildcard tests/*.mk)
-include $(wildcard examples/*.mk)
include scripts/lint.mk
-include $(CORE_OBJS:.o=.d) $(ENTRY_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(CLI_MAIN_OBJ:.o=.d) $(FAULTS_OBJS:.o=.d)

clean:
	rm -rf build build-asan build-tsan dist

.PHONY: all clean sim test unit e2e demo bench wheel man completion
.DELETE_ON_ERROR:
