# SPDX-License-Identifier: MIT
# The ns-3 simulator (sim/README.md): our queue disc and programs, built out of tree
# against the packaged ns-3 from PyPI (headers and shared libraries, no source tree).

SIM_BUILD   := $(BUILD)/sim
NS3_PREFIX  := $(BUILD)/ns3
NS3_STAMP   := $(NS3_PREFIX)/.installed
NS3_ROOT    := $(NS3_PREFIX)/ns3
NS3_LIBDIR  := $(abspath $(NS3_ROOT)/lib64)
NS3_MODULES := applications traffic-control point-to-point internet network core
# The wheel's pkg-config files name the paths of the machine it was built on: only
# its version is read from them; the flags are built here.
NS3_VERSION  = $(shell PKG_CONFIG_PATH=$(NS3_LIBDIR)/pkgconfig pkg-config --modversion ns3-core 2>/dev/null)
NS3_CXXFLAGS = -std=c++20 -O2 -Wall -Wextra -Werror -isystem $(NS3_ROOT)/include \
	-DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE -DCONFUCIUS_NS3_VERSION='"$(NS3_VERSION)"' $(CORE_INCLUDES) -Isim/ns3 \
	-Itools/rtcontrol/include
# tcmalloc (Debian ships no unversioned link for it without the -dev package): see apt-packages.txt.
NS3_LDFLAGS  = -L$(NS3_LIBDIR) -Wl,-rpath,$(NS3_LIBDIR) \
	$(foreach m,$(NS3_MODULES),-lns$(NS3_VERSION)-$(m)) -l:libtcmalloc_minimal.so.4 -lpthread -ldl -lm

SIM_MODEL := $(wildcard sim/ns3/model/*.cc sim/ns3/apps/*.cc)
SIM_HDRS  := $(wildcard sim/ns3/*.h sim/ns3/model/*.h sim/ns3/apps/*.h) $(CORE_HDR)
SIM_BOTTLENECK := $(SIM_BUILD)/bottleneck
SIM_PERCCA     := $(SIM_BUILD)/percca
# The RT flow's controllers: the same Rust code as rtflow's (tools/rtcontrol), as a static library.
RTCONTROL_LIB  := $(CARGO_TARGET)/release/librtcontrol.a

# pip's own client, into the build tree: only the C++ parts are used (no Python bindings).
$(NS3_STAMP): sim/ns3/requirements.txt | $(VENV_STAMP)
	rm -rf $(NS3_PREFIX)
	$(VENV)/bin/pip install -q --no-deps --target $(NS3_PREFIX) -r sim/ns3/requirements.txt
	@touch $@

# The core compiles unchanged, as C, exactly as the kernel and the tests take it.
$(SIM_BUILD)/confucius.o: $(CORE_SRC) $(CORE_HDR) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -fPIC $(CORE_INCLUDES) -c -o $@ $(CORE_SRC)

$(SIM_BUILD)/%.o: sim/ns3/%.cc $(SIM_HDRS) $(NS3_STAMP)
	@mkdir -p $(@D)
	nice -n 10 $(CXX) $(NS3_CXXFLAGS) -fPIC -c -o $@ $<

$(RTCONTROL_LIB): $(shell find tools/rtcontrol -name '*.rs' -o -name 'Cargo.toml') tools/Cargo.lock
	nice -n 10 cargo build --release --quiet --manifest-path tools/Cargo.toml --target-dir $(CARGO_TARGET) -p rtcontrol

$(SIM_BUILD)/apps/rt-flow.o $(SIM_BUILD)/apps/rt-tcp-flow.o $(SIM_BUILD)/bottleneck.o: tools/rtcontrol/include/rtcontrol.h

$(SIM_BOTTLENECK): $(SIM_BUILD)/bottleneck.o $(SIM_MODEL:sim/ns3/%.cc=$(SIM_BUILD)/%.o) $(SIM_BUILD)/confucius.o \
		$(RTCONTROL_LIB)
	$(CXX) -o $@ $^ $(NS3_LDFLAGS)

# Paper 003's per-CCA queueing (sim/ns3/percca.cc): the queue disc and its port filter only.
$(SIM_PERCCA): $(SIM_BUILD)/percca.o $(SIM_BUILD)/model/confucius-queue-disc.o \
		$(SIM_BUILD)/model/port-filter.o $(SIM_BUILD)/confucius.o
	$(CXX) -o $@ $^ $(NS3_LDFLAGS)

.PHONY: sim
sim: $(SIM_BOTTLENECK) $(SIM_PERCCA)

PYTEST_NEEDS += $(SIM_BOTTLENECK) $(SIM_PERCCA)

# The simulator's speed on the lab's page-load episodes (a benchmark: printed, asserted
# nowhere): the demo's episode, and a matrix task timed part by part with the 1000-page
# sweep it implies (sim/ns3/speed.py).
.PHONY: bench-sim
bench-sim: $(SIM_BOTTLENECK) $(VENV_STAMP)
	$(PY) sim/ns3/speed.py
