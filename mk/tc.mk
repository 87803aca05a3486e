# SPDX-License-Identifier: MIT
# q_confucius.so, the tc front end, built by tc/build.sh against the source of the
# installed iproute2 (Debian's source package, fetched once into build/tc/src/).

TC_BUILD  := $(BUILD)/tc
TC_PLUGIN := $(TC_BUILD)/q_confucius.so
TC_SRC    := VERSION tc/q_confucius.c tc/build.sh kernel/include/uapi/linux/pkt_sched_confucius.h \
             $(CORE_SRC) $(CORE_HDR)

$(TC_PLUGIN): $(TC_SRC) $(wildcard /var/lib/dpkg/info/iproute2.list) | $(DEPS_STAMP)
	nice tc/build.sh $(TC_BUILD)

.PHONY: tc
tc: $(TC_PLUGIN)
PYTEST_NEEDS += $(TC_PLUGIN)
