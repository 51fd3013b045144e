# scripts/lint.mk: the formatters and linters (docs/CONTRIBUTING.md). `make format` rewrites the C
# and page.js in place; `make lint` checks without writing: format-check (clang-format with
# .clang-format, js-beautify with cli/html/.jsbeautifyrc), lint-js (eslint, cli/html/.eslintrc.json)
# and lint-py (ruff, ruff.toml). Debian's tools (scripts/deps.sh), ruff pinned from PyPI.

CLANG_FORMAT ?= clang-format
# the house's C: the layers, the simulated device, the unit tests and the benchmarks
FORMAT_DIRS := agent entry collectors output cli common sim tests/unit tests/fork_quiet.h bench
FORMAT_C = $(sort $(shell find $(FORMAT_DIRS) -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \)))
FORMAT_JS := cli/html/page.js
# Debian's node tools live in /usr/share/nodejs, where a node that is not Debian's (a machine's
# own NodeSource node) does not look by itself
DEBIAN_NODE := NODE_PATH=/usr/share/nodejs
JS_BEAUTIFY := $(DEBIAN_NODE) js-beautify-js --config cli/html/.jsbeautifyrc
ESLINT := $(DEBIAN_NODE) eslint
LINT_VENV := build/lint-venv
RUFF := $(LINT_VENV)/bin/ruff

format:
	$(CLANG_FORMAT) -i --style=file $(FORMAT_C)
	$(JS_BEAUTIFY) --replace $(FORMAT_JS)

# Lists each file that `make format` would change, and fails when there is one.
format-check:
	@n=0; total=0; files=""; \
	for f in $(FORMAT_C); do total=$$((total + 1)); \
	    $(CLANG_FORMAT) --dry-run -Werror --style=file "$$f" >/dev/null 2>&1 || { n=$$((n + 1)); files="$$files $$f"; }; \
	done; \
	out=$$(mktemp); \
	for f in $(FORMAT_JS); do total=$$((total + 1)); \
	    { $(JS_BEAUTIFY) "$$f" > "$$out" && cmp -s "$$f" "$$out"; } || { n=$$((n + 1)); files="$$files $$f"; }; \
	done; \
	rm -f "$$out"; \
	if [ $$n = 0 ]; then echo "format-check: $$total files, all formatted"; \
	else for f in $$files; do echo "format-check: $$f is not formatted (make format)"; done; \
	    echo "format-check: $$n of $$total files are not formatted: run make format" >&2; exit 1; fi

lint-js:
	$(ESLINT) $(FORMAT_JS)

$(RUFF): scripts/requirements-lint.txt
	@test -x $(LINT_VENV)/bin/python || python3 -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r $<
	@touch $@

lint-py: $(RUFF)
	$(RUFF) check --no-cache .

lint: format-check lint-js lint-py

.PHONY: format format-check lint-js lint-py lint
