# SPDX-License-Identifier: MIT
# The lab VM (confucius/lab/vm.py): Debian's kernel under qemu. The uncompressed kernel,
# the initramfs and the KVM probe's verdict are cached in build/lab/ by the Python code
# itself, rebuilt when their inputs change; `make lab` prepares them ahead of the tests.

.PHONY: lab lab-shell test-lab

lab: $(VENV_STAMP)
	$(PY) -m confucius lab vm info

lab-shell: lab
	$(PY) -m confucius lab vm shell

test-lab: lab
	$(PY) -m pytest tests/lab

PYTEST_NEEDS += lab
