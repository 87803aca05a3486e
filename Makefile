SHELL := /bin/bash
# SPDX-License-Identifier: MIT
# Confucius: one Makefile, one fragment per part in mk/. `make help` lists the targets.

.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

include mk/common.mk
include mk/deps.mk
include mk/core.mk
-include mk/kernel.mk
-include mk/tc.mk
-include mk/lab.mk
-include mk/tools.mk
# Last: its test rule lists PYTEST_NEEDS, which the fragments above fill.
include mk/python.mk

.PHONY: help demo test clean

help:
	@echo "make demo        run the main job with sensible defaults and show the result"
	@echo "make test        run the whole test suite (does its own set-up)"
	@echo "make bench-core  per-packet cost of the scheduling core, per mode and flow count"
	@echo "make clean       remove build products (keeps the virtualenv)"

# C suites first (each prints its own summary), then pytest, which closes the run.
test: $(C_TESTS)
	$(MAKE) --no-print-directory test-python

clean:
	rm -rf $(BUILD)

# Until the laboratory lands: the motivating example through the core (seed 000 Fig. 4(b) vs 4(d)).
demo: $(VENV_STAMP) $(CORE_BUILD)/share_trace
	$(VENV)/bin/confucius core demo --out results/core-demo/shares.png
