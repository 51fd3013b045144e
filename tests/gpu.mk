# tests/gpu.mk: `make gpu-bundle` puts into $(BUILD)/gpu-bundle/ what the agent needs on a GPU
# machine that may lack this machine's Debian packages (scripts/gpu-check.sh, run there with the
# build folder carried along, reads it):
#   *.so.*    the shared libraries $(LIB) and $(CLI) load that are not glibc's (libunwind.so.8, which
#             the agent dlopens, and its own dependencies, as ldd resolves them here), copied under their sonames; the
#             check puts a link to each one the target lacks on LD_LIBRARY_PATH, never the others
#   libunwind.so   a link to libunwind.so.8, for -lunwind when the target builds the agent itself
#   include/  libunwind's and uthash's headers, for that build (the target may lack the -dev packages)
#   MANIFEST  where each file came from, and the newest glibc symbol version the agent needs
# Included by the top Makefile (BUILD, CC, CPPFLAGS, LIB, CLI).

GPU_BUNDLE := $(BUILD)/gpu-bundle
# glibc's own libraries (and the vDSO), present on every target
GPU_BUNDLE_SKIP := ^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl)\.so

# the libunwind.so.8 the agent's dlopen finds here (collectors/native_stack.c)
GPU_UNWIND = $(shell $(CC) -print-file-name=libunwind.so.8)

gpu-bundle: $(LIB) $(CLI)
	@rm -rf $(GPU_BUNDLE)
	@mkdir -p $(GPU_BUNDLE)/include
	@{ ldd $(LIB) $(CLI) $(GPU_UNWIND); echo "libunwind.so.8 => $(GPU_UNWIND) (0)"; } | \
	    awk '$$2 == "=>" && $$3 ~ /^\// {print $$1, $$3}' | sort -u | \
	    grep -Ev '$(GPU_BUNDLE_SKIP)' > $(GPU_BUNDLE)/.libs
	@while read -r name path; do \
	    cp -L "$$path" $(GPU_BUNDLE)/"$$name" || exit 1; \
	    echo "$$name <- $$path" >> $(GPU_BUNDLE)/MANIFEST; \
	done < $(GPU_BUNDLE)/.libs
	@rm -f $(GPU_BUNDLE)/.libs
	@test -f $(GPU_BUNDLE)/libunwind.so.8 || { echo "gpu-bundle: $(CC) -print-file-name finds no libunwind.so.8" >&2; exit 1; }
	@ln -sf libunwind.so.8 $(GPU_BUNDLE)/libunwind.so
	@printf '#include <libunwind.h>\n#include <uthash.h>\n' | \
	    $(CC) $(CPPFLAGS) -M -x c - | tr ' \\' '\n\n' | grep -E '/(libunwind[^/]*|uthash)\.h$$' | sort -u | \
	    while read -r h; do cp -L "$$h" $(GPU_BUNDLE)/include/ || exit 1; \
	        echo "include/$$(basename "$$h") <- $$h" >> $(GPU_BUNDLE)/MANIFEST; done
	@test -f $(GPU_BUNDLE)/include/libunwind.h && test -f $(GPU_BUNDLE)/include/uthash.h
	@echo "glibc needed: $$(objdump -T $(LIB) $(CLI) | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)" >> $(GPU_BUNDLE)/MANIFEST
	@echo "gpu-bundle: $(GPU_BUNDLE): $$(cd $(GPU_BUNDLE) && ls *.so.* | tr '\n' ' ')+ include/ ($$(ls $(GPU_BUNDLE)/include | wc -l) headers)"

.PHONY: gpu-bundle
