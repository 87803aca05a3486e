// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The scheduling core compiled for the userspace hosts (the tests, the fuzzer,
 * the benchmark, the simulations): the kernel's own source, built against the
 * small copy of the kernel headers it uses in core/userspace/include.
 */
#include "confucius_impl.h"
