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
