# SPDX-License-Identifier: MIT
# Router architectures: sch_confucius.ko cross-built with W=1 for arm64, armhf (32-bit)
# and mips (32-bit big-endian, ath79: the SoC of most MIPS home routers) with Debian's
# cross compilers, against Linux 6.1 and 6.12 and against 6.12 configured as three OpenWrt
# targets; and the core's unit tests and fuzz corpus run on armhf and mips under
# qemu-user (a 32-bit and a big-endian host for the portable core).
#
# Kernel trees: Debian's linux-source-6.1 (the tarball of mk/uml.mk) and linux-source-6.12
# (OpenWrt 25.12's kernel series), each unpacked once, clean, into build/cross/src and
# build/cross/src-6.12. Each tree NAME gets its own output directory build/cross/linux-NAME
# (`make O=`): a defconfig plus kernel/cross/cross.config (and, for OpenWrt, the target's
# fragment in kernel/cross/openwrt/), then modules_prepare. The module lands in
# build/kernel-NAME/, beside build/kernel/ (Debian) and build/kernel-uml/:
#   6.1:     arm64 armhf mips               (the arch's defconfig, as below)
#   6.12:    6.12-arm64 6.12-armhf 6.12-mips
#   OpenWrt: openwrt-ath79 (mips), openwrt-filogic (arm64), openwrt-x86_64, all on 6.12
# Each 6.12 tree took 14 to 27 s to prepare here on 2 idle cores, 28 to 39 s with other
# work on them (all nine trees and modules: 5 minutes); each module then takes seconds.

CROSS_ARCHS := arm64 armhf mips
CROSS_SRC   := $(BUILD)/cross/src
CROSS_SRC_STAMP := $(CROSS_SRC)/.unpacked
CROSS_612_SRC := $(BUILD)/cross/src-6.12

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

# The OpenWrt targets: which of the architectures above each one is (x86_64: the build
# machine's own compiler), and its defconfig. OpenWrt's generic patches are not applied
# (openwrt/README.md says why): these are Debian's 6.12 configured as the targets.
CROSS_OPENWRT := ath79 filogic x86_64
openwrt_arch_ath79       := mips
openwrt_defconfig_ath79  := ath79_defconfig
openwrt_arch_filogic     := arm64
openwrt_defconfig_filogic := defconfig
cross_karch_x86_64       := x86
cross_prefix_x86_64      :=
openwrt_arch_x86_64      := x86_64
openwrt_defconfig_x86_64 := x86_64_defconfig

CROSS_TREES := $(CROSS_ARCHS) $(addprefix 6.12-,$(CROSS_ARCHS)) $(addprefix openwrt-,$(CROSS_OPENWRT))
CROSS_KMODS := $(foreach t,$(CROSS_TREES),$(BUILD)/kernel-$(t)/sch_confucius.ko)

# $(call cross_unpack,tarball,directory): a kernel source tarball unpacked, clean.
define cross_unpack
	@test -f $(1) || { echo "cross: $(1) missing (apt-get install $(patsubst %.tar.xz,%,$(notdir $(1))))"; exit 1; }
	rm -rf $(2)
	mkdir -p $(2)
	nice -n 10 tar -xJf $(1) -C $(2) --strip-components=1
	touch $(2)/.unpacked
endef
$(CROSS_SRC_STAMP): $(wildcard $(UML_SOURCE)) | $(DEPS_STAMP)
	$(call cross_unpack,$(UML_SOURCE),$(CROSS_SRC))
$(CROSS_612_SRC)/.unpacked: $(wildcard $(UML_612_SOURCE)) | $(DEPS_STAMP)
	$(call cross_unpack,$(UML_612_SOURCE),$(CROSS_612_SRC))

