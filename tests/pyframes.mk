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

# Debian unstable's CPythons that scripts/debian-cpython.sh laid out under $(BUILD)/cpython-X.Y
# (3.14: neither pyenv nor this Debian release has it; `make debian-cpython`): linked against
# their libpython with their own loader and C library (a newer one than this machine's), and
# told where their standard library is (PYFRAMES_TEST_HOME).
PY_DEBIAN_ROOTS := $(patsubst %/usr/bin/,%,$(dir $(wildcard $(BUILD)/cpython-3.*/usr/bin/python3.*[0-9])))
PY_DEBIAN_BINS := $(foreach d,$(PY_DEBIAN_ROOTS),$(BUILD)/tests/pyversions/test_pyframes-debian-$(notdir $(d)))
debian_lib = $(abspath $(1))/usr/lib/x86_64-linux-gnu
DEBIAN_PY_LDFLAGS = -L$(call debian_lib,$(1)) -Wl,--disable-new-dtags -Wl,-rpath,$(call debian_lib,$(1)) \
    -Wl,--allow-shlib-undefined -Wl,--dynamic-linker=$(call debian_lib,$(1))/ld-linux-x86-64.so.2

define py_debian_rule
$(BUILD)/tests/pyversions/test_pyframes-debian-$(notdir $(1)): tests/unit/test_pyframes.c $(CORE_A)
	@mkdir -p $$(@D)
	$(CC) $(CPPFLAGS) -I$(firstword $(wildcard $(1)/usr/include/python3.*)) -I$(1)/usr/include $(CFLAGS) \
	      -DPYFRAMES_TEST_HOME='"$(abspath $(1))/usr"' -fvisibility=default -o $$@ $$< $(CORE_A) $(SANFLAGS) \
	      -lcmocka $(call DEBIAN_PY_LDFLAGS,$(1)) -l$(notdir $(firstword $(wildcard $(1)/usr/include/python3.*))) -lm $(LDLIBS)
endef
$(foreach d,$(PY_DEBIAN_ROOTS),$(eval $(call py_debian_rule,$(d))))

test-build: $(PY_DEBIAN_BINS)

debian-cpython:
	@sh scripts/debian-cpython.sh 3.14 $(BUILD)/cpython-3.14

.PHONY: debian-cpython
