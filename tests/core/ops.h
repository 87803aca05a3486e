/* SPDX-License-Identifier: MIT */
/*
 * Random operation sequences for the core, read from bytes: the property test
 * feeds them from a seeded generator, the fuzzer from libFuzzer.
 */
#ifndef CFC_OPS_H
#define CFC_OPS_H

#include <stddef.h>
#include "confucius.h"

/* Configure a scheduler from the first bytes, apply the rest as operations; NULL or the first broken invariant. */
const char *ts_run_ops(const u8 *data, size_t size);

#endif
