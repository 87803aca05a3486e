# SPDX-License-Identifier: MIT
# Router architectures: sch_confucius.ko cross-built with W=1 for arm64, armhf (32-bit)
# and mips (32-bit big-endian, ath79: the SoC of most MIPS home routers) with Debian's
# cross compilers, and the core's unit tests and fuzz corpus run on armhf and mips under
# qemu-user (a 32-bit and a big-endian host for the portable core).
#
# Kernel trees: Debian's linux-source-6.1 (the tarball of mk/uml.mk) unpacked once, clean,
# into build/cross/src; each architecture gets its own output tree build/cross/linux-ARCH
# (`make O=`): its defconfig plus kernel/cross/cross.config, then modules_prepare. The
# module lands in build/kernel-ARCH/, beside build/kernel/ (Debian) and build/kernel-uml/.

CROSS_ARCHS := arm64 armhf mips
CROSS_SRC   := $(BUILD)/cross/src
CROSS_SRC_STAMP := $(CROSS_SRC)/.unpacked

# Per architecture: the kernel's ARCH, the Debian cross toolchain's prefix, the defconfig,
# and the qemu-user emulator that runs the core's tests (arm64 has none: a 64-bit
# little-endian host like the build machine adds nothing for the portable core).
cross_karch_arm64     := arm64
cross_prefix_arm64    := aarch64-linux-gnu-
cross_defconfig_arm64 := defconfig
cross_karch_armhf     := arm
cross_prefix_armhf    := arm-linux-gnueabihf-
cross_defconfig_armhf := multi_v7_defconfig
cross_qemu_armhf      := qemu-arm-static
cross_karch_mips      := mips
cross_prefix_mips     := mips-linux-gnu-
cross_defconfig_mips  := ath79_defconfig
cross_qemu_mips       := qemu-mips-static
CROSS_QEMU_ARCHS := armhf mips

CROSS_TREE   = $(BUILD)/cross/linux-$(1)
CROSS_KMODS  := $(foreach a,$(CROSS_ARCHS),$(BUILD)/kernel-$(a)/sch_confucius.ko)

$(CROSS_SRC_STAMP): $(wildcard $(UML_SOURCE)) | $(DEPS_STAMP)
	@test -f $(UML_SOURCE) || { echo "cross: $(UML_SOURCE) missing (apt-get install linux-source-6.1)"; exit 1; }
	rm -rf $(CROSS_SRC)
	mkdir -p $(CROSS_SRC)
	nice -n 10 tar -xJf $(UML_SOURCE) -C $(CROSS_SRC) --strip-components=1
	touch $@

# $(call cross_rules,arch): the prepared tree and the module for one architecture.
define cross_rules
$(call CROSS_TREE,$(1))/.prepared: $(CROSS_SRC_STAMP) kernel/cross/prepare.sh kernel/cross/cross.config
	JOBS=2 nice -n 10 kernel/cross/prepare.sh $(CROSS_SRC) $$(@D) $(cross_karch_$(1)) \
		$(cross_prefix_$(1)) $(cross_defconfig_$(1)) kernel/cross/cross.config \
		> $(BUILD)/cross/prepare-$(1).log 2>&1 \
		|| { tail -n 20 $(BUILD)/cross/prepare-$(1).log; exit 1; }
	touch $$@

$(BUILD)/kernel-$(1)/sch_confucius.ko: $(KMOD_SRC) $(call CROSS_TREE,$(1))/.prepared kernel/cross/check-symbols.sh
	$$(call cross_kmod_build,$(BUILD)/kernel-$(1),$(call CROSS_TREE,$(1)),$(cross_karch_$(1)),$(cross_prefix_$(1)))
endef
$(foreach a,$(CROSS_ARCHS),$(eval $(call cross_rules,$(a))))

# The tree has no vmlinux, so modpost cannot know the kernel's exports: it says
# Module.symvers is missing and names every symbol the module imports. Those lines are
# left out of what is shown (build.log keeps them); any other warning, from the compiler
# or modpost, fails the build, and check-symbols.sh does the import check from the source.
CROSS_MODPOST_NOISE := Module.symvers is missing|Modules may not have dependencies|You may get many unresolved|modpost: ".*" \[.*\] undefined!|modpost: suppressed [0-9]+ unresolved
define cross_kmod_build
	@mkdir -p $(1)
	ln -sf $(abspath kernel/sch_confucius.c) $(1)/sch_confucius.c
	cp kernel/Kbuild $(1)/Kbuild
	nice -n 10 $(MAKE) -C $(2) ARCH=$(3) CROSS_COMPILE=$(4) M=$(abspath $(1)) \
		CONFUCIUS_ROOT=$(abspath .) W=1 modules > $(1)/build.log 2>&1 || { cat $(1)/build.log; exit 1; }
	@grep -Ev '$(CROSS_MODPOST_NOISE)' $(1)/build.log > $(1)/build-shown.log || true
	@cat $(1)/build-shown.log
	@if grep -qi 'warning' $(1)/build-shown.log; then echo "cross: $(3) build has warnings"; rm -f $@; exit 1; fi
	kernel/cross/check-symbols.sh $(CROSS_SRC) $(3) $@ $(4)nm || { rm -f $@; exit 1; }
