# SPDX-License-Identifier: MIT
# The Python package in a project-local virtualenv, and the pytest run that closes `make test`.

$(VENV_STAMP): pyproject.toml VERSION $(DEPS_STAMP)
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,lab,sim]'
	@touch $@

.PHONY: venv test-python
venv: $(VENV_STAMP)

# Two pytest-xdist workers, a file's tests on one of them (its module fixtures boot a guest
# or run a simulation once for all its tests). Guests under qemu in real time take the
# machine's slot (lab/engine.machine_slot): they never run two at once; every other figure
# is measured in virtual or simulated time, or on margins a busy host keeps (tests/README.md).
TEST_WORKERS ?= 2
test-python: $(VENV_STAMP) $(PYTEST_NEEDS)
	$(PY) -m pytest -m 'not long' -n $(TEST_WORKERS) --dist loadfile

# What `make test` leaves out to stay well under CI's time: the tests marked `long`
# (Debian 6.12's packages installed under qemu, 4-5 minutes; every scheduler installed in
# Debian's own 6.1 under qemu, 2-4 minutes; the lab's UML 6.12 booted), and the kernel
# suites in UML 6.12, whose build takes 4-5 minutes. make test installs the packages in
# 6.1, every scheduler in the lab's UML kernel, and runs the kernel suites in Debian's 6.12.
.PHONY: test-long
test-long: $(VENV_STAMP) $(PYTEST_NEEDS) $(UML_612_KERNEL) $(KMOD_UML_612)
	CONFUCIUS_TEST_KERNEL=uml-6.12 $(PY) -m pytest -q -p no:cacheprovider -m vm $(KERNEL_SUITES)
	$(PY) -m pytest -m long

# The kernel's own suites, the tc cases and the robustness suite, in the second kernel
# generation too: Debian's own 6.12 under qemu (confucius/lab/kernels.py); the run above
# boots Debian's 6.1 for them. Before it, so that its summary closes `make test`.
KERNEL_SUITES := tests/kernel/test_tc_cases.py tests/kernel/test_kernel_robustness_vm.py
.PHONY: test-kernel-6.12
test-kernel-6.12: $(VENV_STAMP) $(PYTEST_NEEDS)
	CONFUCIUS_TEST_KERNEL=qemu-6.12 $(PY) -m pytest -q -p no:cacheprovider -m vm $(KERNEL_SUITES)
C_TESTS += test-kernel-6.12
