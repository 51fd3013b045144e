# tests/fuzz.mk: `make fuzz` builds the libFuzzer target of the trace.bin reader (clang,
# -fsanitize=fuzzer,address,undefined) into $(BUILD)/fuzz/ and runs it for FUZZ_SECONDS
# (default 30) from the seed corpus tests/fuzz/corpus/trace_read/; a crash fails the target and
# leaves its input in $(BUILD)/fuzz/ (add it to the seed corpus once fixed).

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 30
FUZZ_RSS_MB ?= 1024
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SRCS := $(CLI_SRCS) $(OUTPUT_SRCS)
FUZZ_FLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=undefined -fno-omit-frame-pointer -D_GNU_SOURCE -I. -I$(BUILD)/gen \
              -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers

$(FUZZ_DIR)/fuzz_trace_read: tests/fuzz/fuzz_trace_read.c $(FUZZ_SRCS) $(wildcard output/*.h cli/*.h) $(HTML_EMBED)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_SRCS)

fuzz: $(FUZZ_DIR)/fuzz_trace_read
	@mkdir -p $(FUZZ_DIR)/corpus
	$< -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=$(FUZZ_RSS_MB) -print_final_stats=1 \
	   -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_DIR)/corpus tests/fuzz/corpus/trace_read

.PHONY: fuzz
