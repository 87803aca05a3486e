# SPDX-License-Identifier: MIT
# The scheduling core: unit tests (plain and under ASan+UBSan), a freestanding
# build that proves it fits the kernel (no libc, no floating point), a libFuzzer
# smoke run (seeded with the corpus kept in tests/core/corpus), and the per-packet
# cost benchmark.

# The core is kernel C (core/confucius_impl.h, included by kernel/sch_confucius.c,
# where its functions are static); the userspace hosts compile it once, with external
# linkage, through core/userspace/confucius.c against a small copy of the kernel
# headers it uses (core/userspace/include), and declare it with
# core/userspace/confucius_api.h (CORE_INCLUDES finds both).
CORE_SRC     := core/userspace/confucius.c
CORE_HDR     := core/confucius.h core/confucius_impl.h core/userspace/confucius_api.h \
                $(wildcard core/userspace/include/linux/*.h)
CORE_INCLUDES := -Icore/userspace/include -Icore -Icore/userspace
CORE_KERNEL_SRC := core/confucius.h core/confucius_impl.h
CORE_BUILD   := $(BUILD)/core
# The core's userspace host (test packets, a simulated clock and link, the invariant
# checker): linked by the tests, the fuzzer, the benchmark and the simulations.
CORE_HOST    := core/userspace/harness.c
CORE_CFLAGS  := -std=c11 -Wall -Wextra -Werror $(CORE_INCLUDES) -Itests/core
HARNESS_SRC  := $(CORE_HOST) tests/core/ops.c
UNIT_SRC     := $(wildcard tests/core/test_*.c) tests/core/main.c
FUZZ_SECONDS ?= 60

$(CORE_BUILD)/core_tests: $(CORE_SRC) $(CORE_HDR) $(HARNESS_SRC) $(UNIT_SRC) tests/core/*.h core/userspace/harness.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CORE_CFLAGS) -O2 -g -o $@ $(CORE_SRC) $(HARNESS_SRC) $(UNIT_SRC) -lcmocka -lm

$(CORE_BUILD)/core_tests_san: $(CORE_SRC) $(CORE_HDR) $(HARNESS_SRC) $(UNIT_SRC) tests/core/*.h core/userspace/harness.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(CORE_CFLAGS) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
		-fno-omit-frame-pointer -o $@ $(CORE_SRC) $(HARNESS_SRC) $(UNIT_SRC) -lcmocka -lm

# The kernel's constraints, checked by the compiler: freestanding, integer registers only.
$(CORE_BUILD)/confucius-freestanding.o: $(CORE_SRC) $(CORE_HDR) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Werror -ffreestanding -fno-builtin -mgeneral-regs-only \
		$(CORE_INCLUDES) -O2 -c -o $@ $(CORE_SRC)
	@if nm $@ | grep -q ' U '; then echo "core calls outside itself:"; nm $@ | grep ' U '; exit 1; fi

$(CORE_BUILD)/fuzz_core: $(CORE_SRC) $(CORE_HDR) $(HARNESS_SRC) tests/core/fuzz_core.c tests/core/*.h core/userspace/harness.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(CORE_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(CORE_SRC) $(HARNESS_SRC) tests/core/fuzz_core.c

$(CORE_BUILD)/bench_core: $(CORE_SRC) $(CORE_HDR) bench/bench_core.c $(CORE_HOST) core/userspace/harness.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CORE_CFLAGS) -O2 -g -o $@ $(CORE_SRC) $(CORE_HOST) bench/bench_core.c

.PHONY: test-core test-core-san test-core-fuzz bench-core
test-core: $(CORE_BUILD)/core_tests $(CORE_BUILD)/confucius-freestanding.o
	$(CORE_BUILD)/core_tests

test-core-san: $(CORE_BUILD)/core_tests_san
	$(CORE_BUILD)/core_tests_san

test-core-fuzz: $(CORE_BUILD)/fuzz_core
	@mkdir -p $(CORE_BUILD)/fuzz-corpus
	$(CORE_BUILD)/fuzz_core -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
		$(CORE_BUILD)/fuzz-corpus tests/core/corpus 2>&1 | grep -E 'Done|stat::number_of_executed_units|ERROR|SUMMARY' ; \
		test $${PIPESTATUS[0]} -eq 0

bench-core: $(CORE_BUILD)/bench_core
	$(CORE_BUILD)/bench_core

C_TESTS += test-core test-core-san test-core-fuzz

$(CORE_BUILD)/share_trace: $(CORE_SRC) $(CORE_HDR) sim/share_trace.c $(CORE_HOST) core/userspace/harness.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CORE_CFLAGS) -O2 -o $@ $(CORE_SRC) $(CORE_HOST) sim/share_trace.c
PYTEST_NEEDS += $(CORE_BUILD)/share_trace
