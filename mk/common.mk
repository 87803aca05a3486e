# SPDX-License-Identifier: MIT
# Paths and tools shared by every fragment.

BUILD  := build
VENV   := .venv
PY     := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed
CC     ?= cc
CLANG  ?= clang

# The C suites that `make test` runs before pytest; fragments append to it.
C_TESTS :=
# What pytest needs built before it starts; fragments append to it.
PYTEST_NEEDS :=
