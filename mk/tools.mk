# SPDX-License-Identifier: MIT
# The traffic programs in tools/ (one Cargo workspace), built in release mode into build/cargo.
# rtflow links tools/piongcc (Pion's GCC, Go) as a static archive: its build.rs runs `go build`
# (Go: $GO, else go on PATH, else /usr/local/go/bin/go) with the modules pinned by
# tools/piongcc/go.sum, caches under build/go; without Go it stops
# with a message saying so.

CARGO_TARGET := $(abspath $(BUILD))/cargo
TOOLS_BIN    := $(CARGO_TARGET)/release
TOOLS_STAMP  := $(BUILD)/.tools

$(TOOLS_STAMP): $(shell find tools -name '*.rs' -o -name 'Cargo.toml' -o -name 'Cargo.lock' -o -name '*.go' \
                     -o -name 'go.mod' -o -name 'go.sum' 2>/dev/null)
	cargo build --release --quiet --manifest-path tools/Cargo.toml --target-dir $(CARGO_TARGET)
	@touch $@

.PHONY: tools
tools: $(TOOLS_STAMP)
PYTEST_NEEDS += $(TOOLS_STAMP)
