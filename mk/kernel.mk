# SPDX-License-Identifier: MIT
# sch_confucius.ko, built out of tree against Debian's kernel headers (the kernel
# the lab boots), in a build directory of its own so the sources stay clean.

KVER       ?= $(shell ls /lib/modules 2>/dev/null | sort -V | tail -n1)
KDIR       ?= /lib/modules/$(KVER)/build
KMOD_BUILD := $(BUILD)/kernel
KMOD       := $(KMOD_BUILD)/sch_confucius.ko
KMOD_SRC   := kernel/sch_confucius.c kernel/Kbuild kernel/include/uapi/linux/pkt_sched_confucius.h \
              $(CORE_SRC) $(CORE_HDR)

$(KMOD): $(KMOD_SRC) | $(DEPS_STAMP)
	@mkdir -p $(KMOD_BUILD)
	ln -sf $(abspath kernel/sch_confucius.c) $(KMOD_BUILD)/sch_confucius.c
	cp kernel/Kbuild $(KMOD_BUILD)/Kbuild
	$(MAKE) -C $(KDIR) M=$(abspath $(KMOD_BUILD)) CONFUCIUS_ROOT=$(abspath .) W=1 modules 2>&1 \
		| tee $(KMOD_BUILD)/build.log
	@if grep -q 'warning:' $(KMOD_BUILD)/build.log; then echo "kernel build has warnings"; exit 1; fi
	@test -f $@

.PHONY: kmod
kmod: $(KMOD)
PYTEST_NEEDS += $(KMOD)

# Per-packet cost against fq_codel, cake and pfifo, inside the lab VM (not part of make test).
.PHONY: bench-kernel
bench-kernel: $(KMOD) $(TC_PLUGIN) $(VENV_STAMP)
	$(VENV)/bin/confucius lab vm run --timeout 3000 bench/bench_kernel.py
