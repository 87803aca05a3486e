# SPDX-License-Identifier: MIT
# The lab's User-Mode Linux kernels (confucius/lab/uml.py): Debian's kernel source built
# for ARCH=um by kernel/uml/build.sh with the options of kernel/uml/uml.config and the
# patches in kernel/uml/patches/, for each kernel generation the lab runs: 6.1 (Debian 12)
# in build/uml/ and 6.12 (Debian 13, OpenWrt 25.12; Debian 12's bookworm-security archive
# carries its source) in build/uml-6.12/. Rebuilt when one of those or the Debian source
# changes (about 6 minutes on 2 cores each); the tree stays there for modules.

UML_BUILD  := $(BUILD)/uml
UML_KERNEL := $(UML_BUILD)/linux
UML_TREE   := $(UML_BUILD)/src
UML_SOURCE := /usr/src/linux-source-6.1.tar.xz
UML_INPUTS := kernel/uml/build.sh kernel/uml/uml.config $(wildcard kernel/uml/patches/*.patch) \
              $(wildcard $(UML_SOURCE))

$(UML_KERNEL): $(UML_INPUTS) | $(DEPS_STAMP)
	JOBS=2 nice kernel/uml/build.sh $(UML_BUILD)

UML_612_BUILD  := $(BUILD)/uml-6.12
UML_612_KERNEL := $(UML_612_BUILD)/linux
UML_612_TREE   := $(UML_612_BUILD)/src
UML_612_SOURCE := /usr/src/linux-source-6.12.tar.xz

$(UML_612_KERNEL): $(filter-out $(UML_SOURCE),$(UML_INPUTS)) $(wildcard $(UML_612_SOURCE)) | $(DEPS_STAMP)
	UML_SOURCE_TARBALL=$(UML_612_SOURCE) JOBS=2 nice kernel/uml/build.sh $(UML_612_BUILD)

.PHONY: uml uml-6.12
uml: $(UML_KERNEL)
uml-6.12: $(UML_612_KERNEL)
# UML 6.12 is make test-long's (mk/python.mk): make test runs Debian's own 6.12 under qemu.
PYTEST_NEEDS += $(UML_KERNEL)

# The same kernel with the kernel community's debug checkers (KASAN, lockdep, kmemleak,
# UBSAN, debug objects: kernel/uml/debug.config and debug.patch), in build/uml-debug/;
# about 13 minutes of CPU: 6-7 minutes on two idle cores, 51 on a busy host
# (vm/README.md). The tc cases, the robustness suite and the soak run in it
# (`make soak`, mk/kernel.mk). Not part of make test.
UML_DEBUG_BUILD  := $(BUILD)/uml-debug
UML_DEBUG_KERNEL := $(UML_DEBUG_BUILD)/linux
UML_DEBUG_TREE   := $(UML_DEBUG_BUILD)/src

$(UML_DEBUG_KERNEL): $(UML_INPUTS) kernel/uml/debug.config kernel/uml/debug.patch | $(DEPS_STAMP)
	JOBS=2 nice kernel/uml/build.sh $(UML_DEBUG_BUILD) kernel/uml/debug.config

.PHONY: uml-debug debug-kernel
uml-debug: $(UML_DEBUG_KERNEL)
# Issue 15's debug kernels: this one, fast and native, and the x86_64 one under qemu
# with SMP and DEBUG_ATOMIC_SLEEP (mk/debug-x86.mk); vm/README.md has what each is for.
# Our module is built against each, so a kernel rebuilt for a new config is never left
# beside a module built for the old one.
debug-kernel: uml-debug kmod-uml-debug debug-kernel-x86 kmod-x86-debug