comma := ,
space := $(subst ,, )
# $(call cross_rules,NAME,SRC,ARCH,DEFCONFIG,FRAGMENTS): the prepared tree
# build/cross/linux-NAME from the source SRC for the architecture ARCH (one of
# CROSS_ARCHS, or x86_64), and the module built against it.
define cross_rules
$(BUILD)/cross/linux-$(1)/.prepared: $(2)/.unpacked kernel/cross/prepare.sh $(5)
	JOBS=2 nice -n 10 kernel/cross/prepare.sh $(2) $$(@D) $(cross_karch_$(3)) \
		"$(cross_prefix_$(3))" $(4) $(subst $(space),$(comma),$(strip $(5))) \
		> $(BUILD)/cross/prepare-$(1).log 2>&1 \
		|| { tail -n 20 $(BUILD)/cross/prepare-$(1).log; exit 1; }
	touch $$@

$(BUILD)/kernel-$(1)/sch_confucius.ko: $(KMOD_SRC) $(BUILD)/cross/linux-$(1)/.prepared kernel/cross/check-symbols.sh
	$$(call cross_kmod_build,$(BUILD)/kernel-$(1),$(BUILD)/cross/linux-$(1),$(cross_karch_$(3)),$(cross_prefix_$(3)),$(2))
endef
$(foreach a,$(CROSS_ARCHS),$(eval $(call cross_rules,$(a),$(CROSS_SRC),$(a),$(cross_defconfig_$(a)),kernel/cross/cross.config)))
$(foreach a,$(CROSS_ARCHS),$(eval $(call cross_rules,6.12-$(a),$(CROSS_612_SRC),$(a),$(cross_defconfig_$(a)),kernel/cross/cross.config)))
$(foreach t,$(CROSS_OPENWRT),$(eval $(call cross_rules,openwrt-$(t),$(CROSS_612_SRC),$(openwrt_arch_$(t)),$(openwrt_defconfig_$(t)),kernel/cross/cross.config kernel/cross/openwrt/$(t).config)))

# The tree has no vmlinux, so modpost cannot know the kernel's exports: it says
# Module.symvers is missing and names every symbol the module imports (errors from 6.12
# on, warnings with KBUILD_MODPOST_WARN=1). Those lines are left out of what is shown
# (build.log keeps them); any other warning, from the compiler or modpost, fails the
# build, and check-symbols.sh does the import check from the source.
CROSS_MODPOST_NOISE := Module.symvers is missing|Modules may not have dependencies|You may get many unresolved|KBUILD_MODPOST_WARN=1 to turn errors|proceed at your own risk|modpost: ".*" \[.*\] undefined!|modpost: suppressed [0-9]+ unresolved
# $(call cross_kmod_build,build directory,tree,ARCH,CROSS_COMPILE,kernel source)
define cross_kmod_build
	@mkdir -p $(1)
	ln -sf $(abspath kernel/sch_confucius.c) $(1)/sch_confucius.c
	cp kernel/Kbuild $(1)/Kbuild
	nice -n 10 $(MAKE) -C $(2) ARCH=$(3) CROSS_COMPILE=$(4) M=$(abspath $(1)) \
		CONFUCIUS_ROOT=$(abspath .) W=1 KBUILD_MODPOST_WARN=1 modules > $(1)/build.log 2>&1 || { cat $(1)/build.log; exit 1; }
	@grep -Ev '$(CROSS_MODPOST_NOISE)' $(1)/build.log > $(1)/build-shown.log || true
	@cat $(1)/build-shown.log
	@if grep -qi 'warning' $(1)/build-shown.log; then echo "cross: $(3) build has warnings"; rm -f $@; exit 1; fi
	kernel/cross/check-symbols.sh $(5) $(3) $@ $(4)nm || { rm -f $@; exit 1; }
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
	$(call cross_kmod_build,$(@D),$(CROSS_BOOT_TREE),arm64,aarch64-linux-gnu-,$(CROSS_SRC))

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
# tests/openwrt runs the feed's kmod recipe against the OpenWrt ath79 tree.
PYTEST_NEEDS += $(BUILD)/cross/linux-openwrt-ath79/.prepared
