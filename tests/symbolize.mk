# tests/symbolize.mk: fixtures for test_symbolize (tests/data/sym/symlib.cpp built -g -O1 as a
# shared library; a --strip-all copy; a stripped copy whose symbols and DWARF live in a
# .gnu_debuglink file next to it; copies whose DWARF is version 4, zlib-compressed (gABI), and
# version 4 in old-style .zdebug_ sections) and the test's own rule (PIE, fixture folder compiled
# in).

SYM_FIXTURE_DIR := $(BUILD)/tests/sym
SYM_FIXTURES := $(SYM_FIXTURE_DIR)/libsymlib.so $(SYM_FIXTURE_DIR)/libsymlib_stripped.so \
                $(SYM_FIXTURE_DIR)/symlib.debug $(SYM_FIXTURE_DIR)/libsymlib_dbg.so \
                $(SYM_FIXTURE_DIR)/libsymlib_dwarf4.so $(SYM_FIXTURE_DIR)/libsymlib_zlib.so \
                $(SYM_FIXTURE_DIR)/libsymlib_zgnu.so
STRIP ?= strip
OBJCOPY ?= objcopy

# -fno-toplevel-reorder keeps the asm function after the C++ ones (see symlib.cpp);
# -fno-optimize-sibling-calls keeps each capture call a real call.
$(SYM_FIXTURE_DIR)/libsymlib.so: tests/data/sym/symlib.cpp
	@mkdir -p $(@D)
	$(CXX) -std=gnu++17 -g -O1 -fPIC -shared -fno-toplevel-reorder -fno-optimize-sibling-calls \
	       $(WARN) -o $@ $<

$(SYM_FIXTURE_DIR)/libsymlib_dwarf4.so: tests/data/sym/symlib.cpp
	@mkdir -p $(@D)
	$(CXX) -std=gnu++17 -gdwarf-4 -O1 -fPIC -shared -fno-toplevel-reorder \
	       -fno-optimize-sibling-calls $(WARN) -o $@ $<

$(SYM_FIXTURE_DIR)/libsymlib_zlib.so: $(SYM_FIXTURE_DIR)/libsymlib.so
	$(OBJCOPY) --compress-debug-sections=zlib-gabi $< $@

$(SYM_FIXTURE_DIR)/libsymlib_zgnu.so: $(SYM_FIXTURE_DIR)/libsymlib_dwarf4.so
	$(OBJCOPY) --compress-debug-sections=zlib-gnu $< $@

$(SYM_FIXTURE_DIR)/libsymlib_stripped.so: $(SYM_FIXTURE_DIR)/libsymlib.so
	$(STRIP) --strip-all -o $@ $<

$(SYM_FIXTURE_DIR)/symlib.debug: $(SYM_FIXTURE_DIR)/libsymlib.so
	$(OBJCOPY) --only-keep-debug $< $@

$(SYM_FIXTURE_DIR)/libsymlib_dbg.so: $(SYM_FIXTURE_DIR)/libsymlib.so $(SYM_FIXTURE_DIR)/symlib.debug
	$(STRIP) --strip-all -o $@ $<
	cd $(@D) && $(OBJCOPY) --add-gnu-debuglink=symlib.debug $(@F)

$(BUILD)/tests/test_symbolize: tests/unit/test_symbolize.c $(CORE_A) $(SYM_FIXTURES)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=default -DSYM_FIXTURE_DIR='"$(abspath $(SYM_FIXTURE_DIR))"' \
	      -pie -o $@ $< $(CORE_A) $(SANFLAGS) -lcmocka $(LDLIBS)
