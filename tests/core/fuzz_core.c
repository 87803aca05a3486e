// SPDX-License-Identifier: MIT
/* libFuzzer entry: any byte string is an operation sequence; a broken invariant aborts. */
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	const char *err = ts_run_ops(data, size, NULL);

	if (err) {
		fprintf(stderr, "invariant broken: %s\n", err);
		abort();
	}
	return 0;
}
