# SPDX-License-Identifier: MIT
# The lab's User-Mode Linux kernel (confucius/lab/uml.py): Debian's linux-source-6.1 built
# for ARCH=um by kernel/uml/build.sh with the options of kernel/uml/uml.config and the
# patches in kernel/uml/patches/. Cached in build/uml/, rebuilt when one of those or the
# Debian source changes (about 6 minutes on 2 cores); the tree stays there for modules.

UML_BUILD  := $(BUILD)/uml
UML_KERNEL := $(UML_BUILD)/linux
UML_TREE   := $(UML_BUILD)/src
UML_SOURCE := /usr/src/linux-source-6.1.tar.xz
UML_INPUTS := kernel/uml/build.sh kernel/uml/uml.config $(wildcard kernel/uml/patches/*.patch) \
              $(wildcard $(UML_SOURCE))

$(UML_KERNEL): $(UML_INPUTS) | $(DEPS_STAMP)
	JOBS=2 nice kernel/uml/build.sh $(UML_BUILD)

.PHONY: uml
uml: $(UML_KERNEL)
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
