# tests/pylayout.mk: test_pylayout is compiled against a local CPython's own headers (-isystem,
# Py_BUILD_CORE inside the test), whose offsetof() values are the reference for the tables in
# collectors/pylayout.c. Without Python headers the test still builds and skips those checks.
# `make pylayout-versions` runs the same test against every CPython found in
# PYLAYOUT_INCLUDES (by default the pyenv ones), linking libpython for 3.13+ to also check the
# live _PyRuntime.

PYLAYOUT_PYTHON ?= python3
ifeq ($(origin PYLAYOUT_PY_INCLUDE),undefined)
PYLAYOUT_PY_INCLUDE := $(shell $(PYLAYOUT_PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
endif
PYLAYOUT_PY_CFLAGS := $(if $(wildcard $(PYLAYOUT_PY_INCLUDE)/Python.h),-isystem $(PYLAYOUT_PY_INCLUDE))

$(BUILD)/tests/test_pylayout: tests/unit/test_pylayout.c $(CORE_A) $(UNIT_EXTRA_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PYLAYOUT_PY_CFLAGS) $(CFLAGS) -fvisibility=default -o $@ $< $(CORE_A) \
	      $(SANFLAGS) -lcmocka $(LDLIBS)

PYLAYOUT_INCLUDES ?= $(wildcard $(HOME)/.pyenv/versions/3.*/include/python3.9 \
                                $(HOME)/.pyenv/versions/3.*/include/python3.1[0-9] \
                                $(BUILD)/cpython-3.*/usr/include/python3.1[0-9])

# For each include dir .../include/python3.X: build, and for 3.13+ with a libpython3.X.so in
# .../lib, link it (rpath) and define PYLAYOUT_TEST_LIVE_RUNTIME. A Debian tree of
# scripts/debian-cpython.sh (.../usr/include/python3.X) has its libpython, and the loader and C
# library it needs, in .../usr/lib/x86_64-linux-gnu (tests/pyframes.mk says why).
pylayout-versions: $(CORE_A)
	@mkdir -p $(BUILD)/tests/pylayout-versions
	@set -e; for inc in $(PYLAYOUT_INCLUDES); do \
	    ver=$$(basename $$inc); minor=$${ver#python3.}; lib=$$(dirname $$(dirname $$inc))/lib; \
	    live=""; \
	    if [ "$$minor" -ge 13 ] && [ -e "$$lib/lib$$ver.so" ]; then \
	        live="-DPYLAYOUT_TEST_LIVE_RUNTIME -L$$lib -Wl,-rpath,$$lib -l$$ver"; \
	    elif [ "$$minor" -ge 13 ] && [ -e "$$lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ]; then \
	        deb=$$(cd $$lib/x86_64-linux-gnu && pwd); \
	        live="-I$$(dirname $$inc) -DPYLAYOUT_TEST_LIVE_RUNTIME -L$$deb -Wl,--disable-new-dtags \
	              -Wl,-rpath,$$deb -Wl,--allow-shlib-undefined -Wl,--dynamic-linker=$$deb/ld-linux-x86-64.so.2 -l$$ver"; \
	    fi; \
	    out=$(BUILD)/tests/pylayout-versions/test_pylayout-$$(echo $$inc | tr / _); \
	    echo "pylayout: $$inc $${live:+(live _PyRuntime)}"; \
	    $(CC) $(CPPFLAGS) -isystem $$inc $(CFLAGS) -fvisibility=default -o $$out \
	          tests/unit/test_pylayout.c $(CORE_A) $(SANFLAGS) $$live -lcmocka $(LDLIBS); \
	    $$out; \
	done

.PHONY: pylayout-versions
