SHELL := /bin/bash
# SPDX-License-Identifier: MIT
# Confucius: one Makefile, one fragment per part in mk/. `make help` lists the targets.

.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

include mk/common.mk
include mk/deps.mk
include mk/core.mk
# Before kernel.mk, whose UML module needs the UML tree.
-include mk/uml.mk
-include mk/kernel.mk
# After kernel.mk and uml.mk: the module's sources and Debian's kernel source tarball.
-include mk/cross.mk
-include mk/debug-x86.mk
-include mk/tc.mk
-include mk/lab.mk
-include mk/tools.mk
-include mk/deb.mk
-include mk/sim.mk
-include mk/upstream.mk
# Last: its test rule lists PYTEST_NEEDS, which the fragments above fill.
include mk/python.mk

.PHONY: help demo test clean

help:
	@echo "make demo        run the main job with sensible defaults and show the result"
	@echo "make test        run the whole test suite (does its own set-up)"
	@echo "make bench-core  per-packet cost of the scheduling core, per mode and flow count"
	@echo "make sim         the ns-3 simulator (sim/README.md): build/sim/bottleneck"
	@echo "make bench-sim   the simulator's speed on a short episode (printed)"
	@echo "make deb         Debian packages confucius-dkms and confucius-tc in build/deb/"
	@echo "make cross       the module for arm64, armhf, mips; the core tested on armhf and mips"
	@echo "make upstream    the net-next series and the iproute2 patches in build/upstream/"
	@echo "make upstream-check  the series applied, checkpatch, W=1 C=1, and tdc in a UML kernel"
	@echo "make boot-arm64  the arm64 module loaded and used in an arm64 kernel under qemu"
	@echo "make debug-kernel the UML and the x86 debug kernels and our module for each"
	@echo "make uml-debug   the UML kernel with KASAN, lockdep, kmemleak, UBSAN: fast, native, one CPU"
	@echo "make debug-kernel-x86  x86_64 kernel for qemu (2 vCPUs) with the same checkers and"
	@echo "                 DEBUG_ATOMIC_SLEEP, UBSAN everywhere, PREEMPT: slow, emulated"
	@echo "make soak        tc cases, robustness suite and a 30-minute soak in the debug kernel"
	@echo "                 (SOAK_KERNEL=uml-debug, the default, or x86-debug; SOAK_MINUTES=30)"
	@echo "make clean       remove build products (keeps the virtualenv)"

# C suites first (each prints its own summary), then pytest, which closes the run.
test: $(C_TESTS)
	$(MAKE) --no-print-directory test-python

clean:
	rm -rf $(BUILD)

# The motivating example in the lab (scenarios/demo.toml): a GCC video flow at a 20 Mbit/s
# bottleneck with 40 ms RTT meets an amazon-like page load, under pfifo, fq, fq_codel, cake and
# confucius (pace adaptive, the default, and the papers' fixed schedule), each in its own
# boot of the lab's kernel: User-Mode Linux in virtual time by default (host load cannot
# move its figures), Debian's kernel under qemu with DEMO_ENGINE=qemu. Prints the
# comparison table and writes the frame-delay timeline (paper 000 Fig. 2) with the RT
# flow's state in the qdisc. `confucius core demo` shows the core alone.
# DEMO_KERNEL=6.12 runs it on the lab's second kernel generation (Debian 13's, OpenWrt 25.12's).
DEMO := results/demo
DEMO_ENGINE ?= uml
DEMO_KERNEL ?= 6.1
DEMO_KMOD := $(if $(filter uml,$(DEMO_ENGINE)),$(if $(filter 6.12,$(DEMO_KERNEL)),$(KMOD_UML_612),$(KMOD_UML)),\
             $(if $(filter 6.12,$(DEMO_KERNEL)),$(QEMU_612) $(BUILD)/kernel-6.12/sch_confucius.ko,$(KMOD)))
demo: $(VENV_STAMP) $(TOOLS_STAMP) $(DEMO_KMOD) $(TC_PLUGIN) lab
	rm -rf $(DEMO)/demo.sqlite* $(DEMO)/runs
	$(VENV)/bin/confucius lab run scenarios/demo.toml --engine $(DEMO_ENGINE) --kernel $(DEMO_KERNEL) \
		--db $(DEMO)/demo.sqlite --results $(DEMO)/runs
	$(VENV)/bin/confucius report summary --db $(DEMO)/demo.sqlite -s pfifo,fq,fq_codel,cake,confucius,confucius-fixed \
		--also-against fq_codel
	$(VENV)/bin/confucius report timeline --db $(DEMO)/demo.sqlite --out $(DEMO)/timeline.png
