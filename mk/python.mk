# SPDX-License-Identifier: MIT
# The Python package in a project-local virtualenv, and the pytest run that closes `make test`.

$(VENV_STAMP): pyproject.toml VERSION $(DEPS_STAMP)
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,lab,sim]'
	@touch $@

.PHONY: venv test-python
venv: $(VENV_STAMP)

test-python: $(VENV_STAMP) $(PYTEST_NEEDS)
	$(PY) -m pytest -m 'not long'

# What `make test` leaves out to stay well under CI's time (the `long` marker): Debian
# 6.12's packages installed under qemu (4-5 minutes) and every scheduler installed in
# Debian's own 6.1 under qemu (2-4 minutes); make test installs the packages in 6.1 and
# every scheduler in the lab's UML kernel, whose configuration is another.
.PHONY: test-long
test-long: $(VENV_STAMP) $(PYTEST_NEEDS)
	$(PY) -m pytest -m long

# The kernel's own suites, the tc cases and the robustness suite, in the lab's second kernel
# generation too (UML 6.12, native: confucius/lab/kernels.py); the run above boots Debian's
# 6.1 under qemu for them. Before it, so that its summary closes `make test`.
.PHONY: test-kernel-6.12
test-kernel-6.12: $(VENV_STAMP) $(PYTEST_NEEDS)
	CONFUCIUS_TEST_KERNEL=uml-6.12 $(PY) -m pytest -q -p no:cacheprovider -m vm \
		tests/kernel/test_tc_cases.py tests/kernel/test_kernel_robustness_vm.py
C_TESTS += test-kernel-6.12
