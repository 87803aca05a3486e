# SPDX-License-Identifier: MIT
# sch_confucius.ko, built out of tree against Debian's kernel headers (the kernel
# the lab boots), in a build directory of its own so the sources stay clean.

KVER       ?= $(shell ls /lib/modules 2>/dev/null | sort -V | tail -n1)
KDIR       ?= /lib/modules/$(KVER)/build
KMOD_BUILD := $(BUILD)/kernel
KMOD       := $(KMOD_BUILD)/sch_confucius.ko
# The same module for the lab's User-Mode Linux kernel (mk/uml.mk).
KMOD_UML_BUILD := $(BUILD)/kernel-uml
KMOD_UML   := $(KMOD_UML_BUILD)/sch_confucius.ko
KMOD_SRC   := VERSION kernel/sch_confucius.c kernel/Kbuild kernel/include/uapi/linux/pkt_sched_confucius.h \
              $(CORE_SRC) $(CORE_HDR)

# $(call kmod_build,build directory,kernel tree,extra make arguments): the module built
# out of tree; any compiler warning fails the build.
define kmod_build
	@mkdir -p $(1)
	ln -sf $(abspath kernel/sch_confucius.c) $(1)/sch_confucius.c
	cp kernel/Kbuild $(1)/Kbuild
	$(MAKE) -C $(2) $(3) M=$(abspath $(1)) CONFUCIUS_ROOT=$(abspath .) W=1 modules 2>&1 \
		| tee $(1)/build.log
	@if grep -q 'warning:' $(1)/build.log; then echo "kernel build has warnings"; exit 1; fi
	@test -f $@
endef

$(KMOD): $(KMOD_SRC) | $(DEPS_STAMP)
	$(call kmod_build,$(KMOD_BUILD),$(KDIR),)

$(KMOD_UML): $(KMOD_SRC) $(UML_KERNEL)
	$(call kmod_build,$(KMOD_UML_BUILD),$(UML_TREE),ARCH=um)

# `make kmod` for Debian's kernel, `make kmod KTREE=uml` (or `make kmod-uml`) for UML's.
KTREE ?= debian
.PHONY: kmod kmod-uml
kmod: $(if $(filter uml,$(KTREE)),$(KMOD_UML),$(KMOD))
kmod-uml: $(KMOD_UML)
PYTEST_NEEDS += $(KMOD) $(KMOD_UML)

# Per-packet cost against fq_codel, cake and pfifo, inside the lab VM (not part of make test).
.PHONY: bench-kernel
bench-kernel: $(KMOD) $(TC_PLUGIN) $(VENV_STAMP)
	$(VENV)/bin/confucius lab vm run --timeout 3000 bench/bench_kernel.py