endef

.PHONY: cross cross-kmods test-core-cross
cross: cross-kmods test-core-cross
cross-kmods: $(CROSS_KMODS)

# The arm64 module loaded and used in a booted arm64 kernel (`make boot-arm64`, not part
# of make test): a tinyconfig kernel with what qemu's virt machine and the module need
# (kernel/cross/boot-arm64.config), its Image and Module.symvers built once, so modpost
# checks this module's imports itself; then kernel/cross/boot-test.sh.
CROSS_BOOT_TREE := $(BUILD)/cross/linux-arm64-boot
CROSS_BOOT_KMOD := $(BUILD)/kernel-arm64-boot/sch_confucius.ko
CROSS_BOOT_INIT := $(BUILD)/cross/boot-init

$(CROSS_BOOT_TREE)/.prepared: $(CROSS_SRC_STAMP) kernel/cross/prepare.sh kernel/cross/boot-arm64.config
	JOBS=2 nice -n 10 kernel/cross/prepare.sh $(CROSS_SRC) $(@D) arm64 aarch64-linux-gnu- tinyconfig \
		kernel/cross/boot-arm64.config Image modules > $(BUILD)/cross/prepare-arm64-boot.log 2>&1 \
		|| { tail -n 20 $(BUILD)/cross/prepare-arm64-boot.log; exit 1; }
	touch $@

$(CROSS_BOOT_KMOD): $(KMOD_SRC) $(CROSS_BOOT_TREE)/.prepared kernel/cross/check-symbols.sh
	$(call cross_kmod_build,$(@D),$(CROSS_BOOT_TREE),arm64,aarch64-linux-gnu-)

$(CROSS_BOOT_INIT): kernel/cross/boot-init.c kernel/include/uapi/linux/pkt_sched_confucius.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	aarch64-linux-gnu-gcc -static -O2 -Wall -Wextra -Werror -Ikernel/include/uapi/linux -o $@ $<

.PHONY: boot-arm64
boot-arm64: $(CROSS_BOOT_KMOD) $(CROSS_BOOT_INIT)
	kernel/cross/boot-test.sh $(CROSS_BOOT_TREE) $(CROSS_BOOT_KMOD) $(CROSS_BOOT_INIT) $(BUILD)/cross/boot-arm64.log

# The core on a 32-bit (armhf) and a big-endian (mips) host: the unit tests, with
# tests/core/cross/cmocka.c in place of the library, and the fuzz corpus replayed
# (tests/core/replay.c), static so that qemu-user runs them without a target root. The
# replay's outcome digest must equal the build machine's: same input, same schedule.
# The corpus: the one kept in the tree, plus what the fuzz target has found here.
CROSS_CORPUS := tests/core/corpus $(wildcard $(CORE_BUILD)/fuzz-corpus)
CROSS_CORE_HDR := $(CORE_HDR) core/userspace/harness.h tests/core/*.h tests/core/cross/cmocka.h

$(CORE_BUILD)/core_tests-%: $(CORE_SRC) $(HARNESS_SRC) $(UNIT_SRC) tests/core/cross/cmocka.c $(CROSS_CORE_HDR) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(cross_prefix_$*)gcc -static $(CORE_CFLAGS) -Itests/core/cross -O2 -g -o $@ \
		$(CORE_SRC) $(HARNESS_SRC) $(UNIT_SRC) tests/core/cross/cmocka.c -lm

$(CORE_BUILD)/replay-%: $(CORE_SRC) $(HARNESS_SRC) tests/core/replay.c $(CROSS_CORE_HDR) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(cross_prefix_$*)gcc -static $(CORE_CFLAGS) -O2 -g -o $@ $(CORE_SRC) $(HARNESS_SRC) tests/core/replay.c

$(CORE_BUILD)/replay: $(CORE_SRC) $(HARNESS_SRC) tests/core/replay.c $(CORE_HDR) tests/core/*.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CORE_CFLAGS) -O2 -g -o $@ $(CORE_SRC) $(HARNESS_SRC) tests/core/replay.c

# $(call cross_core_rules,arch): test-core-ARCH runs both under the architecture's qemu.
define cross_core_rules
.PHONY: test-core-$(1)
test-core-$(1): $(CORE_BUILD)/core_tests-$(1) $(CORE_BUILD)/replay-$(1) $(CORE_BUILD)/replay
	$(cross_qemu_$(1)) $(CORE_BUILD)/core_tests-$(1)
	@here=$$$$($(CORE_BUILD)/replay $(CROSS_CORPUS)) || { echo "$$$$here"; exit 1; }; \
	there=$$$$($(cross_qemu_$(1)) $(CORE_BUILD)/replay-$(1) $(CROSS_CORPUS)) || { echo "$$$$there"; exit 1; }; \
	echo "$(1): $$$$there"; \
	[ "$$$$here" = "$$$$there" ] || { echo "$(1): differs from the build machine's: $$$$here"; exit 1; }
endef
$(foreach a,$(CROSS_QEMU_ARCHS),$(eval $(call cross_core_rules,$(a))))

test-core-cross: $(foreach a,$(CROSS_QEMU_ARCHS),test-core-$(a))
C_TESTS += test-core-cross cross-kmods
