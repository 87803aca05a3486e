# SPDX-License-Identifier: MIT
# `make upstream`: the qdisc as a net-next series in build/upstream/series/ (cover letter
# and patches, git format-patch) against the newest mainline tree at hand, Debian
# experimental's linux-source-7.3 unpacked into a git tree by upstream/fetch-base.sh; and
# tc's side as iproute2-next patches in build/upstream/iproute2/, against the iproute2
# tree tc/build.sh fetched, or the one IPROUTE2_TREE names (a clone of iproute2's own
# repository, for the newest). upstream/manifest.toml says what goes where.
#
# make test (tests/upstream) applies the series with git am to a fresh tree of the base,
# runs checkpatch --strict on every patch (the iproute2 patches' too) and builds the
# qdisc with W=1 C=1 (sparse).
# `make upstream-check` runs the same checks and then the kernel's own tdc.py on the
# series' cases, in a User-Mode Linux kernel built from the patched tree, with a tc
# built from iproute2 with the iproute2 patches: kept out of make test for its cold
# cost (upstream/README.md has the minutes).

UPSTREAM          := $(BUILD)/upstream
UPSTREAM_BASE     := $(KTREES)/upstream-7.3
UPSTREAM_GIT      := $(UPSTREAM_BASE)/git
UPSTREAM_SERIES   := $(UPSTREAM)/series/.made
UPSTREAM_IPROUTE2 := $(UPSTREAM)/iproute2/.made
UPSTREAM_TREE     := $(UPSTREAM)/linux
UPSTREAM_SPARSE   := $(KTREES)/sparse/bin/sparse
UPSTREAM_TOOLS    := upstream/series.py upstream/resolve.py upstream/tdc_cases.py \
                     upstream/manifest.toml upstream/cover-letter.txt
UPSTREAM_INPUTS   := $(UPSTREAM_TOOLS) $(KMOD_SRC) $(wildcard tests/kernel/tc_cases/*.json) docs/RESULTS.md

# Fetched once, as the kernel trees of mk/kernel.mk are.
$(UPSTREAM_BASE)/.ready: | $(DEPS_STAMP)
	@mkdir -p $(KTREES)
	nice upstream/fetch-base.sh $(UPSTREAM_BASE)

$(UPSTREAM_SERIES): $(UPSTREAM_INPUTS) $(UPSTREAM_BASE)/.ready
	python3 upstream/series.py kernel --base $(UPSTREAM_GIT) --out $(@D)
	@touch $@

# The tree tc/build.sh fetched (Debian's source of the installed iproute2) unless
# IPROUTE2_TREE names another.
$(UPSTREAM_IPROUTE2): $(UPSTREAM_TOOLS) tc/q_confucius.c tc/tc-confucius.8 \
                      kernel/include/uapi/linux/pkt_sched_confucius.h $(TC_PLUGIN)
	tree=$${IPROUTE2_TREE:-$$(source tc/iproute2-tree.sh && cached_tree $(TC_BUILD)/src)}; \
	python3 upstream/series.py iproute2 --tree "$$tree" --out $(@D)
	@touch $@

.PHONY: upstream upstream-check
upstream: $(UPSTREAM_SERIES) $(UPSTREAM_IPROUTE2)
	@ls $(UPSTREAM)/series/*.patch $(UPSTREAM)/iproute2/*.patch

# The checks, in the order a maintainer runs them; each stamp says its check passed.
$(UPSTREAM)/applied.ok: $(UPSTREAM_SERIES)
	@rm -f $@
	upstream/check.sh apply $(UPSTREAM)/series $(UPSTREAM_GIT) $(UPSTREAM_TREE)
	@touch $@

$(UPSTREAM)/checkpatch.ok: $(UPSTREAM)/applied.ok
	@rm -f $@
	upstream/check.sh checkpatch $(UPSTREAM)/series $(UPSTREAM_TREE)
	@touch $@

$(UPSTREAM)/checkpatch-iproute2.ok: $(UPSTREAM)/applied.ok $(UPSTREAM_IPROUTE2)
	@rm -f $@
	upstream/check.sh checkpatch-iproute2 $(UPSTREAM)/iproute2 $(UPSTREAM_TREE)
	@touch $@

$(UPSTREAM)/object.ok: $(UPSTREAM)/applied.ok $(KTREES)/7.3/.ready
	@rm -f $@
	upstream/check.sh object $(UPSTREAM_TREE) $(UPSTREAM)/obj-x86 $(UPSTREAM_SPARSE)
	@touch $@

$(UPSTREAM)/uml/linux: $(UPSTREAM)/applied.ok upstream/uml-tdc.config
	upstream/check.sh uml $(UPSTREAM_TREE) $(@D)

$(UPSTREAM)/tc/tc: $(UPSTREAM_IPROUTE2)
	tree=$${IPROUTE2_TREE:-$$(source tc/iproute2-tree.sh && cached_tree $(TC_BUILD)/src)}; \
	upstream/check.sh iproute2 $(UPSTREAM)/iproute2 "$$tree" $(@D)

$(UPSTREAM)/tdc.ok: $(UPSTREAM)/uml/linux $(UPSTREAM)/tc/tc upstream/tdc_vm.py upstream/tdc-init $(VENV_STAMP)
	@rm -f $@
	$(PY) upstream/tdc_vm.py --kernel $(UPSTREAM)/uml/linux --tc $(UPSTREAM)/tc/tc \
		--tc-testing $(UPSTREAM_TREE)/tools/testing/selftests/tc-testing --out $(UPSTREAM)/tdc
	@touch $@

upstream-check: $(UPSTREAM)/checkpatch.ok $(UPSTREAM)/checkpatch-iproute2.ok $(UPSTREAM)/object.ok \
                $(UPSTREAM)/tdc.ok

# tests/upstream runs the cheap checks itself; it needs the series, the base and sparse.
PYTEST_NEEDS += $(UPSTREAM_SERIES) $(UPSTREAM_IPROUTE2) $(KTREES)/7.3/.ready
