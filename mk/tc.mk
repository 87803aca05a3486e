# SPDX-License-Identifier: MIT
# The tc front end: q_confucius.so, built by tc/build.sh against the source of the installed
# iproute2 (Debian's source package, fetched once into build/tc/src/); the same source built
# into iproute2's own tc by tc/intree.sh (build/tc/intree/tc, the tc cases run with it too);
# the man page tc-confucius(8), linted.

TC_BUILD  := $(BUILD)/tc
TC_PLUGIN := $(TC_BUILD)/q_confucius.so
TC_INTREE := $(TC_BUILD)/intree/tc
TC_MAN    := tc/tc-confucius.8
TC_SRC    := VERSION tc/q_confucius.c tc/build.sh tc/iproute2-tree.sh mk/private-apt.sh \
             kernel/include/uapi/linux/pkt_sched_confucius.h $(CORE_HDR)

$(TC_PLUGIN): $(TC_SRC) $(wildcard /var/lib/dpkg/info/iproute2.list) | $(DEPS_STAMP)
	nice tc/build.sh $(TC_BUILD)

# After make tc, whose configured iproute2 tree it patches a copy of (about a minute).
$(TC_INTREE): $(TC_PLUGIN) tc/intree.sh $(TC_MAN)
	source tc/iproute2-tree.sh && nice tc/intree.sh "$$(cached_tree $(TC_BUILD)/src)" $(TC_BUILD)/intree

# mandoc's lint at warning level: any warning fails the build.
$(TC_BUILD)/tc-confucius.8.lint: $(TC_MAN) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	mandoc -Tlint -W warning $(TC_MAN)
	@touch $@

.PHONY: tc tc-intree
tc: $(TC_PLUGIN)
tc-intree: $(TC_INTREE)
PYTEST_NEEDS += $(TC_PLUGIN) $(TC_INTREE) $(TC_BUILD)/tc-confucius.8.lint
