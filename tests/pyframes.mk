# tests/pyframes.mk: the frame-reader unit test embeds the system's CPython (python3-dev).
PY_CONFIG ?= $(firstword $(wildcard /usr/bin/python3-config) python3-config)
PY_INCLUDES := $(shell $(PY_CONFIG) --includes 2>/dev/null)
PY_EMBED_LDFLAGS := $(shell $(PY_CONFIG) --embed --ldflags 2>/dev/null)

$(BUILD)/tests/test_pyframes: tests/unit/test_pyframes.c $(CORE_A)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PY_INCLUDES) $(CFLAGS) -fvisibility=default -o $@ $< $(CORE_A) $(SANFLAGS) -lcmocka $(PY_EMBED_LDFLAGS) $(LDLIBS)

# The same test against every other CPython this machine has with a shared libpython (pyenv's
# 3.9 to 3.13 on the development machines): built into $(BUILD)/tests/pyversions/ and run by
# tests/run.sh with the unit tests.
PYENV_ROOT ?= $(HOME)/.pyenv
PY_OTHER_PREFIXES := $(sort $(foreach d,$(wildcard $(PYENV_ROOT)/versions/3.*),\
    $(if $(wildcard $(d)/lib/libpython3.9.so $(d)/lib/libpython3.1[0-9].so),$(d))))
PY_OTHER_BINS := $(foreach d,$(PY_OTHER_PREFIXES),$(BUILD)/tests/pyversions/test_pyframes-$(notdir $(d)))

define py_other_rule
$(BUILD)/tests/pyversions/test_pyframes-$(notdir $(1)): tests/unit/test_pyframes.c $(CORE_A)
	@mkdir -p $$(@D)
	$(CC) $(CPPFLAGS) -I$(firstword $(wildcard $(1)/include/python3.*)) $(CFLAGS) -fvisibility=default -o $$@ $$< $(CORE_A) $(SANFLAGS) -lcmocka \
	      -L$(1)/lib -Wl,-rpath,$(1)/lib -l$(notdir $(firstword $(wildcard $(1)/include/python3.*))) -lm $(LDLIBS)
endef
$(foreach d,$(PY_OTHER_PREFIXES),$(eval $(call py_other_rule,$(d))))

test-build: $(PY_OTHER_BINS)
