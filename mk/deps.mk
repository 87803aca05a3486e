# SPDX-License-Identifier: MIT
# System packages: installed once from Debian's archive, re-checked when the list changes.

DEPS_STAMP := $(BUILD)/.deps-apt

$(DEPS_STAMP): mk/apt-packages.txt mk/deps.sh
	@mkdir -p $(BUILD)
	mk/deps.sh mk/apt-packages.txt
	@touch $@

.PHONY: deps
deps: $(DEPS_STAMP)
