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
              $(CORE_KERNEL_SRC)

# $(call kmod_build,build directory,kernel tree,extra make arguments,extra KCFLAGS): the
# module built out of tree; any compiler warning fails the build, and so does a global
# symbol of the core's (its functions are static in the kernel). The checkout's path is
# mapped away from the debug information, so that every clone builds the same bytes (the
# runs record the module's digest, and a resumed experiment compares it).
KMOD_KCFLAGS := -ffile-prefix-map=$(abspath .)=.
define kmod_build
	@mkdir -p $(1)
	ln -sf $(abspath kernel/sch_confucius.c) $(1)/sch_confucius.c
	cp kernel/Kbuild $(1)/Kbuild
	+$(MAKE) -C $(2) $(3) KCFLAGS="$(KMOD_KCFLAGS) $(4)" M=$(abspath $(1)) CONFUCIUS_ROOT=$(abspath .) W=1 modules 2>&1 \
		| tee $(1)/build.log
	@if grep -q 'warning:' $(1)/build.log; then echo "kernel build has warnings"; exit 1; fi
	@test -f $@
	@if nm $@ | grep -E ' [A-TV-Z] cfc_'; then echo "the core has global symbols in $@"; exit 1; fi
endef

$(KMOD): $(KMOD_SRC) | $(DEPS_STAMP)
	$(call kmod_build,$(KMOD_BUILD),$(KDIR),)

$(KMOD_UML): $(KMOD_SRC) $(UML_KERNEL)
	$(call kmod_build,$(KMOD_UML_BUILD),$(UML_TREE),ARCH=um)

# For the debug kernel: UBSAN on (arch/um sanitises only objects that ask) and debug
# information, so that a report's module offsets resolve to file:line (addr2line).
KMOD_UML_DEBUG_BUILD := $(BUILD)/kernel-uml-debug
KMOD_UML_DEBUG := $(KMOD_UML_DEBUG_BUILD)/sch_confucius.ko
$(KMOD_UML_DEBUG): $(KMOD_SRC) $(UML_DEBUG_KERNEL)
	$(call kmod_build,$(KMOD_UML_DEBUG_BUILD),$(UML_DEBUG_TREE),ARCH=um UBSAN_SANITIZE=y,-g)

# For the lab's second kernel generation, UML 6.12 (mk/uml.mk).
KMOD_UML_612_BUILD := $(BUILD)/kernel-uml-6.12
KMOD_UML_612 := $(KMOD_UML_612_BUILD)/sch_confucius.ko
$(KMOD_UML_612): $(KMOD_SRC) $(UML_612_KERNEL)
	$(call kmod_build,$(KMOD_UML_612_BUILD),$(UML_612_TREE),ARCH=um)

# `make kmod` for Debian's kernel, `make kmod KTREE=uml` (or `make kmod-uml`) for UML's.
KTREE ?= debian
.PHONY: kmod kmod-uml kmod-uml-6.12 kmod-uml-debug
kmod: $(if $(filter uml,$(KTREE)),$(KMOD_UML),$(KMOD))
kmod-uml: $(KMOD_UML)
kmod-uml-6.12: $(KMOD_UML_612)
kmod-uml-debug: $(KMOD_UML_DEBUG)
PYTEST_NEEDS += $(KMOD) $(KMOD_UML)

# Per-packet cost and memory of confucius beside fq_codel, cake and fq in the lab's UML
# kernels, 6.1 and 6.12, on the host's clock (bench/README.md); BENCH_KERNEL_ARGS passes
# options (--help). Not part of make test.
BENCH_KERNEL_ARGS ?=
.PHONY: bench-kernel
bench-kernel: $(KMOD_UML) $(KMOD_UML_612) $(TC_PLUGIN) $(VENV_STAMP)
	$(PY) bench/bench_kernel.py $(BENCH_KERNEL_ARGS)

# The debug kernel's soak (issue 15): the tc cases and the robustness suite, then 30
# minutes of mixed traffic with a `tc qdisc change` every second, a kmemleak scan, slab
# usage before and after and the kernel log, summarised in $(SOAK)/summary.txt. Any
# kernel report fails it. SOAK_MINUTES shortens it for a trial. Not part of make test.
# SOAK_KERNEL: uml-debug (the default: fast, native) or x86-debug (qemu, 2 vCPUs,
# DEBUG_ATOMIC_SLEEP, mk/debug-x86.mk, which adds its prerequisites).
SOAK := results/soak
SOAK_MINUTES ?= 30
SOAK_KERNEL ?= uml-debug
SOAK_KERNELS := uml-debug x86-debug
.PHONY: soak
ifeq ($(SOAK_KERNEL),uml-debug)
soak: $(KMOD_UML_DEBUG)
endif
soak: $(TC_PLUGIN) $(VENV_STAMP)
	@$(if $(filter $(SOAK_KERNEL),$(SOAK_KERNELS)),:,echo "SOAK_KERNEL=$(SOAK_KERNEL): one of $(SOAK_KERNELS)"; exit 1)
	status=0; \
	CONFUCIUS_TEST_KERNEL=$(SOAK_KERNEL) $(PY) -m pytest -q -p no:cacheprovider -m vm \
		tests/kernel/test_tc_cases.py tests/kernel/test_kernel_robustness_vm.py || status=1; \
	$(VENV)/bin/confucius lab soak --kernel $(SOAK_KERNEL) --minutes $(SOAK_MINUTES) --out $(SOAK) \
		|| status=1; \
	exit $$status

