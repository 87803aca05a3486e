# SPDX-License-Identifier: MIT
# Debian packages (packaging/): confucius-dkms, the module's source for DKMS, and
# confucius-tc, tc's plugin, both at the version in VERSION.

DEB_BUILD   := $(BUILD)/deb
DEB_VERSION := $(shell cat VERSION)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB_DKMS    := $(DEB_BUILD)/confucius-dkms_$(DEB_VERSION)_all.deb
DEB_TC      := $(DEB_BUILD)/confucius-tc_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_SRC     := $(KMOD_SRC) $(TC_SRC) $(TC_MAN) LICENSE $(wildcard LICENSES/*) packaging/build-deb.sh \
               $(shell find packaging/debian -type f)

# After make tc, whose iproute2 source tree the package build reuses.
$(DEB_DKMS) $(DEB_TC) &: $(DEB_SRC) $(TC_PLUGIN) | $(DEPS_STAMP)
	IPROUTE2_SRC=$(abspath $(TC_BUILD)/src) packaging/build-deb.sh $(DEB_BUILD)

.PHONY: deb
deb: $(DEB_DKMS) $(DEB_TC)
PYTEST_NEEDS += $(DEB_DKMS) $(DEB_TC)
