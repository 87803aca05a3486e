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

# The lab's second kernel generation under qemu: Debian's 6.12 image (bookworm-security),
# the version of the headers our module for it is built against (build/kernel-6.12,
# mk/kernel.mk), unpacked into build/qemu-6.12 by kernel/debian-image.sh.
QEMU_612 := $(BUILD)/qemu-6.12/vmlinuz
$(QEMU_612): kernel/debian-image.sh mk/private-apt.sh $(KTREES)/6.12/.ready
	kernel/debian-image.sh $(firstword $(wildcard $(KTREES)/6.12/debs/linux-headers-*-amd64_*.deb)) \
		$(KTREES)/apt $(@D)

.PHONY: qemu-6.12 kmod-6.12
qemu-6.12: $(QEMU_612)
kmod-6.12: $(BUILD)/kernel-6.12/sch_confucius.ko
PYTEST_NEEDS += $(QEMU_612) $(BUILD)/kernel-6.12/sch_confucius.ko