# The module against the other kernels it supports, each tree fetched once into
# $(KTREES) by kernel/fetch-kernel-trees.sh: Debian 12's 6.12 (bookworm-security) and
# the newest Debian packages (7.3, experimental), with W=1 as above; then sparse (C=2)
# over the module for those and for Debian 12's 6.1. Any sparse warning about our files
# (the module, the core, the UAPI header) fails; the kernel's own headers are not ours.
# 7.3's tree is prepared without pahole (PAHOLE=false there) and checked with the
# sparse the fetch builds, as the kernel refuses Debian 12's.
KTREES := $(BUILD)/ktrees
KMOD_COMPAT_TREES := 6.12 7.3
kmod_tree_6.1   = $(KDIR)
kmod_tree_6.12  := $(KTREES)/6.12/build
kmod_tree_7.3   := $(KTREES)/7.3/build
kmod_args_7.3   := PAHOLE=false
kmod_check_7.3  := CHECK=$(abspath $(KTREES)/sparse/bin/sparse)
KMOD_COMPAT := $(foreach t,$(KMOD_COMPAT_TREES),$(BUILD)/kernel-$(t)/sch_confucius.ko)
KMOD_SPARSE := $(foreach t,6.1 $(KMOD_COMPAT_TREES),$(BUILD)/kernel-sparse-$(t)/sparse.ok)
SPARSE_OURS := (sch_confucius\.c|core/[a-z_]+\.[ch]|pkt_sched_confucius\.h):[0-9]+:[0-9]+: (warning|error)

$(KTREES)/%/.ready: | $(DEPS_STAMP)
	@mkdir -p $(KTREES)
	nice kernel/fetch-kernel-trees.sh $* $(KTREES)

$(KMOD_COMPAT): $(BUILD)/kernel-%/sch_confucius.ko: $(KMOD_SRC) $(KTREES)/%/.ready
	$(call kmod_build,$(@D),$(kmod_tree_$*),$(kmod_args_$*))

# $(BUILD)/kernel-sparse-TREE/sparse.ok: sparse's findings about our files, none allowed.
$(BUILD)/kernel-sparse-6.1/sparse.ok: $(KMOD_SRC) | $(DEPS_STAMP)
$(BUILD)/kernel-sparse-6.12/sparse.ok: $(KMOD_SRC) $(KTREES)/6.12/.ready
$(BUILD)/kernel-sparse-7.3/sparse.ok: $(KMOD_SRC) $(KTREES)/7.3/.ready
$(KMOD_SPARSE):
	@mkdir -p $(@D)
	@rm -f $@
	ln -sf $(abspath kernel/sch_confucius.c) $(@D)/sch_confucius.c
	cp kernel/Kbuild $(@D)/Kbuild
	nice $(MAKE) -C $(kmod_tree_$(patsubst kernel-sparse-%,%,$(notdir $(@D)))) \
		$(kmod_args_$(patsubst kernel-sparse-%,%,$(notdir $(@D)))) \
		$(kmod_check_$(patsubst kernel-sparse-%,%,$(notdir $(@D)))) \
		M=$(abspath $(@D)) CONFUCIUS_ROOT=$(abspath .) C=2 modules > $(@D)/sparse.log 2>&1 \
		|| { cat $(@D)/sparse.log; exit 1; }
	@if grep -Eq 'sparse is not available|$(SPARSE_OURS)' $(@D)/sparse.log; then \
		grep -E 'sparse is not available|$(SPARSE_OURS)' $(@D)/sparse.log; \
		echo "sparse: $(notdir $(@D)) has findings about our files"; exit 1; fi
	@echo "sparse: no findings about our files ($(notdir $(@D)))"
	@touch $@

# The path for kernels without the 2025 idempotent qlen_notify fixes (drops at dequeue
# told to the parents late, kernel/sch_confucius.c), which no tree here needs: compiled
# against Debian 12's 6.1 with it forced, W=1 as above.
KMOD_DEFERRED := $(BUILD)/kernel-6.1-deferred/sch_confucius.ko
$(KMOD_DEFERRED): $(KMOD_SRC) | $(DEPS_STAMP)
	$(call kmod_build,$(@D),$(KDIR),,-DCFC_NOTIFY_IN_DEQUEUE=0)

.PHONY: kmod-compat
kmod-compat: $(KMOD_COMPAT) $(KMOD_SPARSE) $(KMOD_DEFERRED)
C_TESTS += kmod-compat
