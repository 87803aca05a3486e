# SPDX-License-Identifier: MIT
# The lab's x86_64 debug kernel (issue 15), booted by the qemu engine with 2 vCPUs
# (confucius/lab/vm.py, flavour `debug`; CONFUCIUS_TEST_KERNEL=x86-debug): Debian's
# linux-source-6.1 (the clean tree of mk/cross.mk) configured as `make allnoconfig` plus
# kernel/debug-x86/debug.config: what the lab's guest needs, built in, and KASAN,
# lockdep, DEBUG_ATOMIC_SLEEP, kmemleak, UBSAN and debug objects. The output tree is
# build/debug-x86/linux (`make O=`), its module tree build/debug-x86/modules; the build's
# wall time and CPU seconds go to build/debug-x86/build-time.txt (vm/README.md has the
# figures). Not part of make test.

DEBUG_X86_BUILD  := $(BUILD)/debug-x86
DEBUG_X86_TREE   := $(DEBUG_X86_BUILD)/linux
DEBUG_X86_KERNEL := $(DEBUG_X86_BUILD)/modules/.installed

$(DEBUG_X86_KERNEL): $(CROSS_SRC_STAMP) kernel/cross/prepare.sh kernel/debug-x86/debug.config | $(DEPS_STAMP)
	@mkdir -p $(DEBUG_X86_BUILD)
	JOBS=2 nice -n 10 /usr/bin/time -v -o $(DEBUG_X86_BUILD)/build-time.txt \
		kernel/cross/prepare.sh $(CROSS_SRC) $(DEBUG_X86_TREE) x86_64 "" allnoconfig \
		kernel/debug-x86/debug.config bzImage modules > $(DEBUG_X86_BUILD)/build.log 2>&1 \
		|| { tail -n 20 $(DEBUG_X86_BUILD)/build.log; exit 1; }
	rm -rf $(@D)
	$(MAKE) -s -C $(DEBUG_X86_TREE) INSTALL_MOD_PATH=$(abspath $(@D)) modules_install
	touch $@

# Our module against that tree: modpost checks its imports against the kernel's
# Module.symvers; KASAN and UBSAN instrument it as they do the whole kernel; -g so that
# a report's module offsets resolve to file:line (confucius/lab/soak.py).
KMOD_X86_DEBUG_BUILD := $(BUILD)/kernel-x86-debug
KMOD_X86_DEBUG := $(KMOD_X86_DEBUG_BUILD)/sch_confucius.ko
$(KMOD_X86_DEBUG): $(KMOD_SRC) $(DEBUG_X86_KERNEL)
	$(call kmod_build,$(KMOD_X86_DEBUG_BUILD),$(DEBUG_X86_TREE),,-g)

.PHONY: debug-kernel-x86 kmod-x86-debug
debug-kernel-x86: $(DEBUG_X86_KERNEL)
kmod-x86-debug: $(KMOD_X86_DEBUG)
ifeq ($(SOAK_KERNEL),x86-debug)
soak: $(KMOD_X86_DEBUG)
endif
