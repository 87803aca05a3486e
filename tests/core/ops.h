/* SPDX-License-Identifier: MIT */
/*
 * Random operation sequences for the core, read from bytes: the property test
 * feeds them from a seeded generator, the fuzzer from libFuzzer.
 */
#ifndef CFC_OPS_H
#define CFC_OPS_H

#include <stddef.h>
#include "confucius_api.h"

/*
 * Configure a scheduler from the first bytes, apply the rest as operations; NULL or the
 * first broken invariant. When outcome is not NULL it receives a hash of what the run
 * did (per-flow bytes sent, drops and packets out, the final clock): the same input
 * gives the same outcome on every host, which the cross runs compare (mk/cross.mk).
 */
const char *ts_run_ops(const u8 *data, size_t size, u64 *outcome);

#endif
